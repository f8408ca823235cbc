"""Stops: Ctrl-C, and SIGTERM turned into the same path, told apart from a run's own errors.

A command run with :func:`sigterm_as_interrupt` ends on SIGTERM (``kill``, a scheduler's stop) as on
Ctrl-C: :class:`Terminated` is a ``KeyboardInterrupt``, so every ``finally`` and ``except
BaseException`` that cleans up after Ctrl-C runs for it too. Libraries underneath may turn the
interrupt into something else (Lightning's fit calls ``sys.exit(1)`` when it catches one;
a callback may raise while handling it): :func:`interrupt_behind` finds it again, so that a stop is
never recorded as a run's failure.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

__all__ = [
    "Terminated",
    "interrupt_behind",
    "sigterm_as_interrupt",
]


class Terminated(KeyboardInterrupt):
    """A SIGTERM, raised in the main thread by :func:`sigterm_as_interrupt`.

    A ``KeyboardInterrupt``, so every ``finally`` and ``except BaseException`` that cleans up after
    Ctrl-C (a grid's last archive write, a cache's temporary file) runs for it too.
    """


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, a SIGTERM raises :class:`Terminated` in the main thread instead of ending the process.

    Python's default for SIGTERM ends the process at once, skipping ``finally`` blocks. Outside the
    main thread (where no handler can be installed) this does nothing. The previous handler is put back.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum: int, frame: Any) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        if previous is not None:  # None: a handler installed outside Python, which cannot be put back
            signal.signal(signal.SIGTERM, previous)


def interrupt_behind(err: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C or :class:`Terminated` that ``err`` was raised while handling, if any (``err`` itself included).

    Python sets ``__context__`` only for an exception raised during the handling of another, so an
    interrupt caught and done with earlier leaves no trace here.

    >>> try:
    ...     try:
    ...         raise Terminated()
    ...     except KeyboardInterrupt:
    ...         raise SystemExit(1)  # as Lightning's fit does
    ... except SystemExit as exit_:
    ...     type(interrupt_behind(exit_)).__name__
    'Terminated'
    >>> interrupt_behind(ValueError("a cell's own error")) is None
    True
    """
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return current
        seen.add(id(current))
        current = current.__context__
    return None

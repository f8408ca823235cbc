"""How an entry point ends: its exit code, one sentence for a user's mistake, never a traceback.

Every command's body runs through :func:`command`: a ``ValueError`` or ``FileNotFoundError`` (a bad
path, an unknown task, a malformed config: the package raises them with one sentence saying what is
wrong) prints ``error: <sentence>`` and exits 2; Ctrl-C says how to go on and exits 130. Set
``TEXTCAUSE_DEBUG=1`` to see the traceback instead.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: What Ctrl-C tells the user of a resumable command.
RESUME = "rerun the same command to resume."


def command(fn: Callable[[], Any], *, interrupted: str = RESUME, offline: bool = True) -> int:
    """Run a command's body and return its exit code.

    Args:
        fn: the body; an int it returns is the exit code, anything else means 0.
        interrupted: what to tell the user after Ctrl-C.
        offline: keep the Hugging Face hub offline (a command's ``--allow-download`` turns it off).
    """
    if offline:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("WANDB_MODE", "offline")
    try:
        code = fn()
    except (ValueError, FileNotFoundError) as err:
        if os.environ.get("TEXTCAUSE_DEBUG"):
            raise
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ninterrupted: {interrupted}", file=sys.stderr)
        return 130
    return code if isinstance(code, int) and not isinstance(code, bool) else 0


def friendly_errors(fn: Callable[[], Any]) -> int:
    """:func:`command` for a body whose return value is not an exit code (``train.py``, ``evaluate.py``)."""

    def body() -> None:
        fn()

    return command(body)


@contextlib.contextmanager
def package_warnings() -> Iterator[None]:
    """Show the package's own warnings as ``warning: ...`` lines, any other as Python shows it.

    They are shown when the body ends, outside the recording: a warning shown while recording would
    be recorded again.
    """
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        package = str(Path(__file__).resolve().parents[1])
        for w in caught:
            if str(Path(w.filename).resolve()).startswith(package):
                print(f"warning: {w.message}", file=sys.stderr)
            else:
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)

"""Which SQLite transactions of this thread are deferred reads: :func:`deferred_reads`.

:func:`textcause.store.make_sqlite_transactional` begins a transaction with ``BEGIN IMMEDIATE``
(the write lock up front), or with a plain ``BEGIN`` (a deferred read: no lock in WAL mode) for a
transaction begun inside :func:`deferred_reads`: the ledger's reads
(:func:`textcause.store.reading`) and Optuna's read-only calls
(:class:`textcause.store.rdb.ReadingRDBStorage`).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

__all__ = [
    "deferred_reads",
    "deferred_reads_on",
]

_DEFERRED = contextvars.ContextVar("textcause_deferred_reads", default=False)


@contextlib.contextmanager
def deferred_reads() -> Iterator[None]:
    """Transactions begun inside this block, in this thread, are deferred reads on SQLite. A write
    inside it may fail with "database is locked" instead of waiting: only reads belong in it."""
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


def deferred_reads_on() -> bool:
    """Whether this thread is inside :func:`deferred_reads`."""
    return _DEFERRED.get()

"""Optuna's ``RDBStorage`` whose read-only calls take no write lock on SQLite: :class:`ReadingRDBStorage`.

On SQLite every session of the benchmark's and the sweeps' storage starts with ``BEGIN IMMEDIATE``
(:func:`textcause.store.make_sqlite_transactional`), so that Optuna's read-then-write sessions
queue for the write lock instead of failing. Its read-only calls took the lock too: a grid cell
made six of them (four ``get_trial``, the trials list, the stale-trial check) beside twelve writes,
and on two workers each waited while the other worker wrote. The methods in :data:`READS` only run
queries, so :class:`ReadingRDBStorage` runs them as deferred transactions
(:func:`textcause.store.sqlite_reads.deferred_reads`): in WAL mode such a read sees the last committed state
at once and neither waits for a writer nor makes one wait. Everything else is Optuna's own. On
other databases nothing changes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from optuna.storages import RDBStorage

from textcause.store.sqlite_reads import deferred_reads

__all__ = [
    "READS",
    "ReadingRDBStorage",
]

#: ``RDBStorage`` methods that only read (checked against Optuna 5.1's source: queries, no writes).
READS = (
    "get_study_id_from_name",
    "get_study_name_from_id",
    "get_study_directions",
    "get_study_user_attrs",
    "get_study_system_attrs",
    "get_all_studies",
    "get_trial_id_from_study_id_trial_number",
    "get_trial_param",
    "get_trial_user_attrs",
    "get_trial_system_attrs",
    "get_trial",
    "_get_trials",
    "get_best_trial",
    "_get_best_trial_id",  # what Optuna's cached storage calls for the best trial
    "_get_stale_trial_ids",
)


def _deferred(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        with deferred_reads():
            return method(self, *args, **kwargs)

    return run


class ReadingRDBStorage(RDBStorage):
    """``RDBStorage`` whose :data:`READS` run as deferred (lock-free) transactions on SQLite."""


for _name in READS:
    setattr(ReadingRDBStorage, _name, _deferred(getattr(RDBStorage, _name)))

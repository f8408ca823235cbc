"""The grid's Optuna study and who holds a cell: what a worker and the runner share.

:func:`open_study` opens (the runner: creates) the grid's Optuna study with a sampler that puts each
trial on the grid point its worker chose from the ledger; :func:`holder_alive` tells a live claim
from a dead worker's (a process of this host gone, or an Optuna trial no longer ``RUNNING``).
:mod:`textcause.grid.worker` runs cells on them; its names for these stay importable there.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from textcause import store
from textcause.grid.spec import Grid

__all__ = ["GRACE_FACTOR", "GRACE_PERIOD", "HEARTBEAT_INTERVAL", "holder_alive", "open_study"]

HEARTBEAT_INTERVAL = 10  # seconds between Optuna heartbeats of a running cell
GRACE_FACTOR = 6  # heartbeats missed before a cell's worker is presumed dead
GRACE_PERIOD = GRACE_FACTOR * HEARTBEAT_INTERVAL


# ---------------------------------------------------------------------------------------- claims
def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed child not yet reaped by its parent is a zombie: dead
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def holder_alive(row: Any, storage: Any) -> bool:
    """Whether the worker holding a ``running`` cell is alive.

    Dead: a process of this host that no longer exists (or is this very process, which holds no
    claim while it plans), or an Optuna trial that is no longer RUNNING (Optuna fails a trial whose
    heartbeat stopped for the grace period).
    """
    if row.host == socket.gethostname() and row.pid is not None and (row.pid == os.getpid() or not _pid_alive(row.pid)):
        return False
    if row.trial_id is not None:
        from optuna.trial import TrialState

        try:
            return storage.get_trial(row.trial_id).state == TrialState.RUNNING
        except KeyError:
            return False
    return True


# ---------------------------------------------------------------------------------------- Optuna
def open_study(
    grid: Grid,
    url: str,
    *,
    create: bool,
    heartbeat_interval: int = HEARTBEAT_INTERVAL,
    grace_period: int = GRACE_PERIOD,
) -> Any:
    """The grid's Optuna study in the database at ``url``: created when ``create`` (the runner), else
    opened as it is (a worker: no table creation, schema check or schema lock)."""
    import optuna

    engine = store.open_store(url) if create else None  # creates the SQLite file's folder and the ledger tables
    storage = store.optuna_storage(
        url,
        heartbeat_interval=heartbeat_interval,
        grace_period=grace_period,
        max_retry=None,
        lock=engine,
        create=create,
    )
    if engine is not None:
        engine.dispose()
    sampler = _grid_sampler(grid)
    if create:
        study = optuna.create_study(
            study_name=grid.study_name, storage=storage, sampler=sampler, direction="minimize", load_if_exists=True
        )
        study.set_user_attr("grid", grid.name)
        study.set_user_attr("n_cells", len(grid.cells))
        return study
    return optuna.load_study(study_name=grid.study_name, storage=storage, sampler=sampler)


def _grid_sampler(grid: Grid) -> Any:
    import optuna

    class ChosenCellGridSampler(optuna.samplers.GridSampler):
        """Optuna's ``GridSampler``, each trial on the grid point its worker chose (``next_params``).

        The worker picks the next cell from the ledger it has just read (:func:`textcause.grid.worker._choose`), so the
        sampler need not read every trial of the study to find the unvisited points, as
        ``GridSampler`` does before and after each trial (three reads a cell that grow with the grid).
        Without a choice, and for a trial created with its point (re-queued by
        ``RetryHeartbeatStaleTrialCallback``, or enqueued), it behaves as ``GridSampler``. After a
        trial it does nothing: a worker runs one trial per ``optimize`` call and stops when the
        ledger has no cell left to run, so ``GridSampler``'s ``study.stop()`` has nothing to stop
        (and reading a ``grid_id`` that an enqueued trial lacks raised KeyError: optuna/optuna PR
        #6844).
        """

        def __init__(self, search_space: dict[str, list[Any]], seed: int) -> None:
            super().__init__(search_space, seed=seed)
            self._ids = {point: i for i, point in enumerate(self._all_grids)}
            self.next_params: dict[str, Any] | None = None
            self.chosen_trial: int | None = None  # the last trial put on ``next_params``

        def before_trial(self, study: Any, trial: Any) -> None:
            attrs = trial.system_attrs
            self.chosen_trial = None
            if self.next_params is None or "grid_id" in attrs or "fixed_params" in attrs:
                super().before_trial(study, trial)
                return
            self.chosen_trial = trial._trial_id
            grid_id = self._ids[tuple(self.next_params[name] for name in self._param_names)]
            study._storage.set_trial_system_attr(trial._trial_id, "search_space", self._search_space)
            study._storage.set_trial_system_attr(trial._trial_id, "grid_id", grid_id)

        def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
            return None

    return ChosenCellGridSampler(grid.search_space, seed=0)

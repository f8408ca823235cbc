"""One benchmark worker: claim cells through Optuna and the ``cells`` ledger, run them, store rows.

:func:`worker_loop` runs cells as trials of the grid's Optuna study (:func:`textcause.grid.study.open_study`)
until every cell is finished, choosing each next cell from the ledger; a cell runs only after
:func:`textcause.store.try_claim` succeeds, so no cell runs twice at once. :func:`run_cell` fits and evaluates one cell in-process and never raises for
the cell's own error. A cell whose twin (the same experiment under another task label,
:func:`textcause.grid.cell.draw_key`) has finished takes the twin's rows instead of fitting again,
and waits while a live worker runs its twin (:func:`textcause.grid.study.holder_alive` tells a live
claim from a dead worker's). ``textcause benchmark`` (:mod:`textcause.grid.runner`) starts the workers.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import math
import os
import random
import signal
import socket
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from textcause import startup, store
from textcause.grid.cell import Cell, CellOutcome, code_version, run_config_cell, twin_rows, twins
from textcause.grid.spec import Grid
from textcause.grid.study import GRACE_FACTOR, GRACE_PERIOD, HEARTBEAT_INTERVAL, holder_alive, open_study

__all__ = [
    "GRACE_FACTOR",
    "GRACE_PERIOD",
    "HEARTBEAT_INTERVAL",
    "WAIT_FIRST",
    "CellFailed",
    "WorkerStats",
    "forked_main",
    "holder_alive",
    "main",
    "open_study",
    "run_cell",
    "run_worker",
    "worker_loop",
]

WAIT_FIRST = 0.02  # seconds before a worker waiting on a twin looks again (doubling up to its poll)


class CellFailed(Exception):
    """A cell raised; it is recorded as failed and the run goes on (Optuna marks its trial FAIL)."""


@dataclass
class WorkerStats:
    """What one worker did."""

    ran: list[str] = field(default_factory=list)
    refused: int = 0


def run_cell(cell: Cell, out_dir: str | Path, *, version: str = "", attempt: int = 1) -> CellOutcome:
    """Run one cell in-process: a model config through the one run path, a method through its cell runner.

    Never raises for a cell's own error (see :func:`textcause.grid.cell.run_config_cell`).
    """
    if cell.method is not None:
        from textcause.grid.method_cell import run_method_cell

        return run_method_cell(cell, None, out_dir, version=version, attempt=attempt)
    return run_config_cell(cell, out_dir, version=version, attempt=attempt)


def _choose(
    plan: dict[str, str],
    by_id: dict[str, Cell],
    twin_ids: dict[str, tuple[str, ...]],
    rows: dict[str, Any],
    corpora: set[str],
    rng: random.Random,
) -> str:
    """The cell a worker runs next, given what it would do with each cell (``plan``: ``run``,
    ``wait`` or ``skip``) and the ledger ``rows`` that plan was made from.

    Among the cells it may run, preferred in turn:

    1. a cell none of whose twins with a smaller id is still to be done (the first cell of an
       experiment is fitted first and its twins copy its rows, so two workers do not fit two twins
       of one experiment at once, as a ledger read just before the other's claim allowed);
    2. a cell on one of ``corpora``, those the worker has read already (memoised in its process);
    3. a cell of the model whose fitted cells took longest (median; a cell that started after a twin
       had finished copied its rows in milliseconds and does not count; a model with none finished
       first), so the grid ends on short cells rather than one worker waiting on a long one;

    then one at random, so two workers rarely pick the same.
    """
    runnable = [c for c, d in plan.items() if d == "run"]
    first = [c for c in runnable if not any(t < c and plan[t] != "skip" for t in twin_ids[c])] or runnable
    pool = [c for c in first if by_id[c].corpus in corpora] or first
    seconds: dict[str, list[float]] = {}
    for cell_id, row in rows.items():
        if cell_id not in by_id or row.status != "ok" or not row.started_at or not row.finished_at:
            continue
        copied = any(  # a twin was finished when it started: its rows were copied, not fitted
            (twin := rows.get(t)) is not None
            and twin.status == "ok"
            and twin.finished_at is not None
            and twin.finished_at <= row.started_at
            for t in twin_ids[cell_id]
        )
        if not copied:
            seconds.setdefault(by_id[cell_id].model, []).append((row.finished_at - row.started_at).total_seconds())
    expected = {m: statistics.median(v) for m, v in seconds.items()}
    longest = max(expected.get(by_id[c].model, math.inf) for c in pool)
    return rng.choice([c for c in pool if expected.get(by_id[c].model, math.inf) == longest])


def worker_loop(
    grid: Grid,
    url: str,
    out_dir: str | Path,
    *,
    since: datetime,
    retry_failed: bool = False,
    poll: float = 2.0,
    heartbeat_interval: int = HEARTBEAT_INTERVAL,
    grace_period: int = GRACE_PERIOD,
    freeze_gc: bool = False,
) -> WorkerStats:
    """Run the cells of ``grid``, each as one Optuna trial, until every cell is finished.

    Each round reads the ledger, picks a cell that may run (:func:`_choose`) and runs it as a trial
    on that grid point (a trial that Optuna re-queued for a dead worker comes first); the claim in
    the ledger, not the trial, decides whether it runs.

    A cell whose worker died (a signal, a lost worker) is taken over and run again, however often
    that happened: only the cell's own error records it as failed (:func:`store.claim_decision`).

    With ``freeze_gc`` (a process of its own: the worker processes, ``textcause benchmark``), what
    is alive after the first cell that trained (the imported libraries, the memoised corpus: about
    530,000 objects) is moved out of the cyclic garbage collector's sight (``gc.freeze()``): each
    later collection, the one after every cell included, then scans what the cells made (about
    2,000 objects) instead of everything (0.40 s -> under 0.01 s a cell on this machine). Frozen
    objects are still freed when their last reference goes; only cycles among them would stay.

    While the only cells left to run are twins of cells another worker is running, the worker
    looks again after 0.02 s (a ledger read: about 2 ms), then after twice as long each time, up to ``poll`` seconds.
    """
    import optuna

    engine = store.open_store(url, create=False)  # the runner made the tables (open_study(create=True))
    study = open_study(grid, url, create=False, heartbeat_interval=heartbeat_interval, grace_period=grace_period)
    storage = study._storage
    by_id = {c.cell_id: c for c in grid.cells}
    version = code_version()
    rng = random.Random(f"{socket.gethostname()}:{os.getpid()}")  # which cell to run next: scheduling only
    stats = WorkerStats()
    state: dict[str, Any] = {"refused": False, "frozen": False, "read": None}
    checked: dict[tuple[str, str], bool] = {}  # holder_alive of rows of the last ledger read

    def alive(row: Any) -> bool:
        key = (row.cell_id, row.token)
        if key not in checked:
            checked[key] = holder_alive(row, storage)
        return checked[key]

    twin_ids = twins(grid.cells)

    def decide(row: Any, cell_id: str, rows: dict[str, Any]) -> str:
        decision = store.claim_decision(row, alive=alive, retry_failed=retry_failed, since=since)
        if decision == "run" and any(_running(rows.get(t), alive) for t in twin_ids[cell_id]):
            return "wait"  # its twin's rows will be this cell's: do not fit the same experiment twice at once
        return decision

    def finished_twin(cell: Cell, rows: dict[str, Any]) -> str | None:
        done = [t for t in twin_ids[cell.cell_id] if _ok(rows.get(t), by_id[t])]
        return done[0] if done else None

    def suggest(trial: Any) -> Cell:
        params = {name: trial.suggest_categorical(name, values) for name, values in grid.search_space.items()}
        return grid.cell_for(params)

    def objective(trial: Any) -> float:
        # The cell this worker chose is claimed before its trial records the grid point's values, so
        # another worker that chose it too learns so sooner; a re-queued trial's cell is its values'.
        chosen = study.sampler.chosen_trial == trial._trial_id
        cell = grid.cell_for(study.sampler.next_params) if chosen else suggest(trial)
        rows = store.ledger(engine, grid.name)
        checked.clear()
        row = rows.get(cell.cell_id)
        decision = decide(row, cell.cell_id, rows)
        token = None
        if decision == "run":
            token = store.try_claim(
                engine, cell.cell_id, grid.name, cell.config_hash, store.Claimant.current(trial._trial_id), previous=row
            )
        if token is None:
            state["refused"] = True
            raise optuna.TrialPruned(f"{cell.cell_id} is finished or held by a live worker")
        if chosen and suggest(trial) != cell:  # the trial's values: the grid point before_trial set
            raise RuntimeError(f"the trial of {cell.cell_id} is on another grid point")  # never: a bug
        trial.set_user_attr("cell_id", cell.cell_id)
        if row is not None and row.status == "running" and row.trial_id is not None:
            with contextlib.suppress(Exception):  # the dead holder's trial: FAIL, so it is not re-queued
                storage.set_trial_state_values(row.trial_id, state=optuna.trial.TrialState.FAIL)
        attempt = (row.attempts + 1) if row is not None else 1
        twin = finished_twin(cell, rows)
        if twin is not None:
            outcome = CellOutcome(
                "ok", twin_rows(cell, store.cell_rows(engine, twin), version=version, attempt=attempt)
            )
        else:
            state["read"] = cell.corpus  # its corpus is now memoised in this process
            outcome = run_cell(cell, out_dir, version=version, attempt=attempt)
            if freeze_gc and not state["frozen"] and "lightning.pytorch" in sys.modules:
                gc.freeze()  # after the cell's own collection: only what lives on is frozen
                state["frozen"] = True
        try:
            store.finish_cell(
                engine, cell.cell_id, token, status=outcome.status, rows=outcome.rows, error=outcome.error
            )
        except store.ClaimLost:
            state["refused"] = True
            raise optuna.TrialPruned(f"{cell.cell_id} was taken over by another worker") from None
        stats.ran.append(cell.cell_id)
        if outcome.status == "failed":
            raise CellFailed(outcome.error)
        return outcome.seconds

    delay = min(WAIT_FIRST, poll)
    corpora: set[str] = set()
    while True:
        rows = store.ledger(engine, grid.name)
        checked.clear()
        plan = {cid: decide(rows.get(cid), cid, rows) for cid in by_id}
        runnable = [c for c, d in plan.items() if d == "run"]
        if not runnable:
            if "wait" not in plan.values():
                break
            optuna.storages.fail_stale_trials(study)  # lets a dead holder's cell be taken over
            time.sleep(delay)
            delay = min(2 * delay, poll)
            continue
        delay = min(WAIT_FIRST, poll)
        chosen = by_id[_choose(plan, by_id, twin_ids, rows, corpora, rng)]
        study.sampler.next_params = chosen.params  # a re-queued trial, if one waits, comes first
        stats.refused += state["refused"]
        state["refused"] = False
        # our trial may be failed as stale while it runs; the ledger decides what happens to the cell
        state["read"] = None
        with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
            study.optimize(objective, n_trials=1, catch=(CellFailed,))
        if state["read"] is not None:  # the cell it fitted, if it fitted one (a twin's copy reads nothing)
            corpora.add(state["read"])
    return stats


def _running(row: Any, alive: Any) -> bool:
    return row is not None and row.status == "running" and alive(row)


def _ok(row: Any, cell: Cell) -> bool:
    return row is not None and row.status == "ok" and row.config_hash == cell.config_hash


# ---------------------------------------------------------------------------------------- the worker process
def run_worker(
    grid: Grid,
    url: str,
    out: Path,
    since: datetime,
    *,
    threads: int,
    retry_failed: bool,
    heartbeat: int,
    freeze_gc: bool = False,
) -> WorkerStats:
    """:func:`worker_loop` with ``threads`` torch threads and Lightning's info logging silenced."""
    import torch

    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    quiet = [logging.getLogger(n) for n in ("lightning.pytorch", "lightning.fabric")]
    levels = [lg.level for lg in quiet]
    for lg in quiet:
        lg.setLevel(logging.WARNING)
    try:
        return worker_loop(
            grid,
            url,
            out,
            since=since,
            retry_failed=retry_failed,
            heartbeat_interval=heartbeat,
            grace_period=GRACE_FACTOR * heartbeat,
            freeze_gc=freeze_gc,
        )
    finally:
        torch.set_num_threads(old_threads)
        for lg, level in zip(quiet, levels):
            lg.setLevel(level)


def _die_with_parent(parent_pid: int | None) -> None:
    """A worker process ends when the command that started it is killed (Linux), never orphaned."""
    if parent_pid is None:
        return
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:
        os._exit(1)


def _end_with_runner() -> None:
    """SIGKILL this forked worker when the runner that started it ends (a thread waits for that).

    The fork server, the worker's parent, outlives the runner while any worker lives (each holds
    the server's "alive" pipe), so :func:`_die_with_parent` alone never fires; the runner's end of
    the pipe the process came through (``multiprocessing.parent_process().sentinel``) closes when it dies.
    """
    import multiprocessing
    import threading
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is not None and parent.sentinel is not None:
        kill = lambda: (wait([parent.sentinel]), os.kill(os.getpid(), signal.SIGKILL))  # noqa: E731
        threading.Thread(target=kill, name="end-with-runner", daemon=True).start()


def forked_main(argv: list[str], log: str, cwd: str, env: dict[str, str], grid: Grid | None = None) -> None:
    """A worker forked from the runner's fork server (:mod:`textcause.grid.preload`): :func:`main`.

    The server imported what cells use once; this process starts from a copy of it, so its first
    cell runs at once instead of after seconds of imports. It writes to ``log``, works in ``cwd``
    with the runner's environment ``env`` (as it was when the runner started this worker, not
    when the server started), and ends (``SIGKILL``) when the runner does (:func:`_end_with_runner`).
    ``grid``: the grid as the runner loaded it (not read and parsed again).
    """
    _die_with_parent(os.getppid())
    _end_with_runner()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.argv = [__file__, *argv]
    sys.exit(main(argv, grid=grid))  # the server did the imports; multiprocessing ends the process with os._exit


def main(argv: Sequence[str] | None = None, *, grid: Grid | None = None) -> int:
    """The worker process that :func:`textcause.grid.runner.run_benchmark` starts (not a user command);
    ``grid``, when given, is the grid of ``--config`` (and ``--method``) already loaded."""
    import argparse

    from textcause.grid.spec import load_grid

    parser = argparse.ArgumentParser(prog="python -m textcause.grid.worker", description=main.__doc__)
    parser.add_argument("--config", required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--since", default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--parent-pid", type=int, default=None)
    parser.add_argument("--heartbeat", type=int, default=HEARTBEAT_INTERVAL)
    parser.add_argument("--method", action="append", default=[])
    parser.add_argument("--retry-failed", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("WANDB_MODE", "offline")
    _die_with_parent(args.parent_pid)
    grid = grid if grid is not None else load_grid(args.config, methods=args.method)
    if argv is None:  # a process of its own: what the cells import, without the collector's passes over it
        startup.quick_exit()
        models = ["textcause.run.lightning_cli"] if any(c.method is None for c in grid.cells) else []
        startup.preload("optuna", *models)
    since = datetime.fromisoformat(args.since) if args.since else store.utcnow()
    stats = run_worker(
        grid,
        args.db,
        Path(args.out),
        since,
        threads=args.threads,
        retry_failed=args.retry_failed,
        heartbeat=args.heartbeat,
        freeze_gc=True,
    )
    print(f"worker {os.getpid()}: ran {len(stats.ran)} cells", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``textcause benchmark``: run a grid of real fits + evaluations, resumable, on many workers.

    textcause benchmark --config configs/benchmark/smoke.yaml                  # one worker, SQLite
    textcause benchmark --config configs/benchmark/weld.yaml --workers 2       # two processes
    textcause benchmark --config configs/benchmark/weld.yaml --db postgresql://host/textcause  # on each machine

Scheduling is Optuna's: one study per grid (named by the grid's content hash) in the same database,
a ``GridSampler`` over the grid's dimensions, heartbeats on running trials, and
``RetryHeartbeatStaleTrialCallback`` re-queueing the cells of workers that died. Optuna's grid sampler can
hand one grid point to two workers under concurrency (its documentation says so), so a worker runs a
cell only after claiming it in the ``cells`` ledger (see :mod:`textcause.experiments.store`): no
cell runs twice at once, a finished cell is never rerun, and results are written all-or-nothing.

Each cell is ``train.py fit --config configs/<model>.yaml ...`` followed by ``evaluate.py`` on its best
checkpoint, in-process, exactly as ``benchmarks/model_table.py`` does; its files go to
``<out>/runs/<cell_id>/``. A cell that raises is recorded as failed (with its error) and the run goes
on; ``--retry-failed`` runs failed cells again. Rerunning the same command resumes a killed run.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from textcause.experiments import store
from textcause.experiments.grid import PROJECT_ROOT, Cell, Grid, load_grid

HEARTBEAT_INTERVAL = 10  # seconds between Optuna heartbeats of a running cell
GRACE_FACTOR = 6  # heartbeats missed before a cell's worker is presumed dead
GRACE_PERIOD = GRACE_FACTOR * HEARTBEAT_INTERVAL
MAX_ATTEMPTS = 3  # a cell whose worker died this many times is recorded as failed


class CellFailed(Exception):
    """A cell raised; it is recorded as failed and the run goes on (Optuna marks its trial FAIL)."""


@dataclass
class CellOutcome:
    """What :func:`run_cell` returns: the rows to store and how the cell went."""

    status: str
    rows: list[dict[str, Any]]
    error: str | None = None
    seconds: float = 0.0


@dataclass
class WorkerStats:
    """What one worker did."""

    ran: list[str] = field(default_factory=list)
    refused: int = 0


# ---------------------------------------------------------------------------------------- one cell
def code_version() -> str:
    """``git describe --always --dirty`` of the checkout, else the package version."""
    try:
        out = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), "describe", "--always", "--dirty"],
            capture_output=True, text=True, timeout=10, check=True,
        )
        if out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    from textcause import __version__

    return f"textcause-{__version__}"


def _error_line(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    flagged = [ln for ln in lines if "error:" in ln.lower()]
    return (flagged or lines or ["(no output)"])[-1][:500]


def run_cell(cell: Cell, out_dir: str | Path, *, version: str = "", attempt: int = 1) -> CellOutcome:
    """Fit and evaluate one cell in-process (its output goes to ``<out>/runs/<cell_id>/cell.log``).

    Never raises for a cell's own error: it comes back as ``status='failed'`` with one row per
    planned estimator carrying the error.
    """
    run_dir = Path(out_dir) / "runs" / cell.cell_id
    shutil.rmtree(run_dir, ignore_errors=True)  # a previous attempt's checkpoints must not be picked up
    run_dir.mkdir(parents=True)
    started, t0 = store.utcnow(), time.perf_counter()
    train_s = eval_s = None
    rows: list[dict[str, Any]] = []
    error = None
    log = io.StringIO()
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            if not cell.model_path.is_file():
                raise FileNotFoundError(f"No model config '{cell.model}': expected a YAML file at {cell.model_path}.")
            from textcause.cli import make_cli
            from textcause.evaluate_run import main as evaluate_main

            cli = make_cli(cell.fit_args(run_dir))
            train_s = time.perf_counter() - t0
            result = evaluate_main(cell.evaluate_args(cli.trainer.log_dir, run_dir))
            eval_s = time.perf_counter() - t0 - train_s
        rows = [dict(r) for r in result["rows"]]
    except SystemExit as err:  # the CLI's parser rejected an option (it prints the reason, then exits)
        error = f"train.py rejected the cell's options (exit {err.code}): {_error_line(log.getvalue())}"
    except Exception as err:  # noqa: BLE001 - any cell error is data, recorded with its message
        error = f"{type(err).__name__}: {err}"
    finally:
        (run_dir / "cell.log").write_text(log.getvalue(), encoding="utf-8")
        _release_memory()
    seconds = time.perf_counter() - t0
    meta = {
        "cell_id": cell.cell_id, "grid": cell.grid, "model": cell.model, "config_hash": cell.config_hash,
        "code_version": version, "n_boot": cell.n_boot, "attempt": attempt, "host": socket.gethostname(),
        "started_at": started, "finished_at": store.utcnow(), "train_seconds": train_s, "eval_seconds": eval_s,
        "corpus": cell.corpus, "task": cell.task, "level": cell.level, "seed": cell.seed, "split": cell.split,
    }
    if error is None:  # evaluate.py's `model` is the network's class; the grid's model is the config name
        rows = [{**r, "model_class": r.get("model"), **meta, "status": "ok"} for r in rows]
        return CellOutcome("ok", rows, seconds=seconds)
    failed = [{**meta, "run": str(run_dir), "estimator": e, "status": "failed", "error": error} for e in cell.result_estimators]
    return CellOutcome("failed", failed, error=error, seconds=seconds)


def _release_memory() -> None:
    # The data module memoises up to four built datasets per process (GBs for token tables); a
    # shuffled grid rarely reuses them, so a long-lived worker drops them between cells.
    module = sys.modules.get("textcause.data.datamodule")
    if module is not None:
        module.clear_built_cache()
    gc.collect()


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
    if row.host == socket.gethostname() and row.pid is not None:
        if row.pid == os.getpid() or not _pid_alive(row.pid):
            return False
    if row.trial_id is not None:
        from optuna.trial import TrialState

        try:
            return storage.get_trial(row.trial_id).state == TrialState.RUNNING
        except KeyError:
            return False
    return True


# ---------------------------------------------------------------------------------------- Optuna
def open_study(grid: Grid, url: str, *, create: bool, heartbeat_interval: int = HEARTBEAT_INTERVAL,
               grace_period: int = GRACE_PERIOD) -> Any:
    """The grid's Optuna study in the database at ``url`` (created when ``create``)."""
    import optuna
    from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    if create:
        store.connect(url)  # creates the SQLite file's folder and the ledger tables
    sqlite = url.startswith("sqlite")
    engine_kwargs = {"connect_args": {"timeout": store.SQLITE_TIMEOUT}} if sqlite else {"pool_pre_ping": True}
    storage = RDBStorage(
        url, engine_kwargs=engine_kwargs, heartbeat_interval=heartbeat_interval, grace_period=grace_period,
        heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=None),
    )
    if sqlite:  # Optuna's sessions read then write: make them take the write lock up front
        store.make_sqlite_transactional(storage.engine)
        storage.engine.dispose()
    sampler = _grid_sampler(grid)
    if create:
        study = optuna.create_study(study_name=grid.study_name, storage=storage, sampler=sampler,
                                    direction="minimize", load_if_exists=True)
        study.set_user_attr("grid", grid.name)
        study.set_user_attr("n_cells", len(grid.cells))
        return study
    return optuna.load_study(study_name=grid.study_name, storage=storage, sampler=sampler)


def _grid_sampler(grid: Grid) -> Any:
    import optuna

    class QueueTolerantGridSampler(optuna.samplers.GridSampler):
        """GridSampler that survives queued trials: its ``after_trial`` reads a ``grid_id`` that an
        enqueued trial lacks when one grid point remains (KeyError; optuna/optuna PR #6844)."""

        def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
            with contextlib.suppress(KeyError):
                super().after_trial(study, trial, state, values)

    return QueueTolerantGridSampler(grid.search_space, seed=0)


def worker_loop(
    grid: Grid, url: str, out_dir: str | Path, *, since: datetime, retry_failed: bool = False,
    max_attempts: int = MAX_ATTEMPTS, poll: float = 2.0, heartbeat_interval: int = HEARTBEAT_INTERVAL,
    grace_period: int = GRACE_PERIOD,
) -> WorkerStats:
    """Ask Optuna for cells and run them until every cell of ``grid`` is finished."""
    import optuna

    engine = store.connect(url)
    study = open_study(grid, url, create=False, heartbeat_interval=heartbeat_interval, grace_period=grace_period)
    storage = study._storage
    by_id = {c.cell_id: c for c in grid.cells}
    version = code_version()
    rng = random.Random(f"{socket.gethostname()}:{os.getpid()}")  # which cell to re-queue: scheduling only
    stats = WorkerStats()
    state = {"refused": False}
    alive = lambda row: holder_alive(row, storage)  # noqa: E731

    def decide(row: Any) -> str:
        return store.claim_decision(row, alive=alive, retry_failed=retry_failed, since=since, max_attempts=max_attempts)

    def give_up(cell_id: str, row: Any) -> None:
        store.give_up(engine, cell_id, row, f"The worker running this cell died {row.attempts} times "
                                            "(killed, or out of memory?); rerun with --retry-failed.")

    def objective(trial: Any) -> float:
        params = {name: trial.suggest_categorical(name, values) for name, values in grid.search_space.items()}
        cell = grid.cell_for(params)
        trial.set_user_attr("cell_id", cell.cell_id)
        row = store.ledger(engine, grid.name).get(cell.cell_id)
        decision = decide(row)
        if decision == "give_up":
            give_up(cell.cell_id, row)
        token = None
        if decision == "run":
            token = store.try_claim(engine, cell.cell_id, grid.name, cell.config_hash,
                                    store.Claimant.current(trial._trial_id), previous=row)
        if token is None:
            state["refused"] = True
            raise optuna.TrialPruned(f"{cell.cell_id} is finished or held by a live worker")
        if row is not None and row.status == "running" and row.trial_id is not None:
            with contextlib.suppress(Exception):  # the dead holder's trial: FAIL, so it is not re-queued
                storage.set_trial_state_values(row.trial_id, state=optuna.trial.TrialState.FAIL)
        outcome = run_cell(cell, out_dir, version=version, attempt=(row.attempts + 1) if row is not None else 1)
        try:
            store.finish_cell(engine, cell.cell_id, token, status=outcome.status, rows=outcome.rows, error=outcome.error)
        except store.ClaimLost:
            state["refused"] = True
            raise optuna.TrialPruned(f"{cell.cell_id} was taken over by another worker") from None
        stats.ran.append(cell.cell_id)
        if outcome.status == "failed":
            raise CellFailed(outcome.error)
        return outcome.seconds

    while True:
        rows = store.ledger(engine, grid.name)
        plan = {cid: decide(rows.get(cid)) for cid in by_id}
        for cid in [c for c, d in plan.items() if d == "give_up"]:
            give_up(cid, rows[cid])
        runnable = [c for c, d in plan.items() if d == "run"]
        if not runnable:
            if "wait" not in plan.values():
                break
            optuna.storages.fail_stale_trials(study)  # lets a dead holder's cell be taken over
            time.sleep(poll)
            continue
        # The sampler's last point was taken, or it has handed out every point (a grid resumed with
        # --retry-failed, a dead worker's cell): queue a cell that still needs running.
        if state["refused"] or study.sampler.is_exhausted(study):
            study.enqueue_trial(by_id[rng.choice(runnable)].params)
        stats.refused += state["refused"]
        state["refused"] = False
        try:
            study.optimize(objective, n_trials=1, catch=(CellFailed,))
        except optuna.exceptions.UpdateFinishedTrialError:
            pass  # our trial was failed as stale while it ran; the ledger decides what happens to the cell
    return stats


# ---------------------------------------------------------------------------------------- progress
class ProgressLine:
    """Prints the progress line when it changes (in place on a terminal) and each new failure."""

    def __init__(self, grid: Grid, engine: Any, since: datetime, *, retry_failed: bool, stream: Any = None) -> None:
        self.grid, self.engine, self.since, self.retry_failed = grid, engine, since, retry_failed
        self.stream = stream or sys.stderr
        self.ids = [c.cell_id for c in grid.cells]
        self.started = time.perf_counter()
        self.last = ""
        self.failures: set[str] = set()

    def update(self, final: bool = False) -> store.Progress:
        p = store.progress(self.engine, self.grid.name, self.ids, since=self.since)
        tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        for row in store.ledger(self.engine, self.grid.name).values():
            if row.status == "failed" and row.cell_id not in self.failures and row.finished_at and row.finished_at >= self.since:
                self.failures.add(row.cell_id)
                print(("\r\033[K" if tty else "") + f"failed: {row.cell_id}: {row.error}", file=self.stream, flush=True)
                self.last = ""
        line = p.describe(self.grid.name, time.perf_counter() - self.started, retry_failed=self.retry_failed)
        changed = line.split(" (")[0] != self.last.split(" (")[0]  # cells done: not just the running count
        if tty:
            print("\r\033[K" + line, end="\n" if final else "", file=self.stream, flush=True)
        elif changed or final:
            print(line, file=self.stream, flush=True)
        self.last = line
        return p


# ---------------------------------------------------------------------------------------- the command
def _worker_command(args: argparse.Namespace, url: str, out: Path, since: datetime, threads: int) -> list[str]:
    cmd = [sys.executable, "-m", "textcause.experiments.runner", "--config", str(args.config), "--db", url,
           "--out", str(out), "--worker", "--since", since.isoformat(), "--threads", str(threads),
           "--parent-pid", str(os.getpid()), "--heartbeat", str(args.heartbeat)]
    return cmd + (["--retry-failed"] if args.retry_failed else [])


def _die_with_parent(parent_pid: int | None) -> None:
    """A worker process ends when the command that started it is killed (Linux), never orphaned."""
    if parent_pid is None:
        return
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:
        os._exit(1)


def _check_config_unchanged(grid: Grid, engine: Any) -> None:
    rows = store.ledger(engine, grid.name)
    changed = [c.cell_id for c in grid.cells if c.cell_id in rows and rows[c.cell_id].status in ("ok", "failed")
               and rows[c.cell_id].config_hash != c.config_hash]
    if changed:
        raise ValueError(
            f"{len(changed)} finished cells of grid '{grid.name}' (e.g. {changed[0]}) were run with another "
            "configuration (a model YAML, an override or the evaluation settings changed): give the grid a new "
            "name, or point --db at another database."
        )


def run_benchmark(args: argparse.Namespace) -> int:
    """The parent process: prepare the database and the study, run the workers, show progress."""
    grid = load_grid(args.config)
    out = Path(args.out or Path("runs") / "benchmark" / grid.name).resolve()
    url = args.db or store.default_url(out)
    if args.dry_run:
        return _dry_run(grid, url)
    engine = store.connect(url)
    _check_config_unchanged(grid, engine)
    open_study(grid, url, create=True, heartbeat_interval=args.heartbeat, grace_period=GRACE_FACTOR * args.heartbeat)
    since = store.utcnow()
    threads = args.threads or grid.threads or max(1, (os.cpu_count() or 1) // args.workers)
    print(f"{grid.name}: {len(grid.cells)} cells, {args.workers} worker(s) x {threads} thread(s); "
          f"results in {url}", file=sys.stderr, flush=True)
    line = ProgressLine(grid, engine, since, retry_failed=args.retry_failed)
    status = 0
    if args.workers == 1:
        stop = threading.Event()

        def show() -> None:
            while not stop.wait(2.0):
                line.update()

        shower = threading.Thread(target=show, daemon=True)
        shower.start()
        try:
            _run_worker(grid, url, out, since, args, threads)
        finally:
            stop.set()
            shower.join()
    else:
        (out / "logs").mkdir(parents=True, exist_ok=True)
        procs = []
        for i in range(args.workers):
            log = open(out / "logs" / f"worker-{i}.log", "a", encoding="utf-8")  # noqa: SIM115 - closed below
            procs.append((subprocess.Popen(_worker_command(args, url, out, since, threads), stdout=log,
                                           stderr=subprocess.STDOUT, cwd=os.getcwd()), log))
        while any(p.poll() is None for p, _ in procs):
            line.update()
            time.sleep(1.0)
        for p, log in procs:
            log.close()
            if p.returncode != 0:
                print(f"\nerror: a worker exited with code {p.returncode}; see {log.name}", file=sys.stderr)
                status = 1
    p = line.update(final=True)
    failed = p.failed_since if args.retry_failed else p.failed
    if p.ok + failed < p.total and status == 0:
        print(f"error: {p.total - p.ok - failed} cells were left unfinished.", file=sys.stderr)
        status = 1
    return status


def _run_worker(grid: Grid, url: str, out: Path, since: datetime, args: argparse.Namespace, threads: int) -> WorkerStats:
    import torch

    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    quiet = [logging.getLogger(n) for n in ("lightning.pytorch", "lightning.fabric")]
    levels = [lg.level for lg in quiet]
    for lg in quiet:
        lg.setLevel(logging.WARNING)
    try:
        return worker_loop(grid, url, out, since=since, retry_failed=args.retry_failed,
                           heartbeat_interval=args.heartbeat, grace_period=GRACE_FACTOR * args.heartbeat)
    finally:
        torch.set_num_threads(old_threads)
        for lg, level in zip(quiet, levels):
            lg.setLevel(level)


def _dry_run(grid: Grid, url: str) -> int:
    rows: dict[str, Any] = {}
    parsed = store.sa.engine.make_url(url)
    if parsed.get_backend_name() != "sqlite" or (parsed.database and os.path.exists(parsed.database)):
        rows = store.ledger(store.connect(url), grid.name)
    for cell in grid.cells:
        print(f"{cell.cell_id}\t{rows[cell.cell_id].status if cell.cell_id in rows else 'todo'}")
    done = sum(rows[c.cell_id].status == "ok" for c in grid.cells if c.cell_id in rows)
    print(f"{grid.name}: {len(grid.cells)} cells ({done} done) in {url}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="textcause benchmark", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="a benchmark grid YAML (configs/benchmark/*.yaml)")
    parser.add_argument("--db", default=None, help="a SQLAlchemy URL (default: sqlite:///<out>/results.db)")
    parser.add_argument("--out", default=None, help="run folders go to <out>/runs/ (default: runs/benchmark/<grid>)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes on this machine")
    parser.add_argument("--threads", type=int, default=None, help="torch threads per worker (default: cores // workers)")
    parser.add_argument("--retry-failed", action="store_true", help="run failed cells again")
    parser.add_argument("--dry-run", action="store_true", help="list the cells and their status, run nothing")
    parser.add_argument("--heartbeat", type=int, default=HEARTBEAT_INTERVAL, help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--since", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--parent-pid", type=int, default=None, help=argparse.SUPPRESS)
    return parser


def benchmark_main(argv: Sequence[str]) -> int:
    """The ``textcause benchmark`` command; returns the exit code (1: a worker or the database failed)."""
    args = build_parser().parse_args(list(argv))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("WANDB_MODE", "offline")
    try:
        if args.workers < 1:
            raise ValueError(f"The '--workers' option must be an int >= 1. Got {args.workers} instead.")
        if args.threads is not None and args.threads < 1:
            raise ValueError(f"The '--threads' option must be an int >= 1. Got {args.threads} instead.")
        if args.worker:
            _die_with_parent(args.parent_pid)
            grid = load_grid(args.config)
            since = datetime.fromisoformat(args.since) if args.since else store.utcnow()
            stats = _run_worker(grid, args.db, Path(args.out), since, args, args.threads or 1)
            print(f"worker {os.getpid()}: ran {len(stats.ran)} cells", flush=True)
            return 0
        return run_benchmark(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: rerun the same command to resume.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(benchmark_main(sys.argv[1:]))

"""``textcause benchmark``: run a grid of real fits + evaluations, resumable, on many workers.

    textcause benchmark --config configs/benchmark/smoke.yaml                  # one worker, SQLite
    textcause benchmark --config configs/benchmark/weld.yaml --workers 2       # two processes
    textcause benchmark --config configs/benchmark/weld.yaml --db postgresql://host/textcause  # on each machine
    textcause benchmark --config configs/benchmark/smoke.yaml --method mypkg.methods:MyMethod  # add a method

Scheduling is Optuna's: one study per grid (named by the grid's content hash) in the same database,
a ``GridSampler`` over the grid's dimensions, heartbeats on running trials, and
``RetryHeartbeatStaleTrialCallback`` re-queueing the cells of workers that died. Optuna's grid sampler can
hand one grid point to two workers under concurrency (its documentation says so), so a worker runs a
cell only after claiming it in the ``cells`` ledger (see :mod:`textcause.experiments.store`): no
cell runs twice at once, a finished cell is never rerun, and results are written all-or-nothing.

Each cell is ``train.py fit --config configs/<model>.yaml ...`` followed by ``evaluate.py`` on its best
checkpoint, in-process, exactly as ``benchmarks/model_table.py`` does; its files go to
``<out>/runs/<cell_id>/``. A method (``--method package.module:Name``, or such an entry in the YAML's
``models`` / ``methods``) is fitted and evaluated by :mod:`textcause.methods` instead. A cell that raises is recorded as failed (with its error) and the run goes
on; ``--retry-failed`` runs failed cells again. Rerunning the same command resumes a killed run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from textcause.experiments import store
from textcause.experiments.grid import Grid, load_grid
from textcause.experiments.worker import GRACE_FACTOR, HEARTBEAT_INTERVAL, die_with_parent, open_study, run_worker


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
    for spec in args.method or ():
        cmd += ["--method", spec]
    return cmd + (["--retry-failed"] if args.retry_failed else [])


def _check_config_unchanged(grid: Grid, engine: Any) -> None:
    changed = grid.reconfigured(store.ledger(engine, grid.name))
    if changed:
        raise ValueError(
            f"{len(changed)} finished cells of grid '{grid.name}' (e.g. {changed[0]}) were run with another "
            "configuration (a model YAML, an override or the evaluation settings changed): give the grid a new "
            "name, or point --db at another database."
        )


def run_benchmark(args: argparse.Namespace) -> int:
    """The parent process: prepare the database and the study, run the workers, show progress."""
    grid = load_grid(args.config, methods=args.method or ())
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
            run_worker(grid, url, out, since, threads=threads, retry_failed=args.retry_failed, heartbeat=args.heartbeat)
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
    parser.add_argument("--method", action="append", default=None, metavar="PACKAGE.MODULE:NAME",
                        help="also evaluate this importable method (a textcause.methods propensity or effect "
                             "method; repeatable)")
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
            die_with_parent(args.parent_pid)
            grid = load_grid(args.config, methods=args.method or ())
            since = datetime.fromisoformat(args.since) if args.since else store.utcnow()
            stats = run_worker(grid, args.db, Path(args.out), since, threads=args.threads or 1,
                               retry_failed=args.retry_failed, heartbeat=args.heartbeat)
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

"""Run a benchmark grid of real fits + evaluations, resumable, on many workers (``textcause benchmark``).

Each cell is an Optuna trial of one study per grid (named by the grid's content hash), drawn by a
``GridSampler``; heartbeats and ``RetryHeartbeatStaleTrialCallback`` re-queue the cells of workers
that died (:func:`textcause.grid.worker.worker_loop`). A worker runs a cell only after claiming it
in the ``cells`` ledger (:mod:`textcause.store`): no cell runs twice at once, a finished cell is
never rerun, and results are written all-or-nothing. A cell is one in-process call of
:func:`textcause.run.fit.fit_and_evaluate` (files in ``<out>/runs/<cell_id>/``), or of
:mod:`textcause.methods` for a method cell. A cell that raises is recorded as failed with its
error and the run goes on (``--retry-failed`` reruns them); rerunning the command resumes a killed
run. Usage: docs/benchmark.md.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from textcause import store
from textcause.grid.eta import draw_keys, remaining_work
from textcause.grid.keep import GridArchive
from textcause.grid.precheck import check_cells
from textcause.grid.spec import Grid, load_grid
from textcause.grid.worker import GRACE_FACTOR, HEARTBEAT_INTERVAL, open_study, run_worker
from textcause.validation import check_int, check_options

__all__ = [
    "WORKER_STARTS",
    "ProgressLine",
    "run_benchmark",
    "worker_ended",
]


# ---------------------------------------------------------------------------------------- progress
class ProgressLine:
    """Prints the progress line when it changes (in place on a terminal) and each new failure.

    The ETA is :func:`~textcause.grid.eta.remaining_work`'s: each unfinished cell at the median
    time of its model's finished cells (from any sitting), twins free, over the workers (``workers``,
    or the running cells where more run, as with workers on other machines sharing the database).
    """

    def __init__(
        self, grid: Grid, engine: Any, since: datetime, *, retry_failed: bool, stream: Any = None, workers: int = 1
    ) -> None:
        self.grid, self.engine, self.since, self.retry_failed = grid, engine, since, retry_failed
        self.stream = stream or sys.stderr
        self.ids = [c.cell_id for c in grid.cells]
        self.started = time.perf_counter()
        self.last = ""
        self.failures: set[str] = set()
        self.workers = workers
        self.keys = draw_keys(grid.cells)
        self.eta: tuple[tuple[int, int, int], float, float | None] | None = None

    def _eta(self, p: store.Progress, rows: Any) -> float | None:
        """The seconds left, estimated again when a cell started or finished, or every 30 s (40 ms for
        840 cells), and counted down in between."""
        mark, now = (p.ok, p.failed, p.running), time.monotonic()
        if self.eta is None or self.eta[0] != mark or now - self.eta[1] > 30.0:
            work = remaining_work(
                self.grid.cells,
                rows,
                workers=max(self.workers, p.running),
                now=store.utcnow(),
                is_done=self._done,
                keys=self.keys,
            )
            self.eta = (mark, now, work.seconds)
        left = self.eta[2]
        return None if left is None else max(0.0, left - (now - self.eta[1]))

    def _done(self, row: Any) -> bool:
        """Whether a cell needs no run in this run (as :meth:`store.Progress.describe` counts it)."""
        if row is None:
            return False
        if row.status == "failed" and self.retry_failed:
            return row.finished_at is not None and row.finished_at >= self.since
        return bool(row.status in ("ok", "failed"))

    def update(self, final: bool = False) -> store.Progress:
        rows = store.ledger(self.engine, self.grid.name)
        p = store.progress(self.engine, self.grid.name, self.ids, since=self.since, rows=rows)
        tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        for row in rows.values():
            if (
                row.status == "failed"
                and row.cell_id not in self.failures
                and row.finished_at
                and row.finished_at >= self.since
            ):
                self.failures.add(row.cell_id)
                print(("\r\033[K" if tty else "") + f"failed: {row.cell_id}: {row.error}", file=self.stream, flush=True)
                self.last = ""
        elapsed = time.perf_counter() - self.started
        line = p.describe(self.grid.name, elapsed, retry_failed=self.retry_failed, eta=self._eta(p, rows))
        changed = line.split(" (")[0] != self.last.split(" (")[0]  # cells done: not just the running count
        if tty:
            print("\r\033[K" + line, end="\n" if final else "", file=self.stream, flush=True)
        elif changed or final:
            print(line, file=self.stream, flush=True)
        self.last = line
        return p


# ---------------------------------------------------------------------------------------- the run
def _worker_args(
    config: Path,
    url: str,
    out: Path,
    since: datetime,
    threads: int,
    methods: Sequence[str],
    retry_failed: bool,
    heartbeat: int,
) -> list[str]:
    """The arguments of :func:`textcause.grid.worker.main` for this run's workers."""
    args = [
        "--config",
        str(config),
        "--db",
        url,
        "--out",
        str(out),
        "--since",
        since.isoformat(),
        "--threads",
        str(threads),
        "--heartbeat",
        str(heartbeat),
    ]
    for spec in methods:
        args += ["--method", spec]
    return args + (["--retry-failed"] if retry_failed else [])


WORKER_STARTS = ("auto", "forkserver", "subprocess")


def _fork_server(worker_start: str) -> Any:
    """The ``forkserver`` context that worker processes start from, its server started now (its
    imports overlap the run's preparation), or None to start each worker as a subprocess.

    ``auto``: the fork server where the platform has one (Linux), preloading
    :mod:`textcause.grid.preload`. Python keeps one server per process: a second run in this
    process forks from the same, already loaded server.
    """
    import multiprocessing

    if worker_start == "subprocess" or (
        worker_start == "auto"
        and (sys.platform != "linux" or "forkserver" not in multiprocessing.get_all_start_methods())
    ):
        return None
    from multiprocessing import forkserver

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["textcause.grid.preload"])
    forkserver.ensure_running()
    return context


class _Child:
    """A ``multiprocessing`` child with the ``poll`` / ``terminate`` / ``kill`` that :func:`_stop_workers` uses."""

    def __init__(self, process: Any) -> None:
        self.process = process

    def poll(self) -> int | None:
        return self.process.exitcode

    def terminate(self) -> None:
        self.process.terminate()

    def kill(self) -> None:
        self.process.kill()


class _Forked(_Child):
    """A forked worker (:func:`textcause.grid.worker.forked_main`) with ``subprocess.Popen``'s
    ``poll`` / ``returncode`` / ``terminate`` / ``kill``, so the runner watches both kinds alike."""

    def __init__(self, context: Any, argv: list[str], log: str, grid: Grid) -> None:
        from textcause.grid.worker import forked_main

        self.process = context.Process(target=forked_main, args=(argv, log, os.getcwd(), dict(os.environ), grid))
        self.process.start()

    @property
    def returncode(self) -> int | None:
        self.process.join()
        return self.process.exitcode


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM ignored within the block (main thread only; their handlers put back after)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in held.items():
            if handler is not None:  # None: installed outside Python, cannot be put back
                signal.signal(sig, handler)


def _children() -> set[Any]:
    """This process's live ``multiprocessing`` children."""
    import multiprocessing

    return set(multiprocessing.active_children())


def _other_children(procs: list[Any], before: set[Any]) -> list[Any]:
    """The ``multiprocessing`` children started since ``before`` (:func:`_children`) that are not in
    ``procs``: a worker started just as the stop came, before it was listed, which the interpreter
    would otherwise wait for at exit. Children the caller had before are not touched."""
    known = {id(p.process) for p in procs if isinstance(p, _Forked)}
    return [_Child(c) for c in _children() - before if id(c) not in known]


#: Seconds the runner gives its workers to end after SIGTERM, when it stops early, before SIGKILL.
STOP_GRACE = 10.0


def _stop_workers(procs: list[Any], grace: float = STOP_GRACE) -> None:
    """End the workers still running: SIGTERM, then SIGKILL for any alive after ``grace`` seconds.

    For a runner that stops early (Ctrl-C, SIGTERM, an error). Without it, a runner sent a signal of
    its own (``kill``, a scheduler's stop: its workers get none) would wait at its exit for forked
    workers (multiprocessing joins its children) while they ran the rest of the grid. A worker's
    unfinished cell stays ``running`` in the ledger and is taken over when the grid resumes.
    """
    running = [p for p in procs if p.poll() is None]
    for p in running:
        with contextlib.suppress(OSError):
            p.terminate()
    end = time.monotonic() + grace
    while time.monotonic() < end and any(p.poll() is None for p in running):
        _wait_for_exit(running, min(0.5, max(0.0, end - time.monotonic())))
    killed = [p for p in running if p.poll() is None]
    for p in killed:
        with contextlib.suppress(OSError):
            p.kill()
    end = time.monotonic() + 5.0  # reaped (poll), so none is left a zombie
    while time.monotonic() < end and any(p.poll() is None for p in killed):
        _wait_for_exit(killed, 0.1)


def worker_ended(index: int, code: int, log: str) -> str:
    """What a worker's exit code says, for the one line the runner prints (``code`` is not 0).

    A negative code is the signal that ended it (``subprocess`` and ``multiprocessing`` alike);
    SIGKILL is named as what it most often is, the kernel's out-of-memory killer.
    """
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        why = f"was killed by {name}"
        if -code == signal.SIGKILL:
            why += " (when nothing else sent it, the kernel's out-of-memory killer: see `dmesg`)"
    else:
        why = f"exited with code {code}"
    return f"worker {index} {why}; see {log}"


def _wait_for_exit(procs: list[Any], timeout: float) -> None:
    """Return when one of the running ``procs`` has exited, or after ``timeout`` seconds.

    Forked workers have a sentinel (a file descriptor that becomes readable when the process
    ends), so their exit is seen at once, and a worker that ended is reaped before this returns;
    subprocesses are polled every 0.1 s.
    """
    running = [p for p in procs if p.poll() is None]
    if not running:
        return
    forked = [p for p in running if isinstance(p, _Forked)]
    if len(forked) == len(running):
        from multiprocessing.connection import wait

        ready = wait([p.process.sentinel for p in forked], timeout)
        for p in forked:  # reaped, so its poll() says it ended (a fork's pipe can close just before)
            if p.process.sentinel in ready:
                p.process.join(1.0)
        return
    for _ in range(max(1, round(timeout / 0.1))):
        time.sleep(0.1)
        if any(p.poll() is not None for p in running):
            return


def _check_config_unchanged(grid: Grid, engine: Any, rerun_changed: bool = False) -> None:
    changed = grid.reconfigured(store.ledger(engine, grid.name))
    if changed and rerun_changed:
        models = sorted({c.model for c in grid.cells if c.cell_id in set(changed)})
        forgotten = store.forget_cells(engine, grid.name, changed)
        print(
            f"{grid.name}: {forgotten} finished cells whose configuration changed ({', '.join(models)}) "
            "are run again; their old rows are deleted.",
            file=sys.stderr,
            flush=True,
        )
    elif changed:
        raise ValueError(
            f"{len(changed)} finished cells of grid '{grid.name}' (e.g. {changed[0]}) were run with another "
            "configuration (a model YAML, an override or the evaluation settings changed): give the grid a new "
            "name, point --db at another database, or run those cells again with --rerun-changed."
        )


def run_benchmark(
    config: str | Path,
    *,
    db: str | None = None,
    out: str | Path | None = None,
    workers: int = 1,
    threads: int | None = None,
    methods: Sequence[str] = (),
    retry_failed: bool = False,
    rerun_changed: bool = False,
    dry_run: bool = False,
    heartbeat: int = HEARTBEAT_INTERVAL,
    freeze_gc: bool = False,
    worker_start: str = "auto",
    archive: str | Path | None = None,
) -> int:
    """Run (or resume) a grid: prepare the database and the study, run the workers, show progress.

    Args:
        config: the grid's YAML.
        db: a SQLAlchemy URL (default ``sqlite:///<out>/results.db``).
        out: run folders go to ``<out>/runs/`` (default ``runs/benchmark/<grid>``).
        workers: worker processes on this machine (1: in this process).
        threads: torch threads per worker (default: the grid's, else cores // workers).
        methods: more ``package.module:Name`` methods to evaluate.
        retry_failed: run failed cells again.
        rerun_changed: finished cells whose configuration changed since they ran (a model YAML, an
            override, a search space or the evaluation settings) are deleted, result rows and all,
            and run again; without it such cells stop the run before anything starts.
        dry_run: list the cells and their status (``changed`` for those), run nothing.
        heartbeat: seconds between Optuna heartbeats.
        freeze_gc: with one worker (in this process), freeze what lives after its first trained
            cell out of the garbage collector's scans (:func:`~textcause.grid.worker.worker_loop`);
            for a process of its own (the ``textcause benchmark`` command), not a caller's session.
            Worker processes always do.
        worker_start: how worker processes start (more than one worker): ``"forkserver"``, forked
            from a server that imported what cells use once (:mod:`textcause.grid.preload`), so no
            worker spends its first seconds importing; ``"subprocess"``, each a new
            ``python -m textcause.grid.worker`` that imports for itself; ``"auto"`` (the
            default): the fork server on Linux, else subprocesses.
        archive: a grid archive (``*.jsonl.gz``, :mod:`textcause.grid.keep`): its cells that the
            store lacks are added first, and it is rewritten with the finished cells as they come in
            (at most once a minute, and at the end). Not read by a dry run.

    Returns:
        The exit code: 0, or 1 when a cell failed, a worker or the database failed, or cells were
        left unfinished.

    Raises:
        ValueError: a bad option or grid, a cell whose model config, corpus or options cannot run
            (:func:`~textcause.grid.precheck.check_cells`, before anything runs), or finished cells
            run under another configuration (without ``rerun_changed``).
    """
    check_int(workers, "workers", "run_benchmark", low=1)
    if threads is not None:
        check_int(threads, "threads", "run_benchmark", low=1)
    check_options(worker_start, "worker_start", "run_benchmark", WORKER_STARTS)
    server = _fork_server(worker_start) if workers > 1 and not dry_run else None
    grid = load_grid(config, methods=methods)
    out = Path(out or Path("runs") / "benchmark" / grid.name).resolve()
    url = db or store.default_url(out)
    if dry_run:
        return _dry_run(grid, url, str(config))
    check_cells(grid.cells, str(config))  # every cell's settings, before anything is opened or run
    engine = store.open_store(url)
    keeper = GridArchive(archive, engine, grid.name) if archive is not None else None
    restored = keeper.restore() if keeper is not None else None
    if restored is not None:
        print(restored.describe("imported from"), file=sys.stderr, flush=True)
    _check_config_unchanged(grid, engine, rerun_changed)
    open_study(grid, url, create=True, heartbeat_interval=heartbeat, grace_period=GRACE_FACTOR * heartbeat)
    since = store.utcnow()
    threads = threads or grid.threads or max(1, (os.cpu_count() or 1) // workers)
    print(
        f"{grid.name}: {len(grid.cells)} cells, {workers} worker(s) x {threads} thread(s); results in {url}",
        file=sys.stderr,
        flush=True,
    )
    line = ProgressLine(grid, engine, since, retry_failed=retry_failed, workers=workers)
    status = 0
    procs: list[tuple[Any, Any]] = []
    before: set[Any] | None = None  # the children before the workers (multi-worker runs)
    try:
        if workers == 1:
            stop = threading.Event()

            def show() -> None:
                while not stop.wait(2.0):
                    line.update()
                    if keeper is not None:
                        keeper.update()

            shower = threading.Thread(target=show, daemon=True)
            shower.start()
            try:
                run_worker(
                    grid,
                    url,
                    out,
                    since,
                    threads=threads,
                    retry_failed=retry_failed,
                    heartbeat=heartbeat,
                    freeze_gc=freeze_gc,
                )
            finally:
                stop.set()
                shower.join()
        else:
            (out / "logs").mkdir(parents=True, exist_ok=True)
            before = _children()
            args = _worker_args(Path(config), url, out, since, threads, methods, retry_failed, heartbeat)
            command = [sys.executable, "-m", "textcause.grid.worker", *args, "--parent-pid", str(os.getpid())]
            for i in range(workers):
                log = open(out / "logs" / f"worker-{i}.log", "a", encoding="utf-8")  # noqa: SIM115 - closed below
                if server is None:
                    proc: Any = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=os.getcwd())
                else:  # a forked worker's parent is the server, not this process
                    proc = _Forked(server, args, log.name, grid)
                procs.append((proc, log))
            told: set[int] = set()
            while any(p.poll() is None for p, _ in procs):
                line.update()
                if keeper is not None:
                    keeper.update()
                _wait_for_exit([p for p, _ in procs], 1.0)  # the progress line once a second
                for i, (p, log) in enumerate(procs):  # a worker that died is said at once, the others go on
                    if i not in told and p.poll() not in (None, 0) and any(q.poll() is None for q, _ in procs):
                        told.add(i)
                        print(
                            f"\nerror: {worker_ended(i, p.poll(), log.name)}; the other workers go on.", file=sys.stderr
                        )
            for i, (p, log) in enumerate(procs):
                log.close()
                if p.returncode != 0:
                    if i not in told:
                        print(f"\nerror: {worker_ended(i, p.returncode, log.name)}.", file=sys.stderr)
                    status = 1
    except BaseException:  # Ctrl-C, SIGTERM (Terminated) or an error: the archive gets what finished
        with _signals_held():  # a second Ctrl-C or SIGTERM must not cut the cleanup short
            listed = [p for p, _ in procs]
            _stop_workers(listed + ([] if before is None else _other_children(listed, before)))
            kept = keeper.update(final=True) if keeper is not None else None
            if kept is not None:
                print(f"\n{kept.describe('kept in')}", file=sys.stderr, flush=True)
        raise
    p = line.update(final=True)
    kept = keeper.update(final=True) if keeper is not None else None
    if kept is not None:
        print(kept.describe("kept in"), file=sys.stderr, flush=True)
    failed = p.failed_since if retry_failed else p.failed
    if failed:
        print(
            f"error: {failed} cell{'s' if failed != 1 else ''} failed (their rows carry the error); "
            "--retry-failed runs them again.",
            file=sys.stderr,
        )
        status = 1
    if p.ok + failed < p.total:
        print(
            f"error: {p.total - p.ok - failed} cells were left unfinished; the same command runs them, "
            "keeping the finished ones.",
            file=sys.stderr,
        )
        status = 1
    return status


def _dry_run(grid: Grid, url: str, source: str) -> int:
    rows: dict[str, Any] = {}
    parsed = store.parse_url(url)
    database = str(parsed.database or "")
    if parsed.get_backend_name() != "sqlite" or database.startswith("file:") or os.path.exists(database):
        engine = store.read_only_engine(url)  # a dry run writes nothing: no tables, no migration, no lock
        if sa.inspect(engine).has_table(store.cells.name):
            rows = store.ledger(engine, grid.name)
        engine.dispose()
    changed = set(grid.reconfigured(rows))
    missing: dict[str, str] = {}
    for cell in grid.cells:
        if cell.method is None and not Path(cell.model_path).is_file():
            missing[cell.model] = str(cell.model_path)
            status = "cannot run: no model config"
        elif cell.cell_id in changed:
            status = "changed"  # finished under another configuration: --rerun-changed runs it again
        else:
            status = rows[cell.cell_id].status if cell.cell_id in rows else "todo"
        print(f"{cell.cell_id}\t{status}")
    done = sum(rows[c.cell_id].status == "ok" for c in grid.cells if c.cell_id in rows and c.cell_id not in changed)
    note = f", {len(changed)} changed since they ran" if changed else ""
    print(f"{grid.name}: {len(grid.cells)} cells ({done} done{note}) in {url}")
    if missing:
        names = ", ".join(f"'{m}' (expected {p})" for m, p in sorted(missing.items()))
        print(f"error: the grid names model configs that do not exist: {names}.", file=sys.stderr)
        return 2
    check_cells(grid.cells, source)  # the other settings a real run checks first
    return 0

"""The benchmark's results database: any SQLAlchemy URL (SQLite by default, PostgreSQL to share).

Two tables, written with SQLAlchemy Core:

``cells``
    one row per cell (``cell_id`` is the primary key): the claim ledger. A worker claims a cell by
    inserting its row, or by swapping the row's ``token`` (compare-and-swap), so two workers never
    hold the same cell; ``status`` is ``running``, ``ok`` or ``failed``.
``results``
    one row per cell x estimator (``UNIQUE(cell_id, estimator)``): every column of
    :data:`textcause.metrics.schema.RESULT_COLUMNS` plus the cell, grid, model config name, config hash,
    code version, timings, ``status`` and ``error``. ``model`` is the model config's name
    (``lr_bigram_binary``) and ``model_class`` the network's class (``LogisticRegression``). A failed cell has one row per planned estimator,
    with ``status = 'failed'`` and the cell's error. A ``results`` table made before the columns of
    :data:`textcause.metrics.schema.ADDED_COLUMNS` existed gains them, empty, when it is opened
    (:func:`add_missing_columns`): its rows keep their values and meaning. One whose columns had
    older names (:data:`textcause.metrics.schema.RENAMED_COLUMNS`: the Arbour-Dimmery interval was
    ``bound_low``, ``bound_high``, ``ci_tighter_than_bound`` on every estimator's row) is migrated in
    one transaction when it is opened (:func:`textcause.runs.store_migration.rename_old_columns`).

A cell's result rows and its ``cells`` status are written in one transaction, guarded by the
claim's token: they appear all together or not at all, and a worker whose claim was taken over
(it was presumed dead) writes nothing. On SQLite every transaction that may write starts with
``BEGIN IMMEDIATE`` (SQLAlchemy's documented pysqlite recipe) so concurrent writers queue instead of
failing; reads of the ledger and of stored rows (:func:`reading`) take no lock. Tables
are created under :func:`schema_lock` (a PostgreSQL advisory lock; on SQLite a file lock beside
the database file): ``CREATE TABLE`` checks, then creates, and Optuna creates its tables outside
any transaction of ours, so commands starting together on an empty database would otherwise collide.

A cell's failure budget is its own errors: a cell that raises is recorded ``failed`` at once (a
seeded run fails the same way again; ``--retry-failed`` runs it anew). An attempt whose worker was
killed by a signal or lost (no heartbeat) is not the cell's fault and never counts: the next worker
takes the cell over, however often that happens (:func:`claim_decision`).
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa

from textcause.metrics.schema import ADDED_COLUMNS, RESULT_COLUMNS, RESULT_SCHEMA
from textcause.runs.sqlite_reads import deferred_reads, deferred_reads_on
from textcause.runs.store_migration import rename_old_columns

STATUSES = ("running", "ok", "failed")
SQLITE_TIMEOUT = 120.0  # seconds a SQLite writer waits for the lock before giving up
SCHEMA_LOCK_KEY = 7_461_726_795_634_001  # the PostgreSQL advisory lock serialising table creation

_KEY = sa.String(255)
_SQL_TYPES = {int: sa.Integer, bool: sa.Boolean, float: sa.Float}


def _result_type(name: str) -> Any:
    if name in ("error", "run"):
        return sa.Text
    return _SQL_TYPES.get(RESULT_SCHEMA[name], _KEY)


metadata = sa.MetaData()

cells = sa.Table(
    "cells",
    metadata,
    sa.Column("cell_id", _KEY, primary_key=True),
    sa.Column("grid", _KEY, nullable=False, index=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("config_hash", sa.String(64)),
    sa.Column("token", sa.String(64), nullable=False),
    sa.Column("host", _KEY),
    sa.Column("pid", sa.Integer),
    sa.Column("trial_id", sa.Integer),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("started_at", sa.DateTime),
    sa.Column("finished_at", sa.DateTime),
    sa.Column("error", sa.Text),
)

EXTRA_COLUMNS = (
    "cell_id",
    "grid",
    "model_class",
    "config_hash",
    "code_version",
    "n_boot",
    "status",
    "attempt",
    "host",
    "started_at",
    "finished_at",
    "train_seconds",
    "eval_seconds",
)

results = sa.Table(
    "results",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("cell_id", _KEY, nullable=False),
    sa.Column("grid", _KEY, nullable=False, index=True),
    sa.Column("model_class", _KEY),
    sa.Column("config_hash", sa.String(64)),
    sa.Column("code_version", _KEY),
    sa.Column("n_boot", sa.Integer),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("attempt", sa.Integer),
    sa.Column("host", _KEY),
    sa.Column("started_at", sa.DateTime),
    sa.Column("finished_at", sa.DateTime),
    sa.Column("train_seconds", sa.Float),
    sa.Column("eval_seconds", sa.Float),
    *[sa.Column(name, _result_type(name), nullable=name != "estimator") for name in RESULT_COLUMNS],
    sa.UniqueConstraint("cell_id", "estimator", name="uq_results_cell_estimator"),
)


class ClaimLost(RuntimeError):
    """The cell was taken over by another worker (this one was presumed dead): nothing was written."""


@dataclass(frozen=True)
class Claimant:
    """Who claims a cell: the host and process, and the Optuna trial running it."""

    host: str
    pid: int
    trial_id: int | None = None

    @classmethod
    def current(cls, trial_id: int | None = None) -> Claimant:
        return cls(host=socket.gethostname(), pid=os.getpid(), trial_id=trial_id)


def utcnow() -> datetime:
    """The current UTC time, naive (what every DateTime column holds)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def default_url(out_dir: str | os.PathLike) -> str:
    """``sqlite:///<out_dir>/results.db`` with an absolute path."""
    return f"sqlite:///{os.path.abspath(os.fspath(out_dir))}/results.db"


def make_sqlite_transactional(engine: sa.Engine) -> sa.Engine:
    """Make a pysqlite engine emit ``BEGIN IMMEDIATE`` for every transaction (and use WAL).

    Without this, pysqlite starts a transaction lazily at the first write, so a read-then-write
    transaction can fail with "database is locked" under concurrency instead of waiting. A
    transaction begun inside :func:`textcause.runs.sqlite_reads.deferred_reads` (:func:`reading`,
    Optuna's read-only calls) starts a plain (deferred) ``BEGIN`` instead: in WAL mode a reader sees
    the last committed state and neither waits for the writer nor makes it wait.

    Commits are synced with ``PRAGMA synchronous = NORMAL``, the setting SQLite's documentation
    gives for WAL: the database stays consistent whatever happens, and a killed process loses
    nothing it committed; only a power cut or an operating-system crash can take back the last
    commits (the cells they finished, or a sweep's last trials, then run again on resume). This
    holds for every SQLite file opened here: the benchmark's and the sweeps'. ``FULL`` synced the log on every
    commit (0.38 ms each on this machine, against 0.007), about twenty times a cell, while holding
    the lock the other workers wait for.
    """

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(SQLITE_TIMEOUT * 1000)}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: sa.Connection) -> None:
        conn.exec_driver_sql("BEGIN" if deferred_reads_on() else "BEGIN IMMEDIATE")

    return engine


@contextlib.contextmanager
def reading(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A read-only transaction: on SQLite a deferred ``BEGIN`` (no write lock; see
    :func:`make_sqlite_transactional`), elsewhere an ordinary one."""
    with engine.connect() as conn:
        with deferred_reads():  # only the BEGIN: the caller's block is not marked
            transaction = conn.begin()
        with transaction:
            yield conn


@contextlib.contextmanager
def schema_lock(engine: sa.Engine | str) -> Iterator[None]:
    """Hold a database-wide lock while tables are created (PostgreSQL and SQLite files).

    PostgreSQL's ``CREATE TABLE`` and ``CREATE TYPE`` check, then create: two processes creating the
    same table at once make one fail with a unique violation on ``pg_type``. A session-level advisory
    lock on a connection of its own makes them take turns (the others then find the tables made);
    the lock goes with the connection if the process dies. On a SQLite file the lock is an OS file
    lock on ``<database>.lock`` (released by the kernel if the process dies): Optuna creates its
    tables and its version row outside our ``BEGIN IMMEDIATE`` transactions, so two commands
    starting at once on a fresh file failed with "table studies already exists". An in-memory
    SQLite database has one process: nothing to lock.

    Args:
        engine: the database, or its URL.
    """
    url = sa.engine.make_url(engine) if isinstance(engine, str) else engine.url
    if url.get_backend_name() == "sqlite":
        with _sqlite_file_lock(url.database):
            yield
        return
    if url.get_backend_name() != "postgresql":
        yield
        return
    own = isinstance(engine, str)
    pg = sa.create_engine(url) if own else engine
    try:
        with pg.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(sa.text("SELECT pg_advisory_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
            try:
                yield
            finally:
                conn.execute(sa.text("SELECT pg_advisory_unlock(:key)"), {"key": SCHEMA_LOCK_KEY})
    finally:
        if own:
            pg.dispose()


@contextlib.contextmanager
def _sqlite_file_lock(database: str | None) -> Iterator[None]:
    if not database or database == ":memory:" or database.startswith("file:"):
        yield
        return
    from filelock import (
        FileLock,  # a dependency of torch: always installed
        Timeout,
    )

    path = os.path.abspath(database)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lock = FileLock(f"{path}.lock", timeout=SQLITE_TIMEOUT)
    try:
        lock.acquire()
    except Timeout:
        raise
    except OSError as err:
        raise ValueError(
            f"Cannot take the lock file '{path}.lock' ({err.strerror or err}): the benchmark needs to create "
            "and lock it beside the database; make it (or its folder) writable, or remove it if it is not a file."
        ) from None
    try:
        yield
    finally:
        lock.release()


def optuna_storage(
    url: str,
    *,
    heartbeat_interval: int,
    grace_period: int,
    max_retry: int | None,
    lock: sa.Engine | None = None,
    create: bool = True,
) -> Any:
    """Optuna's ``RDBStorage`` on ``url``, as the benchmark and the sweeps share it.

    Running trials send heartbeats; a trial whose heartbeat stopped for ``grace_period`` seconds is
    failed and re-queued with the same parameters (``RetryHeartbeatStaleTrialCallback``, at most
    ``max_retry`` times; None: no limit). Optuna creates its tables as it opens the storage, so
    this happens under :func:`schema_lock` (of ``lock``, else of ``url``): commands starting
    together take turns. ``create=False`` (a benchmark worker, whose runner opened the storage
    first) skips the tables, Optuna's schema check and the lock. On SQLite every later session
    takes the write lock up front (``BEGIN IMMEDIATE``), except Optuna's read-only calls
    (:class:`textcause.runs.rdb.ReadingRDBStorage`), which take none.
    """
    import warnings

    import optuna
    from optuna.storages import RetryHeartbeatStaleTrialCallback

    from textcause.runs.rdb import ReadingRDBStorage

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    sqlite = sa.engine.make_url(url).get_backend_name() == "sqlite"
    engine_kwargs = {"connect_args": {"timeout": SQLITE_TIMEOUT}} if sqlite else {"pool_pre_ping": True}
    with schema_lock(lock if lock is not None else url) if create else contextlib.nullcontext():
        storage = ReadingRDBStorage(
            url,
            engine_kwargs=engine_kwargs,
            skip_compatibility_check=not create,
            heartbeat_interval=heartbeat_interval,
            grace_period=grace_period,
            heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=max_retry),
            skip_table_creation=not create,
        )
    if sqlite:  # Optuna's sessions read then write: make them take the write lock up front
        make_sqlite_transactional(storage.engine)
        storage.engine.dispose()
    return storage


def parse_url(url: str) -> Any:
    """``url`` parsed by SQLAlchemy, its dialect and driver checked (one ``ValueError`` sentence if not)."""
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        raise ValueError(
            f"'{url}' is not a database URL: give e.g. sqlite:///runs/results.db or postgresql://host/db."
        ) from None
    try:
        parsed.get_dialect()
    except sa.exc.NoSuchModuleError:
        raise ValueError(
            f"The database URL '{url}' has the unknown scheme '{parsed.drivername}' (SQLAlchemy has no such "
            "dialect or driver): give e.g. sqlite:///runs/results.db or postgresql://host/db."
        ) from None
    except ImportError as err:
        raise ValueError(
            f"The database URL '{url}' needs the driver module '{err.name or err}', which is not installed."
        ) from None
    return parsed


def read_only_engine(url: str) -> sa.Engine:
    """A plain engine for reading ``url`` (``--dry-run``): it creates, migrates and locks nothing."""
    parse_url(url)
    return sa.create_engine(url)


def _read_only_sentence(parsed: Any) -> str:
    where = parsed.database if parsed.get_backend_name() == "sqlite" else parsed.render_as_string(hide_password=True)
    where = str(where).removeprefix("file:")
    return (
        f"The results database '{where}' is read-only (its file, its folder, or the URL's mode): the benchmark "
        "writes every cell into it; make it writable or give another --db."
    )


def check_writable(engine: sa.Engine, parsed: Any) -> None:
    """Refuse a SQLite database this process cannot write, before any table or cell is touched
    (a rolled-back no-op write: ``PRAGMA user_version`` set to itself)."""
    if parsed.get_backend_name() != "sqlite":
        return
    try:
        with engine.connect() as conn:
            version = int(conn.exec_driver_sql("PRAGMA user_version").scalar() or 0)
            conn.exec_driver_sql(f"PRAGMA user_version = {version}")
            conn.rollback()
    except sa.exc.OperationalError as err:
        if "readonly" in str(err) or "read-only" in str(err):
            raise ValueError(_read_only_sentence(parsed)) from None
        raise


def connect(url: str, *, create: bool = True) -> sa.Engine:
    """An engine for ``url``; creates the SQLite file's folder and both tables if missing, and migrates an
    older ``results`` table (renamed and added columns) (``create=False``: a benchmark worker, whose
    runner made and migrated them; they must exist).

    Raises:
        ValueError: not a URL, an unknown scheme or a missing driver, a read-only SQLite database, a
            lock file that cannot be taken (one sentence each).
    """
    parsed = parse_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:" and not parsed.database.startswith("file:"):
            os.makedirs(os.path.dirname(os.path.abspath(parsed.database)), exist_ok=True)
        engine = make_sqlite_transactional(sa.create_engine(url, connect_args={"timeout": SQLITE_TIMEOUT}))
    else:
        engine = sa.create_engine(url, pool_pre_ping=True)
    if create:
        check_writable(engine, parsed)
        with schema_lock(engine):
            metadata.create_all(engine, checkfirst=True)
            rename_old_columns(engine)
            add_missing_columns(engine)
    inspector = sa.inspect(engine)
    for table in (cells, results):
        if not create and not inspector.has_table(table.name):
            raise ValueError(
                f"{parsed.render_as_string(hide_password=True)} has no '{table.name}' table: "
                "start the grid with `textcause benchmark`, which makes it."
            )
        missing = sorted(set(table.c.keys()) - {c["name"] for c in inspector.get_columns(table.name)})
        if missing:
            raise ValueError(
                f"The '{table.name}' table in {parsed.render_as_string(hide_password=True)} lacks the columns "
                f"{missing} (it was made by another version of textcause): use another database."
            )
    return engine


def add_missing_columns(engine: sa.Engine) -> list[str]:
    """Add to an existing ``results`` table the :data:`~textcause.metrics.schema.ADDED_COLUMNS` it lacks.

    A store written before those columns existed gains them empty (``ALTER TABLE ... ADD COLUMN``,
    nullable, no default): its rows keep every value they had and read None in the new columns, which
    is what they mean (no influence-function or refitting interval was computed for them). Any other missing
    column is left for :func:`connect` to refuse. Call it under :func:`schema_lock`.

    Returns:
        The names of the columns added (empty when none was missing).
    """
    inspector = sa.inspect(engine)
    if not inspector.has_table(results.name):
        return []
    have = {c["name"] for c in inspector.get_columns(results.name)}
    added = [name for name in ADDED_COLUMNS if name not in have]
    if not added:
        return []
    with engine.begin() as conn:
        for name in added:
            column = results.c[name]
            kind = column.type.compile(dialect=engine.dialect)
            conn.exec_driver_sql(f'ALTER TABLE {results.name} ADD COLUMN "{name}" {kind}')
    return added


# ---------------------------------------------------------------------------------------- ledger
def ledger(engine: sa.Engine, grid: str) -> dict[str, Any]:
    """Every ``cells`` row of ``grid``, by cell id."""
    with reading(engine) as conn:
        rows = conn.execute(sa.select(cells).where(cells.c.grid == grid)).all()
    return {r.cell_id: r for r in rows}


def try_claim(
    engine: sa.Engine, cell_id: str, grid: str, config_hash: str, claimant: Claimant, *, previous: Any | None
) -> str | None:
    """Claim a cell: insert its row (``previous is None``) or take over ``previous`` by its token.

    Args:
        engine: the results database.
        cell_id, grid, config_hash: the cell.
        claimant: who claims it.
        previous: the cell's ``cells`` row as last read (None: there was none).

    Returns:
        The new claim token, or None when another worker changed the row first.
    """
    token = uuid.uuid4().hex
    values = dict(
        status="running",
        token=token,
        host=claimant.host,
        pid=claimant.pid,
        trial_id=claimant.trial_id,
        started_at=utcnow(),
        finished_at=None,
        error=None,
        config_hash=config_hash,
    )
    try:
        with engine.begin() as conn:
            if previous is None:
                conn.execute(sa.insert(cells).values(cell_id=cell_id, grid=grid, attempts=1, **values))
                return token
            done = conn.execute(  # the row as read: its claim and its status (a holder may have finished since)
                sa.update(cells)
                .where(cells.c.cell_id == cell_id, cells.c.token == previous.token, cells.c.status == previous.status)
                .values(attempts=cells.c.attempts + 1, **values)
            )
            return token if done.rowcount == 1 else None
    except sa.exc.IntegrityError:  # another worker inserted the row first
        return None


def claim_decision(row: Any, *, alive: Callable[[Any], bool], retry_failed: bool, since: datetime) -> str:
    """What a worker does with a cell, given its ledger row (None: no row yet).

    A ``running`` row whose worker is dead (killed by a signal, or lost: its heartbeat stopped) is
    taken over, however many attempts died before: a kill is not the cell's fault, and only the
    cell's own error (recorded as ``failed`` by the worker that saw it) ends it as failed.

    Args:
        row: the cell's ``cells`` row.
        alive: whether the worker holding a ``running`` row is alive.
        retry_failed: run again cells that failed before ``since``.
        since: when this run started.

    Returns:
        ``run`` (claim it and run it), ``skip`` (finished) or ``wait`` (a live worker holds it).
    """
    if row is None:
        return "run"
    if row.status == "ok":
        return "skip"
    if row.status == "failed":
        retry = retry_failed and (row.finished_at is None or row.finished_at < since)
        return "run" if retry else "skip"
    return "wait" if alive(row) else "run"


def _clean(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int, datetime)):
        return value
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def finish_cell(
    engine: sa.Engine,
    cell_id: str,
    token: str,
    *,
    status: str,
    rows: Sequence[Mapping[str, Any]],
    error: str | None = None,
) -> None:
    """Record a cell's outcome: its result rows and its ledger status, in one transaction.

    Earlier rows of the cell (a failed attempt being retried) are replaced.

    Raises:
        ValueError: if ``status`` is not ``ok`` or ``failed``.
        ClaimLost: if the claim ``token`` no longer holds the cell (nothing is written).
    """
    if status not in ("ok", "failed"):
        raise ValueError(f"The 'status' parameter of finish_cell must be 'ok' or 'failed'. Got {status!r} instead.")
    names = set(results.c.keys()) - {"id"}
    clean = [{k: _clean(r.get(k)) for k in names} for r in rows]
    with engine.begin() as conn:
        done = conn.execute(
            sa.update(cells)
            .where(cells.c.cell_id == cell_id, cells.c.token == token, cells.c.status == "running")
            .values(status=status, finished_at=utcnow(), error=error)
        )
        if done.rowcount != 1:
            raise ClaimLost(f"Cell {cell_id!r} was taken over by another worker; its results were not written.")
        conn.execute(sa.delete(results).where(results.c.cell_id == cell_id))
        if clean:
            conn.execute(sa.insert(results), clean)


def cell_rows(engine: sa.Engine, cell_id: str) -> list[dict[str, Any]]:
    """The stored result rows of one cell (every column but the row id), in estimator order of storage."""
    with reading(engine) as conn:
        found = conn.execute(sa.select(results).where(results.c.cell_id == cell_id).order_by(results.c.id)).all()
    return [{k: v for k, v in r._mapping.items() if k != "id"} for r in found]


# ---------------------------------------------------------------------------------------- reading
@dataclass(frozen=True)
class Progress:
    """Counts of a grid's cells in the ledger (``*_since``: finished at or after a given time)."""

    total: int
    ok: int
    failed: int
    running: int
    ok_since: int = 0
    failed_since: int = 0

    def describe(self, name: str, elapsed: float, *, retry_failed: bool = False) -> str:
        """``smoke: 40/98 cells done (2 failed, 2 running), elapsed 0:01:02, ETA 0:01:30``.

        With ``retry_failed``, cells that failed before this run count as not done. The ETA assumes
        the remaining cells take as long as those finished in this run.
        """
        failed = self.failed_since if retry_failed else self.failed
        done = self.ok + failed
        finished = self.ok_since + self.failed_since
        remaining = self.total - done
        if remaining <= 0:
            eta = _clock(0)
        elif finished == 0:
            eta = "?"
        else:
            eta = _clock(elapsed / finished * remaining)
        return (
            f"{name}: {done}/{self.total} cells done ({failed} failed, {self.running} running), "
            f"elapsed {_clock(elapsed)}, ETA {eta}"
        )


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def progress(
    engine: sa.Engine,
    grid: str,
    cell_ids: Iterable[str],
    since: datetime | None = None,
    *,
    rows: Mapping[str, Any] | None = None,
) -> Progress:
    """How many of ``cell_ids`` are ok, failed and running, and how many finished since ``since``
    (from ``rows``, the grid's :func:`ledger` as just read, when given)."""
    wanted = set(cell_ids)
    found = [r for r in (ledger(engine, grid) if rows is None else rows).values() if r.cell_id in wanted]

    def recent(r: Any) -> bool:
        return since is not None and r.finished_at is not None and r.finished_at >= since

    return Progress(
        total=len(wanted),
        ok=sum(r.status == "ok" for r in found),
        failed=sum(r.status == "failed" for r in found),
        running=sum(r.status == "running" for r in found),
        ok_since=sum(r.status == "ok" and recent(r) for r in found),
        failed_since=sum(r.status == "failed" and recent(r) for r in found),
    )


def read_table(source: str | sa.Engine, table: sa.Table, **equals: Any) -> Any:
    """Every row of one of the experiments' own tables (optionally where ``column == value``) as a
    DataFrame ordered by ``id``; an empty frame with the table's columns when the table does not exist
    (reading creates nothing)."""
    import pandas as pd

    engine = sa.create_engine(source) if isinstance(source, str) else source
    try:
        if not sa.inspect(engine).has_table(table.name):
            return pd.DataFrame(columns=list(table.c.keys()))
        query = sa.select(table).order_by(table.c.id)
        for column, value in equals.items():
            if value is not None:
                query = query.where(table.c[column] == value)
        with engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
    finally:
        if isinstance(source, str):
            engine.dispose()
    return pd.DataFrame(rows, columns=list(table.c.keys()))


def read_results(source: str | sa.Engine, grid: str | None = None, *, status: str | None = None) -> Any:
    """The ``results`` table (optionally one grid, one status) as a pandas DataFrame."""
    import pandas as pd

    engine = connect(source) if isinstance(source, str) else source
    query = sa.select(results)
    if grid is not None:
        query = query.where(results.c.grid == grid)
    if status is not None:
        query = query.where(results.c.status == status)
    with engine.begin() as conn:
        return pd.DataFrame(conn.execute(query.order_by(results.c.id)).mappings().all(), columns=list(results.c.keys()))

"""Opening the results store: any SQLAlchemy URL (SQLite by default, PostgreSQL to share).

:func:`open_store` is the one opener every caller uses (the benchmark, its workers, sweeps and each
experiment): it checks the URL, creates the SQLite file's folder, and creates ``cells``, ``results``
and the experiment tables a caller names (:mod:`textcause.store.tables`, the one table registry)
under :func:`schema_lock`. A ``results`` table made before the columns of
:data:`textcause.metrics.schema.ADDED_COLUMNS` existed gains them, empty, when it is opened
(:func:`add_missing_columns`); one whose columns had older names
(:data:`textcause.metrics.schema.RENAMED_COLUMNS`) is migrated in one transaction
(:func:`textcause.store.migration.rename_old_columns`).

On SQLite every transaction that may write starts with ``BEGIN IMMEDIATE`` (SQLAlchemy's documented
pysqlite recipe) so concurrent writers queue instead of failing; reads of the ledger and of stored
rows (:func:`reading`) take no lock. Tables are created under :func:`schema_lock` (a PostgreSQL
advisory lock; on SQLite a file lock beside the database file): ``CREATE TABLE`` checks, then
creates, and Optuna creates its tables outside any transaction of ours, so commands starting
together on an empty database would otherwise collide.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa

from textcause.metrics.schema import ADDED_COLUMNS
from textcause.store.migration import rename_old_columns
from textcause.store.sqlite_reads import deferred_reads, deferred_reads_on
from textcause.store.tables import cells, metadata, results

__all__ = [
    "SCHEMA_LOCK_KEY",
    "SQLITE_TIMEOUT",
    "add_missing_columns",
    "_check_writable",
    "database_url",
    "default_url",
    "make_sqlite_transactional",
    "open_store",
    "optuna_storage",
    "parse_url",
    "read_only_engine",
    "read_results",
    "read_table",
    "reading",
    "schema_lock",
    "utcnow",
    "wal_mode",
]

SQLITE_TIMEOUT = 120.0  # seconds a SQLite writer waits for the lock before giving up
SCHEMA_LOCK_KEY = 7_461_726_795_634_001  # the PostgreSQL advisory lock serialising table creation


def utcnow() -> datetime:
    """The current UTC time, naive (what every DateTime column holds)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def default_url(out_dir: str | os.PathLike) -> str:
    """``sqlite:///<out_dir>/results.db`` with an absolute path."""
    return f"sqlite:///{os.path.abspath(os.fspath(out_dir))}/results.db"


def wal_mode(cursor: Any, timeout: float | None = None) -> None:
    """``PRAGMA journal_mode = WAL`` on a DB-API ``cursor``, waiting up to ``timeout`` seconds (default
    :data:`SQLITE_TIMEOUT`) for the lock as any other statement here does.

    SQLite answers this pragma with "database is locked" at once, without calling its busy handler,
    while another connection holds a write lock on a file that is not yet in WAL mode: the moment
    several commands open a new database together (one of four first starts, 1 in 120 under load).
    It is tried again with growing pauses (10 ms to 0.5 s), the last time at ``timeout``; any other
    error, or the lock still held then, is raised as it came.
    """
    limit = SQLITE_TIMEOUT if timeout is None else timeout
    deadline = time.monotonic() + limit
    pause = 0.01
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except Exception as err:  # the driver's OperationalError (pysqlite's, or another DB-API module's)
            left = deadline - time.monotonic()
            if "database is locked" not in str(err) or left <= 0:
                raise
        time.sleep(min(pause, left))  # the last try comes at the deadline
        pause = min(2 * pause, 0.5)


def make_sqlite_transactional(engine: sa.Engine) -> sa.Engine:
    """Make a pysqlite engine emit ``BEGIN IMMEDIATE`` for every transaction (and use WAL).

    Without this, pysqlite starts a transaction lazily at the first write, so a read-then-write
    transaction can fail with "database is locked" under concurrency instead of waiting. A
    transaction begun inside :func:`textcause.store.sqlite_reads.deferred_reads` (:func:`reading`,
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
        wal_mode(cursor)
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
    (:class:`textcause.store.rdb.ReadingRDBStorage`), which take none.
    """
    import warnings

    import optuna
    from optuna.storages import RetryHeartbeatStaleTrialCallback

    from textcause.store.rdb import ReadingRDBStorage

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


def database_url(url: str, example: str = "results.db") -> Any:
    """``url`` parsed by SQLAlchemy; one ``ValueError`` sentence (suggesting ``sqlite:///runs/<example>``)
    if it is not a database URL. Neither its dialect nor its driver is checked (:func:`parse_url` does)."""
    try:
        return sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        raise ValueError(
            f"'{url}' is not a database URL: give e.g. sqlite:///runs/{example} or postgresql://host/db."
        ) from None


def parse_url(url: str) -> Any:
    """``url`` parsed by SQLAlchemy, its dialect and driver checked (one ``ValueError`` sentence if not)."""
    parsed = database_url(url)
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


def _check_writable(engine: sa.Engine, parsed: Any) -> None:
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


def open_store(url: str, *tables: sa.Table, create: bool = True) -> sa.Engine:
    """An engine for ``url``; creates the SQLite file's folder, ``cells``, ``results`` and ``tables`` (an
    experiment's own, from :mod:`textcause.store.tables`) if missing, and migrates an older ``results``
    table (renamed and added columns) (``create=False``: a benchmark worker, whose runner made and
    migrated them; they must exist).

    >>> from textcause.store.tables import gender_selection
    >>> engine = open_store("sqlite://", gender_selection)  # an in-memory database
    >>> sorted(sa.inspect(engine).get_table_names())
    ['cells', 'gender_selection', 'results']

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
        _check_writable(engine, parsed)
        with schema_lock(engine):
            metadata.create_all(engine, tables=[cells, results, *tables], checkfirst=True)
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
    column is left for :func:`open_store` to refuse. Call it under :func:`schema_lock`.

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

    engine = open_store(source) if isinstance(source, str) else source
    query = sa.select(results)
    if grid is not None:
        query = query.where(results.c.grid == grid)
    if status is not None:
        query = query.where(results.c.status == status)
    with engine.begin() as conn:
        return pd.DataFrame(conn.execute(query.order_by(results.c.id)).mappings().all(), columns=list(results.c.keys()))

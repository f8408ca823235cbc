"""The results database: claims are exclusive, a cell's rows appear all-or-nothing, reading back."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import time
from datetime import datetime, timedelta
from types import SimpleNamespace

import pytest
import sqlalchemy as sa

from textcause import store
from textcause.metrics.schema import RESULT_COLUMNS

GRID = "g"
ESTIMATORS = ("unadjusted", "ipw", "stratified", "matching")


@pytest.fixture
def engine(tmp_path):
    return store.open_store(store.default_url(tmp_path))


def _rows(cell_id, estimators=ESTIMATORS, **extra):
    return [
        {"cell_id": cell_id, "grid": GRID, "estimator": e, "status": "ok", "ate": 0.1 * i, **extra}
        for i, e in enumerate(estimators)
    ]


def _claim(engine, cell_id, previous=None, pid=1, trial_id=None):
    return store.try_claim(engine, cell_id, GRID, "hash", store.Claimant("h", pid, trial_id), previous=previous)


def test_tables_have_every_result_column_and_the_unique_key(engine):
    inspector = sa.inspect(engine)
    cols = {c["name"] for c in inspector.get_columns("results")}
    assert set(RESULT_COLUMNS) <= cols
    assert set(store.EXTRA_COLUMNS) <= cols
    uniques = inspector.get_unique_constraints("results")
    assert [sorted(u["column_names"]) for u in uniques] == [["cell_id", "estimator"]]
    assert inspector.get_pk_constraint("cells")["constrained_columns"] == ["cell_id"]


def test_default_url_is_an_absolute_sqlite_file(tmp_path):
    url = store.default_url(tmp_path / "out")
    assert url == f"sqlite:///{tmp_path}/out/results.db"
    store.open_store(url)
    assert (tmp_path / "out" / "results.db").exists()


def test_connect_rejects_a_malformed_url():
    with pytest.raises(ValueError, match="is not a database URL"):
        store.open_store("not a url")


def test_a_new_cell_is_claimed_once(engine):
    first = _claim(engine, "c1")
    assert first is not None
    assert _claim(engine, "c1") is None  # the row exists: a second insert loses
    row = store.ledger(engine, GRID)["c1"]
    assert (row.status, row.token, row.attempts, row.host, row.pid) == ("running", first, 1, "h", 1)


def test_a_takeover_swaps_the_token_and_only_one_of_two_racers_wins(engine):
    _claim(engine, "c1")
    row = store.ledger(engine, GRID)["c1"]
    won = _claim(engine, "c1", previous=row, pid=2)
    lost = _claim(engine, "c1", previous=row, pid=3)  # read the same row, came second
    assert won is not None and lost is None
    after = store.ledger(engine, GRID)["c1"]
    assert (after.token, after.pid, after.attempts) == (won, 2, 2)


def test_a_takeover_from_a_row_read_before_its_holder_finished_is_refused(engine):
    """Before: the takeover compared the token alone, which finishing keeps, so a worker that read
    the row while it was running (and then found the holder's trial complete) ran the cell again."""
    token = _claim(engine, "c1")
    stale = store.ledger(engine, GRID)["c1"]  # running
    store.finish_cell(engine, "c1", token, status="ok", rows=_rows("c1"))
    assert _claim(engine, "c1", previous=stale, pid=2) is None
    after = store.ledger(engine, GRID)["c1"]
    assert (after.status, after.token, after.attempts) == ("ok", token, 1)


def test_finish_writes_rows_and_status_together(engine):
    token = _claim(engine, "c1")
    store.finish_cell(engine, "c1", token, status="ok", rows=_rows("c1"))
    df = store.read_results(engine, GRID)
    assert sorted(df["estimator"]) == sorted(ESTIMATORS)
    assert store.ledger(engine, GRID)["c1"].status == "ok"
    assert store.ledger(engine, GRID)["c1"].finished_at is not None


def test_a_lost_claim_writes_nothing(engine):
    stale = _claim(engine, "c1")
    row = store.ledger(engine, GRID)["c1"]
    _claim(engine, "c1", previous=row, pid=2)  # another worker took it over
    with pytest.raises(store.ClaimLost, match="taken over"):
        store.finish_cell(engine, "c1", stale, status="ok", rows=_rows("c1"))
    assert store.read_results(engine, GRID).empty
    assert store.ledger(engine, GRID)["c1"].status == "running"


def test_a_failing_insert_rolls_back_the_status_too(engine):
    token = _claim(engine, "c1")
    with pytest.raises(sa.exc.IntegrityError):  # the same estimator twice breaks UNIQUE(cell_id, estimator)
        store.finish_cell(engine, "c1", token, status="ok", rows=_rows("c1", ("ipw", "ipw")))
    assert store.read_results(engine, GRID).empty
    assert store.ledger(engine, GRID)["c1"].status == "running"
    store.finish_cell(engine, "c1", token, status="ok", rows=_rows("c1"))  # the claim still holds
    assert len(store.read_results(engine, GRID)) == 4


def test_a_retry_replaces_the_failed_rows(engine):
    token = _claim(engine, "c1")
    store.finish_cell(
        engine,
        "c1",
        token,
        status="failed",
        error="boom",
        rows=[{**r, "status": "failed", "error": "boom", "ate": None} for r in _rows("c1")],
    )
    row = store.ledger(engine, GRID)["c1"]
    assert (row.status, row.error) == ("failed", "boom")
    token = _claim(engine, "c1", previous=row)
    store.finish_cell(engine, "c1", token, status="ok", rows=_rows("c1"))
    df = store.read_results(engine, GRID)
    assert len(df) == 4 and set(df["status"]) == {"ok"}
    assert store.ledger(engine, GRID)["c1"].attempts == 2


def test_finish_rejects_an_unknown_status(engine):
    token = _claim(engine, "c1")
    with pytest.raises(ValueError, match="The 'status' parameter of finish_cell must be 'ok' or 'failed'"):
        store.finish_cell(engine, "c1", token, status="done", rows=[])


def test_nan_and_numpy_values_are_stored_as_plain_values(engine):
    np = pytest.importorskip("numpy")
    token = _claim(engine, "c1")
    rows = [
        {
            "cell_id": "c1",
            "grid": GRID,
            "estimator": "ipw",
            "status": "ok",
            "ate": np.float64("nan"),
            "n_used": np.int64(7),
            "covers_truth": np.bool_(True),
            "bias": np.float32(0.5),
        }
    ]
    store.finish_cell(engine, "c1", token, status="ok", rows=rows)
    got = store.read_results(engine, GRID).iloc[0]
    assert got["n_used"] == 7 and bool(got["covers_truth"]) and got["bias"] == 0.5
    assert got["ate"] is None or got["ate"] != got["ate"]  # NULL


def test_progress_counts_and_since(engine):
    t0 = store.utcnow()
    for cid, status in (("a", "ok"), ("b", "failed"), ("c", None)):
        token = _claim(engine, cid)
        if status:
            store.finish_cell(engine, cid, token, status=status, rows=[])
    p = store.progress(engine, GRID, ["a", "b", "c", "d"], since=t0)
    assert (p.total, p.ok, p.failed, p.running, p.ok_since, p.failed_since) == (4, 1, 1, 1, 1, 1)
    later = store.progress(engine, GRID, ["a", "b", "c", "d"], since=store.utcnow() + timedelta(seconds=5))
    assert (later.ok_since, later.failed_since) == (0, 0)


def test_progress_line():
    p = store.Progress(total=10, ok=4, failed=2, running=1, ok_since=2, failed_since=1)
    assert p.describe("g", 30.0) == "g: 6/10 cells done (2 failed, 1 running), elapsed 0:00:30, ETA 0:00:40"
    # with --retry-failed, the failure from before this run is not done: 5 done, 5 to go at 10 s a cell
    assert p.describe("g", 30.0, retry_failed=True).startswith("g: 5/10 cells done (1 failed, 1 running)")
    assert p.describe("g", 30.0, retry_failed=True).endswith("ETA 0:00:50")
    assert store.Progress(3, 0, 0, 1).describe("g", 5.0).endswith("ETA ?")
    assert store.Progress(3, 3, 0, 0).describe("g", 3725.0).endswith("elapsed 1:02:05, ETA 0:00:00")


NOW = datetime(2026, 1, 2, 3, 4, 5)


@pytest.mark.parametrize(
    ("row", "alive", "retry", "expected"),
    [
        (None, True, False, "run"),
        (SimpleNamespace(status="ok", attempts=1, finished_at=NOW), False, True, "skip"),
        (SimpleNamespace(status="failed", attempts=1, finished_at=NOW - timedelta(seconds=1)), False, False, "skip"),
        (SimpleNamespace(status="failed", attempts=1, finished_at=NOW - timedelta(seconds=1)), False, True, "run"),
        (SimpleNamespace(status="failed", attempts=1, finished_at=NOW), False, True, "skip"),  # failed in this run
        (SimpleNamespace(status="running", attempts=1, finished_at=None), True, False, "wait"),
        (SimpleNamespace(status="running", attempts=1, finished_at=None), False, False, "run"),
        # a dead worker's attempts never count against the cell: killed 3 (or 30) times, it still runs
        (SimpleNamespace(status="running", attempts=3, finished_at=None), False, False, "run"),
        (SimpleNamespace(status="running", attempts=30, finished_at=None), False, False, "run"),
        (SimpleNamespace(status="running", attempts=30, finished_at=None), True, False, "wait"),
    ],
)
def test_claim_decision(row, alive, retry, expected):
    got = store.claim_decision(row, alive=lambda r: alive, retry_failed=retry, since=NOW)
    assert got == expected


def _race(url, cell_ids, pid, queue):
    engine = store.open_store(url)
    won = [c for c in cell_ids if store.try_claim(engine, c, GRID, "h", store.Claimant("h", pid), previous=None)]
    queue.put(won)


def test_two_processes_racing_for_the_same_cells_claim_each_once(tmp_path):
    url = store.default_url(tmp_path)
    store.open_store(url)
    cells = [f"c{i}" for i in range(40)]
    ctx = mp.get_context("fork")  # spawn cannot import a test module (pytest imports it by path)
    queue = ctx.Queue()
    procs = [ctx.Process(target=_race, args=(url, cells, pid, queue)) for pid in (1, 2)]
    for p in procs:
        p.start()
    won = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert sorted(won[0] + won[1]) == sorted(cells)  # every cell once, none twice
    assert len(store.ledger(store.open_store(url), GRID)) == 40


def _first_start(url, barrier, queue):
    """What a ``textcause benchmark`` command does first on its database: tables, Optuna storage, study."""
    import optuna

    barrier.wait(timeout=60)
    try:
        store.open_store(url)
        storage = store.optuna_storage(url, heartbeat_interval=10, grace_period=60, max_retry=None)
        optuna.create_study(study_name="grid", storage=storage, load_if_exists=True)
        queue.put("ok")
    except Exception as err:  # the failure is the test's message
        queue.put(f"{type(err).__name__}: {str(err).splitlines()[0]}")


def _writer_of_a_new_file(path):
    """A connection holding a write lock on a new rollback-journal SQLite file (releasable from a timer thread)."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE x (i)")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO x VALUES (1)")
    return holder


def test_opening_a_new_database_waits_for_another_writer_instead_of_failing(tmp_path):
    """SQLite refuses the switch to WAL at once, busy timeout or not, while another connection holds a
    write lock on a file not yet in WAL mode (one of four commands starting together on a new
    database failed so, 1 start in 120 under load); the store waits for the lock instead."""
    import threading

    from textcause.store.db import wal_mode

    path = tmp_path / "results.db"
    holder = _writer_of_a_new_file(path)
    plain = sqlite3.connect(path, isolation_level=None, timeout=5)
    start = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        plain.execute("PRAGMA journal_mode = WAL")  # SQLite's own answer: no wait
    assert time.monotonic() - start < 1.0
    start = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        wal_mode(plain.cursor(), timeout=0.3)  # still locked when its time is up: the error as it came
    assert 0.25 <= time.monotonic() - start < 2.0
    plain.close()
    timer = threading.Timer(0.5, holder.execute, args=("COMMIT",))
    timer.start()
    start = time.monotonic()
    engine = store.open_store(f"sqlite:///{path}")
    waited = time.monotonic() - start
    timer.join()
    holder.close()
    assert waited >= 0.4
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert sa.inspect(conn).has_table("cells")


def test_commands_starting_together_on_a_fresh_sqlite_file_all_work(tmp_path):
    """Four first starts at once on an empty SQLite file (before: "table studies already exists")."""
    ctx = mp.get_context("fork")  # spawn cannot import a test module (pytest imports it by path)
    for attempt in range(2):  # the race lost every time before the lock; twice makes a lucky pass unlikely
        url = store.default_url(tmp_path / f"out{attempt}")
        barrier, queue = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_first_start, args=(url, barrier, queue)) for _ in range(4)]
        for p in procs:
            p.start()
        got = [queue.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert got == ["ok"] * 4
        with store.open_store(url).begin() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM studies")).scalar() == 1


def test_schema_lock_is_a_file_lock_on_sqlite(tmp_path):
    from filelock import FileLock, Timeout

    url = store.default_url(tmp_path)
    with store.schema_lock(url), pytest.raises(Timeout):  # another process (or handle) cannot take it meanwhile
        FileLock(f"{tmp_path}/results.db.lock", timeout=0.1).acquire()
    with FileLock(f"{tmp_path}/results.db.lock", timeout=0.1):
        pass
    with store.schema_lock("sqlite://"):  # in memory: nothing to lock
        pass


def test_a_reader_neither_waits_for_a_writer_nor_takes_the_write_lock(engine, tmp_path):
    assert _claim(engine, "c1") is not None
    other = store.open_store(store.default_url(tmp_path))
    with engine.begin() as writing:  # BEGIN IMMEDIATE: the write lock, held
        writing.execute(sa.update(store.cells).values(error="pending"))
        t0 = time.perf_counter()
        rows = store.ledger(other, GRID)  # a deferred read: served at once from the last commit
        assert time.perf_counter() - t0 < 5 and rows["c1"].error is None
        raw = other.raw_connection()  # a writing transaction still queues for the lock
        try:
            cursor = raw.cursor()
            assert cursor.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL: the WAL synced at checkpoints
            cursor.execute("PRAGMA busy_timeout = 50")
            with pytest.raises(sqlite3.OperationalError, match="database is locked"):
                cursor.execute("BEGIN IMMEDIATE")
        finally:
            raw.close()
    assert store.ledger(other, GRID)["c1"].error == "pending"


def test_a_worker_connection_needs_the_tables_the_runner_made(tmp_path):
    url = store.default_url(tmp_path / "new")
    with pytest.raises(ValueError, match=r"^sqlite:///.*results\.db has no 'cells' table: start the grid with"):
        store.open_store(url, create=False)
    store.open_store(url)
    assert set(store.ledger(store.open_store(url, create=False), GRID)) == set()


def test_optunas_reads_take_no_write_lock_and_its_writes_still_queue(tmp_path, monkeypatch):
    import threading

    import optuna
    from optuna.trial import TrialState

    monkeypatch.setattr(store.db, "SQLITE_TIMEOUT", 5.0)  # a read that queued for the lock would fail in 5 s
    storage = store.optuna_storage(store.default_url(tmp_path), heartbeat_interval=10, grace_period=60, max_retry=None)
    study = optuna.create_study(storage=storage, study_name="s")
    trial_id = study.ask()._trial_id
    storage.record_heartbeat(trial_id)
    raw = sqlite3.connect(tmp_path / "results.db", isolation_level=None)
    raw.execute("BEGIN IMMEDIATE")  # another process's writer holds the lock
    done = threading.Event()
    try:
        t0 = time.perf_counter()
        assert storage.get_trial(trial_id).state == TrialState.RUNNING
        assert [t.number for t in storage.get_all_trials(study._study_id)] == [0]
        assert storage._get_stale_trial_ids(study._study_id) == []
        assert storage.get_study_id_from_name("s") == study._study_id
        assert time.perf_counter() - t0 < 1.5
        writer = threading.Thread(target=lambda: (storage.set_trial_user_attr(trial_id, "k", 1), done.set()))
        writer.start()
        assert not done.wait(0.5)  # a write still waits for the lock
    finally:
        raw.execute("ROLLBACK")
        raw.close()
    writer.join(10)
    assert done.is_set() and storage.get_trial(trial_id).user_attrs == {"k": 1}

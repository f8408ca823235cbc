"""The benchmark on a real PostgreSQL server: the store, two workers, two machines, report and compare.

A throwaway cluster (tests/pgserver.py) is started once for this module on a private unix socket;
each test uses its own database in it. What the code under test wrote is checked with plain
psycopg SQL, not through the SQLAlchemy code being tested. Skipped (with the reason) only where
psycopg or the PostgreSQL server programs are missing.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pgserver
import pytest
import sqlalchemy as sa
from tinygrid import grid_spec, write_grid_spec

from textcause import store
from textcause.cli.benchmark import benchmark_main
from textcause.grid.spec import ESTIMATORS, load_grid

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'textcause[postgres]')")

ROOT = Path(__file__).resolve().parents[2]
ALL_ESTIMATORS = {"unadjusted", *ESTIMATORS}


@pytest.fixture(scope="module")
def pg():
    try:
        with pgserver.running_server() as server:
            yield server
    except pgserver.Unavailable as err:
        pytest.skip(f"PostgreSQL cannot run here: {err}")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A module-wide folder, with the module's benchmark runs caching under it (never ~/.cache)."""
    from conftest import write_history_jsonl

    root = tmp_path_factory.mktemp("pg-bench")
    with pytest.MonkeyPatch.context() as mp_:
        mp_.setenv("TEXTCAUSE_CACHE", str(root / "cache"))
        yield SimpleNamespace(root=root, corpus=write_history_jsonl(root / "tiny.jsonl.gz"))


def write_grid(folder: Path, corpus: str, *, name: str, levels, seeds) -> Path:
    tasks = {"linguistic_complexity": list(levels)}
    return write_grid_spec(
        folder, grid_spec(corpus, name=name, tasks=tasks, models=["oracle", "unadjusted"], seeds=seeds)
    )


def sql(server, database: str, query: str, *params):
    """Rows of a query, through plain psycopg (independent of the store's SQLAlchemy code)."""
    with server.connect(database) as conn:
        return conn.execute(query, params).fetchall()


def complete_trials(server, database: str) -> list[str]:
    """The cell id of every COMPLETE Optuna trial (one per cell that ran to the end)."""
    rows = sql(
        server,
        database,
        "SELECT a.value_json FROM trials t JOIN trial_user_attributes a "
        "ON a.trial_id = t.trial_id WHERE t.state = 'COMPLETE' AND a.key = 'cell_id'",
    )
    return sorted(r[0].strip('"') for r in rows)


# ---------------------------------------------------------------------------------------- the server
def test_the_server_is_private_and_the_url_reaches_it(pg):
    url = pg.create_database("hello")
    assert url.startswith("postgresql+psycopg://") and f"host={pg.socket_dir}" in url
    assert sql(pg, "hello", "SHOW listen_addresses") == [("",)]  # a unix socket only: no network address
    assert sql(pg, "hello", "SHOW unix_socket_directories") == [(pg.socket_dir,)]
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT current_database()")).scalar() == "hello"
        assert int(conn.execute(sa.text("SHOW server_version_num")).scalar()) >= 150000
    engine.dispose()


# ---------------------------------------------------------------------------------------- the store
def _claim(engine, cell_id, previous=None, pid=1):
    return store.try_claim(engine, cell_id, "g", "hash", store.Claimant("h", pid), previous=previous)


def test_store_semantics_on_postgres(pg):
    np = pytest.importorskip("numpy")
    engine = store.open_store(pg.create_database("semantics"))
    types = dict(
        sql(
            pg,
            "semantics",
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'results'",
        )
    )
    assert (types["covers_truth"], types["level"], types["ate"], types["started_at"], types["error"]) == (
        "boolean",
        "integer",
        "double precision",
        "timestamp without time zone",
        "text",
    )
    token = _claim(engine, "c1")
    assert token is not None and _claim(engine, "c1") is None  # the row exists: a second insert loses
    row = store.ledger(engine, "g")["c1"]
    won, lost = _claim(engine, "c1", previous=row, pid=2), _claim(engine, "c1", previous=row, pid=3)
    assert won is not None and lost is None
    with pytest.raises(store.ClaimLost, match="taken over"):
        store.finish_cell(engine, "c1", token, status="ok", rows=[])
    rows = [
        {
            "cell_id": "c1",
            "grid": "g",
            "estimator": e,
            "status": "ok",
            "ate": np.float64("nan") if e == "ipw" else 0.25,
            "n_used": np.int64(7),
            "covers_truth": np.bool_(e != "ipw"),
            "bias": np.float32(0.5),
            "started_at": store.utcnow(),
        }
        for e in ("ipw", "stratified")
    ]
    with pytest.raises(sa.exc.IntegrityError):  # UNIQUE(cell_id, estimator): the status update rolls back too
        store.finish_cell(engine, "c1", won, status="ok", rows=[rows[0], rows[0]])
    assert sql(pg, "semantics", "SELECT status FROM cells") == [("running",)]
    assert sql(pg, "semantics", "SELECT count(*) FROM results") == [(0,)]
    store.finish_cell(engine, "c1", won, status="ok", rows=rows)
    got = sql(pg, "semantics", "SELECT estimator, ate, n_used, covers_truth, bias FROM results ORDER BY estimator")
    assert got == [("ipw", None, 7, False, 0.5), ("stratified", 0.25, 7, True, 0.5)]
    assert sql(pg, "semantics", "SELECT status, attempts FROM cells") == [("ok", 2)]
    df = store.read_results(engine, "g")
    assert list(df["estimator"]) == ["ipw", "stratified"] and df["n_used"].tolist() == [7, 7]
    engine.dispose()


def _race_claims(url, cell_ids, pid, barrier, queue):
    engine = store.open_store(url)
    barrier.wait(timeout=60)
    queue.put([c for c in cell_ids if _claim(engine, c, pid=pid) is not None])


def _open_together(urls, grid_path, barrier, queue):
    import optuna  # noqa: F401 - imported before the start, as a running command has

    from textcause.grid.worker import open_study

    grid = load_grid(grid_path)
    errors = []
    for url in urls:  # every database starts empty: the processes create its tables at the same moment
        for step in (store.open_store, lambda u: open_study(grid, u, create=True)):  # the ledger's, then Optuna's
            barrier.wait(timeout=60)
            try:
                step(url)
            except Exception as err:
                errors.append(f"{type(err).__name__}: {str(err)[:300]}")
    queue.put(errors)


def _spawn(target, args_for):
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(len(args_for)), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*args, barrier, queue)) for args in args_for]
    for p in procs:
        p.start()
    try:
        return [queue.get(timeout=120) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()


def test_two_processes_racing_for_the_same_cells_claim_each_once(pg):
    url = pg.create_database("claims")
    store.open_store(url).dispose()
    cells = [f"c{i}" for i in range(60)]
    won = _spawn(_race_claims, [(url, cells, 1), (url, cells, 2)])
    assert sorted(won[0] + won[1]) == sorted(cells)  # every cell once, none twice
    assert sql(pg, "claims", "SELECT count(*), count(DISTINCT cell_id) FROM cells") == [(60, 60)]


def test_machines_starting_together_on_an_empty_database_all_succeed(pg, workspace):
    # PostgreSQL's CREATE TABLE / CREATE TYPE check, then create: without a lock, two machines
    # creating the ledger's or Optuna's tables at once fail with a unique violation on pg_type.
    grid_path = write_grid(workspace.root, workspace.corpus, name="start", levels=(1,), seeds=(0,))
    urls = [pg.create_database(f"start{i}") for i in range(4)]
    errors = _spawn(_open_together, [(urls, str(grid_path))] * 2)
    assert errors == [[], []]
    for i in range(4):
        assert sql(pg, f"start{i}", "SELECT count(*) FROM studies") == [(1,)]
        assert sql(pg, f"start{i}", "SELECT count(*) FROM alembic_version") == [(1,)]


# ---------------------------------------------------------------------------------------- real runs
@pytest.fixture(scope="module")
def benchmarked(pg, workspace):
    """``textcause benchmark --db <postgres> --workers 2`` on 4 cells (one level, two models, two seeds)."""
    url = pg.create_database("bench")
    config = write_grid(workspace.root, workspace.corpus, name="pg", levels=(1,), seeds=(0, 1))
    out = workspace.root / "bench-out"
    argv = ["--config", str(config), "--db", url, "--out", str(out), "--workers", "2"]
    started = time.perf_counter()
    code = benchmark_main(argv)
    seconds = time.perf_counter() - started
    return SimpleNamespace(url=url, db="bench", argv=argv, out=out, code=code, seconds=seconds, grid=load_grid(config))


@pytest.mark.slow  # three Python processes that import Lightning (the command and its two workers): about 20 s
def test_two_workers_finish_every_cell_once_into_postgres(pg, benchmarked):
    assert benchmarked.code == 0
    grid, db = benchmarked.grid, benchmarked.db
    ids = sorted(c.cell_id for c in grid.cells)
    assert not (benchmarked.out / "results.db").exists()  # nothing went to the default SQLite file
    ledger = sql(pg, db, "SELECT cell_id, status, attempts FROM cells WHERE grid = 'pg' ORDER BY cell_id")
    assert ledger == [(cid, "ok", 1) for cid in ids]
    rows = sql(pg, db, "SELECT cell_id, estimator, status FROM results WHERE grid = 'pg'")
    assert len(rows) == len(ids) * len(ALL_ESTIMATORS)  # no duplicate ...
    assert {(c, e) for c, e, _ in rows} == {(c, e) for c in ids for e in ALL_ESTIMATORS}  # ... none missing
    assert {s for _, _, s in rows} == {"ok"}
    # the Optuna study is in the same database, and each cell completed exactly one trial
    assert sql(pg, db, "SELECT study_name FROM studies") == [(grid.study_name,)]
    assert complete_trials(pg, db) == ids
    logs = "".join(p.read_text() for p in (benchmarked.out / "logs").glob("worker-*.log"))
    ran = [int(line.split("ran ")[1].split()[0]) for line in logs.splitlines() if ": ran " in line]
    assert len(ran) == 2 and sum(ran) == len(ids)  # the two workers' own counts
    # known truth: the oracle's weights are the true ones; a constant propensity gives the naive difference
    truth = sql(pg, db, "SELECT model, estimator, ate, true_ate, iptw_weight_mse FROM results")
    assert all(t == pytest.approx(0.4) for _, _, _, t, _ in truth)
    assert all(abs(w) < 1e-12 for m, _, _, _, w in truth if m == "oracle")
    for cid in [c for c in ids if c.endswith(("unadjusted/s0", "unadjusted/s1"))]:
        est = dict(sql(pg, db, "SELECT estimator, ate FROM results WHERE cell_id = %s", cid))
        assert est["ipw"] == pytest.approx(est["unadjusted"]) and est["stratified"] == pytest.approx(est["unadjusted"])
    print(f"postgres benchmark: {len(ids)} cells, 2 workers, {benchmarked.seconds:.1f} s")


@pytest.mark.slow  # reruns the benchmark above
def test_a_rerun_runs_nothing(pg, benchmarked):
    """The command again (one in-process worker this time, to skip a Lightning import): nothing changes."""
    db = benchmarked.db
    query = "SELECT cell_id, token, started_at, attempts FROM cells ORDER BY cell_id"
    before = sql(pg, db, query)
    trials = sql(pg, db, "SELECT count(*) FROM trials")
    result_ids = sql(pg, db, "SELECT id FROM results ORDER BY id")
    assert benchmark_main([*benchmarked.argv[:-1], "1"]) == 0  # --workers 1
    assert sql(pg, db, query) == before
    assert sql(pg, db, "SELECT count(*) FROM trials") == trials
    assert sql(pg, db, "SELECT id FROM results ORDER BY id") == result_ids


@pytest.mark.slow  # reads the benchmark above
def test_report_and_compare_read_postgres(pg, benchmarked, capsys):
    from textcause.analysis.frame import load_results
    from textcause.cli.compare import compare_main
    from textcause.cli.report import report_main

    data = load_results(benchmarked.url, grid="pg")
    assert len(data) == len(benchmarked.grid.cells) * len(ALL_ESTIMATORS) and data["usable"].all()
    assert set(data["model"]) == {"oracle", "unadjusted"} and set(data["seed"]) == {0, 1}

    table = compare_main(["--db", benchmarked.url, "oracle", "unadjusted", "--estimator", "ipw"])
    assert "A = oracle:ipw   B = unadjusted:ipw" in capsys.readouterr().out
    assert len(table) == 1 and table["n_seeds"].iloc[0] == 2
    means = dict(
        sql(
            pg,
            benchmarked.db,
            "SELECT model, avg(abs(ate - true_ate)) FROM results WHERE estimator = 'ipw' GROUP BY model",
        )
    )
    assert table["mean_a"].iloc[0] == pytest.approx(means["oracle"])
    assert table["mean_b"].iloc[0] == pytest.approx(means["unadjusted"])

    out = benchmarked.out / "report"
    result = report_main(["--db", benchmarked.url, "--out", str(out), "--formats", "png"])
    assert "wrote" in capsys.readouterr().out
    markdown = Path(result["markdown"]).read_text(encoding="utf-8")
    assert "linguistic" in markdown.lower() and Path(result["html"]).is_file()
    figures = [Path(p) for paths in result["figures"].values() for p in paths]
    assert figures and all(p.suffix == ".png" and p.stat().st_size > 0 for p in figures)


@pytest.mark.slow  # two Python processes that import Lightning: about 20 s
def test_two_machines_on_one_database_run_each_cell_once(pg, workspace):
    """Two separate ``textcause benchmark`` commands at once on a new database, each with its own
    output folder, as two machines would: every cell runs exactly once, in one of them."""
    url = pg.create_database("machines")
    config = write_grid(workspace.root, workspace.corpus, name="machines", levels=(1, 2, 3), seeds=(0,))
    grid = load_grid(config)
    ids = sorted(c.cell_id for c in grid.cells)
    outs = [workspace.root / f"machine-{i}" for i in (0, 1)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "textcause.cli.benchmark", "--config", str(config), "--db", url, "--out", str(out)],
            cwd=ROOT,
            env=os.environ.copy(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for out in outs
    ]
    logs = []
    for p in procs:
        try:
            logs.append(p.communicate(timeout=240)[0])
        except subprocess.TimeoutExpired:
            p.kill()
            logs.append(p.communicate()[0])
    for p, log in zip(procs, logs):
        assert p.returncode == 0, log[-3000:]

    ledger = sql(pg, "machines", "SELECT cell_id, status, attempts FROM cells ORDER BY cell_id")
    assert ledger == [(cid, "ok", 1) for cid in ids]
    rows = sql(pg, "machines", "SELECT cell_id, estimator, run FROM results")
    assert len(rows) == len(ids) * len(ALL_ESTIMATORS)
    assert {(c, e) for c, e, _ in rows} == {(c, e) for c in ids for e in ALL_ESTIMATORS}
    assert complete_trials(pg, "machines") == ids
    ran = [{cid for cid in ids if (out / "runs" / cid).is_dir()} for out in outs]  # a cell's folder: where it ran
    assert not ran[0] & ran[1] and sorted(ran[0] | ran[1]) == ids
    for cid, _, run in rows:
        machine = next(i for i in (0, 1) if cid in ran[i])
        assert Path(run).is_relative_to(outs[machine] / "runs" / cid)
    print(f"two machines: {len(ran[0])} + {len(ran[1])} cells")

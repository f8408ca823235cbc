"""A results store and a results.csv written when the Arbour-Dimmery interval was called a bound
(``bound_low``, ``bound_high``, ``ci_tighter_than_bound`` on every estimator's row): opening the store
migrates it in one transaction, and every reader sees the new names with the IPW row's values intact."""

from __future__ import annotations

import csv
import sqlite3

import pytest
import sqlalchemy as sa
from storerows import weld_row

from textcause import store
from textcause.analysis.frame import load_results
from textcause.metrics.schema import AD_COLUMNS, RENAMED_COLUMNS, RESULT_COLUMNS
from textcause.run.evaluation import append_csv
from textcause.store.migration import rename_old_columns

OLD_NAMES = {new: old for old, new in RENAMED_COLUMNS.items()}
CELL = weld_row("ls", "linguistic_complexity", {"true_ate": 0.4})
#: estimator -> (ate, ci_low, ci_high, bound_low, bound_high, ci_tighter_than_bound), as older code wrote them
OLD_ROWS = {
    "unadjusted": (0.55, 0.50, 0.60, 0.125, 0.625, True),
    "ipw": (0.375, 0.30, 0.45, 0.125, 0.625, True),
    "stratified": (0.40, 0.20, 0.90, 0.125, 0.625, False),
}


def old_rows() -> list[dict]:
    keys = ("ate", "ci_low", "ci_high", "bound_low", "bound_high", "ci_tighter_than_bound")
    return [{**CELL, "estimator": est, **dict(zip(keys, values))} for est, values in OLD_ROWS.items()]


def old_store(url: str) -> None:
    """Today's ``results`` table and ledger, with the Arbour-Dimmery columns under their old names."""
    meta = sa.MetaData()
    columns = [
        sa.Column(OLD_NAMES.get(c.name, c.name), c.type, primary_key=c.primary_key, nullable=c.nullable)
        for c in store.results.columns
    ]
    old = sa.Table("results", meta, *columns, sa.UniqueConstraint("cell_id", "estimator"))
    store.cells.to_metadata(meta)
    engine = sa.create_engine(url)
    meta.create_all(engine)
    with engine.begin() as conn:
        conn.execute(sa.insert(old), old_rows())
    engine.dispose()


def column_names(path) -> set[str]:
    with sqlite3.connect(path) as con:
        return {r[1] for r in con.execute("PRAGMA table_info(results)")}


def check_migrated(frame) -> None:
    assert not set(RENAMED_COLUMNS) & set(frame.columns) and set(AD_COLUMNS) <= set(frame.columns)
    rows = frame.set_index("estimator")
    assert (rows.loc["ipw", "ad_low"], rows.loc["ipw", "ad_high"], bool(rows.loc["ipw", "ci_narrower_than_ad"])) == (
        0.125,
        0.625,
        True,
    )
    assert (rows.loc["ipw", "ate"], rows.loc["ipw", "ci_low"], rows.loc["ipw", "ci_high"]) == (0.375, 0.30, 0.45)
    assert rows.loc[["unadjusted", "stratified"], list(AD_COLUMNS)].isna().all().all()
    assert list(rows.loc[["unadjusted", "stratified"], "ate"]) == [0.55, 0.40]


def test_an_old_sqlite_store_is_migrated_when_opened(tmp_path):
    path = tmp_path / "results.db"
    old_store(f"sqlite:///{path}")
    assert set(RENAMED_COLUMNS) <= column_names(path)
    engine = store.open_store(f"sqlite:///{path}")  # refuses a table lacking a column: the rename must have happened
    assert set(RESULT_COLUMNS) <= column_names(path) and not set(RENAMED_COLUMNS) & column_names(path)
    check_migrated(store.read_results(engine))
    assert rename_old_columns(engine) == []  # a second open changes nothing
    engine.dispose()
    check_migrated(load_results(path))  # and the report's read-only reader sees the same


def test_the_report_reads_an_old_store_read_only(tmp_path):
    path = tmp_path / "results.db"
    old_store(f"sqlite:///{path}")
    check_migrated(load_results(path))
    assert set(RENAMED_COLUMNS) <= column_names(path)  # reading changed nothing on disk


def test_a_failed_migration_leaves_the_store_as_it_was(tmp_path):
    path = tmp_path / "results.db"
    old_store(f"sqlite:///{path}")
    engine = store.make_sqlite_transactional(sa.create_engine(f"sqlite:///{path}"))

    @sa.event.listens_for(engine, "before_cursor_execute")
    def fail_on_the_update(conn, cursor, statement, *args):
        if statement.startswith("UPDATE"):  # after every RENAME COLUMN of the same transaction
            raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        rename_old_columns(engine)
    engine.dispose()
    assert set(RENAMED_COLUMNS) <= column_names(path) and not set(AD_COLUMNS) & column_names(path)
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT COUNT(*) FROM results WHERE bound_low IS NOT NULL").fetchone() == (3,)
    engine = store.open_store(f"sqlite:///{path}")  # the next open migrates it whole
    check_migrated(store.read_results(engine))
    engine.dispose()


def test_a_table_with_both_names_keeps_the_new_values(tmp_path):
    path = tmp_path / "results.db"
    old_store(f"sqlite:///{path}")
    with sqlite3.connect(path) as con:
        con.execute("ALTER TABLE results ADD COLUMN ad_low FLOAT")
        con.execute("UPDATE results SET ad_low = 0.25 WHERE estimator = 'unadjusted'")
        con.execute("UPDATE results SET ad_low = 0.5 WHERE estimator = 'stratified'")
    engine = store.open_store(f"sqlite:///{path}")
    assert "bound_low" not in column_names(path)
    rows = store.read_results(engine).set_index("estimator")
    assert rows.loc["ipw", "ad_low"] == 0.125 and rows.loc[["unadjusted", "stratified"], "ad_low"].isna().all()
    engine.dispose()


def write_old_csv(path) -> list[str]:
    header = [OLD_NAMES.get(c, c) for c in RESULT_COLUMNS]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=header, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(old_rows())
    return header


def test_an_old_results_csv_is_read_and_appended_to_under_the_new_names(tmp_path):
    path = tmp_path / "results.csv"
    assert "bound_low" in write_old_csv(path)
    check_migrated(load_results(path))
    # evaluate.py appending a run to it rewrites the old rows under the current header, values kept
    new = {
        **CELL,
        "seed": 1,
        "estimator": "ipw",
        "ate": 0.4,
        "ad_low": 0.2,
        "ad_high": 0.6,
        "ci_narrower_than_ad": False,
    }
    append_csv(path, [new])
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == list(RESULT_COLUMNS)
        rows = list(reader)
    assert [(r["estimator"], r["ad_low"], r["ci_narrower_than_ad"]) for r in rows] == [
        ("unadjusted", "", ""),
        ("ipw", "0.125", "True"),
        ("stratified", "", ""),
        ("ipw", "0.2", "False"),
    ]
    check_migrated(load_results(path).query("seed == 0"))


@pytest.fixture
def pg():
    """A throwaway PostgreSQL server (tests/pgserver.py); skipped where it cannot run."""
    pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'textcause[postgres]')")
    import pgserver

    try:
        with pgserver.running_server() as server:
            yield server
    except pgserver.Unavailable as err:
        pytest.skip(f"PostgreSQL cannot run here: {err}")


def test_an_old_postgres_store_is_migrated_when_opened(pg):
    """The same migration on a real PostgreSQL server, checked with plain psycopg."""
    url = pg.create_database("renamed")
    old_store(url)
    engine = store.open_store(url)
    check_migrated(store.read_results(engine))
    engine.dispose()
    with pg.connect("renamed") as conn:
        query = "SELECT column_name FROM information_schema.columns WHERE table_name = 'results'"
        names = {r[0] for r in conn.execute(query)}
        stored = conn.execute("SELECT estimator, ad_low, ci_narrower_than_ad FROM results ORDER BY id").fetchall()
    assert set(AD_COLUMNS) <= names and not set(RENAMED_COLUMNS) & names
    assert stored == [("unadjusted", None, None), ("ipw", 0.125, True), ("stratified", None, None)]

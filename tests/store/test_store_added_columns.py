"""A results store made before the influence-function columns existed: it opens, gains them empty, and
its rows keep their values; the report reads such a file as it is (read-only)."""

from __future__ import annotations

import sqlite3

import sqlalchemy as sa
from storerows import weld_row

from textcause import store
from textcause.analysis.frame import load_results
from textcause.metrics.schema import ADDED_COLUMNS, RESULT_COLUMNS

IPW_ROW = {
    "estimator": "ipw",
    "ate": 0.01,
    "ci_low": -0.05,
    "ci_high": 0.07,
    "true_ate": 0.0,
    "covers_truth": True,
    "ci_method": "percentile bootstrap over evaluation units",
}


def old_store(path) -> None:
    """A ``results`` table (and ledger) as textcause wrote them before :data:`ADDED_COLUMNS`."""
    meta = sa.MetaData()
    columns = [c.copy() for c in store.results.columns if c.name not in ADDED_COLUMNS]
    old = sa.Table("results", meta, *columns)
    store.cells.to_metadata(meta)
    engine = sa.create_engine(f"sqlite:///{path}")
    meta.create_all(engine)
    with engine.begin() as conn:
        conn.execute(
            sa.insert(old),
            [weld_row("placebo", "placebo", IPW_ROW)],
        )
    engine.dispose()


def test_an_old_store_gains_the_new_columns_empty(tmp_path):
    path = tmp_path / "results.db"
    old_store(path)
    engine = store.open_store(f"sqlite:///{path}")  # would refuse a table that lacks other columns
    names = {c["name"] for c in sa.inspect(engine).get_columns("results")}
    assert set(RESULT_COLUMNS) <= names
    frame = store.read_results(engine)
    row = frame.iloc[0]
    assert (row["ate"], row["ci_low"], row["ci_high"], row["ci_method"]) == (
        0.01,
        -0.05,
        0.07,
        "percentile bootstrap over evaluation units",
    )
    assert all(row[c] is None for c in ADDED_COLUMNS)
    assert store.add_missing_columns(engine) == []  # a second open changes nothing
    engine.dispose()


def test_the_report_reads_an_old_store_read_only(tmp_path):
    path = tmp_path / "results.db"
    old_store(path)
    data = load_results(path)
    assert data["influence_ci_low"].isna().all() and data["influence_covers_truth"].isna().all()
    with sqlite3.connect(path) as con:  # reading added nothing
        names = {r[1] for r in con.execute("PRAGMA table_info(results)")}
    assert not set(ADDED_COLUMNS) & names

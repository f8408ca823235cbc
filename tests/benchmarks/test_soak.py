"""The soak's bookkeeping (benchmarks/soak.py) on a tiny synthetic ledger: takeovers, lost attempts, rows."""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("soak", ROOT / "benchmarks" / "soak.py")
soak = sys.modules["soak"] = importlib.util.module_from_spec(_spec)  # dataclasses look their module up
_spec.loader.exec_module(soak)

Claim, Row = soak.Claim, soak.LedgerRow


def _ledger(*rows: tuple) -> dict:
    return {r[0]: Row(*r) for r in rows}


def test_a_killed_claim_finished_under_another_token_is_a_takeover_and_only_that():
    killed = [
        Claim("a", "a1", 11, "worker"),  # a: taken over, finished by the next claim
        Claim("b", "b1", 12, "runner"),  # b: killed twice, finished by the third claim
        Claim("b", "b2", 13, "worker"),
        Claim("c", "c1", 14, "worker"),  # c: stuck running under the killed claim
        Claim("d", "d1", 15, "worker"),  # d: failed after the takeover: not a finished takeover
    ]
    final = _ledger(
        ("a", "ok", "a2", 21, 2),
        ("b", "ok", "b3", 22, 3),
        ("c", "running", "c1", 14, 1),
        ("d", "failed", "d2", 23, 2),
        ("e", "ok", "e1", 24, 1),
    )
    assert [(c.cell_id, c.token) for c in soak.takeovers(killed, final)] == [("a", "a1"), ("b", "b1"), ("b", "b2")]
    problems = soak.ledger_problems(final, ["a", "b", "c", "d", "e", "f"], killed)
    assert problems == [
        "1 cells never claimed, e.g. f",
        "2 cells not ok: {'c': 'running', 'd': 'failed'}",
        "2 killed claims never taken over, e.g. c (worker kill)",
        "c: 1 attempts but 1 killed claims (an attempt was lost without a kill, or a kill left no trace)",
    ]


def test_a_lost_attempt_without_a_kill_is_a_problem_and_a_clean_soak_has_none():
    killed = [Claim("a", "a1", 11, "worker")]
    final = _ledger(("a", "ok", "a2", 21, 2), ("b", "ok", "b3", 22, 3))  # b lost two claims nobody killed
    assert soak.ledger_problems(final, ["a", "b"], killed) == [
        "b: 3 attempts but 0 killed claims (an attempt was lost without a kill, or a kill left no trace)"
    ]
    final = _ledger(("a", "ok", "a2", 21, 2), ("b", "ok", "b1", 22, 1))
    assert soak.ledger_problems(final, ["a", "b"], killed) == []


def _row(cell: str, est: str, **values) -> dict:
    base = {"cell_id": cell, "estimator": est, "ate": 0.25, "bias": float("nan"), "status": "ok", "error": None}
    return {**base, "train_seconds": 1.5, "host": "h", "attempt": 1, "run": "runs/x", **values}


def test_rows_compare_every_column_but_bookkeeping_and_exactly():
    clean = [_row("a", "ipw"), _row("a", "naive"), _row("b", "ipw")]
    soaked = [
        _row("a", "ipw", train_seconds=9.0, host="other", attempt=3, run="runs/y"),  # identical: bookkeeping only
        _row("a", "naive", ate=0.25 + 1e-15),  # not identical: floats must be equal, not close
        _row("b", "ipw", bias=0.0),  # NaN against a number
    ]
    out = soak.compare_rows(clean, soaked)
    assert (out.compared, out.identical) == (3, 1)
    assert out.problems == ["a naive differs in ['ate']", "b ipw differs in ['bias']"]


def test_missing_and_duplicate_rows_are_problems():
    clean = [_row("a", "ipw"), _row("b", "ipw")]
    soaked = [_row("a", "ipw"), _row("a", "ipw"), _row("c", "ipw")]
    out = soak.compare_rows(clean, soaked)
    assert (out.compared, out.identical) == (1, 1)
    assert out.problems == [
        "1 (cell, estimator) rows appear twice in the soaked run, e.g. ('a', 'ipw')",
        "1 rows missing from the soaked run, e.g. ('b', 'ipw')",
        "1 rows missing from the clean run, e.g. ('c', 'ipw')",
    ]


def test_read_ledger_reads_the_cells_table_of_a_store(tmp_path):
    from textcause import store

    engine = store.open_store(store.default_url(tmp_path))
    db = tmp_path / "results.db"
    assert soak.read_ledger(tmp_path / "none.db") == {}
    token = store.try_claim(engine, "a", "g", "h", store.Claimant(host="x", pid=42), previous=None)
    row = store.ledger(engine, "g")["a"]
    token2 = store.try_claim(engine, "a", "g", "h", store.Claimant(host="x", pid=43), previous=row)
    store.finish_cell(engine, "a", token2, status="ok", rows=[])
    assert soak.read_ledger(db) == {"a": Row("a", "ok", token2, 43, 2)}
    assert soak.takeovers([Claim("a", token, 42, "worker")], soak.read_ledger(db)) == [Claim("a", token, 42, "worker")]
    with sqlite3.connect(db) as con:
        con.execute("DROP TABLE cells")
    assert soak.read_ledger(db) == {}


@pytest.mark.parametrize("pid", [0, 2**22 + 1])
def test_no_process_is_alive_that_is_not_there(pid):
    assert not soak._alive(pid)


def test_the_examples_in_the_soak_docstrings_hold():
    import doctest

    assert doctest.testmod(soak).failed == 0

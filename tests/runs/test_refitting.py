"""Refitting intervals in a grid cell (issue 15): asked for with ``evaluation: {refit_reps: N}``."""

from __future__ import annotations

import warnings

import pytest

from textcause.estimators.refit import CI_REFIT
from textcause.runs.cell import run_config_cell
from textcause.runs.grid import grid_from_dict


def cells(corpus, models, **evaluation):
    spec = {
        "name": "g",
        "corpora": {"tiny": corpus},
        "tasks": {"linguistic_complexity": [2]},
        "models": list(models),
        "seeds": [1],
        "overrides": {"trainer.max_epochs": 3},
        "evaluation": {"n_boot": 30, **evaluation},
    }
    return grid_from_dict(spec).cells


def test_refit_reps_changes_only_the_cells_that_ask_for_it(tiny_corpus):
    (plain,) = cells(tiny_corpus, ["lr_unigram_binary"])
    (zero,) = cells(tiny_corpus, ["lr_unigram_binary"], refit_reps=0)
    (refit,) = cells(tiny_corpus, ["lr_unigram_binary"], refit_reps=4)
    assert plain.config_hash == zero.config_hash != refit.config_hash
    assert refit.run_settings("x").evaluation.refit_reps == 4
    with pytest.raises(ValueError, match="refit_reps"):
        cells(tiny_corpus, ["lr_unigram_binary"], refit_reps=1)


def test_an_lbfgs_cell_gets_a_refitting_interval_beside_the_test_sample_one(tiny_corpus, tmp_path):
    (cell,) = cells(tiny_corpus, ["lr_unigram_binary"], refit_reps=6)
    out = run_config_cell(cell, tmp_path / "a")
    assert out.status == "ok", out.error
    rows = {r["estimator"]: r for r in out.rows}
    assert rows["unadjusted"].get("refit_ci_low") is None  # nothing is fitted for it
    for name in ("ipw", "stratified", "matching"):
        r = rows[name]
        assert r["refit_ci_low"] < r["refit_ci_high"] and r["refit_reps"] == 6
        assert r["refit_ci_method"] == CI_REFIT["basic"]
        assert r["refit_covers_truth"] == (r["refit_ci_low"] <= r["true_ate"] <= r["refit_ci_high"])
        assert r["ci_low"] is not None  # the test-sample interval is still there, in its own columns
    again = run_config_cell(cell, tmp_path / "b")
    assert [r.get("refit_ci_low") for r in again.rows] == [r.get("refit_ci_low") for r in out.rows]


def test_a_model_that_does_not_refit_cheaply_says_so_and_gets_no_interval(tiny_corpus, tmp_path):
    (cell,) = cells(tiny_corpus, ["nn_unigram_binary"], refit_reps=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run_config_cell(cell, tmp_path / "nn")
    assert out.status == "ok", out.error
    assert all(r.get("refit_ci_low") is None for r in out.rows)
    assert any("MLP is not refit for a refitting interval" in str(w.message) for w in caught)

"""The real estimates: each carries the refitting interval where its model refits, else the test-sample
one, the table and report say which, and the records' refitting and tuned columns reach the rows."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from textcause.advise import estimate as estimate_module
from textcause.advise.estimate import ranked_estimates, run_estimates
from textcause.advise.inputs import Prepared
from textcause.advise.report import _estimates_table, verdict

GRADED = pd.DataFrame(
    [
        {"model": "lr_unigram_binary", "estimator": "ipw", "rank": 1, "usable": True},
        {"model": "nn_unigram_binary", "estimator": "ipw", "rank": 2, "usable": True},
    ]
)


def _row(model, ate, lo, hi, **extra):
    return {
        "model": model,
        "estimator": "ipw",
        "ate": ate,
        "ci_low": lo,
        "ci_high": hi,
        "treatment_accuracy": 0.7,
        **extra,
    }


def test_each_estimate_carries_the_refitting_interval_where_its_model_refits():
    rows = [
        _row("lr_unigram_binary", 0.2, 0.15, 0.25, refit_ci_low=0.05, refit_ci_high=0.33, refit_ci_method="basic",
             refit_reps=50),
        _row("nn_unigram_binary", -0.1, -0.2, 0.0),  # a network: no refitting interval
    ]  # fmt: skip
    table = ranked_estimates(rows, GRADED)
    lr, nn = table.iloc[0], table.iloc[1]
    assert (lr["ci_low"], lr["ci_high"], lr["interval"]) == (0.05, 0.33, "refitting")
    assert (lr["sample_ci_low"], lr["sample_ci_high"]) == (0.15, 0.25)  # the test-sample one is kept
    assert (nn["ci_low"], nn["ci_high"], nn["interval"]) == (-0.2, 0.0, "test-sample")
    assert np.isnan(nn["refit_ci_low"])
    cells = _estimates_table(table).rows
    assert cells[0][3:5] == ["+0.200 [+0.050, +0.330]", "refitting (basic, 50 refits)"]
    assert cells[1][3:5] == ["-0.100 [-0.200, +0.000]", "test-sample"]
    best = {"model": "lr_unigram_binary", "estimator": "ipw", "bias": 0.01, "n_cells": 12, "coverage": 0.9,
            "placebo_fd": 0.0}  # fmt: skip
    assert "ATE +0.200 [+0.050, +0.330] (refitting interval): an effect." in verdict(best, {}, table)


def test_a_graded_pair_without_an_estimate_has_no_interval_kind():
    table = ranked_estimates([_row("lr_unigram_binary", 0.2, 0.1, 0.3)], GRADED)
    assert table.iloc[1]["model"] == "nn_unigram_binary" and pd.isna(table.iloc[1]["interval"])
    assert _estimates_table(table).rows[1][3:5] == ["-", "-"]


def test_run_estimates_joins_the_records_refitting_and_tuned_columns(tmp_path, monkeypatch):
    record = {
        "model": "lr_tuned_unigram_binary", "status": "ok", "rows": [
            {"estimator": "ipw", "ate": 0.2, "ci_low": 0.1, "ci_high": 0.3, "refit_ci_low": 0.0, "refit_ci_high": 0.4,
             "refit_ci_method": "basic", "refit_reps": 50, "tuned": json.dumps({"C": 1.0, "penalty": "l2"})},
        ],
    }  # fmt: skip

    class Spec:
        name, corpus = "toy", "c"

    monkeypatch.setattr(estimate_module, "run_study", lambda *a, **k: {"spec": Spec()})
    monkeypatch.setattr(estimate_module, "load_records", lambda spec, out: [record])
    (row,) = run_estimates(Prepared(tmp_path / "s.yaml", tmp_path / "u.jsonl.gz"), tmp_path)
    assert row["ate"] == pytest.approx(0.2) and (row["refit_ci_low"], row["refit_ci_high"]) == (0.0, 0.4)
    assert json.loads(row["tuned"]) == {"C": 1.0, "penalty": "l2"} and row["refit_reps"] == 50

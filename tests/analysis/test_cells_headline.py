"""The demo's headline: one row per task level and model, truth and accuracy beside the bias and
its interval, and flags on cells whose estimate is not to be trusted as it is."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from textcause.analysis.headline import CHANCE_ACCURACY, cell_flags, cell_table, format_cells
from textcause.analysis.inference import seed_summary
from textcause.analysis.simulated import simulate_results

MODELS = ("oracle", "unadjusted", "lr_lda", "order_count")


@pytest.fixture(scope="module")
def summary():
    return seed_summary(
        simulate_results(task_levels={"linguistic_complexity": 1, "placebo": 1}, models=MODELS, n_seeds=3, seed=0)
    )


def test_cell_table_rows_and_interval_of_the_bias(summary):
    table = cell_table(summary, "reddit")
    assert len(table) == 2 * len(MODELS)
    assert list(table["model"][:4]) == ["Oracle", "Unadjusted", "LR LDA", "OrderCountNet (ours)"]
    ref = summary[(summary["estimator"] == "stratified") & (summary["model"] == "lr_lda")].iloc[0]
    row = table[(table["model"] == "LR LDA")].iloc[0]
    assert row["bias"] == pytest.approx(ref["mean_bias"])
    assert row["ci_low"] == pytest.approx(ref["mean_ci_low"] - ref["true_ate"])
    assert row["n_used"] == pytest.approx(ref["mean_n_used"]) and row["seeds"] == 3
    with pytest.raises(ValueError, match="No 'aipw' results for corpus 'reddit'"):
        cell_table(summary, "reddit", "aipw")


def test_flags():
    row = SimpleNamespace(model="lr_lda", max_n_dropped=12.0, mean_treatment_accuracy=0.51, n_failed=1)
    assert cell_flags(row, "stratified") == [
        "12 users in empty strata",
        "model at chance (accuracy 0.51)",
        "1 seed(s) failed",
    ]
    assert cell_flags(
        SimpleNamespace(model="lr_lda", max_n_dropped=3.0, mean_treatment_accuracy=0.9, n_failed=0), "matching"
    ) == ["3 users outside the caliper"]
    # the references are not propensity models: an unadjusted estimate at accuracy 0.5 is not flagged
    ok = SimpleNamespace(model="unadjusted", max_n_dropped=0.0, mean_treatment_accuracy=CHANCE_ACCURACY, n_failed=0)
    assert cell_flags(ok, "stratified") == []
    assert cell_flags(SimpleNamespace(model="x", max_n_dropped=np.nan, mean_treatment_accuracy=np.nan), "ipw") == []


def test_format_cells_prints_every_row_and_the_placebo_table(summary):
    text = format_cells(summary, "reddit")
    lines = text.splitlines()
    assert lines[1].split()[:2] == ["Task", "level"] and "95% interval of the bias" in lines[1]
    assert sum(line.startswith("Placebo Test 1 ") for line in lines) == len(MODELS)
    assert "share of the seeds (3 seeds)" in text

"""The headline tables: mean bias per task level and model, and placebo false-discovery rates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from textcause.analysis.frame import load_results
from textcause.analysis.headline import bias_rows, bias_table, format_headline, placebo_table
from textcause.analysis.inference import seed_summary
from textcause.analysis.simulated import simulate_results

TASKS = {"linguistic_complexity": 2, "placebo": 1}
MODELS = ("oracle", "unadjusted", "lr_bigram_binary", "order_count")


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return load_results(simulate_results(corpora=("twitter",), task_levels=TASKS, models=MODELS, n_seeds=4, seed=3))


def test_bias_table_is_the_mean_over_seeds(data):
    table = bias_table(seed_summary(data), "twitter", "stratified")
    ok = data[(data["estimator"] == "stratified") & data["usable"]]
    expected = ok.groupby(["task", "level", "model"])["bias"].agg(["mean", "std"])
    assert list(table.index) == ["Linguistic Complexity 1", "Linguistic Complexity 2", "Placebo Test 1"]
    assert list(dict.fromkeys(table.columns.get_level_values(0))) == [
        "Oracle",
        "Unadjusted",
        "LR 1,2-gram",
        "OrderCountNet (ours)",
    ]  # the paper's order
    got = table.loc["Linguistic Complexity 2", ("LR 1,2-gram", "mean")]
    assert got == pytest.approx(expected.loc[("linguistic_complexity", 2, "lr_bigram_binary"), "mean"], abs=1e-12)
    sd = table.loc["Placebo Test 1", ("Oracle", "sd")]
    assert sd == pytest.approx(expected.loc[("placebo", 1, "oracle"), "std"], abs=1e-12)
    header, rows = bias_rows(seed_summary(data), "twitter")
    assert (
        header[0] == "Task level"
        and rows[1][3] == f"{got:+.3f} ± {table.loc['Linguistic Complexity 2', ('LR 1,2-gram', 'sd')]:.3f}"
    )


def test_placebo_table_counts_intervals_that_exclude_zero(data):
    table = placebo_table(seed_summary(data), "twitter")
    rows = data[(data["task"] == "placebo") & (data["model"] == "lr_bigram_binary") & (data["estimator"] == "ipw")]
    excludes = ((rows["ci_low"] > 0) | (rows["ci_high"] < 0)).mean()
    assert table.loc["LR 1,2-gram", "IPTW"] == pytest.approx(excludes)
    assert table.attrs["n_seeds"] == 4
    assert list(table.columns) == ["Unadjusted", "IPTW", "Stratified", "Matching"]


def test_format_headline_and_errors(data):
    text = format_headline(seed_summary(data), "twitter")
    assert text.startswith("Stratified bias on twitter (mean ± sd over 4 seed(s)")
    assert "Placebo test on twitter: share of the seeds (4 seeds)" in text
    with pytest.raises(
        ValueError, match=r"No 'aipw' results for corpus 'twitter'; the results have corpora \['twitter'\]"
    ):
        bias_table(seed_summary(data), "twitter", "aipw")
    no_placebo = seed_summary(data[data["task"] != "placebo"])
    assert placebo_table(no_placebo, "twitter").empty
    assert "Placebo" not in format_headline(no_placebo, "twitter")
    assert np.isfinite(bias_table(no_placebo, "twitter").iloc[0, 0])


def test_effect_methods_show_their_own_estimate(data):
    effect = data[(data["model"] == "lr_bigram_binary") & data["estimator"].isin(["unadjusted", "ipw"])].copy()
    effect["model"] = "my_dr"
    effect.loc[effect["estimator"] == "ipw", "estimator"] = "aipw_crossfit"
    table = bias_table(seed_summary(pd.concat([data, effect])), "twitter", "stratified")
    assert table.loc["Linguistic Complexity 2", ("my_dr", "mean")] == pytest.approx(
        bias_table(seed_summary(data), "twitter", "ipw").loc["Linguistic Complexity 2", ("LR 1,2-gram", "mean")]
    )

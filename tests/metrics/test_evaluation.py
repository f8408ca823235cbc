"""The one evaluation function: its rows equal direct calls of the estimators and metrics."""

from __future__ import annotations

import numpy as np
import pytest

from textcause import estimators as est
from textcause import metrics as met
from textcause.metrics.ad_interval import arbour_dimmery_interval, interval_narrower_than_ad
from textcause.metrics.evaluation import (
    ECE_BINS,
    PROPENSITY_METRICS,
    TRUTH_METRICS,
    evaluate_propensities,
    format_table,
    propensity_metrics,
)
from textcause.metrics.schema import AD_COLUMNS, AD_ESTIMATORS


@pytest.fixture(scope="module")
def units() -> dict[str, np.ndarray]:
    """A known positive effect (0.3) with a confounder that sets the treatment probability."""
    rng = np.random.default_rng(0)
    n = 800
    x = rng.normal(size=n)
    p = 1.0 / (1.0 + np.exp(-x))
    t = (rng.random(n) < p).astype(np.float64)
    y = (rng.random(n) < 0.2 + 0.3 * t + 0.2 * (x > 0)).astype(np.float64)
    p_hat = np.clip(p + rng.normal(0, 0.05, n), 0.01, 0.99)
    return {"t": t, "y": y, "p": p, "p_hat": p_hat}


def test_rows_equal_direct_calls(units):
    t, y, p, q = units["t"], units["y"], units["p_hat"], units["p"]
    rows = evaluate_propensities(t, y, p, true_propensity=q, true_ate=0.3, n_boot=0)
    assert [r["estimator"] for r in rows] == ["unadjusted", *est.DEFAULT_ESTIMATORS]
    by_name = {r["estimator"]: r for r in rows}
    direct = {
        "unadjusted": est.unadjusted(t, y),
        "ipw": est.ipw(t, y, p),
        "stratified": est.stratified(t, y, p, **est.ESTIMATOR_DEFAULTS["stratified"]),
        "matching": est.matching(t, y, p, **est.ESTIMATOR_DEFAULTS["matching"]),
    }
    for name, estimate in direct.items():
        row = by_name[name]
        assert row["ate"] == estimate.ate and row["bias"] == pytest.approx(estimate.ate - 0.3, abs=1e-15)
        assert (row["n_used"], row["n_dropped"]) == (estimate.n_used, estimate.n_dropped)
        assert row["ci_low"] is None and "covers_truth" not in row
    metrics = {
        "treatment_accuracy": met.treatment_accuracy(t, p),
        "ece": met.expected_calibration_error(t, p),
        "brier": met.brier_score(t, p),
        "iptw_weight_mse": met.iptw_weight_mse(t, p, q),
        "spearman": met.spearman(p, q),
        "rank_agreement": met.rank_agreement(p, q),
    }
    assert set(metrics) == set(PROPENSITY_METRICS + TRUTH_METRICS)
    for row in rows:
        assert {k: row[k] for k in metrics} == metrics
    assert "ipw" in format_table(rows)


def test_ece_bins(units):
    t, p = units["t"], units["p_hat"]
    assert propensity_metrics(t, p)["ece"] == met.expected_calibration_error(t, p, ECE_BINS)
    assert ECE_BINS == 15  # the default of every caller: results must not move
    five = evaluate_propensities(t, units["y"], p, n_boot=0, n_bins=5)
    default = evaluate_propensities(t, units["y"], p, n_boot=0)
    assert five[0]["ece"] == met.expected_calibration_error(t, p, 5) != default[0]["ece"]
    assert [{k: v for k, v in r.items() if k != "ece"} for r in five] == [
        {k: v for k, v in r.items() if k != "ece"} for r in default
    ]
    assert "iptw_weight_mse" not in default[0]  # no truth, no truth-based metrics


def test_intervals_and_outcome_models(units):
    t, y, p, q = units["t"], units["y"], units["p_hat"], units["p"]
    mu0 = np.full_like(y, y[t == 0].mean())
    mu1 = np.full_like(y, y[t == 1].mean())
    rows = evaluate_propensities(
        t, y, p, true_propensity=q, true_ate=0.3, estimators=["ipw", "aipw"], n_boot=50, seed=1, mu0=mu0, mu1=mu1
    )
    aipw = rows[-1]
    assert aipw["estimator"] == "aipw" and aipw["ate"] == est.aipw(t, y, p, mu0, mu1).ate
    assert aipw["ci_low"] <= aipw["ate"] <= aipw["ci_high"] and isinstance(aipw["covers_truth"], bool)
    assert not any(c in aipw for c in AD_COLUMNS)  # the Arbour-Dimmery interval is IPW's alone
    ipw = rows[1]
    assert ipw["estimator"] == "ipw" and ipw["ad_low"] <= ipw["ate"] <= ipw["ad_high"]
    again = evaluate_propensities(
        t, y, p, true_propensity=q, true_ate=0.3, estimators=["ipw", "aipw"], n_boot=50, seed=1, mu0=mu0, mu1=mu1
    )
    assert again == rows
    with pytest.warns(UserWarning, match=r"aipw needs outcome-model predictions \(mu0, mu1\)"):
        names = [r["estimator"] for r in evaluate_propensities(t, y, p, estimators=["aipw"], n_boot=0)]
    assert names == ["unadjusted"]


def test_the_arbour_dimmery_interval_is_on_the_ipw_row_only(units):
    t, y, p, q = units["t"], units["y"], units["p_hat"], units["p"]
    rows = evaluate_propensities(t, y, p, true_propensity=q, true_ate=0.3, n_boot=30, seed=2)
    assert AD_ESTIMATORS == ("ipw",) and [r["estimator"] for r in rows] == [
        "unadjusted",
        "ipw",
        "stratified",
        "matching",
    ]
    carrying = [r["estimator"] for r in rows if any(c in r for c in AD_COLUMNS)]
    assert carrying == ["ipw"]
    ipw, ad = rows[1], arbour_dimmery_interval(t, y, p, q)
    assert (ipw["ad_low"], ipw["ad_high"]) == (ad.low, ad.high)
    assert ipw["ad_low"] + ipw["ad_high"] == pytest.approx(2 * ipw["ate"], abs=1e-12)  # centred on IPW's estimate
    assert ipw["ci_narrower_than_ad"] is interval_narrower_than_ad(ipw["ci_low"], ipw["ci_high"], ad)
    # no true propensities, no interval; no IPW row, no interval computed at all
    assert not any(c in r for r in evaluate_propensities(t, y, p, n_boot=0) for c in AD_COLUMNS)
    no_ipw = evaluate_propensities(t, y, p, true_propensity=q, estimators=["stratified"], n_boot=0)
    assert [r["estimator"] for r in no_ipw] == ["unadjusted", "stratified"]
    assert not any(c in r for r in no_ipw for c in AD_COLUMNS)


def test_undefined_estimates_are_reported_and_bad_data_refused(units):
    t, y, p = units["t"], units["y"], units["p_hat"]
    rows = evaluate_propensities(t, y, p, n_boot=0, caliper=0.0)
    matching = rows[-1]
    assert matching["estimator"] == "matching" and "ate" not in matching
    assert "No unit of matching has a match within the caliper" in matching["error"]
    assert "failed: No unit of matching" in format_table(rows)
    with pytest.raises(ValueError, match="The treatment 't' has only one class"):
        evaluate_propensities(np.ones_like(t), y, p, n_boot=0)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        evaluate_propensities(t, y[:-1], p, n_boot=0)
    with pytest.raises(ValueError, match="'n_bins' parameter of expected_calibration_error must be an int >= 1"):
        evaluate_propensities(t, y, p, n_boot=0, n_bins=0)


def test_tmle_runs_with_outcome_predictions_and_is_skipped_without():
    import warnings

    from textcause.metrics.evaluation import evaluate_propensities

    rng = np.random.default_rng(0)
    n = 2000
    x = rng.random(n)
    p = 0.2 + 0.6 * x
    t = (rng.random(n) < p).astype(int)
    mu0 = 0.2 + 0.3 * x
    mu1 = mu0 + 0.3
    y = (rng.random(n) < np.where(t == 1, mu1, mu0)).astype(float)
    rows = evaluate_propensities(t, y, p, true_ate=0.3, estimators=("aipw", "tmle"), n_boot=20, mu0=mu0, mu1=mu1)
    by = {r["estimator"]: r for r in rows}
    assert abs(by["tmle"]["ate"] - 0.3) < 0.05 and by["tmle"]["ate"] == pytest.approx(by["aipw"]["ate"], abs=0.01)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = evaluate_propensities(t, y, p, estimators=("ipw", "tmle"), n_boot=0)
    assert [r["estimator"] for r in rows] == ["unadjusted", "ipw"]
    assert any("tmle needs outcome-model predictions" in str(w.message) for w in caught)

"""The Poisson bootstrap: its weights, its agreement with the multinomial bootstrap, its switches."""

from __future__ import annotations

import math

import numpy as np
import pytest

from textcause.estimators import bootstrap as bootstrap_module
from textcause.estimators import bootstrap_ci
from textcause.estimators.bootstrap import (
    _POISSON_MAX,
    POISSON_MIN_N,
    _poisson_sums,
    _poisson_tables,
    _poisson_weights,
)
from textcause.estimators.weighting import ipw_columns, ratio_difference

EFFECT = 0.5


def confounded(n: int, seed: int) -> dict[str, np.ndarray]:
    """A confounder x, propensity sigmoid(x), outcome 0.5 * t + x + noise: true ATE 0.5."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    p = 1.0 / (1.0 + np.exp(-x))
    t = (rng.random(n) < p).astype(np.int64)
    y = EFFECT * t + x + rng.normal(size=n)
    return {"t": t, "y": y, "p": p, "mu0": x, "mu1": x + EFFECT}


def args_for(name: str, d: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    return {
        "unadjusted": (d["t"], d["y"]),
        "ipw": (d["t"], d["y"], d["p"]),
        "aipw": (d["t"], d["y"], d["p"], d["mu0"], d["mu1"]),
    }[name]


# --- the weights ---------------------------------------------------------------------------


def test_the_tables_give_poisson_one_to_within_3e_12():
    cuts, ambiguous, refine = _poisson_tables()
    definite = np.diff([0, *cuts, ambiguous])  # bytes per count: 94, 94, 47, 15, 3
    cells = np.zeros(_POISSON_MAX + 1)
    cells[: definite.size] = definite
    rest = np.diff(np.concatenate([[0], refine.astype(np.float64), [2.0**32]])) / 2.0**32
    implied = cells / 256.0 + (256 - ambiguous) / 256.0 * rest
    exact = np.array([math.exp(-1.0) / math.factorial(k) for k in range(_POISSON_MAX + 1)])
    exact[-1] += 1.0 - exact.sum()  # the tail beyond 13 is given to 13 ...
    assert 1.0 - sum(math.exp(-1.0) / math.factorial(k) for k in range(_POISSON_MAX + 1)) < 5e-12  # ... and is tiny
    np.testing.assert_allclose(implied, exact, rtol=0, atol=3e-12)
    assert implied.sum() == pytest.approx(1.0, abs=1e-15)


def test_weights_have_mean_one_and_variance_one():
    w = np.concatenate([b.ravel() for b in _poisson_weights(250_003, 8, seed=4)]).astype(np.float64)
    assert w.size == 2_000_024 and w.max() <= _POISSON_MAX
    se = 1.0 / math.sqrt(w.size)  # of the mean; the variance's is about 1.7 times larger
    assert abs(w.mean() - 1.0) < 5 * se
    assert abs(w.var() - 1.0) < 5 * 1.8 * se
    freq = np.bincount(w.astype(np.int64), minlength=_POISSON_MAX + 1)[:7] / w.size
    exact = np.array([math.exp(-1.0) / math.factorial(k) for k in range(7)])
    assert np.all(np.abs(freq - exact) < 5 * np.sqrt(exact * (1 - exact) / w.size) + 1e-6)


def test_weights_depend_only_on_n_n_boot_and_seed(monkeypatch):
    d = confounded(30_000, seed=2)
    cols = ipw_columns(d["t"], d["y"], d["p"])
    monkeypatch.setattr(bootstrap_module, "POISSON_THREADS", 1)
    one = _poisson_sums(cols, 150, seed=9)
    monkeypatch.setattr(bootstrap_module, "POISSON_THREADS", 2)
    two = _poisson_sums(cols, 150, seed=9)
    np.testing.assert_array_equal(one, two)
    # the same weights as poisson_weights, block after block
    w = np.concatenate(list(_poisson_weights(cols.shape[0], 150, seed=9))).astype(np.float64)
    np.testing.assert_allclose(one, w @ cols, rtol=0, atol=1e-6 * (w @ np.abs(cols)).max())
    assert not np.array_equal(one, _poisson_sums(cols, 150, seed=10))


def test_float32_products_move_no_interval_end():
    d = confounded(200_000, seed=3)
    cols = ipw_columns(d["t"], d["y"], d["p"])
    single, _ = ratio_difference(_poisson_sums(cols, 64, seed=1))
    double, _ = ratio_difference(_poisson_sums(cols, 64, seed=1, dtype=np.float64))
    width = np.quantile(double, 0.975) - np.quantile(double, 0.025)
    assert np.max(np.abs(single - double)) < 1e-5 * width  # measured about 1e-7 of the width


# --- the same intervals in distribution ----------------------------------------------------


@pytest.mark.parametrize("name", ["unadjusted", "ipw", "aipw"])
def test_poisson_and_multinomial_replicates_agree_in_distribution(name):
    d = confounded(20_000, seed=5)
    pois = bootstrap_ci(name, *args_for(name, d), n_boot=400, seed=1, scheme="poisson")
    mult = bootstrap_ci(name, *args_for(name, d), n_boot=400, seed=1, scheme="multinomial")
    assert pois.details["bootstrap"]["scheme"] == "poisson"
    assert mult.details["bootstrap"]["scheme"] == "multinomial"
    assert pois.ate == mult.ate
    se_p, se_m = pois.details["bootstrap"]["se"], mult.details["bootstrap"]["se"]
    # each SE from 400 replicates is within about 3.5% of the truth: 15% is 3 sigma of their ratio
    assert se_p / se_m == pytest.approx(1.0, abs=0.15)
    # centres and interval ends agree to a fraction of an SE
    rp, rm = pois.details["bootstrap"]["replicates"], mult.details["bootstrap"]["replicates"]
    assert abs(rp.mean() - rm.mean()) < 0.3 * se_m
    assert abs(pois.ci_low - mult.ci_low) < 0.5 * se_m and abs(pois.ci_high - mult.ci_high) < 0.5 * se_m
    assert pois.ci_low < EFFECT < pois.ci_high or name == "unadjusted"  # unadjusted is confounded


def test_poisson_interval_covers_the_effect_about_95_percent():
    hits = 0
    for rep in range(120):
        d = confounded(300, seed=100 + rep)
        est = bootstrap_ci("aipw", *args_for("aipw", d), n_boot=200, seed=rep, scheme="poisson")
        hits += est.ci_low <= EFFECT <= est.ci_high
    assert 104 <= hits <= 120  # 95% of 120 is 114; binomial sd 2.4
    assert hits == 111  # seeds 100-219 and 0-119, pinned


def test_per_replicate_path_uses_the_same_weights():
    d = confounded(300, seed=6)
    for name in ("unadjusted", "ipw", "aipw"):
        fast = bootstrap_ci(name, *args_for(name, d), n_boot=70, seed=2, scheme="poisson")
        slow = bootstrap_ci(name, *args_for(name, d), n_boot=70, seed=2, scheme="poisson", vectorized=False)
        np.testing.assert_allclose(
            fast.details["bootstrap"]["replicates"], slow.details["bootstrap"]["replicates"], rtol=0, atol=1e-6
        )
    est = bootstrap_ci("stratified", d["t"], d["y"], d["p"], n_boot=20, seed=0, scheme="poisson", n_strata=4)
    assert est.details["bootstrap"]["scheme"] == "poisson" and est.ci_low < est.ci_high


def test_poisson_replicates_with_an_empty_arm_fail():
    t = np.array([1, 0, 0, 0, 0, 0])
    y = np.array([1.0, 0.0, 0.0, 1.0, 0.0, 0.0])
    est = bootstrap_ci("unadjusted", t, y, n_boot=400, seed=0, scheme="poisson")
    slow = bootstrap_ci("unadjusted", t, y, n_boot=400, seed=0, scheme="poisson", vectorized=False)
    n_failed = est.details["bootstrap"]["n_failed"]
    # the treated unit's weight is 0 with probability 1/e (and all five controls' with e^-5)
    assert abs(n_failed - 400 * (math.exp(-1) + math.exp(-5))) < 4 * math.sqrt(400 * 0.24)
    assert n_failed == slow.details["bootstrap"]["n_failed"]
    assert est.details["bootstrap"]["replicates"].size == 400 - n_failed


# --- the scheme switch ---------------------------------------------------------------------


def test_auto_below_the_threshold_is_the_multinomial_bootstrap_bit_for_bit():
    d = confounded(2_000, seed=7)
    for name in ("unadjusted", "ipw", "aipw"):
        auto = bootstrap_ci(name, *args_for(name, d), n_boot=100, seed=3)
        mult = bootstrap_ci(name, *args_for(name, d), n_boot=100, seed=3, scheme="multinomial")
        assert auto.details["bootstrap"]["scheme"] == "multinomial"
        np.testing.assert_array_equal(auto.details["bootstrap"]["replicates"], mult.details["bootstrap"]["replicates"])
        assert (auto.ci_low, auto.ci_high) == (mult.ci_low, mult.ci_high)


def test_auto_switches_at_the_threshold(monkeypatch):
    assert POISSON_MIN_N == 100_000
    monkeypatch.setattr(bootstrap_module, "POISSON_MIN_N", 500)
    d = confounded(500, seed=8)
    below = bootstrap_ci("ipw", d["t"][:499], d["y"][:499], d["p"][:499], n_boot=10)
    at = bootstrap_ci("ipw", d["t"], d["y"], d["p"], n_boot=10)
    assert below.details["bootstrap"]["scheme"] == "multinomial" and at.details["bootstrap"]["scheme"] == "poisson"


def test_large_n_auto_is_poisson_and_deterministic():
    d = confounded(POISSON_MIN_N, seed=9)
    a = bootstrap_ci("ipw", d["t"], d["y"], d["p"], n_boot=100, seed=5)
    b = bootstrap_ci("ipw", d["t"], d["y"], d["p"], n_boot=100, seed=5, scheme="poisson")
    c = bootstrap_ci("ipw", d["t"], d["y"], d["p"], n_boot=100, seed=6)
    assert a.details["bootstrap"]["scheme"] == "poisson"
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high) and (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)
    assert a.ci_low < a.ate < a.ci_high


@pytest.mark.parametrize("scheme", ["bayes", "Poisson", None, 1])
def test_a_bad_scheme_raises(scheme):
    d = confounded(50, seed=0)
    with pytest.raises(
        ValueError,
        match=r"The 'scheme' parameter of bootstrap_ci must be one of \['auto', 'multinomial', 'poisson'\]\. "
        + f"Got {scheme!r} instead",
    ):
        bootstrap_ci("ipw", d["t"], d["y"], d["p"], n_boot=5, scheme=scheme)

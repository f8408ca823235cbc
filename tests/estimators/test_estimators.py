"""ATE estimators and the bootstrap: known truth, independent references, degenerate cases, errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from textcause.estimators import (
    ESTIMATORS,
    Estimate,
    aipw,
    bootstrap_ci,
    bootstrap_indices,
    ipw,
    matching,
    nearest_opposite,
    propensity_strata,
    stratified,
    unadjusted,
)
from textcause.estimators import bootstrap as bootstrap_module

TRUE_ATE = 0.4

# Pinned estimates on the seeded draws below (a determinism / regression check, kept apart from the
# known-truth tolerances; rel=1e-9 allows for summation order in numpy).
PINNED_ORACLE = {"ipw": 0.39851521926561695, "stratified": 0.3996792430838799, "matching": 0.39967924308387986}
PINNED_SMALL = {
    "unadjusted": 1.2162957973633315,
    "ipw": 0.7980745195203657,
    "stratified": 0.8920314931976602,
    "matching": 0.9217894522435621,
}


def paper_dgp(n: int, seed: int) -> dict[str, np.ndarray]:
    """Weld et al. fig. 3: class 50/50; P(T=1) 0.9 / 0.1; P(Y=1 | class, T) 0.9/0.1 and 0.9/0.9."""
    rng = np.random.default_rng(seed)
    class1 = rng.random(n) < 0.5
    p = np.where(class1, 0.9, 0.1)
    t = (rng.random(n) < p).astype(np.int64)
    mu1 = np.full(n, 0.9)
    mu0 = np.where(class1, 0.1, 0.9)
    y = (rng.random(n) < np.where(t == 1, mu1, mu0)).astype(np.float64)
    return {"t": t, "y": y, "p": p, "mu0": mu0, "mu1": mu1}


@pytest.fixture(scope="module")
def dgp() -> dict[str, np.ndarray]:
    return paper_dgp(200_000, seed=0)


@pytest.fixture(scope="module")
def small() -> dict[str, np.ndarray]:
    """Continuous, distinct propensities with confounding and a positive effect of 1.0."""
    rng = np.random.default_rng(1)
    n = 400
    x = rng.normal(size=n)
    p = 1.0 / (1.0 + np.exp(-1.2 * x))
    t = (rng.random(n) < p).astype(np.int64)
    y = 1.0 * t + 0.5 * x + rng.normal(scale=0.5, size=n)
    return {"t": t, "y": y, "p": p, "x": x}


# --- known truth ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ipw", "stratified", "matching"])
def test_oracle_propensity_recovers_true_ate(dgp, name):
    est = ESTIMATORS[name](dgp["t"], dgp["y"], dgp["p"])
    assert isinstance(est, Estimate) and est.method == name
    assert abs(est.ate - TRUE_ATE) < 0.02
    assert est.ate == pytest.approx(PINNED_ORACLE[name], rel=1e-9)
    assert est.n_used == dgp["t"].size and est.n_dropped == 0


def test_unadjusted_is_confounded(dgp):
    est = unadjusted(dgp["t"], dgp["y"])
    assert abs(est.ate - 0.08) < 0.02  # bias -0.32 relative to the true 0.4
    assert est.ate == pytest.approx(0.07951038149712275, rel=1e-9)
    assert est.details["n_treated"] + est.details["n_control"] == dgp["t"].size


def test_aipw_with_oracle_models(dgp):
    est = aipw(dgp["t"], dgp["y"], dgp["p"], dgp["mu0"], dgp["mu1"])
    assert abs(est.ate - TRUE_ATE) < 0.02
    assert est.ci_low < TRUE_ATE < est.ci_high
    assert (est.ate, est.ci_low, est.ci_high) == pytest.approx(
        (0.3996864444444445, 0.39494543556560013, 0.4044274533232889), rel=1e-9
    )


def test_aipw_is_doubly_robust(dgp):
    # right outcome model, useless propensity (constant): still unbiased
    est = aipw(dgp["t"], dgp["y"], np.full(dgp["t"].size, 0.5), dgp["mu0"], dgp["mu1"])
    assert abs(est.ate - TRUE_ATE) < 0.02
    assert est.ate == pytest.approx(0.40081799999999995, rel=1e-9)
    # right propensity, useless outcome model (zeros): still unbiased
    zeros = np.zeros(dgp["t"].size)
    weighted = aipw(dgp["t"], dgp["y"], dgp["p"], zeros, zeros).ate
    assert abs(weighted - TRUE_ATE) < 0.03
    assert weighted == pytest.approx(0.4017944444444444, rel=1e-9)


@pytest.mark.parametrize("name", ["unadjusted", "ipw", "stratified", "matching"])
def test_swapping_arms_reverses_the_sign(small, name):
    fn = ESTIMATORS[name]
    args = (small["t"], small["y"]) if name == "unadjusted" else (small["t"], small["y"], small["p"])
    flipped = (1 - small["t"], small["y"]) if name == "unadjusted" else (1 - small["t"], small["y"], 1 - small["p"])
    a, b = fn(*args).ate, fn(*flipped).ate
    assert a > 0.5
    assert a == pytest.approx(PINNED_SMALL[name], rel=1e-9)
    assert b == pytest.approx(-a, abs=1e-12)


# --- degenerate cases ----------------------------------------------------------------------


def test_randomised_treatment_ipw_equals_difference_in_means(dgp):
    p = np.full(dgp["t"].size, 0.37)
    assert ipw(dgp["t"], dgp["y"], p).ate == pytest.approx(unadjusted(dgp["t"], dgp["y"]).ate, abs=1e-12)


def test_constant_propensity_stratified_and_matching_equal_unadjusted(small):
    p = np.full(small["t"].size, 0.5)
    naive = unadjusted(small["t"], small["y"]).ate
    est = stratified(small["t"], small["y"], p, n_strata=10)
    assert est.ate == pytest.approx(naive, abs=1e-12)
    assert est.details["strata"] == [4] and est.n_dropped == 0
    # every unit is tied with the whole other arm: its match outcome is that arm's mean
    assert matching(small["t"], small["y"], p).ate == pytest.approx(naive, abs=1e-12)


# --- independent references ----------------------------------------------------------------


def test_ipw_equals_statsmodels_wls(small):
    sm = pytest.importorskip("statsmodels.api")
    t, y, p = small["t"], small["y"], small["p"]
    w = np.where(t == 1, 1.0 / p, 1.0 / (1.0 - p))
    coef = sm.WLS(y, sm.add_constant(t.astype(float)), weights=w).fit().params[1]
    assert ipw(t, y, p).ate == pytest.approx(coef, abs=1e-6)


def test_unadjusted_equals_statsmodels_ols(small):
    sm = pytest.importorskip("statsmodels.api")
    coef = sm.OLS(small["y"], sm.add_constant(small["t"].astype(float))).fit().params[1]
    assert unadjusted(small["t"], small["y"]).ate == pytest.approx(coef, abs=1e-6)


def _pandas_stratified(t, y, p, n_strata, drop_units=None):
    df = pd.DataFrame({"t": t, "y": y, "k": pd.qcut(p, n_strata, labels=False)})
    per = df.groupby(["k", "t"])["y"].mean().unstack()
    per = per.dropna()  # strata lacking an arm
    sizes = df.groupby("k").size().loc[per.index]
    return float(((per[1] - per[0]) * sizes).sum() / sizes.sum()), int(len(df) - sizes.sum())


def test_stratified_equals_pandas_qcut_groupby(small):
    ref, _ = _pandas_stratified(small["t"], small["y"], small["p"], 10)
    assert stratified(small["t"], small["y"], small["p"], n_strata=10).ate == pytest.approx(ref, abs=1e-6)
    qcut = pd.qcut(small["p"], 8, labels=False)
    np.testing.assert_array_equal(propensity_strata(small["p"], 8), qcut)


def test_stratified_drops_strata_without_both_arms_and_renormalises(small):
    t = small["t"].copy()
    low = small["p"] <= np.quantile(small["p"], 0.2)  # the two lowest strata: controls only
    t[low] = 0
    est = stratified(t, small["y"], small["p"], n_strata=10)
    ref, dropped = _pandas_stratified(t, small["y"], small["p"], 10)
    assert est.details["empty_strata"] == [0, 1]
    assert est.n_dropped == dropped == 80 and est.n_used == 320
    assert est.ate == pytest.approx(ref, abs=1e-9)
    assert np.isfinite(est.ate) and all(np.isfinite(list(est.details["stratum_ates"].values())))


def test_propensity_strata_rank_rule():
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95])
    np.testing.assert_array_equal(propensity_strata(p, 5), [0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    # ties share a stratum, placed by their mean rank; the result ignores unit order
    tied = np.array([0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.7, 0.8, 0.9, 0.95])
    np.testing.assert_array_equal(propensity_strata(tied, 5), [1, 1, 1, 1, 1, 1, 3, 3, 4, 4])
    perm = np.random.default_rng(0).permutation(10)
    np.testing.assert_array_equal(propensity_strata(tied[perm], 5), propensity_strata(tied, 5)[perm])
    assert set(propensity_strata(np.full(7, 0.3), 10)) == {4}


@pytest.mark.parametrize("n", [7, 60, 2_000])
@pytest.mark.parametrize("n_strata", [2, 10, 5_000])
@pytest.mark.parametrize("decimals", [None, 1, 2, 3])
def test_propensity_strata_follow_scipys_average_ranks(n, n_strata, decimals):
    """The rank rule against scipy.stats.rankdata(method="average"): without ties, with ties that
    stay inside a stratum (the positions alone decide) and with runs of ties across boundaries."""
    from scipy.stats import rankdata

    rng = np.random.default_rng(n + n_strata)
    p = rng.uniform(0.06, 0.94, size=n)
    if decimals is not None:
        p = np.round(p, decimals)
    expected = (n_strata * (rankdata(p, method="average") - 1) // n).astype(np.int64)
    np.testing.assert_array_equal(propensity_strata(p, n_strata), expected)


def test_ties_inside_strata_keep_their_positions_strata():
    """Pairs of ties that never cross a boundary (5 strata of 2 units; 4 strata of 3 cross)."""
    p = np.repeat([0.1, 0.3, 0.5, 0.7, 0.9], 2)
    np.testing.assert_array_equal(propensity_strata(p, 5), [0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    p = np.repeat([0.1, 0.3, 0.5, 0.7], 3)  # boundaries at positions 3, 6, 9: no run crosses
    np.testing.assert_array_equal(propensity_strata(p, 4), np.repeat([0, 1, 2, 3], 3))
    p = np.repeat([0.1, 0.3, 0.5], 4)  # 4 strata of 3: runs of 4 cross, each goes to its mean rank
    np.testing.assert_array_equal(propensity_strata(p, 4), np.repeat([0, 1, 3], 4))


def test_matching_equals_sklearn_nearest_neighbors(small):
    from sklearn.neighbors import NearestNeighbors

    t, y, p = small["t"], small["y"], small["p"]
    assert np.unique(p).size == p.size  # no ties, so the nearest neighbour is unique
    match = np.empty(t.size, dtype=int)
    for arm in (0, 1):
        q, pool = np.flatnonzero(t == arm), np.flatnonzero(t != arm)
        nn = NearestNeighbors(n_neighbors=1, algorithm="brute").fit(p[pool, None])
        match[q] = pool[nn.kneighbors(p[q, None], return_distance=False)[:, 0]]
    mine, dist = nearest_opposite(t, p)
    np.testing.assert_array_equal(mine, match)
    np.testing.assert_allclose(dist, np.abs(p - p[match]), atol=0)
    contrib = (2 * t - 1) * (y - y[match])
    assert matching(t, y, p, caliper=None).ate == pytest.approx(contrib.mean(), abs=1e-12)
    width = 0.05 * p.std()
    keep = np.abs(p - p[match]) <= width
    est = matching(t, y, p, caliper=0.05)
    assert 0 < est.n_dropped == int((~keep).sum())
    assert est.ate == pytest.approx(contrib[keep].mean(), abs=1e-12)
    assert est.details["caliper_width"] == pytest.approx(width)


def test_matching_averages_ties():
    t = np.array([1, 0, 0, 0, 1, 1])
    y = np.array([5.0, 0.0, 1.0, 4.0, 7.0, 9.0])
    p = np.array([0.5, 0.4, 0.6, 0.6, 0.8, 0.8])
    # unit 0 (p=.5): controls at .4 and .6 equidistant -> mean of y[1], y[2], y[3] = 5/3
    # units 4, 5 (p=.8): nearest control value .6 -> mean(1, 4) = 2.5
    # controls 1 (p=.4) -> treated 0 (y=5); 2, 3 (p=.6): treated at .5 (distance .1) vs .8 (.2)
    expected = np.mean([5 - 5 / 3, 7 - 2.5, 9 - 2.5, 5 - 0, 5 - 1, 5 - 4])
    est = matching(t, y, p, caliper=None)
    assert est.ate == pytest.approx(expected, abs=1e-12)
    assert nearest_opposite(t, p)[0][0] == 1  # representative: lower propensity first
    assert nearest_opposite([0, 1, 0, 0], [0.6, 0.5, 0.6, 0.6])[0][1] == 0  # then smallest index


def test_matching_and_stratified_ignore_unit_order(dgp):
    n = 20_000
    t, y, p = dgp["t"][:n], dgp["y"][:n], dgp["p"][:n]  # two-valued propensity: all ties
    perm = np.random.default_rng(5).permutation(n)
    for fn in (matching, stratified):
        assert fn(t[perm], y[perm], p[perm]).ate == pytest.approx(fn(t, y, p).ate, abs=1e-12)


def test_matching_is_n_log_n_sized(dgp):
    # 200k units: an n x n distance matrix would need 320 GB
    rng = np.random.default_rng(3)
    p = np.clip(dgp["p"] + rng.normal(0, 0.05, dgp["p"].size), 0.01, 0.99)
    est = matching(dgp["t"], dgp["y"], p)
    assert abs(est.ate - TRUE_ATE) < 0.05
    assert est.ate == pytest.approx(0.3988764273919671, rel=1e-9)


def test_aipw_equals_hand_computation():
    t = np.array([1, 0, 1, 0, 1])
    y = np.array([1.0, 0.0, 0.5, 1.0, 2.0])
    p = np.array([0.6, 0.3, 0.8, 0.5, 0.4])
    mu0 = np.array([0.2, 0.1, 0.4, 0.9, 1.0])
    mu1 = np.array([0.9, 0.5, 0.6, 1.2, 1.5])
    psi = [
        mu1[i] - mu0[i] + (y[i] - mu1[i]) / p[i] if t[i] else mu1[i] - mu0[i] - (y[i] - mu0[i]) / (1 - p[i])
        for i in range(5)
    ]
    est = aipw(t, y, p, mu0, mu1, level=0.9)
    se = np.std(psi, ddof=1) / np.sqrt(5)
    assert est.ate == pytest.approx(np.mean(psi), abs=1e-12)
    assert est.details["se"] == pytest.approx(se, abs=1e-12)
    assert est.ci_high - est.ate == pytest.approx(1.6448536269514722 * se, abs=1e-9)


def test_ipw_clip(small):
    t, y, p = small["t"], small["y"], small["p"]
    est = ipw(t, y, p, clip=0.1)
    assert est.details["n_clipped"] == int(((p < 0.1) | (p > 0.9)).sum()) == 18
    assert est.ate == pytest.approx(ipw(t, y, np.clip(p, 0.1, 0.9)).ate, abs=1e-12)
    assert ipw(t, y, p, clip=0.5).ate == pytest.approx(unadjusted(t, y).ate, abs=1e-12)
    # saturated model outputs (exactly 0 or 1) are accepted when they are clipped
    hard = np.r_[0.0, 1.0, p[2:]]
    assert ipw(t, y, hard, clip=0.05).details["n_clipped"] == 9  # the two saturated units and 7 others
    fast = bootstrap_ci("ipw", t, y, hard, clip=0.05, n_boot=20, seed=0)
    slow = bootstrap_ci("ipw", t, y, hard, clip=0.05, n_boot=20, seed=0, vectorized=False)
    np.testing.assert_allclose(
        fast.details["bootstrap"]["replicates"], slow.details["bootstrap"]["replicates"], atol=1e-12
    )


def test_estimators_do_not_mutate_inputs(small):
    arrays = {k: v.copy() for k, v in small.items()}
    for name in ("ipw", "stratified", "matching"):
        ESTIMATORS[name](arrays["t"], arrays["y"], arrays["p"])
    for k in small:
        np.testing.assert_array_equal(arrays[k], small[k])


# --- bootstrap -----------------------------------------------------------------------------


def test_bootstrap_is_deterministic_and_brackets_the_estimate(small):
    a = bootstrap_ci("ipw", small["t"], small["y"], small["p"], n_boot=300, seed=7)
    b = bootstrap_ci(ipw, small["t"], small["y"], small["p"], n_boot=300, seed=7)
    c = bootstrap_ci("ipw", small["t"], small["y"], small["p"], n_boot=300, seed=8)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)
    assert a.ci_low < a.ate < a.ci_high
    assert (a.ci_low, a.ci_high) == pytest.approx((0.6308757096319629, 0.9708848734355845), rel=1e-9)
    assert a.ate == ipw(small["t"], small["y"], small["p"]).ate
    assert a.details["bootstrap"]["n_failed"] == 0 and a.details["bootstrap"]["replicates"].size == 300


@pytest.mark.parametrize("chunk", [1 << 22, 1000])
@pytest.mark.parametrize("name", ["unadjusted", "ipw", "aipw"])
def test_vectorised_bootstrap_equals_naive_loop(small, name, chunk, monkeypatch):
    monkeypatch.setattr(bootstrap_module, "_CHUNK_ELEMENTS", chunk)  # 1000: 2 resamples per chunk
    t, y, p = small["t"], small["y"], small["p"]
    args = {"unadjusted": (t, y), "ipw": (t, y, p), "aipw": (t, y, p, 0.3 * t, 0.3 + 0.1 * t)}[name]
    fast = bootstrap_ci(name, *args, n_boot=50, seed=3)
    slow = bootstrap_ci(name, *args, n_boot=50, seed=3, vectorized=False)
    np.testing.assert_allclose(
        fast.details["bootstrap"]["replicates"], slow.details["bootstrap"]["replicates"], rtol=0, atol=1e-12
    )
    # and the loop really uses these indices
    idx = np.concatenate(list(bootstrap_indices(t.size, 50, 3)))
    first = ESTIMATORS[name](*(a[idx[0]] for a in args)).ate
    assert slow.details["bootstrap"]["replicates"][0] == pytest.approx(first, abs=1e-12)


def test_bootstrap_resamples_keyword_arrays(small):
    t, y, p = small["t"], small["y"], small["p"]
    mu0, mu1 = 0.5 * small["x"], 0.3 + 0.5 * small["x"]
    pos = bootstrap_ci("aipw", t, y, p, mu0, mu1, n_boot=40, seed=1)
    kw = bootstrap_ci("aipw", t, y, p, mu0=mu0, mu1=mu1, n_boot=40, seed=1, vectorized=False)
    np.testing.assert_allclose(
        pos.details["bootstrap"]["replicates"], kw.details["bootstrap"]["replicates"], atol=1e-12
    )


@pytest.mark.parametrize(
    "name,kwargs,pinned",
    [
        ("stratified", {"n_strata": 5}, (0.909320071946017, 0.8168355028104186, 1.0390984862317223)),
        ("matching", {"caliper": None}, (0.9239148634324489, 0.8167275782568311, 1.0998813192219385)),
    ],
)
def test_bootstrap_other_estimators(small, name, kwargs, pinned):
    est = bootstrap_ci(name, small["t"], small["y"], small["p"], n_boot=30, seed=0, **kwargs)
    assert est.method == name and est.ci_low <= est.ate <= est.ci_high
    assert (est.ate, est.ci_low, est.ci_high) == pytest.approx(pinned, rel=1e-9)  # seed 0, pinned
    if name == "stratified":
        assert est.details["n_strata"] == 5


def test_bootstrap_drops_undefined_replicates():
    t = np.array([1, 0, 0, 0, 0, 0])
    y = np.array([1.0, 0.0, 0.0, 1.0, 0.0, 0.0])
    est = bootstrap_ci("unadjusted", t, y, n_boot=200, seed=0)
    slow = bootstrap_ci("unadjusted", t, y, n_boot=200, seed=0, vectorized=False)
    n_failed = est.details["bootstrap"]["n_failed"]
    assert 0 < n_failed < 200 and n_failed == slow.details["bootstrap"]["n_failed"]
    assert n_failed == 77  # seed 0, pinned: resamples without the one treated unit (expected about 200 * (5/6)**6 = 67)
    reps = est.details["bootstrap"]["replicates"]
    assert reps.size == 200 - n_failed and np.all(np.isfinite(reps))
    assert np.isfinite(est.ci_low) and np.isfinite(est.ci_high)


def test_bootstrap_coverage_is_roughly_nominal():
    # randomised treatment, effect 0.5: the 90% percentile interval should cover it ~90% of the time
    rng = np.random.default_rng(11)
    hits = 0
    for rep in range(100):
        t = (rng.random(300) < 0.5).astype(int)
        y = 0.5 * t + rng.normal(size=300)
        est = bootstrap_ci("ipw", t, y, np.full(300, 0.5), n_boot=200, level=0.9, seed=rep)
        hits += est.ci_low <= 0.5 <= est.ci_high
    assert 80 <= hits <= 98
    assert hits == 90  # seeds 11 and 0-99, pinned


# --- errors --------------------------------------------------------------------------------


def test_error_messages(small):
    t, y, p = small["t"], small["y"], small["p"]
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples: \[400, 399, 400\]"):
        ipw(t, y[:-1], p)
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples"):
        matching(t, y, p[:-1])
    with pytest.raises(ValueError, match=r"must be binary \(0/1\)"):
        unadjusted(t * 2, y)
    with pytest.raises(ValueError, match=r"has only one class \(1\)"):
        stratified(np.ones_like(t), y, p)
    with pytest.raises(ValueError, match=r"strictly between 0 and 1\. Got (np\.float64\()?1\.0\)? at index 0"):
        ipw(t, y, np.r_[1.0, p[1:]])
    with pytest.raises(ValueError, match=r"'propensity' contains NaN"):
        matching(t, y, np.r_[np.nan, p[1:]])
    with pytest.raises(ValueError, match=r"'y' contains NaN"):
        unadjusted(t, np.r_[np.nan, y[1:]])
    with pytest.raises(ValueError, match=r"1-D array"):
        ipw(t[:, None], y, p)
    with pytest.raises(
        ValueError, match=r"The 'n_strata' parameter of stratified must be an int >= 2\. Got 0 instead\."
    ):
        stratified(t, y, p, n_strata=0)
    with pytest.raises(ValueError, match=r"The 'n_strata' parameter of stratified must be an int >= 2\. Got 2\.5"):
        stratified(t, y, p, n_strata=2.5)
    with pytest.raises(ValueError, match=r"The 'n_strata' parameter of propensity_strata"):
        propensity_strata(p, 1)
    with pytest.raises(ValueError, match=r"The 'caliper' parameter of matching must be a float >= 0\.0\. Got -0\.1"):
        matching(t, y, p, caliper=-0.1)
    with pytest.raises(
        ValueError, match=r"The 'clip' parameter of ipw must be a float >= 1e-08 and <= 0\.5\. Got 0\.7"
    ):
        ipw(t, y, p, clip=0.7)
    with pytest.raises(
        ValueError, match=r"The 'clip' parameter of aipw must be a float >= 1e-08 and <= 0\.5\. Got 0\.0"
    ):
        aipw(t, y, p, y, y, clip=0.0)
    with pytest.raises(ValueError, match=r"The 'level' parameter of aipw"):
        aipw(t, y, p, y, y, level=1.0)
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples"):
        aipw(t, y, p, y[:-1], y)


def test_undefined_estimates_raise_not_nan():
    p = np.linspace(0.05, 0.95, 20)
    t = (p > 0.5).astype(int)  # perfectly separated: no stratum holds both arms
    y = np.arange(20.0)
    with pytest.raises(ValueError, match=r"No propensity stratum of stratified holds both treated and untreated"):
        stratified(t, y, p, n_strata=2)
    with pytest.raises(ValueError, match=r"No unit of matching has a match within the caliper"):
        matching(t, y, p, caliper=0.0)


def test_bootstrap_error_messages(small):
    t, y, p = small["t"], small["y"], small["p"]
    with pytest.raises(ValueError, match=r"The 'n_boot' parameter of bootstrap_ci must be an int >= 1\. Got 0"):
        bootstrap_ci("ipw", t, y, p, n_boot=0)
    for level in (0.0, 1.0, 1.5):
        with pytest.raises(
            ValueError, match=r"The 'level' parameter of bootstrap_ci must be a float > 0\.0 and < 1\.0"
        ):
            bootstrap_ci("ipw", t, y, p, level=level)
    with pytest.raises(ValueError, match=r"The 'seed' parameter of bootstrap_ci must be an int >= 0"):
        bootstrap_ci("ipw", t, y, p, seed=-1)
    with pytest.raises(
        ValueError, match=r"The 'estimator' parameter of bootstrap_ci must be a callable or a str among"
    ):
        bootstrap_ci("iptw", t, y, p)
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples"):
        bootstrap_ci("ipw", t, y, p[:-1])

    def only_on_full_data(tt, yy):
        if not np.array_equal(tt, t):
            raise ValueError("undefined")
        return unadjusted(tt, yy)

    with pytest.raises(ValueError, match=r"All 20 bootstrap replicates of unadjusted were undefined"):
        bootstrap_ci(only_on_full_data, t, y, n_boot=20)


# --- hostile input: a finite estimate or one ValueError, never NaN, inf or a raw exception ---------


HUGE = np.array([1e308, -1e308, 1e308, -1e308, 1e308, -1e308])
T6 = np.array([1, 0, 1, 0, 1, 0])
P6 = np.full(6, 0.5)


@pytest.mark.parametrize(
    "name, args",
    [
        ("unadjusted", (T6, HUGE)),
        ("unadjusted", (T6, np.full(6, 1e308))),  # all the same sign: the sums overflow to inf, then NaN
        ("ipw", (T6, HUGE, P6)),
        ("stratified", (T6, HUGE, P6)),
        ("matching", (T6, HUGE, P6)),
        ("aipw", (T6, HUGE, P6, np.zeros(6), np.zeros(6))),
        ("aipw", (T6, np.zeros(6), P6, HUGE, np.zeros(6))),
    ],
)
def test_outcomes_too_large_for_float64_are_refused_not_nan(name, args):
    # issue 14: y = 1e308 gave NaN / inf
    with pytest.raises(ValueError, match=rf"The '(y|mu0)' values of {name} must have magnitude <= 1e\+100.*rescale"):
        ESTIMATORS[name](*args)
    with pytest.raises(ValueError, match=r"must have magnitude <= 1e\+100"):
        bootstrap_ci(name, *args, n_boot=5)


def test_large_but_safe_outcomes_give_finite_estimates():
    y = 1e100 * np.array([1.0, -1.0, 0.5, -0.5, 1.0, -1.0])
    for name in ("ipw", "stratified", "matching"):
        kwargs = {"stratified": {"n_strata": 2}, "matching": {"caliper": None}}.get(name, {})
        est = bootstrap_ci(name, T6, y, np.linspace(0.2, 0.8, 6), n_boot=20, **kwargs)
        assert np.isfinite([est.ate, est.ci_low, est.ci_high, est.details["bootstrap"]["se"]]).all()
    est = bootstrap_ci("aipw", T6, y, P6, y, -y, n_boot=20)
    assert np.isfinite([est.ate, est.ci_low, est.ci_high, est.details["se"], est.details["bootstrap"]["se"]]).all()


@pytest.mark.parametrize(
    "name, p, unit, arm",
    [
        ("aipw", np.array([5e-324, 0.5, 0.5, 0.5, 0.5, 0.5]), 0, "treated"),  # gave -inf / NaN
        ("aipw", np.array([0.5, 0.5, 0.5, 1 - 1e-16, 0.5, 0.5]), 3, "untreated"),  # gave an ATE of -9e14
        ("ipw", np.array([5e-324, 0.5, 0.5, 0.5, 0.5, 0.5]), 0, "treated"),  # gave NaN
        ("ipw", np.array([0.5, 1 - 1e-9, 0.5, 0.5, 0.5, 0.5]), 1, "untreated"),
    ],
)
def test_propensities_whose_weights_explode_are_refused(name, p, unit, arm):
    y = np.array([1.0, 0.0, 1.0, 0.5, 2.0, 0.0])
    args = (T6, y, p) + ((np.zeros(6), np.ones(6)) if name == "aipw" else ())
    pattern = (
        rf"The 'propensity' values of {name} give 1 unit an inverse-probability weight above 1e\+08 "
        rf"\(unit {unit}, {arm}, .*clip the propensities explicitly with {name}\(\.\.\., clip=0\.01\)"
    )
    with pytest.raises(ValueError, match=pattern):
        ESTIMATORS[name](*args)
    with pytest.raises(ValueError, match=pattern):
        bootstrap_ci(name, *args, n_boot=5)
    # clipping is explicit and counted
    est = ESTIMATORS[name](*args, clip=0.01)
    assert np.isfinite(est.ate) and est.n_clipped == est.details["n_clipped"] == 1 and est.details["clip"] == 0.01


def test_only_the_received_arm_weight_counts():
    # a treated unit with p close to 1 has weight about 1: nothing explodes, nothing is refused
    p = np.array([1 - 1e-12, 0.5, 0.5, 0.5, 0.5, 1e-12])
    y = np.array([1.0, 0.0, 1.0, 0.5, 2.0, 0.0])
    assert np.isfinite(aipw(T6, y, p, np.zeros(6), np.ones(6)).ate)
    assert np.isfinite(ipw(T6, y, p).ate) and ipw(T6, y, p).n_clipped == 0


def test_aipw_clip(small):
    t, y, p = small["t"], small["y"], small["p"]
    mu0, mu1 = 0.5 * small["x"], 1.0 + 0.5 * small["x"]
    est = aipw(t, y, p, mu0, mu1, clip=0.1)
    assert est.n_clipped == int(((p < 0.1) | (p > 0.9)).sum()) == 18
    assert est.ate == pytest.approx(aipw(t, y, np.clip(p, 0.1, 0.9), mu0, mu1).ate, abs=1e-12)
    assert aipw(t, y, p, mu0, mu1).n_clipped == 0
    hard = np.r_[0.0, 1.0, p[2:]]  # saturated outputs are accepted when clipped
    fast = bootstrap_ci("aipw", t, y, hard, mu0, mu1, clip=0.05, n_boot=20, seed=0)
    slow = bootstrap_ci("aipw", t, y, hard, mu0, mu1, clip=0.05, n_boot=20, seed=0, vectorized=False)
    assert fast.n_clipped == 9
    np.testing.assert_allclose(
        fast.details["bootstrap"]["replicates"], slow.details["bootstrap"]["replicates"], atol=1e-12
    )


@pytest.mark.parametrize("name", ["ipw", "stratified", "matching", "aipw"])
def test_bootstrap_without_a_needed_propensity(small, name):
    # issue 14: bootstrap_ci("ipw", t, y, None) raised a raw TypeError
    with pytest.raises(ValueError, match=rf"The 'propensity' parameter of bootstrap_ci is required by {name}: pass"):
        bootstrap_ci(name, small["t"], small["y"], None, n_boot=5)


def test_bootstrap_arguments_the_estimator_does_not_take(small):
    with pytest.raises(
        ValueError, match=r"The estimator ipw of bootstrap_ci cannot take the arguments given \(.*n_strata"
    ):
        bootstrap_ci("ipw", small["t"], small["y"], small["p"], n_boot=5, n_strata=3)
    with pytest.raises(ValueError, match=r"The estimator aipw of bootstrap_ci cannot take the arguments given"):
        bootstrap_ci("aipw", small["t"], small["y"], small["p"], n_boot=5)  # no mu0, mu1


@pytest.mark.parametrize("n_strata", [4, 10])
def test_more_strata_than_units_says_so(n_strata):
    # issue 14: n_strata >= n reported "the arms do not overlap"
    t, y, p = np.array([1, 0, 1, 0]), np.array([1.0, 0.0, 1.0, 0.0]), np.array([0.2, 0.4, 0.6, 0.8])
    with pytest.raises(
        ValueError,
        match=rf"The 'n_strata' parameter of stratified must be an int < n, the number of "
        rf"units \(4\): with more strata than units .* Got {n_strata} instead\.",
    ):
        stratified(t, y, p, n_strata=n_strata)
    # tied propensities can still share a stratum: that estimate stays what it was
    assert stratified(t, y, np.full(4, 0.5), n_strata=n_strata).ate == unadjusted(t, y).ate


def test_too_many_strata_are_refused_not_overflowed():
    p = np.linspace(0.1, 0.9, 9)
    for n_strata in (10**19, 2**62):  # the stratum arithmetic would overflow int64
        with pytest.raises(
            ValueError,
            match=r"The 'n_strata' parameter of propensity_strata must be an int in the range "
            r"\[2, 1000000\]",
        ):
            propensity_strata(p, n_strata)


@pytest.mark.parametrize(
    "bad, pattern",
    [
        (
            np.array([1 + 2j, 0, 1, 0, 1, 0]),
            r"Expected 'y' to be a 1-D array of real numbers\. Got a ndarray of dtype complex",
        ),
        ([{"a": 1}] * 6, r"Expected 'y' to be a 1-D array of real numbers\. Got a list instead"),
        ([[1.0], [2.0, 3.0]] * 3, r"Expected 'y' to be a 1-D array of real numbers"),
        (np.array(["2020-01-01"] * 6, dtype="datetime64[D]"), r"Got a ndarray of dtype datetime64\[D\]"),
        ([10**400] * 6, r"Expected 'y' to be a 1-D array of real numbers"),
    ],
)
def test_outcomes_that_are_not_real_numbers(bad, pattern):
    # complex outcomes lost their imaginary part, dates became day counts, others raised raw errors
    with pytest.raises(ValueError, match=pattern):
        unadjusted(T6, bad)


@pytest.mark.parametrize(
    "bad, pattern",
    [
        (np.array([0, 1, None, 1, 0, 1], dtype=object), r"The treatment 't' must be binary \(0/1\)"),
        (np.array(["0", "1", "0", "1", "0", "1"]), r"The treatment 't' must be binary \(0/1\)\. Got an array of dtype"),
        ([[0, 1], [1]] * 3, r"The treatment 't' must be a 1-D array of 0/1 values"),
    ],
)
def test_treatments_that_are_not_binary_numbers(bad, pattern):
    with pytest.raises(ValueError, match=pattern):
        ipw(bad, np.ones(6), P6)


def test_real_parameters_too_large_for_a_float():
    with pytest.raises(ValueError, match=r"The 'caliper' parameter of matching must be a float >= 0\.0"):
        matching(T6, np.ones(6), np.linspace(0.2, 0.8, 6), caliper=10**400)


def test_no_non_finite_number_leaves_an_estimator_or_the_bootstrap(small):
    from textcause.estimators._common import finite

    with pytest.raises(ValueError, match=r"The ate of ipw is inf, not a finite number"):
        finite(Estimate(ate=float("inf"), method="ipw", n_used=3))
    with pytest.raises(ValueError, match=r"The se of aipw is nan, not a finite number"):
        finite(Estimate(ate=0.1, method="aipw", n_used=3, details={"se": float("nan")}))

    def nan_on_resamples(tt, yy):
        est = unadjusted(tt, yy)
        return est if np.array_equal(tt, small["t"]) else Estimate(ate=float("nan"), method="custom", n_used=1)

    with pytest.raises(ValueError, match=r"The bootstrap replicate of unadjusted is nan, not a finite number"):
        bootstrap_ci(nan_on_resamples, small["t"], small["y"], n_boot=5)
    with pytest.raises(ValueError, match=r"The estimate of custom is inf, not a finite number"):
        bootstrap_ci(lambda tt, yy: Estimate(ate=float("inf"), method="custom", n_used=1), small["t"], small["y"])

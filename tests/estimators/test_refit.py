"""The refitting interval (issue 15): inference about the method, not one fitted model.

A small simulated task where the propensity model's fit matters: 300 training users fit a logistic
regression on 5 confounders, and IPW is evaluated on 3,000 other users (a continuous outcome with a
true ATE of exactly 1). The test-sample bootstrap holds the fitted propensities fixed and covers the
truth in well under half of the seeds; the refitting interval resamples training and test users and
refits, and covers it near 95%.
"""

from __future__ import annotations

import numpy as np
import pytest

from textcause.estimators import bootstrap_ci
from textcause.estimators.refit import CI_REFIT, refit_interval

TRUE_ATE = 1.0


def newton_logistic(x: np.ndarray, t: np.ndarray, l2: float = 1e-3) -> np.ndarray:
    """A logistic regression by Newton's method (the method whose fit the interval must account for)."""
    w = np.zeros(x.shape[1])
    for _ in range(30):
        p = 1.0 / (1.0 + np.exp(-x @ w))
        step = np.linalg.solve((x * (p * (1 - p))[:, None]).T @ x + l2 * np.eye(x.shape[1]), x.T @ (p - t) + l2 * w)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w


def simulated_cell(seed: int, n_train: int = 300, n_test: int = 3000, dim: int = 5):
    """(train x, train t, test x, test t, test y) of a confounded task with ATE exactly 1."""
    rng = np.random.default_rng(seed)
    beta, gamma = np.full(dim, 0.6 / np.sqrt(dim)), np.full(dim, 2.0 / np.sqrt(dim))

    def draw(n: int):
        z = rng.standard_normal((n, dim))
        t = (rng.random(n) < 1.0 / (1.0 + np.exp(-z @ beta))).astype(float)
        y = z @ gamma + TRUE_ATE * t + rng.standard_normal(n)
        return np.c_[np.ones(n), z], t, y

    (xa, ta, _), (xb, tb, yb) = draw(n_train), draw(n_test)
    return xa, ta, xb, tb, yb


def coverage(n_seeds: int, n_reps: int) -> dict[str, float]:
    hits = {"test-sample": 0, "basic": 0, "percentile": 0}
    for seed in range(n_seeds):
        xa, ta, xb, tb, yb = simulated_cell(seed)
        p_hat = 1.0 / (1.0 + np.exp(-xb @ newton_logistic(xa, ta)))

        def fit_predict(rows: np.ndarray, xa=xa, ta=ta, xb=xb) -> np.ndarray:
            return 1.0 / (1.0 + np.exp(-xb @ newton_logistic(xa[rows], ta[rows])))

        fixed = bootstrap_ci("ipw", tb, yb, p_hat, n_boot=500, seed=seed)
        hits["test-sample"] += fixed.ci_low <= TRUE_ATE <= fixed.ci_high
        for kind in ("basic", "percentile"):
            r = refit_interval(fit_predict, len(ta), tb, yb, p_hat, ["ipw"], n_reps=n_reps, seed=seed, kind=kind)["ipw"]
            hits[kind] += r.low <= TRUE_ATE <= r.high
    return {k: v / n_seeds for k, v in hits.items()}


def test_the_refitting_interval_covers_where_the_test_sample_interval_does_not():
    cov = coverage(n_seeds=40, n_reps=50)
    assert cov["test-sample"] <= 0.6  # measured 0.475: fitted propensities held fixed
    assert cov["basic"] >= 0.85  # measured 0.90 with 50 replicates


@pytest.mark.slow
def test_refitting_coverage_is_near_95_percent_over_300_seeds():
    """Measured: basic 0.957, percentile 0.907, test-sample 0.453 (100 replicates per seed)."""
    cov = coverage(n_seeds=300, n_reps=100)
    assert 0.92 <= cov["basic"] <= 0.98
    assert cov["percentile"] < cov["basic"]  # it moves with the refit's small-sample bias
    assert cov["test-sample"] < 0.6


def _cell():
    xa, ta, xb, tb, yb = simulated_cell(0)
    p_hat = 1.0 / (1.0 + np.exp(-xb @ newton_logistic(xa, ta)))
    return xa, ta, xb, tb, yb, p_hat, lambda rows: 1.0 / (1.0 + np.exp(-xb @ newton_logistic(xa[rows], ta[rows])))


def test_basic_is_the_percentile_interval_reflected_about_the_estimate():
    xa, ta, xb, tb, yb, p_hat, fp = _cell()
    basic = refit_interval(fp, len(ta), tb, yb, p_hat, ["ipw", "stratified"], n_reps=20, seed=3)
    pct = refit_interval(fp, len(ta), tb, yb, p_hat, ["ipw", "stratified"], n_reps=20, seed=3, kind="percentile")
    for name in ("ipw", "stratified"):
        b, p = basic[name], pct[name]
        np.testing.assert_array_equal(b.replicates, p.replicates)  # the same replicates (deterministic)
        assert b.low == pytest.approx(2 * b.ate - p.high) and b.high == pytest.approx(2 * b.ate - p.low)
        assert b.method == CI_REFIT["basic"] and p.method == CI_REFIT["percentile"]
    assert basic["ipw"].ate == pytest.approx(bootstrap_ci("ipw", tb, yb, p_hat, n_boot=2).ate)


def test_every_replicate_refits_on_a_resample_of_the_training_users():
    xa, ta, xb, tb, yb, p_hat, _ = _cell()
    seen: list[np.ndarray] = []

    def fp(rows: np.ndarray) -> np.ndarray:
        seen.append(rows)
        return p_hat

    refit_interval(fp, len(ta), tb, yb, p_hat, n_reps=5, seed=0)
    assert len(seen) == 5 and all(r.shape == (len(ta),) and r.max() < len(ta) for r in seen)
    assert all(len(np.unique(r)) < len(ta) for r in seen)  # drawn with replacement
    assert not np.array_equal(seen[0], seen[1])


def test_bad_inputs_are_one_sentence():
    xa, ta, xb, tb, yb, p_hat, _ = _cell()
    with pytest.raises(
        ValueError, match=r"fit_predict returned \(3,\) propensities; it must return one per evaluated user"
    ):
        refit_interval(lambda rows: np.full(3, 0.5), len(ta), tb, yb, p_hat, n_reps=2)
    with pytest.raises(ValueError, match="n_reps"):
        refit_interval(lambda rows: p_hat, len(ta), tb, yb, p_hat, n_reps=1)
    with pytest.raises(ValueError, match="kind"):
        refit_interval(lambda rows: p_hat, len(ta), tb, yb, p_hat, n_reps=2, kind="bca")

    def failing(rows: np.ndarray) -> np.ndarray:
        raise ValueError("one treatment class")

    with pytest.raises(
        ValueError, match=r"Only 0 of 3 replicates of ipw were usable \(first error: one treatment class\)"
    ):
        refit_interval(failing, len(ta), tb, yb, p_hat, n_reps=3)


def test_an_estimator_without_usable_replicates_is_left_out_with_a_warning():
    xa, ta, xb, tb, yb, p_hat, fp = _cell()

    def picky(t, y, p):  # defined on the full sample only: every resample raises
        if len(np.unique(p)) < len(p):
            raise ValueError("tied propensities")
        return bootstrap_ci("ipw", t, y, p, n_boot=2)

    with pytest.warns(UserWarning, match=r"No refitting interval for 0 of 4 replicates of .*picky.* usable"):
        out = refit_interval(fp, len(ta), tb, yb, p_hat, ["ipw", picky], n_reps=4)
    assert list(out) == ["ipw"] and out["ipw"].n_failed == 0

"""Refuters on a simulated task with a known effect, with an AIPW estimate from textcause.estimators."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse
from sklearn.linear_model import LinearRegression, LogisticRegression

from textcause.estimators import aipw
from textcause.sensitivity import Refutation, placebo_treatment, random_common_cause, refute, subsample

TRUE_ATE = 2.0


def simulate(n=1500, seed=3):
    """Three confounders; ``y = 2 t + x . b + noise``, so the ATE is 2 (the naive difference is not)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    t = rng.binomial(1, 1 / (1 + np.exp(-(0.9 * x[:, 0] - 0.7 * x[:, 1]))))
    y = TRUE_ATE * t + 1.5 * x[:, 0] + 1.0 * x[:, 1] + 0.5 * x[:, 2] + rng.normal(size=n)
    return t, y, x


def aipw_estimate(t, y, X, rng):
    """Logistic propensity, one linear outcome model per arm, AIPW with its influence-function interval."""
    X = np.zeros((t.size, 1)) if X is None else X
    g = LogisticRegression(C=1e4).fit(X, t).predict_proba(X)[:, 1]
    mu0 = LinearRegression().fit(X[t == 0], y[t == 0]).predict(X)
    mu1 = LinearRegression().fit(X[t == 1], y[t == 1]).predict(X)
    est = aipw(t, y, g, mu0, mu1, clip=0.01)
    return est.ate, est.ci_low, est.ci_high


@pytest.fixture(scope="module")
def task():
    t, y, x = simulate()
    original = aipw_estimate(t, y, x, None)
    assert original[1] <= TRUE_ATE <= original[2]  # the estimator is sound on this task
    assert np.mean(y[t == 1]) - np.mean(y[t == 0]) > TRUE_ATE + 0.5  # and the task is confounded
    return t, y, x, original


def test_placebo_interval_contains_zero(task):
    t, y, x, original = task
    r = placebo_treatment(aipw_estimate, t, y, x, seed=0)
    assert isinstance(r, Refutation) and r.refuter == "placebo_treatment"
    assert r.expected == 0.0 and r.passed and r.new_low <= 0 <= r.new_high
    assert abs(r.new_estimate) < 0.3 * TRUE_ATE
    assert "contains 0, as it should" in r.reason


def test_random_common_cause_leaves_the_estimate_inside_its_interval(task):
    t, y, x, original = task
    r = random_common_cause(aipw_estimate, t, y, x, original=original[0], n_draws=3, seed=1)
    assert r.expected == original[0] and r.passed and r.new_low <= original[0] <= r.new_high
    assert abs(r.new_estimate - original[0]) < 0.05
    assert len(r.draws) == 3 and r.new_estimate == pytest.approx(np.mean([d[0] for d in r.draws]))
    assert "still contains the original estimate" in r.reason


def test_subsample_intervals_contain_the_full_estimate(task):
    t, y, x, original = task
    r = subsample(aipw_estimate, t, y, x, original=original[0], seed=2)
    assert r.passed and len(r.draws) == 5 and r.new_low <= original[0] <= r.new_high
    # each subset's interval is wider than the full data's: 80% of the units
    assert all(d[2] - d[1] > original[2] - original[1] for d in r.draws)


def test_refute_runs_all_three_deterministically(task):
    t, y, x, _ = task
    first = refute(aipw_estimate, t, y, x, seed=7)
    again = refute(aipw_estimate, t, y, x, seed=7)
    other = refute(aipw_estimate, t, y, x, seed=8)
    assert [r.refuter for r in first] == ["placebo_treatment", "random_common_cause", "subsample"]
    assert first == again
    assert first[0].draws != other[0].draws
    assert all(r.passed for r in first)


def test_a_method_that_ignores_the_treatment_fails_the_placebo():
    """An 'estimator' that always reports the effect it expects finds one in a permuted treatment too."""
    t, y, x = simulate(n=200)
    r = placebo_treatment(lambda t, y, X, rng: (2.0, 1.8, 2.2), t, y, x)
    assert not r.passed
    assert "excludes 0" in r.reason and "suspect" in r.reason


def test_a_method_moved_by_noise_fails_the_random_common_cause():
    """An estimate that shifts with the number of covariates is not stable to an irrelevant one."""
    t, y, x = simulate(n=200)

    def fragile(t, y, X, rng):
        shift = 0.5 * X.shape[1]
        return shift, shift - 0.1, shift + 0.1

    r = random_common_cause(fragile, t, y, x)
    assert not r.passed and r.expected == 1.5 and r.new_estimate == 2.0
    assert "unstable to an irrelevant covariate" in r.reason


def test_an_estimate_that_rests_on_a_few_units_fails_the_subsample():
    """The maximum outcome among the treated moves when the extreme unit is left out."""
    t, y, x = simulate(n=200)
    y = y.copy()
    y[np.flatnonzero(t == 1)[0]] = 1000.0

    def max_treated(t, y, X, rng):
        m = y[t == 1].max()
        return m, m - 1, m + 1

    r = subsample(max_treated, t, y, x, n_draws=10, seed=0)
    assert not r.passed and "rests on a few units" in r.reason


def test_sparse_covariates_stay_sparse_and_subsets_keep_both_arms():
    t, y, x = simulate(n=100)
    seen = []

    def record(t, y, X, rng):
        seen.append((sparse.issparse(X), X.shape, int(t.sum()), int((1 - t).sum())))
        return 0.0, -1.0, 1.0

    random_common_cause(record, t, y, sparse.csr_matrix(x), original=0.0)
    subsample(record, t, y, sparse.csr_matrix(x), original=0.0, fraction=0.5, n_draws=1)
    assert seen[0][:2] == (True, (100, 4))
    n1 = int(t.sum())
    assert seen[1][0] and seen[1][2:] == (round(0.5 * n1), round(0.5 * (100 - n1)))


def test_random_common_cause_without_covariates_passes_one_column():
    shapes = []
    t, y, _ = simulate(n=50)
    random_common_cause(lambda t, y, X, rng: shapes.append(X.shape) or (0.0, -1.0, 1.0), t, y, None, original=0.0)
    assert shapes == [(50, 1)]


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda t, y, x: placebo_treatment("aipw", t, y, x), "must be a callable estimate"),
        (lambda t, y, x: placebo_treatment(aipw_estimate, t[:-1], y, x), "inconsistent numbers of samples"),
        (lambda t, y, x: placebo_treatment(aipw_estimate, t, y, x[:-1]), "inconsistent numbers of samples"),
        (lambda t, y, x: placebo_treatment(aipw_estimate, np.ones_like(t), y, x), "only one class"),
        (lambda t, y, x: placebo_treatment(aipw_estimate, t, y, x[:, 0]), "must be a 2-D array"),
        (lambda t, y, x: placebo_treatment(aipw_estimate, t, y, x, n_draws=0), "'n_draws' parameter"),
        (lambda t, y, x: placebo_treatment(aipw_estimate, t, y, x, seed=-1), "'seed' parameter"),
        (lambda t, y, x: subsample(aipw_estimate, t, y, x, fraction=1.0), "'fraction' parameter"),
        (lambda t, y, x: subsample(aipw_estimate, t, y, x, fraction=0.001), "keeps 0 units of an arm"),
        (lambda t, y, x: random_common_cause(aipw_estimate, t, y, x, original=float("nan")), "'original' parameter"),
        (lambda t, y, x: placebo_treatment(lambda *a: 1.0, t, y, x), r"must return \(point, low, high\)"),
        (lambda t, y, x: placebo_treatment(lambda *a: (1.0, 2.0, 3.0), t, y, x), "low <= point <= high"),
        (lambda t, y, x: placebo_treatment(lambda *a: (np.nan, 0.0, 1.0), t, y, x), "finite"),
    ],
)
def test_bad_input_is_one_sentence(call, match):
    t, y, x = simulate(n=60)
    with pytest.raises(ValueError, match=match):
        call(t, y, x)


def test_a_sound_method_passes_the_placebo_at_about_its_coverage(task):
    """Over 20 seeds the 95% AIPW interval of a permuted treatment contains 0 at least 17 times (binomial
    P(fewer) < 0.02 at 95% coverage); a method biased by 0.3 would pass far less often."""
    t, y, x, _ = task
    passed = [placebo_treatment(aipw_estimate, t, y, x, seed=s).passed for s in range(20)]
    assert sum(passed) >= 17

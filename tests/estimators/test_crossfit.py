"""Cross-fitting: seeded stratified folds, out-of-fold predictions, the estimators fed by them, errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LinearRegression, LogisticRegression

from textcause.estimators import CrossFitPredictions, aipw, crossfit, crossfit_folds, crossfit_predictions, tmle


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    n = 600
    x = rng.normal(size=(n, 3))
    g = 1 / (1 + np.exp(-x[:, 0]))
    t = (rng.random(n) < g).astype(np.int64)
    y = (rng.random(n) < 1 / (1 + np.exp(-(x[:, 0] + 0.8 * t - 0.3)))).astype(np.float64)
    return {"x": x, "t": t, "y": y, "yc": 1.5 * t + x[:, 0] + rng.normal(size=n)}


def test_folds_are_stratified_and_deterministic(data):
    t = data["t"]
    folds = crossfit_folds(t, 5, seed=3)
    assert folds.dtype == np.int64 and set(np.unique(folds)) == set(range(5))
    for arm in (0, 1):  # each arm dealt evenly: fold counts differ by at most one
        counts = np.bincount(folds[t == arm], minlength=5)
        assert counts.max() - counts.min() <= 1
    sizes = np.bincount(folds)
    assert sizes.max() - sizes.min() <= 1
    assert np.array_equal(folds, crossfit_folds(t, 5, seed=3))
    assert not np.array_equal(folds, crossfit_folds(t, 5, seed=4))
    assert np.array_equal(crossfit_folds(t.astype(bool), 5, seed=3), folds)


def test_predictions_are_out_of_fold(data):
    x, t, y = data["x"], data["t"], data["y"]
    pred = crossfit_predictions(x, t, y, LogisticRegression(), LogisticRegression(), n_folds=3, seed=1)
    assert isinstance(pred, CrossFitPredictions) and pred.outcome == "binary"
    assert repr(pred) == "CrossFitPredictions(n=600, n_folds=3, outcome='binary')"
    held = pred.folds == 0
    train = ~held
    g = LogisticRegression().fit(x[train], t[train]).predict_proba(x[held])[:, 1]
    treated = train & (t == 1)
    m1 = LogisticRegression().fit(x[treated], y[treated]).predict_proba(x[held])[:, 1]
    untreated = train & (t == 0)
    m0 = LogisticRegression().fit(x[untreated], y[untreated]).predict_proba(x[held])[:, 1]
    np.testing.assert_allclose(pred.propensity[held], g, rtol=1e-12)
    np.testing.assert_allclose(pred.mu1[held], m1, rtol=1e-12)
    np.testing.assert_allclose(pred.mu0[held], m0, rtol=1e-12)


def test_crossfit_is_deterministic_under_a_seed(data):
    args = (data["x"], data["t"], data["y"], LogisticRegression(), LogisticRegression())
    a, b = crossfit(*args, seed=7), crossfit(*args, seed=7)
    assert a == b and a.method == "aipw_crossfit"
    assert np.array_equal(a.details["predictions"].folds, b.details["predictions"].folds)
    assert a.details["crossfit"] == {"n_folds": 5, "seed": 7, "outcome": "binary"}
    assert crossfit(*args, seed=8).ate != a.ate


def test_crossfit_feeds_aipw_and_tmle(data):
    x, t, y = data["x"], data["t"], data["y"]
    pred = crossfit_predictions(x, t, y, LogisticRegression(), LogisticRegression(), seed=0)
    est = crossfit(x, t, y, LogisticRegression(), LogisticRegression(), estimator="tmle", seed=0, clip=0.01)
    assert est.method == "tmle_crossfit" and est.details["outcome"] == "binary"
    assert est.ate == tmle(t, y, pred.propensity, pred.mu0, pred.mu1, clip=0.01).ate
    assert (
        crossfit(x, t, y, LogisticRegression, LogisticRegression, seed=0).ate
        == aipw(t, y, pred.propensity, pred.mu0, pred.mu1).ate
    )  # a class works as a factory
    assert est.ate > 0  # the simulated effect is positive


def test_continuous_outcomes_and_sparse_features(data):
    x, t, yc = data["x"], data["t"], data["yc"]
    dense = crossfit(x, t, yc, LogisticRegression(), LinearRegression(), estimator="tmle", seed=2)
    sparse = crossfit(sp.csr_matrix(x), t, yc, LogisticRegression(), LinearRegression(), estimator="tmle", seed=2)
    assert dense.details["outcome"] == "continuous" and dense.ate == pytest.approx(sparse.ate, rel=1e-6)
    assert 1.0 < dense.ate < 2.0


def test_an_arm_with_a_constant_outcome_predicts_the_constant(data):
    x, t = data["x"], data["t"]
    y = t.astype(np.float64).copy()
    y[np.flatnonzero(t == 0)[:40]] = 1.0  # every treated unit has Y=1, the untreated vary
    pred = crossfit_predictions(x, t, y, LogisticRegression(), LogisticRegression(), seed=0)
    assert np.all(pred.mu1 == 1.0) and 0 < pred.mu0.min() < pred.mu0.max() < 1


def test_crossfit_errors(data):
    x, t, y = data["x"], data["t"], data["y"]
    lr = LogisticRegression()
    with pytest.raises(
        ValueError, match=r"The 'n_folds' parameter of crossfit_folds must be an int >= 2\. Got 1 instead"
    ):
        crossfit_folds(t, 1)
    with pytest.raises(ValueError, match=r"must be at most the size of the smaller arm \(2 units\).* Got 3 instead"):
        crossfit_folds(np.array([1, 0, 0, 1, 0]), 2 + 1)
    with pytest.raises(ValueError, match=r"The 'seed' parameter of crossfit_folds must be an int >= 0\. Got -1"):
        crossfit_folds(t, 5, seed=-1)
    with pytest.raises(ValueError, match=r"The treatment 't' has only one class"):
        crossfit_folds(np.ones(10))
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples: \[600, 599, 600\]"):
        crossfit_predictions(x, t[:-1], y, lr, lr)
    with pytest.raises(ValueError, match=r"The 'x' parameter of crossfit_predictions must be a 2-D array"):
        crossfit_predictions(x[:, 0], t, y, lr, lr)
    with pytest.raises(ValueError, match=r"The 'propensity_learner' parameter of crossfit_predictions must be a "):
        crossfit_predictions(x, t, y, LinearRegression(), lr)
    with pytest.raises(ValueError, match=r"The 'outcome_learner' parameter of crossfit_predictions must be a "):
        crossfit_predictions(x, t, y, lr, "logistic")
    with pytest.raises(ValueError, match=r"The outcome 'y' of crossfit_predictions must be 0/1 for outcome='binary'"):
        crossfit_predictions(x, t, data["yc"], lr, lr, outcome="binary")
    with pytest.raises(ValueError, match=r"The 'outcome' parameter of crossfit_predictions must be one of"):
        crossfit_predictions(x, t, y, lr, lr, outcome="normal")
    with pytest.raises(ValueError, match=r"The 'estimator' parameter of crossfit must be one of \['aipw', 'tmle'\]"):
        crossfit(x, t, y, lr, lr, estimator="ipw")

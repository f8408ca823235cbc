"""Lemberger et al.'s CFR (orthogonal erasure + per-class regression of the coordinate) against a hand computation."""

from __future__ import annotations

import numpy as np
import pytest

from textcause.counterfactual.cfr.erasure import fit_editor
from textcause.counterfactual.cfr.regression import fit_regression_cfr

# 6 units x 3 dims, a binary concept: three units of each value.
X = np.array(
    [
        [1.0, 2.0, 0.5],
        [0.3, -1.0, 2.0],
        [2.5, 0.4, -0.7],
        [3.0, 1.5, 1.2],
        [4.1, -0.2, 0.9],
        [2.2, 3.3, -1.5],
    ]
)
Z = np.array([0, 0, 0, 1, 1, 1])


def by_hand(alpha: float):
    """The formula of regression.py's docstring, computed step by step with numpy.linalg.lstsq."""
    diff = X[Z == 1].mean(0) - X[Z == 0].mean(0)
    u = diff / np.linalg.norm(diff)  # Cov(X, one-hot Z) spans the mean difference for a binary Z
    c = X @ u  # the concept coordinate (no centring, as the authors' X @ u)
    erased = X - np.outer(c, u)  # the orthogonal projection (I - u u^T) x
    fits = {}
    for v in (0, 1):
        rows = np.equal(Z, v)
        a = np.column_stack([np.ones(rows.sum()), erased[rows]])  # intercept + r(x)
        b = c[rows]
        if alpha > 0:  # ridge: sqrt(alpha) rows penalising w, not the intercept
            a = np.vstack([a, np.column_stack([np.zeros(3), np.sqrt(alpha) * np.eye(3)])])
            b = np.concatenate([b, np.zeros(3)])
        beta = np.linalg.lstsq(a, b, rcond=None)[0]
        resid = c[rows] - a[: rows.sum()] @ beta
        fits[v] = (beta[0], beta[1:], resid.mean(), resid.var())
    target = 1 - Z
    coord = np.array([fits[t][0] + erased[i] @ fits[t][1] for i, t in enumerate(target)])
    return u, erased, fits, erased + np.outer(coord, u)


@pytest.mark.parametrize("alpha", [0.0, 0.3])
def test_cfr_equals_the_hand_computation(alpha):
    u, erased, fits, expected = by_hand(alpha)
    cfr = fit_regression_cfr(X, Z, alpha=alpha)
    np.testing.assert_allclose(cfr.direction, u, atol=1e-10)
    np.testing.assert_allclose(cfr.erase(X), erased, atol=1e-10)
    for v in (0, 1):
        np.testing.assert_allclose(cfr.intercept[v], fits[v][0], atol=1e-10)
        np.testing.assert_allclose(cfr.coef[v], fits[v][1], atol=1e-10)
        np.testing.assert_allclose(cfr.noise_mean[v], fits[v][2], atol=1e-10)
        np.testing.assert_allclose(cfr.noise_var[v], fits[v][3], atol=1e-10)
    np.testing.assert_allclose(cfr.counterfactual(X, 1 - Z), expected, atol=1e-10)
    # the erased part of a CFR is the unit's own: only the coordinate along u changed
    np.testing.assert_allclose(cfr.erase(cfr.counterfactual(X, 1 - Z)), erased, atol=1e-10)


def test_alpha_is_on_the_authors_mlp_scale():
    """MLPRegressor's minibatch loss (1/2b)(SSE + alpha ||w||^2) is, over an epoch, a ridge penalty alpha * n / b."""
    # 3 units a class: scikit-learn's min(200, n) batch is the whole class, so the penalty is alpha itself
    assert fit_regression_cfr(X, Z, alpha=0.3).penalty == pytest.approx((0.3, 0.3))
    # minibatches of 2 over 3 units: 1.5 x alpha, the hand computation with that penalty
    cfr = fit_regression_cfr(X, Z, alpha=0.3, batch_size=2)
    assert cfr.penalty == pytest.approx((0.45, 0.45)) and cfr.alpha == 0.3
    _, _, fits, expected = by_hand(0.45)
    np.testing.assert_allclose(cfr.coef[1], fits[1][1], atol=1e-10)
    np.testing.assert_allclose(cfr.counterfactual(X, 1 - Z), expected, atol=1e-10)
    # batch_size None: alpha is the ridge penalty itself, whatever the class sizes
    plain = fit_regression_cfr(X, Z, alpha=0.45, batch_size=None)
    assert plain.penalty == pytest.approx((0.45, 0.45))
    np.testing.assert_allclose(plain.coef, cfr.coef, atol=1e-12)
    # classes of unequal size get penalties in proportion: 400 and 600 units, batches of 200
    rng = np.random.default_rng(0)
    z = np.repeat([0, 1], [400, 600])
    x = rng.normal(size=(1000, 5)) + np.outer(z, [1.0, 0, 0, 0, 0])
    big = fit_regression_cfr(x, z, alpha=0.05)
    assert big.penalty == pytest.approx((0.1, 0.15))
    np.testing.assert_allclose(big.coef[0], fit_regression_cfr(x, z, alpha=0.1, batch_size=None).coef[0], atol=1e-12)
    np.testing.assert_allclose(big.coef[1], fit_regression_cfr(x, z, alpha=0.15, batch_size=None).coef[1], atol=1e-12)


def test_the_coordinate_depends_on_the_erased_representation():
    # unlike a class-mean shift, two units of one class get different added-back coordinates
    cfr = fit_regression_cfr(X, Z, alpha=0.3)
    added = cfr.predicted_coordinate(X[:3], np.ones(3, dtype=int))
    assert np.ptp(added) > 0.1


def test_erased_class_means_are_equal_on_the_fitting_data():
    rng = np.random.default_rng(3)
    z = rng.integers(0, 2, 500)
    x = rng.normal(size=(500, 8)) + np.outer(z, rng.normal(size=8))
    r = fit_regression_cfr(x, z).erase(x)
    np.testing.assert_allclose(r[z == 0].mean(0), r[z == 1].mean(0), atol=1e-10)


def test_stochastic_noise_has_the_residual_variance():
    rng = np.random.default_rng(0)
    z = rng.integers(0, 2, 400)
    x = rng.normal(size=(400, 5)) + np.outer(z, [1.5, 0, 0, 0, 0])
    cfr = fit_regression_cfr(x, z)
    target = np.array([1] * 3 + [0] * 3)
    samples = cfr.sample_counterfactuals(x[:6], target, np.random.default_rng(7), 20_000)
    assert samples.shape == (20_000, 6, 5)
    noise = (samples - cfr.counterfactual(x[:6], target)[None]) @ cfr.direction  # eps along u
    # the noise lies along u only
    off = samples - cfr.counterfactual(x[:6], target)[None] - noise[:, :, None] * cfr.direction
    assert np.abs(off).max() < 1e-10
    for v in (0, 1):
        eps = noise[:, target == v].ravel()
        # 60,000 draws: the sample variance is within 3% of s_z^2 and the mean within 0.02 sd of m_z
        assert eps.var() == pytest.approx(cfr.noise_var[v], rel=0.03)
        assert abs(eps.mean() - cfr.noise_mean[v]) < 0.02 * np.sqrt(cfr.noise_var[v])
    assert cfr.noise_var[0] != pytest.approx(cfr.noise_var[1], rel=1e-3)  # per class, not pooled
    again = cfr.sample_counterfactuals(x[:6], target, np.random.default_rng(7), 20_000)
    np.testing.assert_array_equal(samples, again)


def test_the_old_class_mean_cfr_is_still_there_and_differs():
    # the LEACE class-mean CFR (leace_mean_cfr) adds one vector per target value
    rng = np.random.default_rng(1)
    z = rng.integers(0, 2, 300)
    x = rng.normal(size=(300, 6)) + np.outer(z, rng.normal(size=6))
    editor = fit_editor(x, z)
    old = editor.counterfactual(x, 1 - z)
    np.testing.assert_allclose(old - editor.erase(x), editor.class_means[1 - z], atol=1e-10)
    new = fit_regression_cfr(x, z).counterfactual(x, 1 - z)
    assert np.abs(new - old).max() > 1e-3


@pytest.mark.parametrize(
    "x, z, kwargs, match",
    [
        (X, np.zeros(6, dtype=int), {}, "both values"),
        (X, Z, {"alpha": -1.0}, "'alpha' parameter"),
        (X, Z, {"batch_size": 0}, "'batch_size' parameter"),
        (np.ones((4, 3)), np.array([0, 1, 0, 1]), {}, "class means are equal"),
        (X[:5], Z, {}, "inconsistent numbers of samples"),
    ],
)
def test_bad_inputs(x, z, kwargs, match):
    with pytest.raises(ValueError, match=match):
        fit_regression_cfr(x, z, **kwargs)

"""PIP, ATV, the concept's effect and the conditional TPR gap on hand-made arrays."""

from __future__ import annotations

import numpy as np
import pytest

from textcause.counterfactual.cfr.metrics import atv, bootstrap_mean, concept_effect, pip, tpr_gaps, weighted_abs_gap

P_TRUE = np.array([[0.9, 0.1], [0.4, 0.6], [0.2, 0.8], [0.5, 0.5]])
P_CFR = np.array([[0.7, 0.3], [0.6, 0.4], [0.1, 0.9], [0.5, 0.5]])


def test_pip_and_atv_by_hand():
    # argmax: true 0,1,1,0 ; cfr 0,0,1,0 -> 3 of 4 agree
    assert pip(P_TRUE, P_CFR) == pytest.approx(0.75)
    # TV per unit: 0.2, 0.2, 0.1, 0.0 -> mean 0.125
    assert atv(P_TRUE, P_CFR) == pytest.approx(0.125)


def test_identical_representations_give_pip_1_and_atv_0():
    assert pip(P_TRUE, P_TRUE) == 1.0
    assert atv(P_TRUE, P_TRUE) == 0.0


def test_concept_effect_sign_and_sides():
    p_orig = np.array([[0.2, 0.8], [0.6, 0.4]])
    p_cf = np.array([[0.5, 0.5], [0.3, 0.7]])
    z = np.array([1, 0])
    # unit 0 (Z=1): p(1) - p(0) = orig - cf = [-0.3, 0.3]; unit 1 (Z=0): cf - orig = [-0.3, 0.3]
    np.testing.assert_allclose(concept_effect(p_orig, p_cf, z), [-0.3, 0.3])


def test_tpr_gap_is_conditional_not_joint():
    # group 1: 2 units of class 1, both predicted 1 -> TPR 1.0 ; 6 units of class 0
    # group 0: 4 units of class 1, 2 predicted 1 -> TPR 0.5 ; 4 units of class 0
    y = np.array([1, 1, 0, 0, 0, 0, 0, 0] + [1, 1, 1, 1, 0, 0, 0, 0])
    yhat = np.array([1, 1, 0, 0, 0, 0, 0, 0] + [1, 1, 0, 0, 0, 0, 0, 0])
    z = np.array([1] * 8 + [0] * 8)
    gaps = tpr_gaps(y, yhat, z, [0, 1])
    assert gaps[1] == pytest.approx(1.0 - 0.5)
    # the joint P(Y=1, Yhat=1 | Z) would give 2/8 - 2/8 = 0: the conditional one does not
    assert gaps[1] != pytest.approx(0.0)
    assert gaps[0] == pytest.approx(1.0 - 1.0)


def test_tpr_gap_nan_where_a_group_lacks_the_class():
    gaps = tpr_gaps(np.array([1, 0]), np.array([1, 0]), np.array([1, 0]), [0, 1])
    assert np.isnan(gaps[0]) and np.isnan(gaps[1])


def test_weighted_abs_gap_by_hand():
    # 10 test units: class a 5, class b 3, class c 2; gaps +0.2, -0.4, +0.1
    y = ["a"] * 5 + ["b"] * 3 + ["c"] * 2
    gaps = {"a": 0.2, "b": -0.4, "c": 0.1}
    # (0.2 * 5 + 0.4 * 3 + 0.1 * 2) / 10 = 0.24, while the unweighted mean of |gap| is 0.7 / 3
    assert weighted_abs_gap(gaps, y) == pytest.approx(0.24)
    assert np.mean(np.abs(list(gaps.values()))) == pytest.approx(0.7 / 3)
    # a NaN gap (a group without the class) is left out and the weights renormalised: (1.0 + 1.2) / 8
    assert weighted_abs_gap({"a": 0.2, "b": -0.4, "c": float("nan")}, y) == pytest.approx(0.275)
    assert np.isnan(weighted_abs_gap({"a": float("nan")}, y))
    # integer classes as tpr_gaps returns them
    g = tpr_gaps(np.array([0, 0, 1, 1, 1, 1]), np.array([0, 1, 1, 1, 0, 1]), np.array([1, 0, 1, 0, 1, 0]), [0, 1])
    assert weighted_abs_gap(g, [0, 0, 1, 1, 1, 1]) == pytest.approx((2 * abs(g[0]) + 4 * abs(g[1])) / 6)


def test_bootstrap_interval_contains_the_mean():
    v = np.random.default_rng(0).random(200)
    lo, hi = bootstrap_mean(v, np.random.default_rng(1), 300)
    assert lo < v.mean() < hi
    assert np.isnan(bootstrap_mean(v, np.random.default_rng(1), 0)[0])


@pytest.mark.parametrize(
    "a, b, match",
    [
        (P_TRUE, P_CFR[:3], "inconsistent numbers of samples"),
        (P_TRUE, np.ones((4, 3)) / 3, "same classes"),
        (P_TRUE, P_CFR * 2, "rows sum to 1"),
        (np.array([0.5, 0.5]), P_CFR, r"\(n, k\) array"),
    ],
)
def test_bad_probabilities(a, b, match):
    with pytest.raises(ValueError, match=match):
        atv(a, b)


def test_bad_concept_values():
    with pytest.raises(ValueError, match="0 / 1"):
        tpr_gaps([0, 1], [0, 1], [0, 2], [0, 1])
    with pytest.raises(ValueError, match="0 / 1"):
        concept_effect(P_TRUE, P_CFR, [0, 1, 2, 0])

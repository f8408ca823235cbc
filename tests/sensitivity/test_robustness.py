"""Robustness values and the OLS coefficient: statsmodels as reference, limits, sentences, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from textcause.sensitivity import ols_coefficient, partial_r2, robustness_value


def test_ols_coefficient_equals_statsmodels():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 3))
    t = rng.binomial(1, 1 / (1 + np.exp(-x[:, 0])))
    y = 0.7 * t + x @ [1.0, -0.5, 0.2] + rng.normal(size=200)
    ref = sm.OLS(y, sm.add_constant(np.column_stack([t, x]))).fit()
    fit = ols_coefficient(t, y, x)
    assert fit.estimate == pytest.approx(ref.params[1], rel=1e-10)
    assert fit.se == pytest.approx(ref.bse[1], rel=1e-10)
    assert fit.t_statistic == pytest.approx(ref.tvalues[1], rel=1e-10)
    assert fit.dof == int(ref.df_resid) == 195


def test_a_repeated_column_costs_no_degree_of_freedom_and_changes_nothing():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(50, 2))
    t, y = rng.binomial(1, 0.5, 50), rng.normal(size=50)
    wide, plain = ols_coefficient(t, y, np.column_stack([x, x[:, 0]])), ols_coefficient(t, y, x)
    assert wide.dof == plain.dof == 46
    assert (wide.estimate, wide.se) == pytest.approx((plain.estimate, plain.se), rel=1e-10)


def test_robustness_value_limits():
    """t = 0: no confounding needed (RV 0); q scales the required strength; a larger t needs more."""
    assert robustness_value(0.0, 100).rv_q == 0.0 and robustness_value(0.0, 100).rv_qa == 0.0
    assert robustness_value(3.0, 100, q=0.5).rv_q < robustness_value(3.0, 100).rv_q < robustness_value(6.0, 100).rv_q
    assert robustness_value(-3.0, 100) == robustness_value(3.0, 100).__class__(
        -3.0, 100, 1.0, 0.05, robustness_value(3.0, 100).rv_q, robustness_value(3.0, 100).rv_qa, partial_r2(3.0, 100)
    )
    assert 0 < robustness_value(1e6, 10).rv_q < 1  # no overflow or cancellation at extreme t


def test_sentence_when_already_not_significant():
    assert robustness_value(1.0, 100).sentence().endswith("(the estimate is already not significant at the 95% level).")
    assert "reduce the estimate by 50%" in robustness_value(4.0, 100, q=0.5).sentence()


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: robustness_value(float("nan"), 10), "'t_statistic' parameter of robustness_value"),
        (lambda: robustness_value(2.0, 1), "'dof' parameter of robustness_value must be an int >= 2"),
        (lambda: robustness_value(2.0, 10.5), "'dof' parameter"),
        (lambda: robustness_value(2.0, 10, q=0), "'q' parameter"),
        (lambda: robustness_value(2.0, 10, alpha=0), "'alpha' parameter"),
        (lambda: partial_r2(2.0, 0), "'dof' parameter of partial_r2"),
        (lambda: ols_coefficient([0, 1, 0, 1], [1.0, 2.0, 1.0, 2.0]), "fits the outcome 'y' exactly"),
        (lambda: ols_coefficient([0, 1, 0], [1.0, 2.0, 0.5]), "1 residual degrees of freedom"),
        (
            lambda: ols_coefficient([0, 1, 0, 1, 1], [1.0, 2.0, 0.5, 3, 4], [0, 1, 0, 1, 1]),
            "explain the treatment exactly",
        ),
        (lambda: ols_coefficient([0, 1, 0, 1], [1.0, 2.0, 0.5, 3], np.zeros((3, 1))), "must be an array with 4 rows"),
        (lambda: ols_coefficient([0, 1, 0, 1], [1.0, 2.0, 0.5, 3], [[np.nan]] * 4), "must hold finite numbers"),
        (lambda: ols_coefficient([0, 1, 0, 1], [1.0, 2.0, 0.5, 3], "abc"), "must be a 2-D array of numbers"),
        (lambda: ols_coefficient([0, 2, 0, 1], [1.0, 2.0, 0.5, 3]), "must be binary"),
    ],
)
def test_bad_input_is_one_sentence(call, match):
    with pytest.raises(ValueError, match=match):
        call()

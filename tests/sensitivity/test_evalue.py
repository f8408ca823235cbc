"""E-values and the risk ratio of a binary outcome: hand computations, a known effect, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from textcause.sensitivity import e_value, odds_ratio_to_risk_ratio, risk_ratio


def test_e_value_by_hand_and_symmetry():
    assert e_value(2.0).point == pytest.approx(2 + math.sqrt(2))
    assert e_value(0.5).point == pytest.approx(e_value(2.0).point)  # a protective ratio is inverted
    assert e_value(1.0).point == 1.0
    assert e_value(1.0, 0.8, 1.3).ci == 1.0  # an interval around the null needs no confounding
    assert e_value(2.0, 1.0, 3.0).ci == 1.0
    assert e_value(2.0, None, 3.0).ci is None and e_value(0.5, 0.3, None).ci is None
    assert e_value(0.5, 0.3, 0.8).ci == pytest.approx(e_value(1 / 0.8).point)


def test_e_value_sentences():
    assert e_value(1.5).sentence().endswith("risk ratio of 1.50 and overturn the conclusion.")
    assert "already contains 1" in e_value(1.3, 0.9, 1.8).sentence()
    assert "to move to 1.2 the observed" in e_value(2.0, 1.5, 2.6, true=1.2).sentence()


def test_odds_ratio_conversion():
    assert odds_ratio_to_risk_ratio(9.0, rare=False) == 3.0 and odds_ratio_to_risk_ratio(9.0, rare=True) == 9.0


def test_risk_ratio_without_adjustment_is_the_ratio_of_arm_means_with_katz_se():
    """With mu = the arms' means and p = the treated share, AIPW's arm means are the raw means and the
    influence-function se of log RR is Katz's sqrt(1/a - 1/n1 + 1/c - 1/n0), times sqrt(n / (n - 1))."""
    rng = np.random.default_rng(0)
    t = rng.binomial(1, 0.4, 500)
    y = rng.binomial(1, np.where(t == 1, 0.3, 0.15)).astype(float)
    n1, n0 = t.sum(), (1 - t).sum()
    a, c = y[t == 1].sum(), y[t == 0].sum()
    m1, m0 = a / n1, c / n0
    ones = np.ones(500)
    r = risk_ratio(t, y, ones * n1 / 500, ones * m0, ones * m1)
    assert r.rr == pytest.approx(m1 / m0, rel=1e-12)
    se = math.sqrt(1 / a - 1 / n1 + 1 / c - 1 / n0) * math.sqrt(500 / 499)
    assert math.log(r.high / r.rr) == pytest.approx(1.959963984540054 * se, rel=1e-9)
    assert math.log(r.rr / r.low) == pytest.approx(1.959963984540054 * se, rel=1e-9)


def test_risk_ratio_recovers_a_known_effect_under_confounding():
    """P(Y=1 | t, x) = 0.1 (1 + t) e^(0.5 x): a risk ratio of 2 for every x, confounded through x."""
    rng = np.random.default_rng(4)
    n = 20000
    x = rng.binomial(1, 0.5, n).astype(float)
    g = np.where(x == 1, 0.7, 0.3)
    t = rng.binomial(1, g)
    p0 = 0.1 * np.exp(0.5 * x)
    y = rng.binomial(1, p0 * (1 + t)).astype(float)
    r = risk_ratio(t, y, g, p0, 2 * p0)
    assert r.low < 2.0 < r.high and abs(r.rr - 2.0) < 0.1
    naive = y[t == 1].mean() / y[t == 0].mean()
    assert naive > r.high  # the confounding is real
    e = e_value(r.rr, r.low, r.high)
    assert e.point == pytest.approx(r.rr + math.sqrt(r.rr * (r.rr - 1)))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: e_value(0.0), "'rr' parameter of e_value must be a float > 0"),
        (lambda: e_value(2.0, 2.5, 3.0), "must contain the risk ratio"),
        (lambda: e_value(2.0, 1.0, 1.5), "must contain the risk ratio"),
        (lambda: e_value(2.0, -1.0, 3.0), "'low' parameter"),
        (lambda: e_value(2.0, true=0), "'true' parameter"),
        (lambda: odds_ratio_to_risk_ratio(2.0, rare="yes"), "'rare' parameter .* must be a bool"),
        (lambda: odds_ratio_to_risk_ratio(-2.0, rare=True), "'odds_ratio' parameter"),
        (
            lambda: risk_ratio([0, 1], [0.0, 2.5], [0.5] * 2, [0.5] * 2, [0.5] * 2),
            r"must be binary \(0/1\) for an E-value",
        ),
        (lambda: risk_ratio([0, 1], [0.0, 1.0], [0.5] * 2, [0.5] * 2, [0.5] * 2, level=1.0), "'level' parameter"),
        (lambda: risk_ratio([0, 1], [0.0, 0.0], [0.5] * 2, [0.0] * 2, [0.0] * 2), "not positive"),
        (lambda: risk_ratio([0, 1], [0.0, 1.0], [0.0, 0.5], [0.5] * 2, [0.5] * 2), "propensity"),
        (lambda: risk_ratio([0, 1], [0.0, 1.0], [0.5] * 2, [0.5] * 3, [0.5] * 2), "inconsistent numbers of samples"),
    ],
)
def test_bad_input_is_one_sentence(call, match):
    with pytest.raises(ValueError, match=match):
        call()

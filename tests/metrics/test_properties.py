"""Property-based tests of the pure metrics: on any input, a finite number or one ValueError.

Random arrays mix ordinary propensities with the hostile values of issue 14 (0, 1, 5e-324,
1 - 1e-16, 1e308, NaN, inf), empty arrays, wrong shapes and lengths, one class and non-numbers. The
property: every metric returns finite numbers (a bool for the interval comparison; ``(None, None)``
for an interval that was not asked for) or raises ``ValueError``; never NaN or inf, never another
exception (numpy's overflow warnings are errors here too), never a hang. Deterministic through the
profile in ``tests/conftest.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
import strategies
from hypothesis import example, given, settings
from hypothesis import strategies as st

from textcause import metrics
from textcause.estimators import Estimate
from textcause.metrics.classification import accuracy_interval

HOSTILE = [
    0.0,
    1.0,
    0.5,
    5e-324,
    2.2e-308,
    1e-300,
    1e-8,
    1 - 1e-8,
    1 - 1e-16,
    1e100,
    -1e100,
    1e300,
    1e308,
    -1e308,
    2.0,
    -0.5,
]
probabilities = strategies.probabilities(HOSTILE)
outcomes = st.sampled_from(["ordinary", "wide", "hostile"]).flatmap(
    lambda regime: {
        "ordinary": st.floats(min_value=-10, max_value=10),
        "wide": st.floats(min_value=-1e100, max_value=1e100, allow_subnormal=True),
        "hostile": st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(HOSTILE)),
    }[regime]
)

NOT_ARRAYS = st.one_of(
    st.none(),
    st.floats(),
    st.text(max_size=4),
    st.lists(st.text(max_size=3), min_size=1, max_size=3),
    st.lists(st.lists(st.floats(), max_size=3), min_size=1, max_size=3),
    st.lists(st.complex_numbers(), min_size=1, max_size=3),
    st.just(np.zeros((3, 2))),
)


def per_unit(n: int, elements: st.SearchStrategy) -> st.SearchStrategy:
    return strategies.per_unit(n, elements, not_arrays=NOT_ARRAYS)


def treatments(n: int) -> st.SearchStrategy:
    return strategies.treatments(n, junk=per_unit(n, outcomes))


def _finite(value: object) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, metrics.ADInterval):
        return all(math.isfinite(getattr(value, k)) for k in ("low", "high", "b0", "b1", "y0_hat", "y1_hat"))
    if isinstance(value, tuple):
        return value == (None, None) or all(_finite(v) for v in value)
    return isinstance(value, float) and math.isfinite(value)


def _assert_finite(value: object) -> None:
    assert _finite(value), value


def finite_or_value_error(call) -> object:
    return strategies.finite_or_value_error(call, _assert_finite, "finite")


@st.composite
def metric_calls(draw: st.DrawFn) -> tuple[str, object]:
    n = draw(strategies.sizes)
    t, p, q, y = draw(treatments(n)), draw(per_unit(n, probabilities)), draw(per_unit(n, probabilities)), None
    name = draw(
        st.sampled_from(
            [
                "accuracy",
                "brier",
                "ece",
                "propensity_brier",
                "iptw_weight_mse",
                "spearman",
                "ad_interval",
                "accuracy_interval",
            ]
        )
    )
    if name == "accuracy":
        threshold = draw(st.one_of(st.floats(min_value=0, max_value=1), st.floats(), st.just(10**400)))
        return name, lambda: metrics.treatment_accuracy(t, p, threshold)
    if name == "brier":
        return name, lambda: metrics.brier_score(t, p)
    if name == "ece":
        n_bins = draw(st.one_of(st.integers(-1, 30), st.sampled_from([10**6, 10**6 + 1, 10**12])))
        return name, lambda: metrics.expected_calibration_error(t, p, n_bins)
    if name == "propensity_brier":
        return name, lambda: metrics.propensity_brier(p, q)
    if name == "iptw_weight_mse":
        return name, lambda: metrics.iptw_weight_mse(t, p, q)
    if name == "spearman":
        return name, lambda: metrics.spearman(p, q)
    if name == "ad_interval":
        y = draw(per_unit(n, outcomes))
        return name, lambda: metrics.arbour_dimmery_interval(t, y, p, q)
    n_boot = draw(st.sampled_from([0, -1, 1, 5, 20]))
    level = draw(st.one_of(st.just(0.95), st.floats()))
    return name, lambda: accuracy_interval(t, p, n_boot=n_boot, level=level)


@settings(max_examples=400)
@given(metric_calls())
def test_every_metric_is_finite_or_refuses(call):
    _, fn = call
    finite_or_value_error(fn)


@settings(max_examples=100)
@given(
    st.one_of(outcomes, st.sampled_from(strategies.NON_FINITE)),
    st.one_of(outcomes, st.sampled_from(strategies.NON_FINITE)),
    st.booleans(),
)
@example(1e308, -1e308, False)  # issue 14 class: the difference overflowed to inf
def test_bias_is_finite_or_refuses(estimate, truth, as_estimate):
    value = Estimate(ate=estimate, method="x", n_used=1) if as_estimate else estimate
    finite_or_value_error(lambda: metrics.bias(value, truth))


@settings(max_examples=100)
@given(st.lists(st.one_of(outcomes, st.sampled_from(strategies.NON_FINITE)), min_size=4, max_size=4))
@example([-1e308, 1e308, -1e308, 1e308])  # both widths overflow float64
def test_interval_comparison_is_a_bool_or_refuses(ends):
    lo, hi, b_lo, b_hi = ends
    ad = metrics.ADInterval(low=b_lo, high=b_hi, b0=0.0, b1=0.0, y0_hat=0.0, y1_hat=0.0)
    result = finite_or_value_error(lambda: metrics.interval_narrower_than_ad(lo, hi, ad))
    if result is not None and all(abs(v) < 1e300 for v in ends):
        assert result == (hi - lo < b_hi - b_lo)


@settings(max_examples=60)
@given(st.data())
def test_valid_inputs_always_give_a_finite_metric(data):
    n = data.draw(st.integers(min_value=2, max_value=20))
    t = np.array([0, 1] + data.draw(st.lists(st.integers(0, 1), min_size=n - 2, max_size=n - 2)))
    p = np.array(data.draw(st.lists(st.floats(min_value=1e-8, max_value=1 - 1e-8), min_size=n, max_size=n)))
    q = np.array(data.draw(st.lists(st.floats(min_value=1e-8, max_value=1 - 1e-8), min_size=n, max_size=n)))
    y = np.array(data.draw(st.lists(st.floats(min_value=-1e100, max_value=1e100), min_size=n, max_size=n)))
    for fn in (
        lambda: metrics.treatment_accuracy(t, p),
        lambda: metrics.brier_score(t, p),
        lambda: metrics.expected_calibration_error(t, p),
        lambda: metrics.propensity_brier(p, q),
        lambda: metrics.iptw_weight_mse(t, p, q),
        lambda: metrics.spearman(p, q),
        lambda: metrics.arbour_dimmery_interval(t, y, p, q),
        lambda: accuracy_interval(t, p, n_boot=5),
    ):
        assert finite_or_value_error(fn) is not None

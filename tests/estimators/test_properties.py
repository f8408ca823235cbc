"""Property-based tests of the estimators and the bootstrap: on any input, a finite estimate or one ValueError.

Random arrays mix ordinary values with the hostile ones of issue 14 (denormals, 1e308, NaN, inf,
propensities of 0, 1, 5e-324 and 1 - 1e-16), empty arrays, wrong shapes and lengths, one treatment
class, and inputs that are not arrays of numbers at all. The property: the estimator returns an
``Estimate`` whose every number is finite, or raises ``ValueError``; never NaN or inf, never another
exception (numpy's overflow warnings are errors here too), never a hang. Deterministic: the profile
in ``tests/conftest.py`` derandomises hypothesis.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
import strategies
from hypothesis import given, settings
from hypothesis import strategies as st

from textcause.estimators import ESTIMATORS, Estimate, bootstrap_ci, propensity_strata

#: Finite values at the edges of float64 and of (0, 1), and the non-finite ones.
HOSTILE = [
    0.0,
    -0.0,
    1.0,
    0.5,
    5e-324,
    2.2e-308,
    1e-300,
    1e-12,
    1e-8,
    1 - 1e-8,
    1 - 1e-16,
    1e100,
    -1e100,
    1e101,
    1e300,
    1e308,
    -1e308,
    1.7976931348623157e308,
]

#: Outcome-like values in three regimes: ordinary, wide (within the estimators' limits, denormals
#: included) and hostile (any finite float, the edges of float64).
numbers = st.sampled_from(["ordinary", "ordinary", "wide", "hostile"]).flatmap(
    lambda regime: {
        "ordinary": st.one_of(st.floats(min_value=-1e3, max_value=1e3), st.integers(min_value=-3, max_value=3)),
        "wide": st.floats(min_value=-1e100, max_value=1e100, allow_subnormal=True),
        "hostile": st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(HOSTILE)),
    }[regime]
)
#: Propensity-like values: inside the weight limits, anywhere in [0, 1], or at the edges.
probabilities = strategies.probabilities(HOSTILE)


def _not_arrays() -> st.SearchStrategy:
    """Inputs that are not 1-D arrays of real numbers."""
    return st.one_of(
        st.none(),
        st.floats(),
        st.text(max_size=5),
        st.lists(st.text(max_size=3), min_size=1, max_size=4),
        st.lists(st.lists(st.floats(), max_size=3), min_size=1, max_size=3),  # ragged or 2-D
        st.lists(st.complex_numbers(), min_size=1, max_size=4),
        st.just(np.zeros((2, 3))),
        st.just(np.array(["2020-01-01"] * 4, dtype="datetime64[D]")),
        st.lists(st.integers(min_value=10**300, max_value=10**400), min_size=1, max_size=3),
        st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    )


def per_unit(n: int, elements: st.SearchStrategy) -> st.SearchStrategy:
    """Mostly an array of ``n`` values; sometimes of another length, with a NaN or inf, or not an array."""
    return strategies.per_unit(n, elements, not_arrays=_not_arrays())


def treatments(n: int) -> st.SearchStrategy:
    return strategies.treatments(
        n, junk=per_unit(n, numbers), orders=([0, 1], [1, 0]), dtypes=(np.int64, np.int8, bool, np.float64)
    )


@st.composite
def estimator_inputs(draw: st.DrawFn, names: tuple[str, ...] | None = None) -> tuple[str, tuple, dict]:
    name = draw(st.sampled_from(sorted(names or ESTIMATORS)))
    n = draw(strategies.sizes)
    t = draw(treatments(n))
    y = draw(per_unit(n, numbers))
    args: tuple = (t, y)
    if name != "unadjusted":
        args += (draw(per_unit(n, probabilities)),)
    if name in ("aipw", "tmle"):
        args += (draw(per_unit(n, numbers)), draw(per_unit(n, numbers)))
    kwargs: dict = {}
    if name in ("ipw", "aipw", "tmle") and draw(st.booleans()):
        kwargs["clip"] = draw(st.one_of(st.sampled_from([1e-8, 1e-3, 0.01, 0.5, 0.0, 0.6, 1e-300]), st.floats()))
    if name == "stratified" and draw(st.booleans()):
        kwargs["n_strata"] = draw(st.one_of(st.integers(-2, 30), st.sampled_from([10**6, 10**7, 2**62, 10**19])))
    if name == "matching" and draw(st.booleans()):
        kwargs["caliper"] = draw(st.one_of(st.none(), st.floats(), st.sampled_from([0.0, 1e308, 10**400])))
    if name == "tmle" and draw(st.booleans()):
        kwargs["outcome"] = draw(st.sampled_from(["auto", "binary", "continuous", "normal"]))
        kwargs["fluctuation"] = draw(st.sampled_from(["ate", "arms"]))
    if name in ("aipw", "tmle") and draw(st.booleans()):
        kwargs["level"] = draw(st.one_of(st.floats(), st.sampled_from([0.5, 1.0, 0.0])))
    return name, args, kwargs


def assert_finite(est: Estimate) -> None:
    assert isinstance(est, Estimate)
    values = [est.ate, est.ci_low, est.ci_high] + [v for v in est.details.values() if isinstance(v, float)]
    assert all(v is None or math.isfinite(v) for v in values), est
    boot = est.details.get("bootstrap")
    if boot is not None:
        assert math.isfinite(boot["se"]) and np.all(np.isfinite(boot["replicates"]))
    assert est.n_used >= 1 and est.n_clipped >= 0


def finite_or_value_error(call) -> Estimate | None:
    """Run ``call``: its result must be a finite Estimate, or it must raise ValueError (with one sentence)."""
    return strategies.finite_or_value_error(call, assert_finite, "estimate")


@settings(max_examples=300)
@given(estimator_inputs())
def test_every_estimator_is_finite_or_refuses(case):
    name, args, kwargs = case
    finite_or_value_error(lambda: ESTIMATORS[name](*args, **kwargs))


@settings(max_examples=200)
@given(estimator_inputs(("tmle",)))
def test_tmle_is_finite_or_refuses(case):
    """The targeting step on hostile inputs (huge outcomes, extreme propensities): an estimate or one sentence."""
    name, args, kwargs = case
    finite_or_value_error(lambda: ESTIMATORS[name](*args, **kwargs))


@settings(max_examples=200)
@given(
    estimator_inputs(), st.sampled_from([1, 2, 3, 5, 8, 12, 0, -1]), st.booleans(), st.integers(0, 3), st.integers(0, 9)
)
def test_bootstrap_is_finite_or_refuses(case, n_boot, vectorized, seed, drop):
    name, args, kwargs = case
    if drop == 0 and name != "unadjusted":  # issue 14: a missing propensity raised a raw TypeError
        args = args[:2] + (None,) + args[3:]
    t, y, *rest = args
    propensity, extra = (rest[0], rest[1:]) if rest else (None, ())
    finite_or_value_error(
        lambda: bootstrap_ci(name, t, y, propensity, *extra, n_boot=n_boot, seed=seed, vectorized=vectorized, **kwargs)
    )


@settings(max_examples=60)
@given(st.data())
def test_valid_inputs_always_give_an_estimate(data):
    """On inputs inside every documented limit, each estimator gives a finite estimate (or says why not)."""
    n = data.draw(st.integers(min_value=2, max_value=20))
    t = np.array([0, 1] + data.draw(st.lists(st.integers(0, 1), min_size=n - 2, max_size=n - 2)))
    magnitude = st.floats(min_value=-1e100, max_value=1e100)
    y = np.array(data.draw(st.lists(magnitude, min_size=n, max_size=n)))
    p = np.array(data.draw(st.lists(st.floats(min_value=1e-8, max_value=1 - 1e-8), min_size=n, max_size=n)))
    mu = np.array(data.draw(st.lists(magnitude, min_size=n, max_size=n)))
    for name, args in (("unadjusted", (t, y)), ("ipw", (t, y, p)), ("aipw", (t, y, p, mu, -mu))):
        assert finite_or_value_error(lambda name=name, args=args: ESTIMATORS[name](*args)) is not None
        try:  # a few units can give only resamples with one arm: the one refusal allowed here
            assert_finite(bootstrap_ci(name, *args, n_boot=5))
        except ValueError as e:
            assert str(e).startswith("All 5 bootstrap replicates")
    for fluctuation in ("ate", "arms"):  # may refuse only for outcomes that separate the arms
        finite_or_value_error(lambda f=fluctuation: ESTIMATORS["tmle"](t, y, p, mu, -mu, fluctuation=f))
    for name, kwargs in (("stratified", {"n_strata": 2}), ("matching", {"caliper": None})):
        if finite_or_value_error(lambda name=name, kw=kwargs: ESTIMATORS[name](t, y, p, **kw)) is not None:
            finite_or_value_error(lambda name=name, kw=kwargs: bootstrap_ci(name, t, y, p, n_boot=5, **kw))


@settings(max_examples=60)
@given(per_unit(8, probabilities), st.one_of(st.integers(-1, 20), st.sampled_from([10**6, 10**6 + 1, 10**19])))
def test_propensity_strata_is_in_range_or_refuses(p, n_strata):
    try:
        strata = propensity_strata(p, n_strata)
    except ValueError:
        return
    assert strata.dtype == np.int64 and np.all((strata >= 0) & (strata < n_strata))

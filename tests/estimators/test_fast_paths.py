"""The one-pass paths of the estimators give what the straightforward computation gives."""

from __future__ import annotations

import numpy as np
import pytest

from textcause.estimators import bootstrap_ci, bootstrap_indices, ipw, unadjusted
from textcause.estimators.bootstrap import _draws
from textcause.estimators.weighting import ipw_columns
from textcause.validation import MAX_MAGNITUDE, as_bounded_float, check_probability, check_propensity, check_treatment


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint8, np.uint64, bool, np.float32, np.float64])
def test_treatment_check_without_sorting(dtype):
    t = np.array([0, 1, 1, 0, 1], dtype=dtype)
    out = check_treatment(t)
    assert out.dtype == np.int8 and out.tolist() == [0, 1, 1, 0, 1]
    assert out is not t  # a copy, never the caller's array
    one = np.ones(4, dtype=dtype)
    with pytest.raises(ValueError, match=r"The treatment 't' has only one class \(1\)"):
        check_treatment(one)
    with pytest.raises(ValueError, match=r"The treatment 't' has only one class \(0\)"):
        check_treatment(np.zeros(4, dtype=dtype))
    assert check_treatment(one, both_classes=False).tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize(
    "bad, shown",
    [
        (np.array([0, 1, -1], dtype=np.int64), r"\[-1, 0, 1\]"),
        (np.array([0, 1, 2], dtype=np.int8), r"\[0, 1, 2\]"),
        (np.array([0, 1, 255], dtype=np.uint8), r"\[0, 1, 255\]"),
        (np.array([0.0, 1.0, 0.5]), r"\[0\.0, 0\.5, 1\.0\]"),
        (np.array([0.0, 1.0, np.nan]), r"\[0\.0, 1\.0, nan\]"),
    ],
)
def test_treatment_values_outside_zero_one_are_named(bad, shown):
    with pytest.raises(ValueError, match=r"The treatment 't' must be binary \(0/1\)\. Got values " + shown):
        check_treatment(bad)


def test_the_two_pass_value_checks_accept_exactly_what_the_elementwise_checks_accept():
    tiny, below_one = np.nextafter(0.0, 1.0), np.nextafter(1.0, 0.0)
    edges = np.array([tiny, 0.5, below_one])
    assert check_propensity(edges) is edges  # strictly inside (0, 1), to the last float: kept, not copied
    for bad in (0.0, -0.0, 1.0, -tiny, 1.5):
        with pytest.raises(ValueError, match=r"strictly between 0 and 1\. Got .* at index 1 \(1 values out of range\)"):
            check_propensity(np.array([0.5, bad, 0.5]))
    assert check_probability(np.array([0.0, 1.0])).tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]\. Got (np\.float64\()?1\.5\)? at index 2"):
        check_probability(np.array([0.0, 1.0, 1.5]))
    big = np.array([-MAX_MAGNITUDE, 0.0, MAX_MAGNITUDE])
    assert as_bounded_float(big, "y", "ipw") is big
    with pytest.raises(ValueError, match=r"The 'y' values of ipw must have magnitude <= 1e\+100, .* at index 1"):
        as_bounded_float(np.array([0.0, np.nextafter(MAX_MAGNITUDE, np.inf)]), "y", "ipw")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_nan_or_infinity_is_named_as_such_by_every_value_check(bad):
    """A NaN or an infinity anywhere fails the two-pass range test and then gets its own message
    (not the range's or the magnitude's), as the elementwise checks said."""
    values = np.array([0.5, 0.25, bad, 0.75])
    for check in (
        lambda v: check_propensity(v, "propensity"),
        lambda v: check_probability(v, "propensity"),
        lambda v: as_bounded_float(v, "propensity", "ipw"),
    ):
        with pytest.raises(ValueError, match=r"^'propensity' contains NaN or infinite values\.$"):
            check(values)


@pytest.mark.parametrize("spread", [1.0, 12.0])  # 12: weights up to ~1e5 in one arm
def test_ipw_and_unadjusted_equal_the_column_formulas(spread):
    rng = np.random.default_rng(4)
    n = 20_000
    x = rng.normal(size=n)
    p = 1.0 / (1.0 + np.exp(-spread * x / 4))
    p = np.clip(p, 1e-6, 1 - 1e-6)
    t = (rng.random(n) < p).astype(np.int64)
    y = 1e3 * (t + x + rng.normal(size=n))
    # the straightforward computation the estimators used before their one-pass form
    cols = ipw_columns(t.astype(np.int8), y, p)
    s = cols.sum(axis=0)
    w = cols[:, 1] + cols[:, 3]
    treated = t == 1
    kish = lambda v: v.sum() ** 2 / np.square(v).sum()  # noqa: E731
    est = ipw(t, y, p)
    assert est.ate == pytest.approx(s[0] / s[1] - s[2] / s[3], rel=1e-12, abs=1e-12)
    assert est.details["mean_treated"] == pytest.approx(s[0] / s[1], rel=1e-12)
    assert est.details["mean_control"] == pytest.approx(s[2] / s[3], rel=1e-12)
    assert est.details["max_weight"] == w.max()
    assert est.details["ess_treated"] == pytest.approx(kish(w[treated]), rel=1e-12)
    assert est.details["ess_control"] == pytest.approx(kish(w[~treated]), rel=1e-12)
    un = unadjusted(t, y)
    assert un.ate == pytest.approx(y[treated].mean() - y[~treated].mean(), rel=1e-12, abs=1e-12)
    assert (un.details["n_treated"], un.details["n_control"]) == (int(treated.sum()), int((~treated).sum()))


@pytest.mark.parametrize("n, n_boot", [(7, 30), (1000, 9), (5_000_000, 1)])
def test_bootstrap_draws_are_the_int64_stream(n, n_boot):
    # the resamples are those of default_rng(seed).integers(0, n, size=(n_boot, n)), whatever the chunking
    expected = np.random.default_rng(3).integers(0, n, size=(n_boot, n))
    got = np.concatenate(list(bootstrap_indices(n, n_boot, 3)))
    assert got.dtype == np.int64 and np.array_equal(got, expected)
    assert np.array_equal(np.concatenate(list(_draws(n, n_boot, 3))), expected)


def test_bootstrap_replicates_are_those_of_the_drawn_resamples():
    rng = np.random.default_rng(5)
    n = 300
    p = rng.uniform(0.1, 0.9, n)
    t = (rng.random(n) < p).astype(int)
    y = t + rng.normal(size=n)
    est = bootstrap_ci("ipw", t, y, p, n_boot=25, seed=9)
    idx = np.random.default_rng(9).integers(0, n, size=(25, n))
    direct = [ipw(t[row], y[row], p[row]).ate for row in idx]
    np.testing.assert_allclose(est.details["bootstrap"]["replicates"], direct, rtol=0, atol=1e-12)

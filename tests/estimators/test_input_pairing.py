"""Issue 43: inputs that numpy or pandas would pair or read silently wrong are refused by every estimator.

A masked array loses its mask in ``np.asarray`` (the masked units would count); pandas Series with
different indexes would be paired by position, not by label. One rule (textcause.validation)
refuses both, in one sentence, wherever an estimator takes per-unit inputs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from textcause.estimators import aipw, bootstrap_ci, ipw, matching, stratified, tmle, unadjusted
from textcause.estimators.crossfit import crossfit_predictions
from textcause.estimators.refit import refit_interval

T = np.array([1, 0, 1, 0, 1, 0, 1, 0])
Y = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0])
P = np.array([0.6, 0.4, 0.5, 0.5, 0.7, 0.3, 0.6, 0.4])
MASKED = r"'{}' is a masked array with 2 masked values: .*drop the masked units from every input"
INDEXES = r"'t' and '{}' are pandas objects with different indexes: .*align them first"


def _mask(a: np.ndarray) -> np.ma.MaskedArray:
    mask = np.zeros(a.size, dtype=bool)
    mask[[1, 2]] = True
    return np.ma.masked_array(a, mask)


def _calls(t, y, p):
    return {
        "unadjusted": lambda: unadjusted(t, y),
        "ipw": lambda: ipw(t, y, p),
        "ipw_clip": lambda: ipw(t, y, p, clip=0.01),
        "aipw": lambda: aipw(t, y, p, mu0=np.full(8, 0.4), mu1=np.full(8, 0.6)),
        "tmle": lambda: tmle(t, y, p, mu0=np.full(8, 0.4), mu1=np.full(8, 0.6)),
        "stratified": lambda: stratified(t, y, p, n_strata=2),
        "matching": lambda: matching(t, y, p),
        "bootstrap": lambda: bootstrap_ci("ipw", t, y, p, n_boot=5),
        "refit": lambda: refit_interval(lambda rows: p, 8, t, y, p, n_reps=2),
    }


@pytest.mark.parametrize("call", list(_calls(T, Y, P)))
@pytest.mark.parametrize("which", ["t", "y", "propensity"])
def test_masked_arrays_are_refused(call, which):
    args = {"t": T, "y": Y, "propensity": P}
    args[which] = _mask(args[which])
    fn = _calls(args["t"], args["y"], args["propensity"])[call]
    if call == "unadjusted" and which == "propensity":
        pytest.skip("unadjusted takes no propensity")
    with pytest.raises(ValueError, match=MASKED.format(which)):
        fn()


def test_a_masked_array_without_masked_values_is_plain():
    plain = ipw(T, Y, P)
    assert ipw(np.ma.masked_array(T, np.zeros(8, bool)), Y, P).ate == plain.ate


@pytest.mark.parametrize("call", list(_calls(T, Y, P)))
def test_series_with_different_indexes_are_refused(call):
    t = pd.Series(T, index=range(8))
    y = pd.Series(Y, index=range(7, -1, -1))  # the same labels in another order: paired by position
    fn = _calls(t, y, P)[call]
    with pytest.raises(ValueError, match=INDEXES.format("y")):
        fn()


def test_series_with_the_same_index_or_beside_arrays_are_used_as_before():
    plain = ipw(T, Y, P).ate
    index = list("abcdefgh")
    assert ipw(pd.Series(T, index=index), pd.Series(Y, index=index), pd.Series(P, index=index)).ate == plain
    assert ipw(pd.Series(T, index=index), Y, P).ate == plain  # one pandas input: positions are all there is


def test_crossfit_refuses_both():
    x = np.arange(16.0).reshape(8, 2)
    with pytest.raises(ValueError, match=MASKED.format("y")):
        crossfit_predictions(x, T, _mask(Y), None, None)
    with pytest.raises(ValueError, match=INDEXES.format("y")):
        crossfit_predictions(x, pd.Series(T), pd.Series(Y, index=range(1, 9)), None, None)

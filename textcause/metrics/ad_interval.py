"""The Arbour-Dimmery interval of Weld et al., appendix A: an IPW-centred heuristic interval, not a bound.

Appendix A (after Arbour and Dimmery 2019) widens the IPW estimate of the ATE by a bias term per arm,
computed from the Brier score between estimated and true propensity. The interval is computed
exactly as published, but it is no bound on the ATE nor on its estimate's bias: with true
propensities 0.9 / 0.1 and estimated 0.8 / 0.2 the treated arm's IPW mean is off by 0.170 while
equation (1) gives 0.119, and the interval [0.107, 0.384] excludes the true ATE 0.4
(tests/metrics/test_honest_metrics.py). It is centred on the IPW estimate, so it belongs to the IPW
rows of a result table only (:mod:`textcause.metrics.schema`); reports compare its width with the
IPW row's empirical interval only as the paper did, and draw no "tighter than a bound" conclusion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from textcause.estimators.weighting import ipw
from textcause.validation import (
    as_bounded_float,
    check_consistent_length,
    check_propensity,
    check_real,
    check_treatment,
    check_weights,
)

__all__ = [
    "ADInterval",
    "arbour_dimmery_interval",
    "interval_narrower_than_ad",
]

_OWNER = "arbour_dimmery_interval"
_HINT = (
    "clip the propensities explicitly before computing the interval (as the estimators' clip= does), or "
    "drop the units without overlap"
)


@dataclass(frozen=True)
class ADInterval:
    """The Arbour-Dimmery interval around the IPW estimate of the ATE (appendix A): a heuristic, not a bound.

    Attributes:
        low: ``(y1_hat - b1) - (y0_hat + b0)`` (equations (2)-(3) of appendix A).
        high: ``(y1_hat + b1) - (y0_hat - b0)`` (equations (4)-(5)).
        b0, b1: equation (1)'s bias terms of the untreated and treated arm means (the paper calls them
            bounds; they can be smaller than the actual bias).
        y0_hat, y1_hat: the Hajek IPW arm means with the estimated propensity (the centre is their difference).
    """

    low: float
    high: float
    b0: float
    b1: float
    y0_hat: float
    y1_hat: float

    @property
    def width(self) -> float:
        """``high - low = 2 (b0 + b1)``."""
        return self.high - self.low


def arbour_dimmery_interval(t: Any, y: Any, propensity: Any, true_propensity: Any) -> ADInterval:
    """The IPW estimate widened by the propensity's weighted Brier risk (appendix A, equations (1)-(5)).

    For arm a (``p_1 = p``, ``p_0 = 1 - p``), equation (1) gives the bias term of the arm mean
    ``b_a = |(1/n) sum_i 1[T_i = a] * Y_i / p_a(X_i) * S_i / p_hat_a(X_i)^2|``, with
    ``S_i = (p_hat_a(X_i) - p_a(X_i))^2`` the per-unit Brier score between estimated and true
    propensity of that arm (the same for both arms, since ``p_hat_0 - p_0 = -(p_hat_1 - p_1)``).
    The expectation ``E[Y/p(T) ...]`` over the arm is taken as in the IPW identity
    ``E[Y(a)] = E[1[T = a] Y / p_a]``. The arm means ``y1_hat``, ``y0_hat`` are the Hajek means of
    :func:`textcause.estimators.ipw` with the estimated propensity, so the interval is centred on
    the IPW estimate. The paper's step from ``(p_hat - p)/p_hat`` to ``(p_hat - p)^2/p_hat^2``
    only holds where ``|p_hat - p| >= p_hat``, which is why the terms need not cover the bias; the
    quantity is computed as published.

    Args:
        t: observed binary treatment, both classes present.
        y: outcomes.
        propensity: estimated P(T=1 | X), strictly inside (0, 1).
        true_propensity: true P(T=1 | X), strictly inside (0, 1).

    Returns:
        A frozen :class:`ADInterval`.

    Raises:
        ValueError: invalid or inconsistent inputs, outcomes beyond
            :data:`~textcause.validation.MAX_MAGNITUDE`, or a propensity (estimated or true) giving a
            weight beyond :data:`~textcause.validation.MAX_WEIGHT`.
    """
    t = check_treatment(t)
    y = as_bounded_float(y, "y", _OWNER)
    p_hat = check_propensity(propensity, "propensity")
    p = check_propensity(true_propensity, "true_propensity")
    check_consistent_length(t, y, p_hat, p)
    check_weights(t, p_hat, _OWNER, "propensity", _HINT)
    check_weights(t, p, _OWNER, "true_propensity", _HINT)
    s = np.square(p_hat - p)
    n = t.size
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # only the arm not received can overflow
        b1 = abs(float(np.sum(np.where(t == 1, y / p * s / np.square(p_hat), 0.0)) / n))
        b0 = abs(float(np.sum(np.where(t == 0, y / (1.0 - p) * s / np.square(1.0 - p_hat), 0.0)) / n))
    est = ipw(t, y, p_hat)
    y1, y0 = est.details["mean_treated"], est.details["mean_control"]
    interval = ADInterval(low=(y1 - b1) - (y0 + b0), high=(y1 + b1) - (y0 - b0), b0=b0, b1=b1, y0_hat=y0, y1_hat=y1)
    for name in ("low", "high", "b0", "b1"):
        value = getattr(interval, name)
        if not math.isfinite(value):
            raise ValueError(
                f"The '{name}' value of {_OWNER} is {value!r}, not a finite number: the inputs overflow float64 "
                "arithmetic; rescale the outcomes or clip the propensities."
            )
    return interval


def interval_narrower_than_ad(ci_low: float, ci_high: float, ad: ADInterval) -> bool:
    """Whether an empirical interval is narrower than the Arbour-Dimmery interval (appendix A's comparison).

    Compares widths only: ``ci_high - ci_low < ad.high - ad.low`` (as halves when a width overflows
    float64, which halving undoes exactly). Meaningful for the IPW estimate's interval, on which the
    Arbour-Dimmery interval is centred.

    Raises:
        ValueError: non-finite ends, or ``ci_high < ci_low``.
    """
    owner = "interval_narrower_than_ad"
    lo = check_real(ci_low, "ci_low", owner)
    hi = check_real(ci_high, "ci_high", owner, low=lo)
    ad_lo = check_real(ad.low, "ad.low", owner)
    ad_hi = check_real(ad.high, "ad.high", owner)
    width, ad_width = hi - lo, ad_hi - ad_lo
    if math.isfinite(width) and math.isfinite(ad_width):
        return bool(width < ad_width)
    return bool(hi / 2 - lo / 2 < ad_hi / 2 - ad_lo / 2)

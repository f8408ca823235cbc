"""The bias "bounds" of Arbour and Dimmery (2019) as used in Weld et al., appendix A: the paper's heuristic.

They are computed exactly as published, but they are not bounds: with true propensities 0.9 / 0.1 and
estimated 0.8 / 0.2 the treated arm's IPW mean is off by 0.170 while equation (1) gives 0.119, and
the interval [0.107, 0.384] excludes the true ATE 0.4 (tests/metrics/test_honest_metrics.py).
Reports label them the paper's heuristic and draw no "tighter than the bound" conclusion from them.
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

_OWNER = "arbour_dimmery_bounds"
_HINT = (
    "clip the propensities explicitly before computing the bounds (as the estimators' clip= does), or "
    "drop the units without overlap"
)


@dataclass(frozen=True)
class Bounds:
    """Lower and upper bounds on the ATE from the weighted risk of the propensity.

    Attributes:
        lower: ``(y1_hat - b1) - (y0_hat + b0)`` (equations (2)-(3) of appendix A).
        upper: ``(y1_hat + b1) - (y0_hat - b0)`` (equations (4)-(5)).
        b0, b1: the bias bounds on the untreated and treated arm means (equation (1)).
        y0_hat, y1_hat: the Hajek IPW arm means with the estimated propensity.
    """

    lower: float
    upper: float
    b0: float
    b1: float
    y0_hat: float
    y1_hat: float

    @property
    def width(self) -> float:
        """``upper - lower = 2 (b0 + b1)``."""
        return self.upper - self.lower


def arbour_dimmery_bounds(t: Any, y: Any, propensity: Any, true_propensity: Any) -> Bounds:
    """ATE bounds from the propensity's weighted Brier risk (appendix A, equations (1)-(5)).

    For arm a (``p_1 = p``, ``p_0 = 1 - p``), equation (1) bounds the bias of the arm mean by
    ``b_a = |(1/n) sum_i 1[T_i = a] * Y_i / p_a(X_i) * S_i / p_hat_a(X_i)^2|``, with
    ``S_i = (p_hat_a(X_i) - p_a(X_i))^2`` the per-unit Brier score between estimated and true
    propensity of that arm (the same for both arms, since ``p_hat_0 - p_0 = -(p_hat_1 - p_1)``).
    The expectation ``E[Y/p(T) ...]`` over the arm is taken as in the IPW identity
    ``E[Y(a)] = E[1[T = a] Y / p_a]``. The arm means ``y1_hat``, ``y0_hat`` are the Hajek means of
    :func:`textcause.estimators.ipw` with the estimated propensity, so the interval is centred on
    the IPW estimate. Note the paper's step from ``(p_hat - p)/p_hat`` to ``(p_hat - p)^2/p_hat^2``
    only holds where ``|p_hat - p| >= p_hat``; the quantity is computed as published.

    Args:
        t: observed binary treatment, both classes present.
        y: outcomes.
        propensity: estimated P(T=1 | X), strictly inside (0, 1).
        true_propensity: true P(T=1 | X), strictly inside (0, 1).

    Returns:
        A frozen :class:`Bounds`.

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
    bounds = Bounds(lower=(y1 - b1) - (y0 + b0), upper=(y1 + b1) - (y0 - b0), b0=b0, b1=b1, y0_hat=y0, y1_hat=y1)
    for name in ("lower", "upper", "b0", "b1"):
        value = getattr(bounds, name)
        if not math.isfinite(value):
            raise ValueError(
                f"The {name} bound of {_OWNER} is {value!r}, not a finite number: the inputs overflow float64 "
                "arithmetic; rescale the outcomes or clip the propensities."
            )
    return bounds


def interval_tighter_than_bounds(ci_low: float, ci_high: float, bounds: Bounds) -> bool:
    """Whether an empirical interval is narrower than the theoretical bounds (appendix A findings).

    Compares widths: ``ci_high - ci_low < bounds.upper - bounds.lower`` (as halves when a width
    overflows float64, which halving undoes exactly).

    Raises:
        ValueError: non-finite ends or bounds, or ``ci_high < ci_low``.
    """
    lo = check_real(ci_low, "ci_low", "interval_tighter_than_bounds")
    hi = check_real(ci_high, "ci_high", "interval_tighter_than_bounds", low=lo)
    b_lo = check_real(bounds.lower, "bounds.lower", "interval_tighter_than_bounds")
    b_hi = check_real(bounds.upper, "bounds.upper", "interval_tighter_than_bounds")
    width, bound_width = hi - lo, b_hi - b_lo
    if math.isfinite(width) and math.isfinite(bound_width):
        return bool(width < bound_width)
    return bool(hi / 2 - lo / 2 < b_hi / 2 - b_lo / 2)

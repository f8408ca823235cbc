"""Estimators that average (weighted) outcomes per arm: unadjusted, IPW (Hajek) and AIPW.

Each is also written as ratios of per-unit column sums (``*_columns`` + ``ratio_difference``), so
that :func:`textcause.estimators.bootstrap_ci` can compute all bootstrap replicates at once as
``counts @ columns``.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any

import numpy as np

from textcause.estimators._common import BLOCK, blocks, dot, effect, finite, prepare, require_propensity
from textcause.estimators.types import CI_INFLUENCE, Estimate
from textcause.validation import MAX_WEIGHT, check_consistent_length, check_probability, check_real

__all__ = [
    "MIN_CLIP",
    "unadjusted_columns",
    "ipw_columns",
    "ratio_difference",
    "clipped_propensity",
    "check_clip",
    "unadjusted",
    "ipw",
    "aipw_psi",
    "sum_squares",
    "aipw",
]

#: The smallest ``clip=`` the weighting estimators take: weights stay at most ``MAX_WEIGHT``.
MIN_CLIP = 1.0 / MAX_WEIGHT


def unadjusted_columns(t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Columns ``[T*Y, T, (1-T)*Y, 1-T]``: their sums give the difference in means."""
    tf = t.astype(np.float64)
    return np.column_stack([tf * y, tf, (1.0 - tf) * y, 1.0 - tf])


def ipw_columns(t: np.ndarray, y: np.ndarray, propensity: np.ndarray) -> np.ndarray:
    """Columns ``[T*Y/p, T/p, (1-T)*Y/(1-p), (1-T)/(1-p)]``: their sums give the Hajek ATE."""
    w1 = t / propensity
    w0 = (1 - t) / (1.0 - propensity)
    return np.column_stack([w1 * y, w1, w0 * y, w0])


def ratio_difference(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ATE = S0/S1 - S2/S3 for each row of column sums, and which rows are defined.

    A row is undefined when an arm has zero total weight (no treated or no untreated unit); its
    ATE is returned as 0.0 and must be discarded using the mask.
    """
    sums = np.atleast_2d(sums)
    ok = (sums[:, 1] > 0) & (sums[:, 3] > 0)
    d1 = np.where(ok, sums[:, 1], 1.0)
    d0 = np.where(ok, sums[:, 3], 1.0)
    ate = np.where(ok, effect(sums[:, 0] / d1, sums[:, 2] / d0), 0.0)
    return ate, ok


def clipped_propensity(t: np.ndarray, propensity: Any, clip: float) -> tuple[np.ndarray, int]:
    """Propensities in [0, 1] clipped to ``[clip, 1 - clip]`` (``clip`` already checked), and how many changed."""
    p = check_probability(propensity, "propensity")  # 0 and 1 allowed: they are clipped
    check_consistent_length(t, p)
    clipped = np.clip(p, clip, 1.0 - clip)
    return clipped, int(np.count_nonzero(clipped != p))


def check_clip(clip: Any, owner: str) -> float:
    """``clip`` in ``[MIN_CLIP, 0.5]``: clipped weights stay at most ``MAX_WEIGHT``."""
    return check_real(clip, "clip", owner, low=MIN_CLIP, high=0.5)


def unadjusted(t: Any, y: Any) -> Estimate:
    """Difference in means between treated and untreated units (no adjustment at all).

    Args:
        t: binary treatment (0/1 or bool), both classes present.
        y: outcomes (binary or continuous).

    Returns:
        ``Estimate`` with ``ate = mean(Y | T=1) - mean(Y | T=0)``; details hold both arm means
        and arm sizes.

    Raises:
        ValueError: invalid or inconsistent inputs (see ``textcause.validation``).

    Examples:
        >>> from textcause.estimators import unadjusted
        >>> t = [0, 1, 0, 1, 0, 1, 0, 1]
        >>> y = [0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
        >>> unadjusted(t, y)
        Estimate(unadjusted: ATE +0.7500, n_used=8)
    """
    t, y = prepare(t, y, owner="unadjusted")
    tf = t.astype(np.float64)
    n_treated = int(np.count_nonzero(t))
    n_control = int(t.size - n_treated)
    m1 = float(dot(tf, y) / n_treated)
    m0 = float(dot(1.0 - tf, y) / n_control)
    return finite(
        Estimate(
            ate=float(effect(m1, m0)),
            method="unadjusted",
            n_used=int(t.size),
            details={
                "mean_treated": m1,
                "mean_control": m0,
                "n_treated": n_treated,
                "n_control": n_control,
            },
        )
    )


def ipw(t: Any, y: Any, propensity: Any, *, clip: float | None = None) -> Estimate:
    """Inverse probability of treatment weighting, Hajek (self-normalised) form.

    ``ATE = sum_i T_i Y_i / p_i / sum_i T_i / p_i - sum_i (1-T_i) Y_i / (1-p_i) / sum_i (1-T_i) / (1-p_i)``:
    the weighted mean outcome of the treated (weights 1/p) minus that of the untreated (weights
    1/(1-p)), each arm normalised by its own weight sum.

    Relation to the paper (Weld et al., section 6.2): the displayed formula divides the signed
    weighted sum by ONE total ``W = W1 + W0`` over both arms, i.e. it equals
    ``(W1 * m1 - W0 * m0) / (W1 + W0)`` with ``m1, m0`` the arm means above. Since ``E[W1] = E[W0] = n``,
    that expression tends to ATE / 2 (and is not a difference of means when ``W1 != W0``); the
    per-arm normalisation here is the standard Hajek estimator the paper names. With a constant
    propensity (randomised treatment) the weights cancel and the result equals the difference in
    means exactly.

    Args:
        t: binary treatment (0/1 or bool), both classes present.
        y: outcomes (binary or continuous).
        propensity: estimated P(T=1 | X) per unit, strictly inside (0, 1) and giving no unit a
            weight above :data:`~textcause.validation.MAX_WEIGHT` (inside [0, 1] when ``clip`` is given).
        clip: if given, propensities are trimmed to ``[clip, 1 - clip]`` before weighting
            (``MIN_CLIP <= clip <= 0.5``); the number of changed units is ``n_clipped`` (also
            ``details['n_clipped']``). Never applied unless asked for.

    Returns:
        ``Estimate`` (method ``ipw``); details: ``mean_treated``, ``mean_control`` (the weighted arm
        means), ``n_clipped``, ``clip``, ``max_weight`` and Kish effective sample sizes
        ``ess_treated`` / ``ess_control``.

    Raises:
        ValueError: invalid inputs, outcomes beyond ``MAX_MAGNITUDE``, weights beyond ``MAX_WEIGHT``
            without ``clip`` (the message says to clip), or ``clip`` outside [MIN_CLIP, 0.5].

    Examples:
        >>> from textcause.estimators import ipw
        >>> t = [0, 1, 0, 1, 0, 1, 0, 1]
        >>> y = [0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
        >>> p = [0.2, 0.3, 0.4, 0.5, 0.5, 0.6, 0.7, 0.8]
        >>> ipw(t, y, p)
        Estimate(ipw: ATE +0.7576, n_used=8)
        >>> ipw(t, y, p, clip=0.25)
        Estimate(ipw: ATE +0.7600, n_used=8, n_clipped=2)
    """
    require_propensity(propensity, "ipw")
    n_clipped = 0
    if clip is None:
        t, y, p = prepare(t, y, propensity, owner="ipw", weights=True)
    else:
        clip = check_clip(clip, "ipw")
        t, y = prepare(t, y, owner="ipw", paired_with=(("propensity", propensity),))
        p, n_clipped = clipped_propensity(t, propensity, clip)
    # the column sums of ipw_columns and the weights' squares and largest value, block by block: each
    # unit's weight sits in its own arm's column
    acc = np.zeros(6)
    max_weight = 0.0
    for lo in blocks(t.size):
        tb, yb, pb = t[lo : lo + BLOCK], y[lo : lo + BLOCK], p[lo : lo + BLOCK]
        w1 = tb / pb
        w0 = (1 - tb) / (1.0 - pb)
        acc += (dot(w1, yb), w1.sum(), dot(w0, yb), w0.sum(), dot(w1, w1), dot(w0, w0))
        max_weight = max(max_weight, float(w1.max()), float(w0.max()))
    sums = acc[:4]
    ate, _ = ratio_difference(sums)
    return finite(
        Estimate(
            ate=float(ate[0]),
            method="ipw",
            n_used=int(t.size),
            n_clipped=n_clipped,
            details={
                "mean_treated": float(sums[0] / sums[1]),
                "mean_control": float(sums[2] / sums[3]),
                "n_clipped": n_clipped,
                "clip": clip,
                "max_weight": max_weight,
                "ess_treated": float(sums[1] ** 2 / acc[4]),
                "ess_control": float(sums[3] ** 2 / acc[5]),
            },
        )
    )


def aipw_psi(t: np.ndarray, y: np.ndarray, p: np.ndarray, mu0: np.ndarray, mu1: np.ndarray) -> np.ndarray:
    """Per-unit AIPW scores ``mu1 - mu0 + T (Y - mu1) / p - (1 - T)(Y - mu0) / (1 - p)``.

    Computed block by block (the same operations in the same order on each unit, so the same values as
    the whole-array expression), with the temporaries of a block in cache.
    """
    psi = np.empty(t.size)
    for lo in blocks(t.size):
        hi = lo + BLOCK
        tb, yb, pb, m0, m1 = t[lo:hi], y[lo:hi], p[lo:hi], mu0[lo:hi], mu1[lo:hi]
        psi[lo:hi] = m1 - m0 + tb * (yb - m1) / pb - (1 - tb) * (yb - m0) / (1.0 - pb)
    return psi


def sum_squares(x: np.ndarray, center: float) -> float:
    """``sum((x - center) ** 2)``, block by block (no temporary the size of ``x``)."""
    total = 0.0
    for lo in blocks(x.size):
        d = x[lo : lo + BLOCK] - center
        total += dot(d, d)
    return total


def aipw(
    t: Any, y: Any, propensity: Any, mu0: Any, mu1: Any, *, level: float = 0.95, clip: float | None = None
) -> Estimate:
    """Augmented IPW (doubly robust) estimate with its influence-function interval.

    ``ATE = mean(psi_i)`` with ``psi_i = mu1_i - mu0_i + T_i (Y_i - mu1_i) / p_i
    - (1 - T_i)(Y_i - mu0_i) / (1 - p_i)``. It is consistent when either the propensity model or
    the outcome model (``mu0``, ``mu1``) is right. The influence function of the estimator is
    ``psi_i - ATE``, so its standard error is ``se = std(psi, ddof=1) / sqrt(n)`` and the interval
    is the normal approximation ``ATE +/- z_{(1+level)/2} * se``.

    Args:
        t: binary treatment (0/1 or bool), both classes present.
        y: outcomes (binary or continuous).
        propensity: estimated P(T=1 | X), strictly inside (0, 1) and giving no unit a weight above
            :data:`~textcause.validation.MAX_WEIGHT` (inside [0, 1] when ``clip`` is given).
        mu0: predicted E[Y | T=0, X] per unit.
        mu1: predicted E[Y | T=1, X] per unit.
        level: coverage of the normal-approximation interval, in (0, 1).
        clip: if given, propensities are trimmed to ``[clip, 1 - clip]`` first (``MIN_CLIP <= clip <=
            0.5``), as in :func:`ipw`; the number of changed units is ``n_clipped``.

    Returns:
        ``Estimate`` (method ``aipw``) with ``ci_low``/``ci_high``; details: ``se``, ``level``,
        ``ci_method`` (:data:`~textcause.estimators.types.CI_INFLUENCE`), ``influence_ci_low`` /
        ``influence_ci_high`` (the same interval, kept when a bootstrap replaces ``ci_low``/``ci_high``),
        ``n_clipped``, ``clip``.

    Raises:
        ValueError: invalid inputs, outcomes or predictions beyond ``MAX_MAGNITUDE``, weights beyond
            ``MAX_WEIGHT`` without ``clip`` (the message says to clip), ``clip`` outside
            [MIN_CLIP, 0.5], or ``level`` outside (0, 1).

    Examples:
        >>> from textcause.estimators import aipw
        >>> t = [0, 1, 0, 1, 0, 1, 0, 1]
        >>> y = [0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
        >>> p = [0.2, 0.3, 0.4, 0.5, 0.5, 0.6, 0.7, 0.8]
        >>> mu0, mu1 = [0.3] * 8, [0.9] * 8
        >>> aipw(t, y, p, mu0, mu1)
        Estimate(aipw: ATE +0.7625 [+0.2843, +1.2407], n_used=8)
    """
    level = check_real(level, "level", "aipw", low=0.0, high=1.0, low_open=True, high_open=True)
    require_propensity(propensity, "aipw")
    n_clipped = 0
    if clip is None:
        t, y, p, mu0, mu1 = prepare(t, y, propensity, ("mu0", mu0), ("mu1", mu1), owner="aipw", weights=True)
    else:
        clip = check_clip(clip, "aipw")
        t, y, mu0, mu1 = prepare(
            t, y, None, ("mu0", mu0), ("mu1", mu1), owner="aipw", paired_with=(("propensity", propensity),)
        )
        p, n_clipped = clipped_propensity(t, propensity, clip)
    psi = aipw_psi(t, y, p, mu0, mu1)
    ate = float(psi.mean())
    se = float(np.sqrt(sum_squares(psi, ate) / (psi.size - 1)) / np.sqrt(psi.size)) if psi.size > 1 else 0.0
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    lo, hi = ate - z * se, ate + z * se
    return finite(
        Estimate(
            ate=ate,
            method="aipw",
            n_used=int(t.size),
            ci_low=lo,
            ci_high=hi,
            n_clipped=n_clipped,
            details={
                "se": se,
                "level": level,
                "ci_method": CI_INFLUENCE,
                "influence_ci_low": lo,
                "influence_ci_high": hi,
                "n_clipped": n_clipped,
                "clip": clip,
            },
        )
    )

"""How close estimated propensities are to the true ones (known in semi-synthetic tasks)."""

from __future__ import annotations

from typing import Any

import numpy as np

from textcause.estimators.stratification import tie_groups
from textcause.validation import check_consistent_length, check_probability, check_propensity, check_treatment

__all__ = [
    "propensity_brier",
    "iptw_weight_mse",
    "spearman",
    "spearman_ceiling",
    "rank_agreement",
]


def propensity_brier(propensity: Any, true_propensity: Any) -> float:
    """Mean squared difference between estimated and true propensity, ``mean((p_hat - p)^2)``.

    Lower is better. This is the average of the per-unit score S of appendix A.

    Raises:
        ValueError: values outside [0, 1], NaN, or different lengths.

    Examples:
        >>> from textcause.metrics import propensity_brier
        >>> round(propensity_brier([0.2, 0.6], [0.3, 0.5]), 6)
        0.01
    """
    p_hat = check_probability(propensity, "propensity")
    p = check_probability(true_propensity, "true_propensity")
    check_consistent_length(p_hat, p)
    return float(np.mean(np.square(p_hat - p)))


def _received_arm_probability(t: np.ndarray, propensity: np.ndarray) -> np.ndarray:
    """``p_T(X)``: the probability of the treatment each unit actually received."""
    return np.where(t == 1, propensity, 1.0 - propensity)


def iptw_weight_mse(t: Any, propensity: Any, true_propensity: Any) -> float:
    """Squared error of the normalised IPTW weights (Weld et al., appendix F.2).

    ``sum_i (w_hat_i - w_i)^2`` with ``w_i = (1 / p_Ti) / sum_j (1 / p_Tj)``, ``p_T`` the
    probability of the received arm, and ``w_hat`` the same with estimated propensities. The
    paper calls it a mean squared error but its formula is a SUM over units; it is implemented as
    written (divide by n for the mean). Lower is better. The normalised weights are at most 1, so
    the result lies in [0, 2] even for propensities so extreme that ``1 / p`` overflows.

    Args:
        t: observed binary treatment, both classes present.
        propensity: estimated P(T=1 | X), strictly inside (0, 1).
        true_propensity: true P(T=1 | X), strictly inside (0, 1).

    Raises:
        ValueError: invalid or inconsistent inputs.

    Examples:
        >>> from textcause.metrics import iptw_weight_mse
        >>> round(iptw_weight_mse([0, 1, 1], [0.5, 0.5, 0.8], [0.5, 0.5, 0.5]), 6)
        0.013605
    """
    t = check_treatment(t)
    p_hat = check_propensity(propensity, "propensity")
    p = check_propensity(true_propensity, "true_propensity")
    check_consistent_length(t, p_hat, p)
    w_hat = _normalised_inverse(_received_arm_probability(t, p_hat))
    w = _normalised_inverse(_received_arm_probability(t, p))
    return float(np.sum(np.square(w_hat - w)))


def _normalised_inverse(q: np.ndarray) -> np.ndarray:
    """``(1 / q_i) / sum_j (1 / q_j)`` for ``q`` in (0, 1], finite however small ``q`` is.

    Computed as written; when ``1 / q`` or its sum overflows float64 (``q`` below about 1e-308),
    as ``(min q / q_i) / sum_j (min q / q_j)``, the same number without the overflow.
    """
    with np.errstate(over="ignore", divide="ignore"):
        inv = 1.0 / q
        total = inv.sum()
    if not np.isfinite(total):
        inv = q.min() / q
        total = inv.sum()
    weights: np.ndarray = inv / total
    return weights


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks with ties given their mean rank (``scipy.stats.rankdata(method='average')``)."""
    order, starts, ends = tie_groups(x)
    ranks = np.empty(x.size)
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


def spearman(propensity: Any, true_propensity: Any) -> float:
    """Spearman rank correlation between estimated and true propensities, tie-aware.

    The Pearson correlation of the average ranks: equal to ``scipy.stats.spearmanr``. When either
    input is constant the correlation is undefined (scipy returns NaN); here it is **0.0**: a
    constant score carries no ranking information. Higher is better (1 = perfect ranking).

    Raises:
        ValueError: values outside [0, 1], NaN, or different lengths.

    Examples:
        >>> from textcause.metrics import spearman
        >>> spearman([0.1, 0.4, 0.3], [0.2, 0.5, 0.6])
        0.5
    """
    a = check_probability(propensity, "propensity")
    b = check_probability(true_propensity, "true_propensity")
    check_consistent_length(a, b)
    ra, rb = _average_ranks(a), _average_ranks(b)
    ra -= ra.mean()
    rb -= rb.mean()
    denom = np.sqrt(np.dot(ra, ra) * np.dot(rb, rb))
    if denom == 0.0:
        return 0.0
    return float(np.clip(np.dot(ra, rb) / denom, -1.0, 1.0))


def spearman_ceiling(true_propensity: Any) -> float:
    """The highest :func:`spearman` a score without ties can reach against ``true_propensity``.

    A true propensity with ties (the semi-synthetic tasks' takes two values, one per class) caps any
    tie-free ranking below 1: the best such ranking orders the units exactly as the truth does and
    breaks its ties arbitrarily, which gives ``sqrt(3 pi (1 - pi))`` for two values with shares
    ``pi`` and ``1 - pi`` (0.866 at equal shares). Only a score with the truth's own ties (the oracle)
    reaches 1. 0.0 for a constant truth.

    Raises:
        ValueError: values outside [0, 1] or NaN.
    """
    b = check_probability(true_propensity, "true_propensity")
    order = np.argsort(b, kind="stable")
    tie_free = np.empty(b.size)
    tie_free[order] = np.arange(1, b.size + 1, dtype=float)
    return spearman(tie_free / (b.size + 1), b)


def rank_agreement(propensity: Any, true_propensity: Any) -> float:
    """Somers' D of the estimated propensity given the true one: a tie-aware rank measure that reaches 1.

    Over the pairs of units whose true propensities differ, the share ordered the same way by the
    estimate minus the share ordered the other way (pairs the estimate ties count 0). Pairs the
    truth ties are left out, so a score that orders every pair of classes correctly gets **1** even
    without the truth's ties, where :func:`spearman` is capped at :func:`spearman_ceiling` (0.866 for
    the tasks' two-valued truth); -1 for the reverse order, 0 for a constant score or truth. Equal to
    ``scipy.stats.somersd(true_propensity, propensity).statistic``, computed in O(n log n) from
    Kendall's tau-b (``scipy.stats.kendalltau``): ``D = tau_b * sqrt((n0 - n_score) / (n0 - n_truth))``
    with ``n0`` all pairs and ``n_*`` the pairs each side ties.

    Raises:
        ValueError: values outside [0, 1], NaN, or different lengths.
    """
    from scipy.stats import kendalltau

    a = check_probability(propensity, "propensity")
    b = check_probability(true_propensity, "true_propensity")
    check_consistent_length(a, b)

    def tied_pairs(x: np.ndarray) -> float:
        _, counts = np.unique(x, return_counts=True)
        return float(np.sum(counts * (counts - 1.0)) / 2.0)

    n0 = a.size * (a.size - 1.0) / 2.0
    untied_truth, untied_score = n0 - tied_pairs(b), n0 - tied_pairs(a)
    if untied_truth <= 0 or untied_score <= 0:
        return 0.0
    tau = kendalltau(a, b).statistic
    return float(np.clip(tau * np.sqrt(untied_score / untied_truth), -1.0, 1.0))

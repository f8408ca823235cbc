"""How well a CFR stands in for the true counterfactual text: PIP, ATV, the concept's effect, TPR gaps.

Pure functions, numpy in, floats (or arrays) out. ``p`` arrays are (n, k) predicted class
probabilities of one classifier (rows sum to 1); predictions are their argmax.

* :func:`pip`: the proportion of identical predictions between the classifier on the true
  counterfactual text's representation and on the CFR (1 is best).
* :func:`atv`: the average total variation 0.5 * sum_c |p_true - p_cfr| (0 is best).
* :func:`concept_effect`: E[p(Z = 1) - p(Z = 0)] per class, each unit's own representation on its
  side and its counterfactual (text or CFR) on the other (the sign convention of every ATE here).
* :func:`tpr_gaps`: per class c, P(Yhat = c | Y = c, Z = 1) - P(Yhat = c | Y = c, Z = 0), the
  conditional true positive rate (never the joint P(Y = c, Yhat = c | Z));
* :func:`weighted_abs_gap`: the mean of |TPR gap| over classes weighted by each class's share of
  the units (Lemberger et al.'s aggregate for BiasInBios), beside the unweighted mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from textcause.validation import check_consistent_length


def _proba(p: Any, name: str) -> np.ndarray:
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] < 2:
        raise ValueError(
            f"'{name}' must be an (n, k) array of class probabilities with k >= 2. Got shape {arr.shape} instead."
        )
    if not np.isfinite(arr).all() or (arr < -1e-9).any() or not np.allclose(arr.sum(axis=1), 1.0, atol=1e-6):
        raise ValueError(f"'{name}' must hold finite probabilities in [0, 1] whose rows sum to 1.")
    return arr


def _pair(p_true: Any, p_cfr: Any) -> tuple[np.ndarray, np.ndarray]:
    a, b = _proba(p_true, "p_true"), _proba(p_cfr, "p_cfr")
    check_consistent_length(a, b)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"'p_true' and 'p_cfr' must have the same classes. Got {a.shape[1]} and {b.shape[1]} columns.")
    return a, b


def identical_predictions(p_true: Any, p_cfr: Any) -> np.ndarray:
    """Per unit, 1.0 where the argmax predictions agree (the terms of :func:`pip`)."""
    a, b = _pair(p_true, p_cfr)
    return (a.argmax(axis=1) == b.argmax(axis=1)).astype(np.float64)


def total_variation(p_true: Any, p_cfr: Any) -> np.ndarray:
    """Per unit, the total variation distance 0.5 * sum_c |p_true - p_cfr| (the terms of :func:`atv`)."""
    a, b = _pair(p_true, p_cfr)
    return 0.5 * np.abs(a - b).sum(axis=1)


def pip(p_true: Any, p_cfr: Any) -> float:
    """The proportion of identical predictions (PIP) in [0, 1]; 1: the CFR always predicts like the true text."""
    return float(identical_predictions(p_true, p_cfr).mean())


def atv(p_true: Any, p_cfr: Any) -> float:
    """The average total variation (ATV) in [0, 1]; 0: the CFR gives the true text's probabilities."""
    return float(total_variation(p_true, p_cfr).mean())


def concept_effect(p_original: Any, p_counterfactual: Any, z: Any) -> np.ndarray:
    """E[p(Z = 1) - p(Z = 0)] per class (k,), the effect of the concept on the predicted probabilities.

    A unit with Z = 1 has p(Z = 1) = ``p_original`` and p(Z = 0) = ``p_counterfactual``; a unit with
    Z = 0 the other way round.
    """
    a, b = _pair(p_original, p_counterfactual)
    z = np.asarray(z)
    check_consistent_length(a, z)
    if not np.isin(z, (0, 1)).all():
        raise ValueError("'z' must hold 0 / 1 concept values.")
    sign = np.where(z == 1, 1.0, -1.0)[:, None]
    return (sign * (a - b)).mean(axis=0)


def tpr_gaps(y_true: Any, y_pred: Any, z: Any, classes: Sequence[Any]) -> dict[Any, float]:
    """Per class c: P(Yhat = c | Y = c, Z = 1) - P(Yhat = c | Y = c, Z = 0); NaN where a group has no unit of class c.

    Raises:
        ValueError: lengths differ, or ``z`` is not 0 / 1.
    """
    y_true, y_pred, z = np.asarray(y_true), np.asarray(y_pred), np.asarray(z)
    check_consistent_length(y_true, y_pred, z)
    if not np.isin(z, (0, 1)).all():
        raise ValueError("'z' must hold 0 / 1 concept values.")
    out = {}
    for c in classes:
        rates = []
        for v in (1, 0):
            rows = (y_true == c) & (z == v)
            rates.append(float((y_pred[rows] == c).mean()) if rows.any() else float("nan"))
        out[c] = rates[0] - rates[1]
    return out


def weighted_abs_gap(gaps: Mapping[Any, float], y_true: Any) -> float:
    """sum_c |gap_c| n_c / sum_c n_c: |TPR gap| weighted by the class's count n_c among ``y_true``.

    Lemberger et al. (2024) aggregate BiasInBios's TPR gaps this way (``CFRs_biasbios.ipynb``, the
    test set's class counts). Classes whose gap is NaN (a concept group without the class) are left
    out and the weights of the others renormalised; NaN when no class has a finite gap.

    Examples:
        >>> weighted_abs_gap({"a": 0.2, "b": -0.1}, ["a", "b", "b", "b"])
        0.125
    """
    labels = np.asarray(y_true)
    terms = [(abs(g), float((labels == c).sum())) for c, g in gaps.items() if np.isfinite(g)]
    weight = sum(n for _, n in terms)
    if not terms or weight == 0:
        return float("nan")
    return float(sum(g * n for g, n in terms) / weight)


def bootstrap_mean(values: Any, rng: np.random.Generator, n_boot: int, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of the mean of per-unit ``values`` (NaN, NaN when ``n_boot`` is 0)."""
    v = np.asarray(values, dtype=np.float64)
    if n_boot <= 0 or v.size == 0:
        return float("nan"), float("nan")
    idx = rng.integers(0, v.size, size=(n_boot, v.size))
    means = v[idx].mean(axis=1)
    alpha = (1 - level) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))

"""How well a propensity model predicts the observed treatment: accuracy, Brier score, ECE."""

from __future__ import annotations

from typing import Any

import numpy as np

from textcause.validation import check_consistent_length, check_int, check_probability, check_real, check_treatment

__all__ = [
    "MAX_BINS",
    "treatment_accuracy",
    "brier_score",
    "expected_calibration_error",
    "accuracy_interval",
]

#: The most bins :func:`expected_calibration_error` takes (its tables are ``n_bins + 1`` long).
MAX_BINS = 1_000_000


def _inputs(t: Any, propensity: Any) -> tuple[np.ndarray, np.ndarray]:
    t = check_treatment(t)
    p = check_probability(propensity)
    check_consistent_length(t, p)
    return t, p


def treatment_accuracy(t: Any, propensity: Any, threshold: float = 0.5) -> float:
    """Share of units whose predicted treatment ``propensity > threshold`` equals ``t``.

    The strict ``>`` is torchmetrics' ``BinaryAccuracy`` rule (a propensity of exactly 0.5 predicts 0).

    Args:
        t: observed binary treatment, both classes present.
        propensity: estimated P(T=1 | X) in [0, 1].
        threshold: decision threshold in [0, 1].

    Returns:
        Accuracy in [0, 1] (higher is better).

    Raises:
        ValueError: invalid inputs or threshold.

    Examples:
        >>> from textcause.metrics import treatment_accuracy
        >>> treatment_accuracy([0, 1, 1, 0], [0.2, 0.9, 0.4, 0.6])
        0.5
    """
    threshold = check_real(threshold, "threshold", "treatment_accuracy", low=0.0, high=1.0)
    t, p = _inputs(t, propensity)
    return float(np.mean((p > threshold) == (t == 1)))


def brier_score(t: Any, propensity: Any) -> float:
    """Mean squared error of the propensity against the observed treatment, ``mean((p - t)^2)``.

    Equal to ``sklearn.metrics.brier_score_loss(t, propensity)``; lower is better. For the error
    against the true propensity see :func:`textcause.metrics.propensity_brier`.

    Raises:
        ValueError: invalid inputs.

    Examples:
        >>> from textcause.metrics import brier_score
        >>> round(brier_score([0, 1], [0.2, 0.6]), 6)
        0.1
    """
    t, p = _inputs(t, propensity)
    return float(np.mean(np.square(p - t)))


def expected_calibration_error(t: Any, propensity: Any, n_bins: int = 15) -> float:
    """Expected calibration error of the propensity, with ``n_bins`` equal-width bins.

    ``ECE = sum_k (n_k / n) |mean_k(t) - mean_k(p)| = sum_k |sum_{i in k} (t_i - p_i)| / n``, where
    unit i is in bin ``k`` with ``edge_k <= p_i < edge_{k+1}``, ``edges = linspace(0, 1, n_bins + 1)``
    and ``p_i = 1`` in a bin of its own: exactly torchmetrics' ``BinaryCalibrationError(n_bins,
    norm='l1')`` (which compares the positive-class probability with the label). Lower is better.

    Args:
        t: observed binary treatment, both classes present.
        propensity: estimated P(T=1 | X) in [0, 1].
        n_bins: number of equal-width bins, in ``[1, MAX_BINS]``.

    Raises:
        ValueError: invalid inputs or ``n_bins`` outside ``[1, MAX_BINS]``.

    Examples:
        >>> from textcause.metrics import expected_calibration_error
        >>> round(expected_calibration_error([0, 1, 1, 0], [0.1, 0.9, 0.6, 0.3], n_bins=2), 4)
        0.225
    """
    check_int(n_bins, "n_bins", "expected_calibration_error", low=1)
    n_bins = check_int(n_bins, "n_bins", "expected_calibration_error", low=1, high=MAX_BINS)
    t, p = _inputs(t, propensity)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    k = np.searchsorted(edges, p, side="right") - 1
    gap = np.bincount(k, weights=t - p, minlength=n_bins + 1)
    return float(np.abs(gap).sum() / p.size)


def accuracy_interval(
    t: np.ndarray, propensity: np.ndarray, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float] | tuple[None, None]:
    """Percentile bootstrap interval over units of the treatment accuracy (``propensity > 0.5`` vs ``t``).

    Returns ``(None, None)`` when ``n_boot`` is 0 (or negative) or there are no units. The treatment
    may hold one class (an accuracy is defined); it must be 0/1, the propensity finite in [0, 1].

    Raises:
        ValueError: invalid inputs or parameters.
    """
    owner = "accuracy_interval"
    n_boot = check_int(n_boot, "n_boot", owner)
    level = check_real(level, "level", owner, low=0.0, high=1.0, low_open=True, high_open=True)
    seed = check_int(seed, "seed", owner, low=0)
    if n_boot <= 0 or (np.size(t) == 0 and np.size(propensity) == 0):
        return None, None
    tt = check_treatment(t, both_classes=False)
    p = check_probability(propensity)
    check_consistent_length(tt, p)
    correct = ((p > 0.5) == (tt == 1)).astype(np.float64)
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    for b in range(n_boot):  # one replicate at a time: memory stays O(n)
        means[b] = correct[rng.integers(0, correct.size, correct.size)].mean()
    alpha = (1.0 - level) / 2.0
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1.0 - alpha))

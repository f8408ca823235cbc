"""Bias of an ATE estimate against the truth."""

from __future__ import annotations

from textcause.estimators.types import Estimate
from textcause.validation import check_real


def bias(estimate: Estimate | float, true_ate: float) -> float:
    """``estimate - true_ate`` (signed; 0 is best). Accepts an ``Estimate`` or a float.

    Raises:
        ValueError: a non-finite estimate or truth.
    """
    value = estimate.ate if isinstance(estimate, Estimate) else estimate
    value = check_real(value, "estimate", "bias")
    return value - check_real(true_ate, "true_ate", "bias")

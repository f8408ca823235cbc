"""Bias of an ATE estimate against the truth."""

from __future__ import annotations

import math

from textcause.estimators.types import Estimate
from textcause.validation import check_real

__all__ = [
    "bias",
]


def bias(estimate: Estimate | float, true_ate: float) -> float:
    """``estimate - true_ate`` (signed; 0 is best). Accepts an ``Estimate`` or a float.

    Raises:
        ValueError: a non-finite estimate or truth, or a difference that overflows float64.

    Examples:
        >>> from textcause.metrics import bias
        >>> round(bias(0.25, true_ate=0.2), 6)
        0.05
    """
    value = estimate.ate if isinstance(estimate, Estimate) else estimate
    value = check_real(value, "estimate", "bias")
    out = value - check_real(true_ate, "true_ate", "bias")
    if not math.isfinite(out):
        raise ValueError(
            f"The bias {value!r} - {true_ate!r} overflows float64: estimate and truth are too far apart to subtract."
        )
    return out

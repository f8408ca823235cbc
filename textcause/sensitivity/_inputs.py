"""Input checks shared by the sensitivity functions: per-unit arrays and scalar parameters.

Every check comes from :mod:`textcause.validation`, so a bad input gets the package's one-sentence
``ValueError`` before any arithmetic.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from textcause.validation import (
    as_bounded_float,
    check_consistent_length,
    check_paired,
    check_propensity,
    check_treatment,
)

__all__ = [
    "binary_outcome",
    "unit_arrays",
]


def unit_arrays(owner: str, t: Any, *named: tuple[str, Any]) -> tuple[np.ndarray, ...]:
    """``t`` (int8, both classes; skipped when None) and each ``(name, array)`` as a float64 array, all of
    one length and paired unit by unit; a name starting with ``propensity`` must lie strictly inside (0, 1).

    Raises:
        ValueError: a masked or misaligned input, a wrong shape, NaN, one treatment class, a
            propensity outside (0, 1), values beyond the package's magnitude limit, or arrays of
            different lengths.
    """
    check_paired(("t", t), *named)
    out = [] if t is None else [check_treatment(t, "t")]
    out.extend(
        check_propensity(a, name) if name.startswith("propensity") else as_bounded_float(a, name, owner)
        for name, a in named
    )
    check_consistent_length(*out)
    return tuple(out)


def binary_outcome(y: np.ndarray, owner: str) -> np.ndarray:
    """``y`` unchanged when every value is 0 or 1; else the one sentence that an E-value needs a binary outcome."""
    if not np.all((y == 0) | (y == 1)):
        shown = np.unique(y)[:5].tolist()
        raise ValueError(
            f"The outcome 'y' of {owner} must be binary (0/1) for an E-value, which is defined on the risk-ratio "
            f"scale. Got values {shown} instead."
        )
    return y


def covariate_numbers(X: Any, owner: str) -> np.ndarray:
    """``X`` as a float64 array (any shape); else the one sentence that covariates must be numbers."""
    try:
        return np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"The 'X' parameter of {owner} must be a 2-D array of numbers. Got {type(X).__name__} instead."
        ) from None

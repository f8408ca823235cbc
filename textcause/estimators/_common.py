"""Input coercion shared by the estimators, and the one place an effect's sign is decided."""

from __future__ import annotations

from typing import Any

import numpy as np

from textcause.validation import as_1d_float, check_consistent_length, check_propensity, check_treatment


def prepare(
    t: Any, y: Any, propensity: Any = None, *extra: tuple[str, Any]
) -> tuple[np.ndarray, ...]:
    """Validate and convert the per-unit inputs of an estimator.

    Args:
        t: binary treatment (0/1 or bool), both classes present.
        y: outcome, finite (binary or continuous).
        propensity: estimated P(T=1 | X), strictly inside (0, 1); None to skip.
        *extra: further ``(name, array)`` pairs of finite floats (e.g. outcome-model predictions).

    Returns:
        ``(t, y)`` or ``(t, y, propensity)`` followed by the extra arrays (t int8, the rest
        float64). Float arrays may share memory with the caller's: estimators only read them.

    Raises:
        ValueError: wrong shape, NaN, one treatment class, propensity outside (0, 1),
            or inputs of different lengths.
    """
    out = [check_treatment(t, "t"), as_1d_float(y, "y")]
    if propensity is not None:
        out.append(check_propensity(propensity, "propensity"))
    out.extend(as_1d_float(a, name) for name, a in extra)
    check_consistent_length(*out)
    return tuple(out)


def effect(mean_treated: Any, mean_control: Any) -> Any:
    """The ATE convention of the whole package: E[Y(1)] - E[Y(0)] (floats or arrays)."""
    return mean_treated - mean_control

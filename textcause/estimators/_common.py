"""Input coercion shared by the estimators, the one place an effect's sign is decided, and the final
guard that no estimate leaves an estimator non-finite."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from textcause.estimators.types import Estimate
from textcause.validation import (
    MAX_WEIGHT,
    as_bounded_float,
    check_consistent_length,
    check_paired,
    check_propensity,
    check_that,
    check_treatment,
    check_weights,
)

__all__ = [
    "BLOCK",
    "blocks",
    "dot",
    "prepare",
    "require_propensity",
    "effect",
    "finite",
]


#: Units per block of the estimators' blocked passes: a block's temporaries stay in the CPU cache, so a
#: pass over a million units reads its inputs once instead of writing and rereading a dozen temporaries.
BLOCK = 1 << 14


def blocks(n: int) -> range:
    """The start of each block of :data:`BLOCK` units out of ``n``."""
    return range(0, n, BLOCK)


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """``sum(a * b)`` in one pass without a temporary (einsum: no BLAS threads, so the result does not
    depend on the thread count, and no threads spin against other work on a busy machine)."""
    return float(np.einsum("i,i->", a, b))


def prepare(
    t: Any,
    y: Any,
    propensity: Any = None,
    *extra: tuple[str, Any],
    owner: str = "the estimator",
    paired_with: tuple[tuple[str, Any], ...] = (),
    weights: bool = False,
) -> tuple[np.ndarray, ...]:
    """Validate and convert the per-unit inputs of an estimator.

    Every input first passes :func:`~textcause.validation.check_paired`: masked arrays with masked
    values and pandas objects with different indexes are refused, never read by position.

    Args:
        t: binary treatment (0/1 or bool), both classes present.
        y: outcome, finite (binary or continuous), magnitude at most
            :data:`~textcause.validation.MAX_MAGNITUDE`.
        propensity: estimated P(T=1 | X), strictly inside (0, 1); None to skip.
        *extra: further ``(name, array)`` pairs of finite floats (e.g. outcome-model predictions),
            magnitude at most ``MAX_MAGNITUDE``.
        owner: the estimator's name, for messages.
        paired_with: further ``(name, input)`` pairs that are checked for pairing only (not
            converted; e.g. a propensity the caller clips itself).
        weights: also refuse propensities whose inverse-probability weights exceed
            :data:`~textcause.validation.MAX_WEIGHT` (:func:`~textcause.validation.check_weights`).

    Returns:
        ``(t, y)`` or ``(t, y, propensity)`` followed by the extra arrays (t int8, the rest
        float64). Float arrays may share memory with the caller's: estimators only read them.

    Raises:
        ValueError: wrong shape, NaN, one treatment class, propensity outside (0, 1), outcomes
            so large that sums overflow, inputs of different lengths, masked inputs, or pandas
            inputs with different indexes; with ``weights``, weights beyond ``MAX_WEIGHT``.
    """
    check_paired(("t", t), ("y", y), ("propensity", propensity), *extra, *paired_with)
    out = [check_treatment(t, "t"), as_bounded_float(y, "y", owner)]
    weights_ok = False
    if propensity is not None:
        weights_ok = weights and _weights_within(propensity)
        out.append(propensity if weights_ok else check_propensity(propensity, "propensity"))
    out.extend(as_bounded_float(a, name, owner) for name, a in extra)
    check_consistent_length(*out)
    if weights and propensity is not None and not weights_ok:
        check_weights(out[0], out[2], owner)
    return tuple(out)


def _weights_within(p: Any) -> bool:
    """Whether ``p``, a plain non-empty 1-D float64 array, lies inside ``[1 / MAX_WEIGHT, 1 - 1 / MAX_WEIGHT]``
    (two passes): then it passes both ``check_propensity`` and ``check_weights`` whatever the treatment, and
    neither needs to read it again. False sends ``p`` through both checks (and their messages)."""
    if not (type(p) is np.ndarray and p.dtype == np.float64 and p.ndim == 1 and p.size):
        return False
    return bool(p.min() >= 1.0 / MAX_WEIGHT and p.max() <= 1.0 - 1.0 / MAX_WEIGHT)


def require_propensity(propensity: Any, owner: str) -> None:
    """Refuse a missing propensity in one sentence (instead of a failed unpacking deep inside)."""
    check_that(propensity is not None, propensity, "propensity", owner, "an array of estimated propensities P(T=1 | X)")


def effect(mean_treated: Any, mean_control: Any) -> Any:
    """The ATE convention of the whole package: E[Y(1)] - E[Y(0)] (floats or arrays)."""
    return mean_treated - mean_control


def finite(est: Estimate) -> Estimate:
    """Return ``est`` if its ATE, interval and float diagnostics are finite; raise otherwise.

    The entry checks (outcome magnitude, weight ceiling) keep every estimate finite; this guard makes
    sure a non-finite number can never leave an estimator, whatever path produced it.

    Raises:
        ValueError: a non-finite value, named with its field.
    """
    values = {"ate": est.ate, "ci_low": est.ci_low, "ci_high": est.ci_high}
    values.update({k: v for k, v in est.details.items() if isinstance(v, float)})
    for key, value in values.items():
        if value is not None and not math.isfinite(value):
            raise ValueError(
                f"The {key} of {est.method} is {value!r}, not a finite number: the inputs overflow float64 "
                "arithmetic; rescale the outcomes or clip the propensities."
            )
    return est

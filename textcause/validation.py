"""Input checks shared by every public function.

Each check raises ``ValueError`` with one sentence in scikit-learn's wording, so a user sees what is
wrong and what to do, never a traceback from deep inside numpy or a NaN.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, Iterable

import numpy as np


def check_consistent_length(*arrays: Any) -> int:
    """Return the common length of ``arrays``; raise if they differ."""
    lengths = [len(a) for a in arrays if a is not None]
    if len(set(lengths)) > 1:
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: {lengths}"
        )
    return lengths[0] if lengths else 0


def as_1d_float(x: Any, name: str) -> np.ndarray:
    """Convert ``x`` to a finite 1-D float64 array."""
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"Expected '{name}' to be a 1-D array. Got an array with shape {arr.shape} instead.")
    if arr.size == 0:
        raise ValueError(f"'{name}' is empty: at least one unit is needed.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"'{name}' contains NaN or infinite values.")
    return arr


def check_treatment(t: Any, name: str = "t") -> np.ndarray:
    """Return ``t`` as an int8 0/1 array with both classes present."""
    arr = np.asarray(t)
    if arr.ndim != 1:
        raise ValueError(f"Expected '{name}' to be a 1-D array. Got an array with shape {arr.shape} instead.")
    if arr.size == 0:
        raise ValueError(f"'{name}' is empty: at least one unit is needed.")
    if arr.dtype == bool:
        arr = arr.astype(np.int8)
    values = np.unique(arr)
    if not np.all(np.isin(values, (0, 1))):
        shown = values[:5].tolist()
        raise ValueError(f"The treatment '{name}' must be binary (0/1). Got values {shown} instead.")
    if values.size < 2:
        raise ValueError(
            f"The treatment '{name}' has only one class ({int(values[0])}): an effect needs treated and untreated units."
        )
    return arr.astype(np.int8)


def check_propensity(p: Any, name: str = "propensity") -> np.ndarray:
    """Return ``p`` as float64, strictly inside (0, 1) and finite."""
    arr = as_1d_float(p, name)
    bad = (arr <= 0.0) | (arr >= 1.0)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"The '{name}' values must lie strictly between 0 and 1. Got {float(arr[i])!r} at index {i} "
            f"({int(bad.sum())} values out of range)."
        )
    return arr


def check_probability(p: Any, name: str = "propensity") -> np.ndarray:
    """Return ``p`` as float64 inside the closed interval [0, 1] (for metrics, not weights)."""
    arr = as_1d_float(p, name)
    bad = (arr < 0.0) | (arr > 1.0)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"The '{name}' values must lie in [0, 1]. Got {float(arr[i])!r} at index {i}.")
    return arr


def check_int(value: Any, name: str, owner: str, *, low: int | None = None, high: int | None = None) -> int:
    """Check an integer parameter of ``owner`` against an inclusive range."""
    ok = isinstance(value, Integral) and not isinstance(value, bool)
    if ok and low is not None and value < low:
        ok = False
    if ok and high is not None and value > high:
        ok = False
    if not ok:
        rng = _range_text(low, high)
        raise ValueError(f"The '{name}' parameter of {owner} must be an int {rng}. Got {value!r} instead.")
    return int(value)


def check_real(
    value: Any,
    name: str,
    owner: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Check a real parameter of ``owner`` against a range (closed unless ``*_open``)."""
    ok = isinstance(value, Real) and not isinstance(value, bool) and np.isfinite(value)
    if ok and low is not None and (value < low or (low_open and value == low)):
        ok = False
    if ok and high is not None and (value > high or (high_open and value == high)):
        ok = False
    if not ok:
        parts = []
        if low is not None:
            parts.append(f"{'>' if low_open else '>='} {low}")
        if high is not None:
            parts.append(f"{'<' if high_open else '<='} {high}")
        rng = " and ".join(parts) if parts else "that is finite"
        raise ValueError(f"The '{name}' parameter of {owner} must be a float {rng}. Got {value!r} instead.")
    return float(value)


def check_options(value: Any, name: str, owner: str, options: Iterable[Any]) -> Any:
    """Check that ``value`` is one of ``options`` (scikit-learn's ``StrOptions``, with any values).

    Every "must be one of" message of the package comes from here:
    "The 'scale' parameter of DataSettings must be one of [None, 'maxabs', 'log1p']. Got 'x' instead."
    """
    allowed = list(options)
    try:
        ok = value in allowed
    except TypeError:  # an unhashable or incomparable value
        ok = False
    if not ok or isinstance(value, bool) != any(isinstance(o, bool) and o == value for o in allowed):
        raise ValueError(f"The '{name}' parameter of {owner} must be one of {allowed}. Got {value!r} instead.")
    return value


def check_subset(values: Any, name: str, owner: str, options: Iterable[Any]) -> tuple[Any, ...]:
    """Check that ``values`` is a non-empty list of distinct members of ``options``; return it as a tuple."""
    allowed = list(options)
    items = [values] if isinstance(values, str) else values
    if (not isinstance(items, (list, tuple)) or not items or len(set(map(repr, items))) != len(items)
            or not all(_member(v, allowed) for v in items)):
        raise ValueError(
            f"The '{name}' parameter of {owner} must be a non-empty list of distinct values among {allowed}. "
            f"Got {values!r} instead."
        )
    return tuple(items)


def _member(value: Any, allowed: list[Any]) -> bool:
    try:
        return value in allowed and not isinstance(value, bool)
    except TypeError:
        return False


def _range_text(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"in the range [{low}, {high}]"
    if low is not None:
        return f">= {low}"
    if high is not None:
        return f"<= {high}"
    return ""

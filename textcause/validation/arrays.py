"""Checks of per-unit arrays: treatment, propensity, outcome and weight inputs of the estimators.

Each check raises ``ValueError`` with one sentence that says which input is wrong and what to do; a
masked array with masked values, or pandas objects paired by position instead of label, are refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "MAX_WEIGHT",
    "MAX_MAGNITUDE",
    "check_consistent_length",
    "check_paired",
    "as_1d_float",
    "as_bounded_float",
    "check_weights",
    "check_treatment",
    "check_propensity",
    "check_probability",
]

#: The largest inverse-probability weight a weighting estimator or metric accepts: the propensity of
#: the arm a unit received must be at least ``1 / MAX_WEIGHT``. Beyond it weights overflow float64 or
#: one unit decides the estimate (AIPW gave an ATE of -9e14 from a propensity of 1 - 1e-16); clip
#: such propensities explicitly (the estimators' ``clip=``).
MAX_WEIGHT = 1e8
#: The largest magnitude of an outcome (or outcome prediction) the estimators accept: far beyond any
#: real outcome, and small enough that weighted sums, squares and differences stay finite in float64.
MAX_MAGNITUDE = 1e100

#: dtype kinds that hold numbers as numbers (bool, signed, unsigned, float).
_NUMERIC = "biuf"
#: The closed interval of float64 values strictly between 0 and 1.
_ABOVE_ZERO, _BELOW_ONE = float(np.nextafter(0.0, 1.0)), float(np.nextafter(1.0, 0.0))


def check_consistent_length(*arrays: Any) -> int:
    """Return the common length of ``arrays``; raise if they differ.

    Examples:
        >>> from textcause.validation import check_consistent_length
        >>> check_consistent_length([1, 2], [3, 4])
        2
        >>> check_consistent_length([1, 2], [3])
        Traceback (most recent call last):
            ...
        ValueError: Found input variables with inconsistent numbers of samples: [2, 1]
    """
    lengths = [len(a) for a in arrays if a is not None]
    if len(set(lengths)) > 1:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: {lengths}")
    return lengths[0] if lengths else 0


def _what(x: Any) -> str:
    """A short description of a value for a message: its type and dtype, never its contents."""
    dtype = getattr(x, "dtype", None)
    return f"a {type(x).__name__}" + (f" of dtype {dtype}" if dtype is not None else "")


def _check_unmasked(x: Any, name: str) -> None:
    """Refuse a numpy masked array with masked values.

    ``np.asarray`` drops a mask, so the masked units would silently count as data; a masked array
    whose mask hides nothing is a plain array.
    """
    if isinstance(x, np.ma.MaskedArray):
        n = int(np.count_nonzero(np.ma.getmaskarray(x)))
        if n:
            raise ValueError(
                f"'{name}' is a masked array with {n} masked value{'s' if n != 1 else ''}: the mask would be "
                f"dropped and the masked units counted, so drop the masked units from every input first (e.g. "
                f"keep = ~np.ma.getmaskarray({name}))."
            )


def _pandas_index(x: Any) -> Any:
    """The index of a pandas Series or DataFrame, else None (pandas is never imported here)."""
    if type(x).__module__.split(".")[0] == "pandas" and hasattr(x, "index") and hasattr(x.index, "equals"):
        return x.index
    return None


def check_paired(*named: tuple[str, Any]) -> None:
    """The one rule for per-unit inputs given together: unit ``i`` of each is the same unit.

    Every estimator applies it before converting its inputs: a masked array with masked values is
    refused (:func:`_check_unmasked`), and so are pandas objects whose indexes differ (numpy would
    pair them by position, not by label). Pandas objects with equal indexes, or one pandas object
    beside plain arrays, are paired by position as before. ``None`` entries are skipped.

    Raises:
        ValueError: a masked input, or two pandas inputs with different indexes (naming both).
    """
    first: tuple[str, Any] | None = None
    for name, x in named:
        if x is None:
            continue
        _check_unmasked(x, name)
        index = _pandas_index(x)
        if index is None:
            continue
        if first is None:
            first = (name, index)
        elif not first[1].equals(index):
            raise ValueError(
                f"'{first[0]}' and '{name}' are pandas objects with different indexes: they would be paired by "
                f"position, not by label, so align them first (e.g. {name} = {name}.reindex({first[0]}.index)) or "
                "pass arrays in one order."
            )


def _one_dimensional(arr: np.ndarray, name: str) -> np.ndarray:
    """``arr`` unchanged when it is 1-D and not empty; else the sentence that says which."""
    if arr.ndim != 1:
        raise ValueError(f"Expected '{name}' to be a 1-D array. Got an array with shape {arr.shape} instead.")
    if arr.size == 0:
        raise ValueError(f"'{name}' is empty: at least one unit is needed.")
    return arr


def _to_1d_float(x: Any, name: str) -> np.ndarray:
    """``x`` as a non-empty 1-D float64 array (its values not yet checked; a masked array refused)."""
    _check_unmasked(x, name)
    try:
        raw = np.asarray(x)
        if raw.dtype.kind not in _NUMERIC + "OUS":
            raise TypeError
        arr = raw.astype(np.float64, copy=False)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"Expected '{name}' to be a 1-D array of real numbers. Got {_what(x)} instead.") from None
    return _one_dimensional(arr, name)


def _all_within(arr: np.ndarray, low: float, high: float) -> bool:
    """Whether every value of the non-empty float array lies in [low, high], which also means that
    none is NaN or infinite (a NaN makes the minimum NaN): two passes, no temporary arrays."""
    return bool(low <= arr.min() and arr.max() <= high)


def _check_finite(arr: np.ndarray, name: str) -> None:
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"'{name}' contains NaN or infinite values.")


def as_1d_float(x: Any, name: str) -> np.ndarray:
    """Convert ``x`` to a finite 1-D float64 array.

    Numbers (bool, int, float, or strings of numbers) are converted; complex numbers, dates and
    anything that is not an array of numbers are refused, never silently cast.
    """
    arr = _to_1d_float(x, name)
    _check_finite(arr, name)
    return arr


def as_bounded_float(x: Any, name: str, owner: str) -> np.ndarray:
    """:func:`as_1d_float` then :func:`_check_magnitude` (the same errors, in the same order), in two
    passes over the values without temporaries when every value is finite and within bounds."""
    arr = _to_1d_float(x, name)
    if _all_within(arr, -MAX_MAGNITUDE, MAX_MAGNITUDE):
        return arr
    _check_finite(arr, name)
    return _check_magnitude(arr, name, owner)


def _check_magnitude(arr: np.ndarray, name: str, owner: str) -> np.ndarray:
    """Refuse values of ``arr`` (finite floats) whose magnitude exceeds :data:`MAX_MAGNITUDE`.

    Such values would overflow the weighted sums, squares or differences of an estimate to inf or
    NaN; the estimators are equivariant to rescaling, so rescaling the outcome loses nothing.
    """
    if arr.size and arr.min() >= -MAX_MAGNITUDE and arr.max() <= MAX_MAGNITUDE:  # two passes, no temporaries
        return arr
    big = np.abs(arr) > MAX_MAGNITUDE
    if np.any(big):
        i = int(np.flatnonzero(big)[0])
        raise ValueError(
            f"The '{name}' values of {owner} must have magnitude <= {MAX_MAGNITUDE:.0e}, or its sums and "
            f"squares overflow float64. Got {float(arr[i])!r} at index {i}: rescale '{name}' (e.g. to "
            "standard units) first."
        )
    return arr


def check_weights(
    t: np.ndarray, p: np.ndarray, owner: str, name: str = "propensity", hint: str | None = None
) -> np.ndarray:
    """Refuse propensities whose inverse-probability weights exceed :data:`MAX_WEIGHT`.

    ``t`` and ``p`` are validated arrays; a unit's weight is one over the probability of the arm it
    received (``p`` for treated units, ``1 - p`` for untreated ones): a treated unit needs
    ``p >= 1 / MAX_WEIGHT``, an untreated one ``p <= 1 - 1 / MAX_WEIGHT``.

    Args:
        hint: what to do, ending the message (default: clip with ``owner``'s ``clip=`` option).
    """
    lowest, highest = 1.0 / MAX_WEIGHT, 1.0 - 1.0 / MAX_WEIGHT
    if p.size and lowest <= p.min() and p.max() <= highest:  # the usual case: two passes, no temporaries
        return p
    low = np.where(t == 1, p < lowest, p > highest)
    if np.any(low):
        i = int(np.flatnonzero(low)[0])
        arm = "treated" if t[i] == 1 else "untreated"
        hint = hint or (
            f"clip the propensities explicitly with {owner}(..., clip=0.01) (the clipped units are "
            "counted in n_clipped), or drop the units without overlap"
        )
        count = int(low.sum())
        raise ValueError(
            f"The '{name}' values of {owner} give {count} unit{'s' if count > 1 else ''} an inverse-probability "
            f"weight above {MAX_WEIGHT:.0e} (unit {i}, {arm}, has {name} {float(p[i])!r}), so the weights overflow "
            f"or let a few units decide the estimate: {hint}."
        )
    return p


def check_treatment(t: Any, name: str = "t", *, both_classes: bool = True) -> np.ndarray:
    """Return ``t`` as an int8 0/1 array (with both classes present unless ``both_classes`` is False).

    Examples:
        >>> from textcause.validation import check_treatment
        >>> check_treatment([0, 1, True])
        array([0, 1, 1], dtype=int8)
        >>> check_treatment([1, 1])
        Traceback (most recent call last):
            ...
        ValueError: The treatment 't' has only one class (1): an effect needs treated and untreated units.
    """
    _check_unmasked(t, name)
    try:
        arr = np.asarray(t)
        if arr.dtype.kind == "O":
            arr = arr.astype(np.float64)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"The treatment '{name}' must be a 1-D array of 0/1 values. Got {_what(t)} instead.") from None
    _one_dimensional(arr, name)
    if arr.dtype.kind not in _NUMERIC:
        raise ValueError(f"The treatment '{name}' must be binary (0/1). Got an array of dtype {arr.dtype} instead.")
    if arr.dtype == bool:
        arr = arr.astype(np.int8)
    n_treated = _count_treated(arr)  # O(n), no sort: the usual case
    if n_treated is not None and (0 < n_treated < arr.size or not both_classes):
        return arr.astype(np.int8)
    values = np.unique(arr)
    if not np.all(np.isin(values, (0, 1))):
        shown = values[:5].tolist()
        raise ValueError(f"The treatment '{name}' must be binary (0/1). Got values {shown} instead.")
    if both_classes and values.size < 2:
        raise ValueError(
            f"The treatment '{name}' has only one class ({int(values[0])}): an effect needs treated and untreated units."
        )
    return arr.astype(np.int8)


def _count_treated(arr: np.ndarray) -> int | None:
    """The number of ones if every value of the numeric array ``arr`` is 0 or 1, else None (one or two passes)."""
    if arr.dtype.kind in "iu":  # as unsigned, a negative value is huge: one max finds any value outside {0, 1}
        if arr.view(f"u{arr.itemsize}").max() > 1:
            return None
        return int(np.count_nonzero(arr))
    ones = int(np.count_nonzero(arr == 1))
    return ones if ones + int(np.count_nonzero(arr == 0)) == arr.size else None


def check_propensity(p: Any, name: str = "propensity") -> np.ndarray:
    """Return ``p`` as float64, strictly inside (0, 1) and finite.

    Examples:
        >>> from textcause.validation import check_propensity
        >>> check_propensity([0.2, 0.9])
        array([0.2, 0.9])
        >>> check_propensity([0.2, 1.0])
        Traceback (most recent call last):
            ...
        ValueError: The 'propensity' values must lie strictly between 0 and 1. Got 1.0 at index 1 (1 values out of range).
    """
    arr = _to_1d_float(p, name)
    if _all_within(arr, _ABOVE_ZERO, _BELOW_ONE):  # the usual case: two passes, no temporaries
        return arr
    _check_finite(arr, name)
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
    arr = _to_1d_float(p, name)
    if _all_within(arr, 0.0, 1.0):  # the usual case: two passes, no temporaries
        return arr
    _check_finite(arr, name)
    bad = (arr < 0.0) | (arr > 1.0)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"The '{name}' values must lie in [0, 1]. Got {float(arr[i])!r} at index {i}.")
    return arr

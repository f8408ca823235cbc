"""Checks of scalar parameters and config keys: the one "must be ..." sentence of the package.

With ``owner`` None a check names a key of a YAML spec instead ("'evaluation.n_boot' must be an int
>= 0. Got -1 instead."), and :mod:`textcause.specs` prefixes the file.
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral, Real
from typing import Any, TypeVar

import numpy as np

__all__ = ["check_int", "check_real", "check_options", "check_subset", "check_that"]

_T = TypeVar("_T")


def check_int(value: Any, name: str, owner: str | None, *, low: int | None = None, high: int | None = None) -> int:
    """Check an integer parameter of ``owner`` against an inclusive range (``owner`` None: a config key ``name``).

    Examples:
        >>> from textcause.validation import check_int
        >>> check_int(3, "n_strata", "stratified", low=2)
        3
        >>> check_int(0, "n_strata", "stratified", low=2)
        Traceback (most recent call last):
            ...
        ValueError: The 'n_strata' parameter of stratified must be an int >= 2. Got 0 instead.
    """
    ok = isinstance(value, Integral) and not isinstance(value, bool)
    if ok and low is not None and value < low:
        ok = False
    if ok and high is not None and value > high:
        ok = False
    if not ok:
        rng = _range_text(low, high)
        raise ValueError(f"{_subject(name, owner)} must be an int {rng}. Got {value!r} instead.")
    return int(value)


def check_real(
    value: Any,
    name: str,
    owner: str | None,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Check a real parameter of ``owner`` against a range (closed unless ``*_open``).

    Examples:
        >>> from textcause.validation import check_real
        >>> check_real(0.5, "level", "bootstrap_ci", low=0.0, high=1.0, low_open=True, high_open=True)
        0.5
        >>> check_real(1.0, "level", "bootstrap_ci", low=0.0, high=1.0, low_open=True, high_open=True)
        Traceback (most recent call last):
            ...
        ValueError: The 'level' parameter of bootstrap_ci must be a float > 0.0 and < 1.0. Got 1.0 instead.
    """
    ok = isinstance(value, Real) and not isinstance(value, bool) and _finite_real(value)
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
        raise ValueError(f"{_subject(name, owner)} must be a float {rng}. Got {value!r} instead.")
    return float(value)


def check_options(value: Any, name: str, owner: str | None, options: Iterable[Any]) -> Any:
    """Check that ``value`` is one of ``options`` (scikit-learn's ``StrOptions``, with any values).

    Every "must be one of" message of the package comes from here:
    "The 'scale' parameter of DataSettings must be one of [None, 'maxabs', 'log1p']. Got 'x' instead."

    Examples:
        >>> from textcause.validation import check_options
        >>> check_options("ipw", "estimator", "f", ["ipw", "aipw"])
        'ipw'
        >>> check_options("ols", "estimator", "f", ["ipw", "aipw"])
        Traceback (most recent call last):
            ...
        ValueError: The 'estimator' parameter of f must be one of ['ipw', 'aipw']. Got 'ols' instead.
    """
    allowed = list(options)
    try:
        ok = value in allowed
    except TypeError:  # an unhashable or incomparable value
        ok = False
    if not ok or isinstance(value, bool) != any(isinstance(o, bool) and o == value for o in allowed):
        raise ValueError(f"{_subject(name, owner)} must be one of {allowed}. Got {value!r} instead.")
    return value


def check_subset(values: Any, name: str, owner: str | None, options: Iterable[Any]) -> tuple[Any, ...]:
    """Check that ``values`` is a non-empty list of distinct members of ``options``; return it as a tuple."""
    allowed = list(options)
    items = [values] if isinstance(values, str) else values
    if (
        not isinstance(items, (list, tuple))
        or not items
        or len(set(map(repr, items))) != len(items)
        or not all(_member(v, allowed) for v in items)
    ):
        raise ValueError(
            f"{_subject(name, owner)} must be a non-empty list of distinct values among {allowed}. "
            f"Got {values!r} instead."
        )
    return tuple(items)


def check_that(ok: bool, value: _T, name: str, owner: str | None, requirement: str) -> _T:
    """Raise unless ``ok``, saying what ``value`` must be: "The 'corpora' parameter of X must be {requirement}. Got [] instead."

    For rules that have no check of their own (a shape, a pattern); every message keeps the same template.

    Examples:
        >>> from textcause.validation import check_that
        >>> check_that(False, [], "corpora", "grid", "a non-empty list")
        Traceback (most recent call last):
            ...
        ValueError: The 'corpora' parameter of grid must be a non-empty list. Got [] instead.
    """
    if not ok:
        raise ValueError(f"{_subject(name, owner)} must be {requirement}. Got {value!r} instead.")
    return value


def _subject(name: str, owner: str | None) -> str:
    """The start of every message: "The 'n' parameter of owner", or "'n'" for a config key (owner None)."""
    return f"'{name}'" if owner is None else f"The '{name}' parameter of {owner}"


def _finite_real(value: Real) -> bool:
    """Whether a real number is finite as a float64 (an int too large for a float is not)."""
    try:
        return bool(np.isfinite(float(value)))
    except (OverflowError, ValueError, TypeError):
        return False


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

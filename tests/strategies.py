"""Hypothesis strategies shared by the property tests of the estimators and the metrics.

Random inputs mix ordinary values with the hostile ones of issue 14 (denormals, 1e308, NaN, inf,
propensities of 0, 1, 5e-324 and 1 - 1e-16), arrays of the wrong length, one treatment class and
inputs that are not arrays of numbers at all.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
from hypothesis import event
from hypothesis import strategies as st

T = TypeVar("T")

NON_FINITE = [float("nan"), float("inf"), float("-inf")]
#: How many units an input has.
sizes = st.integers(min_value=0, max_value=12)


def probabilities(hostile: Sequence[float]) -> st.SearchStrategy:
    """Propensity-like values: inside the weight limits, anywhere in [0, 1], or one of ``hostile``."""
    return st.sampled_from(["ordinary", "ordinary", "unit", "hostile"]).flatmap(
        lambda regime: {
            "ordinary": st.floats(min_value=1e-8, max_value=1 - 1e-8),
            "unit": st.floats(min_value=0.0, max_value=1.0, allow_subnormal=True),
            "hostile": st.sampled_from(hostile),
        }[regime]
    )


@st.composite
def per_unit(draw: st.DrawFn, n: int, elements: st.SearchStrategy, *, not_arrays: st.SearchStrategy) -> object:
    """Mostly ``n`` values of ``elements`` (a list or a float64 array); sometimes of another length,
    with a NaN or inf, or one of ``not_arrays``."""
    kind = draw(st.integers(min_value=0, max_value=19))
    if kind == 0:
        return draw(not_arrays)
    if kind == 1:
        n = draw(sizes)
    values = draw(st.lists(elements, min_size=n, max_size=n))
    if kind == 2 and values:
        values[draw(st.integers(0, len(values) - 1))] = draw(st.sampled_from(NON_FINITE))
    return np.asarray(values, dtype=np.float64) if draw(st.booleans()) else values


@st.composite
def treatments(
    draw: st.DrawFn,
    n: int,
    *,
    junk: st.SearchStrategy,
    orders: Sequence[list[int]] = ([0, 1],),
    dtypes: Sequence[type] = (np.int64, bool, np.float64),
) -> object:
    """Mostly ``n`` binary treatments of one of ``dtypes`` with both arms somewhere (next to each other,
    in one of ``orders``); sometimes one class only, or ``junk``."""
    kind = draw(st.integers(min_value=0, max_value=19))
    if kind == 0:
        return draw(junk)
    if kind == 1:
        return np.full(n, draw(st.integers(0, 1)))  # one class
    t = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    if n >= 2 and draw(st.integers(0, 3)):  # mostly both arms, somewhere
        i = draw(st.integers(0, n - 2))
        t[i : i + 2] = draw(st.sampled_from(list(orders)))
    return np.asarray(t, dtype=draw(st.sampled_from(list(dtypes))))


def finite_or_value_error(call: Callable[[], T], check: Callable[[T], None], label: str) -> T | None:
    """Run ``call``: it returns a value that passes ``check`` (an event ``label``), or raises a one-line
    ValueError (an event ``refused``: None). numpy's overflow and 0/0 warnings are errors here."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # an overflow or 0/0 inside is a bug too
        try:
            value = call()
        except ValueError as e:
            assert str(e) and "\n" not in str(e)
            event("refused")
            return None
    check(value)
    event(label)
    return value

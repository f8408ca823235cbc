"""Propensity-score stratification (Weld et al., section 6.2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from textcause.estimators._common import effect, finite, prepare, require_propensity
from textcause.estimators.types import Estimate
from textcause.validation import check_int, check_propensity

__all__ = [
    "MAX_STRATA",
    "tie_groups",
    "propensity_strata",
    "stratified",
    "stratified_replicates",
]

#: The most strata :func:`propensity_strata` forms: stratum arithmetic stays exact in int64 and the
#: per-stratum tables small.
MAX_STRATA = 1_000_000


def _check_n_strata(n_strata: Any, owner: str) -> int:
    """``n_strata`` as an int in ``[2, MAX_STRATA]`` (the low bound's message first, as always)."""
    check_int(n_strata, "n_strata", owner, low=2)
    return check_int(n_strata, "n_strata", owner, low=2, high=MAX_STRATA)


def tie_groups(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort order of ``values`` and the [start, end) positions of each run of equal values.

    Returns:
        ``(order, starts, ends)``: ``values[order]`` is sorted (ties in unspecified order: callers
        treat a run of ties as one group) and the g-th group of equal values occupies sorted
        positions ``starts[g]:ends[g]``.
    """
    order = np.argsort(values)
    return (order, *_runs(values[order]))


def _runs(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The [start, end) positions of each run of equal values of the sorted array ``s``."""
    change = np.flatnonzero(s[1:] != s[:-1]) + 1
    return np.concatenate(([0], change)), np.concatenate((change, [s.size]))


def _strata_of_positions(starts: np.ndarray, ends: np.ndarray, n: int, n_strata: int) -> np.ndarray:
    """Stratum of each tie group: ``floor(n_strata * (mean 0-based rank) / n)``, in exact integers.

    The mean 0-based rank of a group occupying sorted positions ``[start, end)`` is
    ``(start + end - 1) / 2``; the stratum is therefore ``(n_strata * (start + end - 1)) // (2 n)``.
    """
    strata: np.ndarray = (n_strata * (starts + ends - 1)) // (2 * n)
    return strata


def propensity_strata(propensity: Any, n_strata: int = 10) -> np.ndarray:
    """Equal-count strata by propensity percentile, tie-aware.

    Rule: unit i goes to stratum ``floor(n_strata * (r_i - 1) / n)`` where ``r_i`` is its average
    (tie-aware, 1-based) rank, as ``scipy.stats.rankdata(method='average')`` gives. Without ties
    every stratum holds ``n / n_strata`` units (+/- 1), the same as ``pd.qcut(p, n_strata)`` when
    ``n_strata`` divides ``n``. Tied propensities always share a stratum (a run of ties falls in the
    stratum of its mean rank), so some stratum numbers may be unused: a constant propensity gives
    a single stratum. Strata never depend on the order of the units.

    Args:
        propensity: estimated P(T=1 | X), strictly inside (0, 1).
        n_strata: number of percentile strata, in ``[2, MAX_STRATA]``.

    Returns:
        int64 array of stratum numbers in ``[0, n_strata)``, one per unit.

    Raises:
        ValueError: invalid propensity or ``n_strata`` outside ``[2, MAX_STRATA]``.
    """
    n_strata = _check_n_strata(n_strata, "propensity_strata")
    p = check_propensity(propensity)
    return _strata(p, n_strata)


def _strata(p: np.ndarray, n_strata: int) -> np.ndarray:
    """:func:`propensity_strata` of validated propensities.

    A run of ties takes the stratum of its mean rank, which is its positions' own stratum
    (``floor(n_strata * position / n)``, all equal) unless the run crosses a stratum boundary. So
    when no boundary falls inside a run (always without ties) the strata follow from the sorted
    positions alone; otherwise every run's stratum is computed from its mean rank.
    """
    n = p.size
    order = np.argsort(p)
    s = p[order]
    # the first sorted position of each stratum 1 .. n_strata - 1 (ceil(j n / n_strata)), inside [1, n)
    firsts = -(-np.arange(1, n_strata, dtype=np.int64) * n // n_strata)
    firsts = firsts[firsts < n]
    out = np.empty(n, dtype=np.int64)
    if not np.any(s[firsts - 1] == s[firsts]):
        out[order] = np.arange(n, dtype=np.int64) * n_strata // n
        return out
    starts, ends = _runs(s)
    out[order] = np.repeat(_strata_of_positions(starts, ends, n, n_strata), ends - starts)
    return out


def stratified(t: Any, y: Any, propensity: Any, *, n_strata: int = 10) -> Estimate:
    """Stratification on the propensity: ``ATE = sum_k n_k / n * ATE_k``.

    Units are cut into ``n_strata`` equal-count strata by propensity percentile (the tie-aware rank
    rule of :func:`propensity_strata`); ``ATE_k`` is the difference in means inside stratum k. A
    stratum without treated or without untreated units has no ``ATE_k``: it is dropped, its units
    are counted in ``n_dropped`` and its number listed in ``details['empty_strata']``, and the
    weights are renormalised over the kept strata (``n`` becomes the number of kept units).

    Args:
        t: binary treatment (0/1 or bool), both classes present.
        y: outcomes (binary or continuous).
        propensity: estimated P(T=1 | X), strictly inside (0, 1).
        n_strata: number of percentile strata, in ``[2, MAX_STRATA]``; fewer than the units (with
            as many strata as units, every stratum holds one unit and no effect is defined).

    Returns:
        ``Estimate`` (method ``stratified``); details: ``n_strata``, ``strata`` (the stratum numbers
        formed), ``empty_strata``, ``stratum_sizes`` and ``stratum_ates`` (dicts by stratum).

    Raises:
        ValueError: invalid inputs, ``n_strata`` outside ``[2, MAX_STRATA]``, or no stratum holds both
            treated and untreated units (because ``n_strata >= n``, or because the arms do not overlap).

    Examples:
        >>> from textcause.estimators import stratified
        >>> t = [0, 1, 0, 1, 0, 1, 0, 1]
        >>> y = [0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
        >>> p = [0.2, 0.3, 0.4, 0.5, 0.5, 0.6, 0.7, 0.8]
        >>> stratified(t, y, p, n_strata=2)
        Estimate(stratified: ATE +0.7917, n_used=8)
        >>> stratified(t, y, p, n_strata=1)
        Traceback (most recent call last):
            ...
        ValueError: The 'n_strata' parameter of stratified must be an int >= 2. Got 1 instead.
    """
    n_strata = _check_n_strata(n_strata, "stratified")
    require_propensity(propensity, "stratified")
    t, y, p = prepare(t, y, propensity, owner="stratified")
    k = _strata(p, n_strata)
    key = 2 * k + t
    count = np.bincount(key, minlength=2 * n_strata).reshape(n_strata, 2)
    total = np.bincount(key, weights=y, minlength=2 * n_strata).reshape(n_strata, 2)
    size = count.sum(axis=1)
    formed = size > 0
    kept = formed & (count[:, 0] > 0) & (count[:, 1] > 0)
    empty = np.flatnonzero(formed & ~kept)
    if not kept.any():
        if n_strata >= t.size:
            raise ValueError(
                f"The 'n_strata' parameter of stratified must be an int < n, the number of units ({t.size}): "
                f"with more strata than units no stratum holds both treated and untreated units. Got {n_strata} "
                "instead."
            )
        raise ValueError(
            f"No propensity stratum of stratified holds both treated and untreated units "
            f"(n_strata={n_strata}): the arms do not overlap, so no effect can be estimated."
        )
    safe = np.where(count > 0, count, 1)
    means = total / safe
    ate_k = effect(means[:, 1], means[:, 0])
    n_kept = int(size[kept].sum())
    ate = float(np.sum(size[kept] * ate_k[kept]) / n_kept)
    return finite(
        Estimate(
            ate=ate,
            method="stratified",
            n_used=n_kept,
            n_dropped=int(t.size - n_kept),
            details={
                "n_strata": n_strata,
                "strata": np.flatnonzero(formed).tolist(),
                "empty_strata": empty.tolist(),
                "stratum_sizes": {int(s): int(size[s]) for s in np.flatnonzero(formed)},
                "stratum_ates": {int(s): float(ate_k[s]) for s in np.flatnonzero(kept)},
            },
        )
    )


def stratified_replicates(
    t: np.ndarray, y: np.ndarray, p: np.ndarray, counts: np.ndarray, n_strata: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`stratified` on many resamples at once, each given by how often it holds each unit.

    ``counts[b, i]`` is the number of copies of unit i in resample b. Row b's estimate is what
    ``stratified`` returns on the units repeated by their counts (the same tie-aware strata of the
    resample's ranks, the same dropped strata), up to the order of floating-point sums; rows where
    it would raise (an arm absent, or no stratum with both arms) are marked not ok. The inputs are
    already validated (``prepare``'s output for all units). A run of tied propensities is one
    group in every resample, so the strata follow from each group's copies in the resample.

    Returns:
        ``(ate, ok)``: float64 estimates (0.0 where not ok) and the rows where they are defined.
    """
    rows = counts.shape[0]
    order, starts, ends = tie_groups(p)
    cs = counts[:, order].astype(np.int64)  # rows x units, sorted by propensity
    ts = t[order].astype(np.int64)
    zero = np.zeros((rows, 1), dtype=np.int64)

    def through_groups(values: np.ndarray) -> np.ndarray:
        """Running sums of ``values`` along the sorted units, at each tie group's end (a 0 first)."""
        return np.concatenate((zero.astype(values.dtype), np.cumsum(values, axis=1)[:, ends - 1]), axis=1)

    end = through_groups(cs)
    n = end[:, -1]
    # a group's stratum from its mean rank in the resample, as _strata has it (empty groups: any)
    stratum = (n_strata * (end[:, 1:] + end[:, :-1] - 1)) // (2 * np.maximum(n, 1))[:, None]
    stratum = np.clip(stratum, 0, n_strata - 1)
    # strata are runs of adjacent groups: each stratum's sums are differences of the running sums
    last = np.cumsum(
        np.bincount((stratum + n_strata * np.arange(rows)[:, None]).ravel(), minlength=rows * n_strata).reshape(
            rows, n_strata
        ),
        axis=1,
    )
    first = np.concatenate((zero, last[:, :-1]), axis=1)
    row = np.arange(rows)[:, None]

    def per_stratum(running: np.ndarray) -> np.ndarray:
        sums: np.ndarray = running[row, last] - running[row, first]
        return sums

    count, count1 = per_stratum(end), per_stratum(through_groups(cs * ts))
    count0 = count - count1
    ys = y[order]
    if np.array_equal(ys, np.round(ys)) and np.abs(ys).max(initial=0) * max(1, int(n.max(initial=0))) < 2**52:
        y_int = ys.astype(np.int64)  # integer outcomes: exact integer running sums
        total1, total0 = (
            per_stratum(through_groups(cs * (ts * y_int))),
            per_stratum(through_groups(cs * ((1 - ts) * y_int))),
        )
    else:
        unit_key = (stratum[:, np.repeat(np.arange(ends.size), ends - starts)] + n_strata * row).ravel()

        def summed(weights: np.ndarray) -> np.ndarray:
            return np.bincount(unit_key, weights=weights.ravel(), minlength=rows * n_strata).reshape(rows, n_strata)

        total1, total0 = summed(cs * (ts * ys)), summed(cs * ((1 - ts) * ys))
    kept = (count0 > 0) & (count1 > 0)
    ate_k = effect(total1 / np.where(count1 > 0, count1, 1), total0 / np.where(count0 > 0, count0, 1))
    n_kept = np.where(kept, count, 0).sum(axis=1)
    n_treated = count1.sum(axis=1)
    ok = (n_treated > 0) & (n_treated < n) & (n_kept > 0)
    ate = np.where(kept, count * ate_k, 0.0).sum(axis=1) / np.where(n_kept > 0, n_kept, 1)
    return np.where(ok, ate, 0.0), ok

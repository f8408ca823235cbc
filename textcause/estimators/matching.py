"""1:1 nearest-neighbour propensity matching with replacement (Weld et al., appendix F.1)."""

from __future__ import annotations

from typing import Any

import numpy as np

from textcause.estimators._common import finite, prepare, require_propensity
from textcause.estimators.types import Estimate
from textcause.validation import (
    check_consistent_length,
    check_paired,
    check_propensity,
    check_real,
    check_treatment,
)

__all__ = [
    "nearest_opposite",
    "matching",
    "matching_replicates",
]


def _nearest(
    query: np.ndarray, sv: np.ndarray, pool_index: np.ndarray, pool_y: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nearest pool units of each query value, with every tie kept.

    ``sv`` holds the pool's propensities sorted ascending (ties in any order) and ``pool_index`` /
    ``pool_y`` the units' indices and outcomes in that order. The nearest set of a
    query is every pool unit at the minimum distance: all units sharing the nearest propensity
    value, on both sides when the value below and the value above are at exactly the same
    (floating-point) distance. Binary searches only; sorted queries keep them cache-friendly.

    Returns:
        ``(representative, mean_y, n_tied)``: the nearest unit with the smallest propensity and,
        among those, the smallest index; the mean of ``pool_y`` over the nearest set; and its size.
    """
    m = sv.size
    change = np.flatnonzero(sv[1:] != sv[:-1]) + 1
    starts = np.concatenate(([0], change))
    run_cnt = np.diff(np.concatenate((starts, [m])))
    run_of = np.repeat(np.arange(starts.size), run_cnt)
    run_sum = np.add.reduceat(pool_y, starts)
    run_min_index = np.minimum.reduceat(pool_index, starts)
    pos = np.searchsorted(sv, query, side="left")  # sv[pos - 1] < query <= sv[pos]
    left = run_of[np.clip(pos - 1, 0, m - 1)]
    right = run_of[np.clip(pos, 0, m - 1)]
    d_left = np.where(pos > 0, query - sv[starts[left]], np.inf)
    d_right = np.where(pos < m, sv[starts[right]] - query, np.inf)
    use_left = d_left <= d_right
    use_right = d_right <= d_left
    total = np.where(use_left, run_sum[left], 0.0) + np.where(use_right, run_sum[right], 0.0)
    count = np.where(use_left, run_cnt[left], 0) + np.where(use_right, run_cnt[right], 0)
    rep = run_min_index[np.where(use_left, left, right)]
    return rep, total / count, count


def nearest_opposite(t: Any, propensity: Any) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's nearest neighbour on the propensity in the other treatment arm.

    When several units of the other arm are equally near (tied propensities, or one below and
    one above at the same distance), the one with the lower propensity and then the smallest
    index is returned; :func:`matching` itself averages over all of them.

    Args:
        t: binary treatment (0/1 or bool), both classes present.
        propensity: estimated P(T=1 | X), strictly inside (0, 1).

    Returns:
        ``(match, distance)``: ``match[i]`` is the index of unit i's match (``t[match[i]] != t[i]``)
        and ``distance[i] = |p_i - p_match[i]|``.

    Raises:
        ValueError: invalid or inconsistent inputs.
    """
    check_paired(("t", t), ("propensity", propensity))
    t = check_treatment(t)
    p = check_propensity(propensity)
    check_consistent_length(t, p)
    match, _, _ = _match(t, p, np.zeros(t.size))
    return match, np.abs(p - p[match])


def _match(t: np.ndarray, p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Representative match, mean matched outcome and tie count of every unit (both directions).

    One sort of all units; each arm's propensities are then already sorted, for the pool and for
    the queries alike. Nothing depends on the order of tied units.
    """
    order = np.argsort(p)
    ps, ts, ys = p[order], t[order], y[order]
    match = np.empty(t.size, dtype=np.int64)
    y_match = np.empty(t.size)
    n_tied = np.empty(t.size, dtype=np.int64)
    for arm in (0, 1):
        q, pool = ts == arm, ts != arm
        dest = order[q]
        match[dest], y_match[dest], n_tied[dest] = _nearest(ps[q], ps[pool], order[pool], ys[pool])
    return match, y_match, n_tied


def matching(t: Any, y: Any, propensity: Any, *, caliper: float | None = 0.2) -> Estimate:
    """Propensity matching: ``ATE = 1/n_used * sum_i (2 T_i - 1)(Y_i - Y_j(i))``.

    Every treated unit is matched to its nearest untreated unit on the propensity and every
    untreated unit to its nearest treated unit, with replacement (Abadie and Imbens; the paper's
    appendix F.1). Ties are averaged, as in Abadie and Imbens's J_M(i): ``Y_j(i)`` is the mean
    outcome of ALL units of the other arm at the minimum distance (all units sharing the nearest
    propensity value, and both neighbouring values when they are exactly equidistant). This is
    deterministic and independent of the order of the units; with a discrete propensity (e.g. the
    true two-valued propensity of the paper's tasks) picking one tied unit instead would pair a
    whole class with a single unit's outcome. A unit whose match is farther than
    ``caliper`` times the standard deviation of the propensity (population std, ddof=0, over all
    units) is dropped and counted in ``n_dropped``; ``n_used`` counts the units kept. Runs in
    O(n log n): two sorts and binary searches, no distance matrix.

    Args:
        t: binary treatment (0/1 or bool), both classes present.
        y: outcomes (binary or continuous).
        propensity: estimated P(T=1 | X), strictly inside (0, 1).
        caliper: maximum match distance in standard deviations of the propensity (>= 0; the paper
            uses 0.2); None for no caliper. A distance equal to the caliper is kept.

    Returns:
        ``Estimate`` (method ``matching``); details: ``caliper``, ``caliper_width`` (on the
        propensity scale, None without caliper), ``n_unmatched_treated``, ``n_unmatched_control``,
        ``att`` and ``atc`` (the two directions' means, None when a direction kept no unit),
        ``mean_tied`` (average size of the nearest sets).

    Raises:
        ValueError: invalid inputs, negative ``caliper``, or no unit has a match within it.

    Examples:
        >>> from textcause.estimators import matching
        >>> t = [0, 1, 0, 1, 0, 1, 0, 1]
        >>> y = [0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
        >>> p = [0.2, 0.3, 0.4, 0.5, 0.5, 0.6, 0.7, 0.8]
        >>> matching(t, y, p, caliper=None)
        Estimate(matching: ATE +0.6875, n_used=8)
    """
    if caliper is not None:
        caliper = check_real(caliper, "caliper", "matching", low=0.0)
    require_propensity(propensity, "matching")
    t, y, p = prepare(t, y, propensity, owner="matching")
    match, y_match, n_tied = _match(t, p, y)
    dist = np.abs(p - p[match])
    width = None if caliper is None else caliper * float(p.std())
    kept = np.ones(t.size, dtype=bool) if width is None else dist <= width
    if not kept.any():
        raise ValueError(
            f"No unit of matching has a match within the caliper ({caliper} standard deviations "
            f"= {width:.3g} on the propensity scale): widen the caliper or pass caliper=None."
        )
    sign = 2.0 * t - 1.0
    contrib = sign * (y - y_match)  # Y(1) - Y(0) from either side of the pair
    treated = t == 1
    kt, kc = kept & treated, kept & ~treated
    return finite(
        Estimate(
            ate=float(contrib[kept].mean()),
            method="matching",
            n_used=int(kept.sum()),
            n_dropped=int(t.size - kept.sum()),
            details={
                "caliper": caliper,
                "caliper_width": width,
                "n_unmatched_treated": int((treated & ~kept).sum()),
                "n_unmatched_control": int((~treated & ~kept).sum()),
                "att": float(contrib[kt].mean()) if kt.any() else None,
                "atc": float(contrib[kc].mean()) if kc.any() else None,
                "mean_tied": float(n_tied[kept].mean()),
            },
        )
    )


def matching_replicates(
    t: np.ndarray, y: np.ndarray, p: np.ndarray, counts: np.ndarray, caliper: float | None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`matching` on many resamples at once, each given by how often it holds each unit.

    ``counts[b, i]`` is the number of copies of unit i in resample b (a bootstrap's multinomial or
    Poisson counts). Row b's estimate is what ``matching`` returns on the units repeated by their
    counts (the same nearest sets, tie means, caliper on the resample's propensity std), up to the
    order of floating-point sums; rows where ``matching`` would raise (an arm absent, or no unit
    within the caliper) are marked not ok. The inputs are already validated (``prepare``'s output
    for all units). O(rows x n) with no per-row Python: the other arm's distinct propensity values
    on either side of a query are fixed, so its nearest present one in a resample is a running
    maximum (below) or minimum (above) over which of those values the resample holds.

    Returns:
        ``(ate, ok)``: float64 estimates (0.0 where not ok) and the rows where they are defined.
    """
    rows = counts.shape[0]
    order = np.argsort(p, kind="stable")
    ps, ts, ys = p[order], t[order], y[order]
    # units x rows: the running maxima, sums and gathers below then run along contiguous rows
    cs = np.ascontiguousarray(counts.T[order], dtype=np.float64)
    size = cs.sum(axis=0)
    n_treated = ts.astype(np.float64) @ cs
    ok = (n_treated > 0) & (n_treated < size)
    safe_size = np.where(size > 0, size, 1.0)
    if caliper is None:
        width = np.full(rows, np.inf)
    else:
        mean = (ps @ cs) / safe_size
        width = caliper * np.sqrt(np.einsum("ib,ib->b", cs, (ps[:, None] - mean[None, :]) ** 2) / safe_size)
    used = np.zeros(rows)
    total = np.zeros(rows)
    cols = np.arange(rows, dtype=np.int64)
    for arm in (0, 1):
        q, pool = ts == arm, ts != arm
        sv = ps[pool]
        m = sv.size
        if m == 0 or not q.any():
            continue
        # the other arm's distinct values (runs of ties), their copies and outcome sums per resample
        starts = np.concatenate(([0], np.flatnonzero(sv[1:] != sv[:-1]) + 1))
        r = starts.size
        values = sv[starts]
        pool_c = cs[pool]
        run_cnt = pool_c if r == m else np.add.reduceat(pool_c, starts, axis=0)
        run_sum = pool_c * ys[pool][:, None]
        if r < m:
            run_sum = np.add.reduceat(run_sum, starts, axis=0)
        # per query: the runs below it (< query) end at run `below`, those at or above start at `below + 1`
        query = ps[q]
        below = np.searchsorted(values, query, side="left") - 1
        index = np.arange(r, dtype=np.int32)[:, None]
        present = run_cnt > 0
        last = np.maximum.accumulate(np.where(present, index, np.int32(-1)), axis=0)
        first = np.minimum.accumulate(np.where(present, index, np.int32(r))[::-1], axis=0)[::-1]
        left = np.where((below >= 0)[:, None], last[np.maximum(below, 0)], np.int32(-1))
        right = np.where((below + 1 < r)[:, None], first[np.minimum(below + 1, r - 1)], np.int32(r))
        has_left, has_right = left >= 0, right < r
        padded = np.concatenate(([np.nan], values, [np.nan]))  # -1 and r read a NaN, never chosen
        d_left = np.where(has_left, query[:, None] - padded[left + 1], np.inf)
        d_right = np.where(has_right, padded[right + 1] - query[:, None], np.inf)
        use_left = d_left <= d_right  # an absent side is at infinity: chosen only if both are absent
        use_right = d_right <= d_left
        chosen = np.where(use_left, left, right)
        pick = np.clip(chosen, 0, r - 1) * rows + cols
        match_sum, match_cnt = run_sum.ravel()[pick], run_cnt.ravel()[pick]
        both = use_left & use_right & has_left & has_right  # equidistant values: the nearest set is both
        if both.any():
            other = (right * rows + cols)[both]
            match_sum[both] += run_sum.ravel()[other]
            match_cnt[both] += run_cnt.ravel()[other]
        found = has_left | has_right
        dist = np.where(use_left, d_left, d_right)
        weight = cs[q] * ((dist <= width[None, :]) & found)
        y_match = match_sum / np.where(found, match_cnt, 1.0)
        sign = 1.0 if arm == 1 else -1.0
        total += np.einsum("ib,ib->b", weight, sign * (ys[q][:, None] - y_match))
        used += weight.sum(axis=0)
    ok &= used > 0
    return np.where(ok, total / np.where(used > 0, used, 1.0), 0.0), ok

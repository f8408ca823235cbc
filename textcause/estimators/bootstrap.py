"""Percentile bootstrap intervals for any estimator, vectorised where the estimator allows.

Two resampling schemes, chosen by ``scheme`` (``"auto"``: multinomial below :data:`POISSON_MIN_N`
units, Poisson at and above; ``details['bootstrap']['scheme']`` records which ran):

* ``"multinomial"``: each replicate draws ``n`` units with replacement from
  ``numpy.random.default_rng(seed)``, in chunks whose size depends only on ``n``, so the same
  ``(n, n_boot, seed)`` gives the same resamples whichever path computes them.
* ``"poisson"`` (Hanley & MacGibbon 2006; Chamandy et al. 2012): each unit gets an independent
  Poisson(1) weight in each replicate, from one ``SFC64`` stream per block of replicates, so the
  weights depend only on ``(n, n_boot, seed)``, never on the number of threads.

For ``unadjusted``, ``ipw`` and ``aipw`` (ratios of per-unit column sums) a replicate is one product
of its counts or weights with the columns. Below :data:`POISSON_MIN_N` units the ``matching`` and
``stratified`` replicates come from the count matrix, many at a time (``matching_replicates``,
``stratified_replicates``: the same nearest sets and strata as the estimator on the repeated
units); other estimators are called once per replicate. A replicate where the estimator is
undefined (an arm with zero total weight) is dropped and counted. Timings: ``bench_estimators.py``
in ``benchmarks/README.md``.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from textcause.estimators._common import prepare
from textcause.estimators.matching import matching, matching_replicates
from textcause.estimators.registry import get_estimator
from textcause.estimators.stratification import stratified, stratified_replicates
from textcause.estimators.types import CI_BOOTSTRAP, Estimate
from textcause.estimators.weighting import (
    aipw,
    aipw_psi,
    ipw,
    ipw_columns,
    ratio_difference,
    unadjusted,
    unadjusted_columns,
)
from textcause.validation import check_int, check_options, check_paired, check_real

__all__ = [
    "SCHEMES",
    "POISSON_MIN_N",
    "POISSON_THREADS",
    "bootstrap_indices",
    "bootstrap_ci",
]

#: Index-matrix entries drawn per chunk (32 MB of int64): bounds memory at any n.
_CHUNK_ELEMENTS = 1 << 22
#: The resampling schemes of :func:`bootstrap_ci`.
SCHEMES = ("auto", "multinomial", "poisson")
#: ``scheme="auto"`` is multinomial below this many units (every benchmark-grid test set, so their
#: stored intervals stay as they were) and Poisson at and above it.
POISSON_MIN_N = 100_000
#: Replicates per Poisson block (one random stream each), units per tile, and the largest count.
_POISSON_BLOCK = 64
_POISSON_TILE = 4096
_POISSON_MAX = 13
#: Threads for the Poisson blocks (None: every core this process may use).
POISSON_THREADS: int | None = None
#: Count-matrix entries per call of a batched estimator (:func:`_count_plan`): bounds its temporaries
#: (a few dozen float64 arrays of this size) at any n.
_COUNT_BLOCK_ELEMENTS = 1 << 18


def _poisson_tables() -> tuple[tuple[int, ...], int, np.ndarray]:
    """Byte cut points, the first ambiguous byte, and the 32-bit cut points of the remaining mass."""
    p = np.array([math.exp(-1.0 - math.lgamma(k + 1)) for k in range(_POISSON_MAX + 1)])
    p[-1] = 1.0 - p[:-1].sum()  # P(W >= 13) to 13
    cells = np.floor(p * 256).astype(np.int64)
    ambiguous = int(cells.sum())
    cuts = tuple(int(c) for c in np.cumsum(cells)[:-1] if c < ambiguous)
    rest = p - cells / 256.0
    refine = np.round(np.cumsum(rest)[:-1] / rest.sum() * 2.0**32).astype(np.uint64)
    return cuts, ambiguous, refine


_CUTS, _AMBIGUOUS, _REFINE = _poisson_tables()


def _poisson_tile(bg: np.random.BitGenerator, size: int, cnt: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """``size`` Poisson(1) counts as uint8 from ``bg`` (``cnt``, ``tmp``: buffers of >= size + 8 bytes)."""
    words = -(-size // 8)
    u = bg.random_raw(words).view(np.uint8)  # 8 * words >= size bytes; the padding is unused
    cnt, tmp = cnt[: 8 * words], tmp[: 8 * words]
    np.greater_equal(u, _CUTS[0], out=cnt.view(np.bool_))
    for c in _CUTS[1:]:
        np.greater_equal(u, c, out=tmp)
        np.add(cnt, tmp.view(np.uint8), out=cnt)
    np.greater_equal(u, _AMBIGUOUS, out=tmp)
    hit = np.flatnonzero(tmp.view(np.uint64) != 0)  # words holding an ambiguous byte (about 9%)
    if hit.size:
        sub = np.flatnonzero(tmp.view(np.uint64)[hit].view(np.bool_))
        pos = hit[sub >> 3] * 8 + (sub & 7)
        pos = pos[pos < size]
        if pos.size:
            cnt[pos] = np.searchsorted(_REFINE, bg.random_raw(pos.size) >> np.uint64(32), side="right")
    return cnt[:size]


def _poisson_blocks(n_boot: int) -> list[tuple[int, int]]:
    return [(j, min(_POISSON_BLOCK, n_boot - j * _POISSON_BLOCK)) for j in range(-(-n_boot // _POISSON_BLOCK))]


def _poisson_stream(seed: int, block: int) -> np.random.BitGenerator:
    return np.random.SFC64(np.random.SeedSequence(seed, spawn_key=(block,)))


def _poisson_weights(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """Yield the Poisson(1) replicate weights as ``(block, n)`` uint8 matrices, ``n_boot`` rows in total.

    The weights are drawn by inversion from random bytes: a byte below 253 gives the count directly
    (cut points 94, 188, 235, 250: cells of exactly 94/256, 94/256, 47/256, 15/256 and 3/256), the
    1.2% of bytes at 253-255 take their count from the remaining mass through a further 32-bit
    uniform. Every probability P(W=k) = e^-1/k! is met to within 3e-12; counts are capped at
    ``_POISSON_MAX`` = 13 (P(W > 13) = 4.5e-12 is given to 13). Replicates come in blocks of
    ``_POISSON_BLOCK``; block ``j`` has its own ``numpy.random.SFC64`` stream seeded with
    ``SeedSequence(seed, spawn_key=(j,))`` and consumed tile by tile (``_POISSON_TILE`` units).
    """
    cnt, tmp = (
        np.empty(_POISSON_BLOCK * _POISSON_TILE + 8, np.uint8),
        np.empty(_POISSON_BLOCK * _POISSON_TILE + 8, bool),
    )
    for j, b in _poisson_blocks(n_boot):
        bg, out = _poisson_stream(seed, j), np.empty((b, n), np.uint8)
        for s in range(0, n, _POISSON_TILE):
            w = min(_POISSON_TILE, n - s)
            out[:, s : s + w] = _poisson_tile(bg, b * w, cnt, tmp).reshape(b, w)
        yield out


def _poisson_sums(columns: np.ndarray, n_boot: int, seed: int, dtype: Any = np.float32) -> np.ndarray:
    """Column sums ``weights @ columns`` of every Poisson replicate, ``(n_boot, k)`` float64.

    ``columns`` is ``(n, k)``; the weights are those of :func:`_poisson_weights`. Each tile's product
    runs in ``dtype`` (float32, or float64 for reference) and is added to a float64 total.
    """
    cols = np.ascontiguousarray(columns, dtype=dtype)
    n, k = cols.shape

    def block(job: tuple[int, int]) -> np.ndarray:
        j, b = job
        bg, sums = _poisson_stream(seed, j), np.zeros((b, k))
        cnt, tmp = np.empty(b * _POISSON_TILE + 8, np.uint8), np.empty(b * _POISSON_TILE + 8, bool)
        wts = np.empty(b * _POISSON_TILE, dtype)
        for s in range(0, n, _POISSON_TILE):
            w = min(_POISSON_TILE, n - s)
            tile = wts[: b * w]
            np.copyto(tile, _poisson_tile(bg, b * w, cnt, tmp))
            sums += tile.reshape(b, w) @ cols[s : s + w]
        return sums

    jobs = _poisson_blocks(n_boot)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    threads = max(1, min(POISSON_THREADS or cores, len(jobs)))
    with threadpool_limits(1, user_api="blas"):  # small products: a threaded BLAS only waits
        if threads == 1:
            return np.concatenate([block(job) for job in jobs])
        with ThreadPoolExecutor(threads) as pool:
            return np.concatenate(list(pool.map(block, jobs)))


def bootstrap_indices(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """Yield the resampling indices as ``(chunk, n)`` int64 matrices, ``n_boot`` rows in total."""
    for idx in _draws(n, n_boot, seed):
        yield idx.astype(np.int64, copy=False)


def _draws(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """The indices of :func:`bootstrap_indices`, drawn as uint32 when ``n`` allows (the same values:
    numpy draws an int64 below 2**32 from the same 32-bit stream) and faster, with half the memory."""
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_ELEMENTS // n)
    dtype = np.uint32 if n <= np.iinfo(np.uint32).max else np.int64
    done = 0
    while done < n_boot:
        b = min(chunk, n_boot - done)
        yield rng.integers(0, n, size=(b, n), dtype=dtype)
        done += b


def _resampled_sums(idx: np.ndarray, columns_t: np.ndarray) -> np.ndarray:
    """Column sums of every resample: ``sums[b] = columns_t @ counts_b``, ``counts_b`` = copies of each unit.

    ``columns_t`` is the ``(k, n)`` C-contiguous transpose of the per-unit columns. One
    ``np.bincount`` and one matrix-vector product per replicate (measured faster than one bincount
    over a whole ``(chunk, n)`` block, whose scattered writes miss the cache).
    """
    n = columns_t.shape[1]
    return np.stack([columns_t @ np.bincount(row, minlength=n).astype(np.float64) for row in idx])


def _linear_plan(
    fn: Callable[..., Estimate], arrays: list[Any], kwargs: dict[str, Any], point: Estimate
) -> tuple[np.ndarray, Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]] | None:
    """Columns and a finisher for the estimators that are ratios of column sums, else None.

    ``point`` is the already validated full-data estimate (it carries ``ipw``'s checked clip).
    """
    if fn is unadjusted and len(arrays) == 2 and not kwargs:
        return unadjusted_columns(*prepare(*arrays)), ratio_difference
    if fn is ipw and len(arrays) == 3 and set(kwargs) <= {"clip"}:
        clip = point.details["clip"]
        if clip is None:
            t, y, p = prepare(*arrays)
        else:
            (t, y), p = prepare(*arrays[:2]), np.clip(arrays[2].astype(np.float64), clip, 1.0 - clip)
        return ipw_columns(t, y, p), ratio_difference
    if fn is aipw and set(kwargs) <= {"mu0", "mu1", "level", "clip"}:
        named = dict(zip(("t", "y", "propensity", "mu0", "mu1"), arrays))
        named.update({k: v for k, v in kwargs.items() if k not in ("level", "clip")})
        if len(named) != 5:
            return None
        clip = point.details["clip"]
        if clip is None:
            t, y, p, mu0, mu1 = prepare(
                named["t"], named["y"], named["propensity"], ("mu0", named["mu0"]), ("mu1", named["mu1"])
            )
        else:
            t, y, mu0, mu1 = prepare(named["t"], named["y"], None, ("mu0", named["mu0"]), ("mu1", named["mu1"]))
            p = np.clip(np.asarray(named["propensity"]).astype(np.float64), clip, 1.0 - clip)
        cols = np.column_stack([aipw_psi(t, y, p, mu0, mu1), t, 1 - t]).astype(np.float64)

        def finish(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            ok = (sums[:, 1] > 0) & (sums[:, 2] > 0)
            return np.where(ok, sums[:, 0] / (sums[:, 1] + sums[:, 2]), 0.0), ok

        return cols, finish
    return None


def _count_plan(
    fn: Callable[..., Estimate], arrays: list[Any], kwargs: dict[str, Any], point: Estimate
) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None:
    """A batched replicate function ``counts (rows, n) -> (ate, ok)`` for ``matching`` and
    ``stratified`` (their resampled estimate follows from each unit's copies) below
    :data:`POISSON_MIN_N` units, else None.

    ``point`` is the already validated full-data estimate (it carries the checked caliper and
    number of strata).
    """
    if len(arrays) != 3 or _length(arrays[0]) >= POISSON_MIN_N:  # measured no faster there: a row or two a call
        return None
    if fn is matching and set(kwargs) <= {"caliper"}:
        caliper = point.details["caliper"]

        def replicates(t: np.ndarray, y: np.ndarray, p: np.ndarray, counts: np.ndarray) -> Any:
            return matching_replicates(t, y, p, counts, caliper)

    elif fn is stratified and set(kwargs) <= {"n_strata"} and point.details["n_strata"] <= _length(arrays[0]):
        n_strata = point.details["n_strata"]  # (at most n: the per-stratum tables stay as small as the counts)

        def replicates(t: np.ndarray, y: np.ndarray, p: np.ndarray, counts: np.ndarray) -> Any:
            return stratified_replicates(t, y, p, counts, n_strata)

    else:
        return None
    t, y, p = prepare(*arrays, owner=fn.__name__)
    order = np.argsort(p, kind="stable")  # sorted once: each call's own sort then finds it sorted
    t, y, p = t[order], y[order], p[order]
    return lambda counts: replicates(t, y, p, counts[:, order])


def _counts(idx: np.ndarray, n: int) -> np.ndarray:
    """Copies of each unit in each resample, ``(rows, n)`` int64, from the ``(rows, n)`` index matrix.

    One ``np.bincount`` a row over int64 indices (bincount converts narrower indices row by row,
    measured several times slower)."""
    return np.stack([np.bincount(row, minlength=n) for row in idx.astype(np.int64, copy=False)])


def _row_blocks(
    counted: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``counted`` over ``counts`` a block of rows at a time (``_COUNT_BLOCK_ELEMENTS`` entries)."""
    step = max(1, _COUNT_BLOCK_ELEMENTS // max(1, counts.shape[1]))
    parts = [counted(counts[s : s + step]) for s in range(0, counts.shape[0], step)]
    return np.concatenate([a for a, _ in parts]), np.concatenate([ok for _, ok in parts])


def bootstrap_ci(
    estimator: str | Callable[..., Estimate],
    t: Any,
    y: Any,
    propensity: Any = None,
    *args: Any,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    vectorized: bool = True,
    scheme: str = "auto",
    **kwargs: Any,
) -> Estimate:
    """Point estimate on all units plus a percentile bootstrap interval.

    Args:
        estimator: a function ``(t, y[, propensity], *args, **kwargs) -> Estimate`` or a name in
            ``ESTIMATORS`` (``unadjusted``, ``ipw``, ``stratified``, ``matching``, ``aipw``).
        t: binary treatment per unit.
        y: outcome per unit.
        propensity: estimated P(T=1 | X) per unit; None for estimators that take none.
        *args: further per-unit arrays passed positionally (e.g. ``mu0, mu1`` for ``aipw``).
        n_boot: number of bootstrap replicates, >= 1.
        level: coverage of the percentile interval, in (0, 1).
        seed: seed of the resampling, >= 0.
        vectorized: compute ``unadjusted``/``ipw``/``aipw`` replicates from resampled column sums
            and ``matching``/``stratified`` replicates from each unit's resampled copies, many at a
            time (True), or call the estimator per replicate (False; same resamples, same result up
            to rounding).
        scheme: ``"multinomial"`` (draw ``n`` units with replacement, from
            ``numpy.random.default_rng(seed)``), ``"poisson"`` (independent Poisson(1) weights per
            unit, from per-block ``SFC64`` streams; several times faster for the linear estimators
            at large ``n``; other estimators see each unit repeated by its weight) or ``"auto"``:
            multinomial below :data:`POISSON_MIN_N` = 100,000 units, Poisson at and above. Both give
            the same intervals in distribution; see the module docstring.
        **kwargs: passed to the estimator. A keyword whose value is a 1-D array of length n (e.g.
            ``mu0=...``) is a per-unit array and is resampled too; anything else (``clip``,
            ``n_strata``, ``caliper``) is passed unchanged.

    Returns:
        The full-data ``Estimate`` with ``ci_low``/``ci_high`` set to the ``(1-level)/2`` and
        ``(1+level)/2`` quantiles of the replicates (numpy's linear interpolation) and
        ``details['bootstrap'] = {n_boot, n_failed, level, seed, scheme, se, replicates}`` (``scheme``:
        the one used, never ``"auto"``) and
        ``details['ci_method'] = CI_BOOTSTRAP`` (an estimator's own influence-function interval, as
        of ``aipw`` and ``tmle``, stays in ``details['influence_ci_low']`` / ``['influence_ci_high']``). Replicates where
        the estimator is undefined (it raises ``ValueError``, e.g. a resample with one treatment
        class; for the linear estimators an arm with zero total weight) are dropped and counted in ``n_failed``; they never produce NaN.

    Raises:
        ValueError: invalid inputs or parameters, arguments the estimator does not take (e.g. no
            propensity for ``ipw``), a non-finite estimate or replicate, or every replicate undefined.

    Examples:
        >>> from textcause.estimators import bootstrap_ci
        >>> t = [0, 1, 0, 1, 0, 1, 0, 1]
        >>> y = [0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
        >>> p = [0.2, 0.3, 0.4, 0.5, 0.5, 0.6, 0.7, 0.8]
        >>> bootstrap_ci("ipw", t, y, p, n_boot=200, seed=0)
        Estimate(ipw: ATE +0.7576 [+0.2941, +1.0000], n_used=8, bootstrap 200 replicates, se 0.2304)
    """
    fn = get_estimator(estimator, "bootstrap_ci")
    n_boot = check_int(n_boot, "n_boot", "bootstrap_ci", low=1)
    level = check_real(level, "level", "bootstrap_ci", low=0.0, high=1.0, low_open=True, high_open=True)
    seed = check_int(seed, "seed", "bootstrap_ci", low=0)
    scheme = check_options(scheme, "scheme", "bootstrap_ci", SCHEMES)
    arrays = [t, y] + ([] if propensity is None else [propensity]) + list(args)
    check_paired(
        ("t", t),
        ("y", y),
        ("propensity", propensity),
        *((f"args[{i}]", a) for i, a in enumerate(args)),
        *((k, v) for k, v in kwargs.items() if np.ndim(v) == 1),
    )
    _check_call(fn, arrays, kwargs, propensity is None)
    point = fn(*arrays, **kwargs)
    _check_finite(point.ate, "estimate", point.method)
    n = _length(t)
    if scheme == "auto":
        scheme = "multinomial" if n < POISSON_MIN_N else "poisson"
    per_unit = {k: v for k, v in kwargs.items() if np.ndim(v) == 1 and len(v) == n}
    fixed = {k: v for k, v in kwargs.items() if k not in per_unit}
    arrays = [np.asarray(a) for a in arrays]
    per_unit = {k: np.asarray(v) for k, v in per_unit.items()}

    plan = _linear_plan(fn, arrays, {**per_unit, **fixed}, point) if vectorized else None
    counted = _count_plan(fn, arrays, {**per_unit, **fixed}, point) if vectorized and plan is None else None
    reps: list[np.ndarray] = []
    n_failed = 0
    if counted is not None:
        if scheme == "poisson":
            blocks: Iterator[np.ndarray] = _poisson_weights(n, n_boot, seed)
        else:
            blocks = (_counts(idx, n) for idx in _draws(n, n_boot, seed))
        for counts in blocks:
            ate, ok = _row_blocks(counted, counts)
            reps.append(ate[ok])
            n_failed += int((~ok).sum())
    elif plan is not None and scheme == "poisson":
        ate, ok = plan[1](_poisson_sums(plan[0], n_boot, seed))
        reps, n_failed = [ate[ok]], int((~ok).sum())
    elif plan is not None:
        cols_t = np.ascontiguousarray(plan[0].T)
        for idx in _draws(n, n_boot, seed):
            ate, ok = plan[1](_resampled_sums(idx, cols_t))
            reps.append(ate[ok])
            n_failed += int((~ok).sum())
    else:
        if scheme == "poisson":  # each unit repeated by its weight
            units = np.arange(n)
            rows: Iterator[np.ndarray] = (np.repeat(units, w) for b in _poisson_weights(n, n_boot, seed) for w in b)
        else:
            rows = (row for idx in _draws(n, n_boot, seed) for row in idx)
        for row in rows:
            try:
                est = fn(*(a[row] for a in arrays), **{k: v[row] for k, v in per_unit.items()}, **fixed)
            except ValueError:
                n_failed += 1
                continue
            reps.append(np.array([est.ate], dtype=np.float64))
    values = np.concatenate(reps) if reps else np.empty(0)
    if not np.all(np.isfinite(values)):
        _check_finite(float(values[~np.isfinite(values)][0]), "bootstrap replicate", point.method)
    if values.size == 0:
        raise ValueError(
            f"All {n_boot} bootstrap replicates of {point.method} were undefined (each raised "
            f"ValueError, e.g. a resample with one treatment class): no interval can be formed."
        )
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(values, [alpha, 1.0 - alpha])
    se = float(values.std(ddof=1)) if values.size > 1 else 0.0
    boot = {
        "n_boot": n_boot,
        "n_failed": n_failed,
        "level": level,
        "seed": seed,
        "scheme": scheme,
        "se": se,
        "replicates": values,
    }
    for name, value in (("interval's lower end", lo), ("interval's upper end", hi), ("bootstrap se", se)):
        _check_finite(float(value), name, point.method)
    details = {**point.details, "ci_method": CI_BOOTSTRAP, "bootstrap": boot}
    return dataclasses.replace(point, ci_low=float(lo), ci_high=float(hi), details=details)


def _check_call(fn: Callable[..., Estimate], arrays: list[Any], kwargs: dict[str, Any], no_propensity: bool) -> None:
    """Refuse, in one sentence, arguments ``fn`` cannot take (instead of a raw ``TypeError``)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a callable without a signature: let it decide
        return
    try:
        signature.bind(*arrays, **kwargs)
    except TypeError as e:
        name = getattr(fn, "__name__", type(fn).__name__)
        param = signature.parameters.get("propensity")
        if no_propensity and param is not None and param.default is inspect.Parameter.empty:
            raise ValueError(
                f"The 'propensity' parameter of bootstrap_ci is required by {name}: pass the estimated "
                "propensities (None is only for estimators without one, such as 'unadjusted')."
            ) from None
        raise ValueError(f"The estimator {name} of bootstrap_ci cannot take the arguments given ({e}).") from None


def _length(t: Any) -> int:
    """The number of units, from the treatment the point estimate accepted."""
    shape = np.shape(t)
    if len(shape) != 1:
        raise ValueError(f"Expected 't' to be a 1-D array. Got an array with shape {shape} instead.")
    return int(shape[0])


def _check_finite(value: Any, what: str, method: str) -> None:
    """Raise if ``value`` is not a finite number (never let NaN or inf leave the bootstrap)."""
    try:
        ok = math.isfinite(value)
    except TypeError:
        ok = False
    if not ok:
        raise ValueError(
            f"The {what} of {method} is {value!r}, not a finite number: the inputs overflow float64 "
            "arithmetic; rescale the outcomes or clip the propensities."
        )

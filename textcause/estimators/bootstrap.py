"""Percentile bootstrap intervals for any estimator, vectorised where the estimator allows.

Replicates resample units with replacement. Their indices come from
``numpy.random.default_rng(seed).integers(0, n, size=(chunk, n))``, chunk after chunk, where the
chunk size depends only on ``n``: the same ``(n, n_boot, seed)`` gives the same resamples whichever
path computes them (drawn as uint32 where ``n`` allows: the same values, faster). ``unadjusted``,
``ipw`` and ``aipw`` are ratios of per-unit column sums, so a replicate costs one ``np.bincount``
of its indices and one product ``counts @ columns``, with no per-replicate validation, sorting or
copying of the data; any other estimator is called once per replicate on the resampled arrays.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from textcause.estimators._common import prepare
from textcause.estimators.registry import get_estimator
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
from textcause.validation import check_int, check_real

#: Index-matrix entries drawn per chunk (32 MB of int64): bounds memory at any n.
CHUNK_ELEMENTS = 1 << 22


def bootstrap_indices(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """Yield the resampling indices as ``(chunk, n)`` int64 matrices, ``n_boot`` rows in total."""
    for idx in _draws(n, n_boot, seed):
        yield idx.astype(np.int64, copy=False)


def _draws(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """The indices of :func:`bootstrap_indices`, drawn as uint32 when ``n`` allows (the same values:
    numpy draws an int64 below 2**32 from the same 32-bit stream) and faster, with half the memory."""
    rng = np.random.default_rng(seed)
    chunk = max(1, CHUNK_ELEMENTS // n)
    dtype = np.uint32 if n <= np.iinfo(np.uint32).max else np.int64
    done = 0
    while done < n_boot:
        b = min(chunk, n_boot - done)
        yield rng.integers(0, n, size=(b, n), dtype=dtype)
        done += b


def resampled_sums(idx: np.ndarray, columns_t: np.ndarray) -> np.ndarray:
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
        seed: seed of the resampling (``numpy.random.default_rng``), >= 0.
        vectorized: compute ``unadjusted``/``ipw``/``aipw`` replicates from resampled column sums
            (True) or call the estimator per replicate (False; same resamples, same result up to
            rounding).
        **kwargs: passed to the estimator. A keyword whose value is a 1-D array of length n (e.g.
            ``mu0=...``) is a per-unit array and is resampled too; anything else (``clip``,
            ``n_strata``, ``caliper``) is passed unchanged.

    Returns:
        The full-data ``Estimate`` with ``ci_low``/``ci_high`` set to the ``(1-level)/2`` and
        ``(1+level)/2`` quantiles of the replicates (numpy's linear interpolation) and
        ``details['bootstrap'] = {n_boot, n_failed, level, seed, se, replicates}`` and
        ``details['ci_method'] = CI_BOOTSTRAP`` (an estimator's own influence-function interval, as
        of ``aipw`` and ``tmle``, stays in ``details['influence_ci_low']`` / ``['influence_ci_high']``). Replicates where
        the estimator is undefined (it raises ``ValueError``, e.g. a resample with one treatment
        class) are dropped and counted in ``n_failed``; they never produce NaN.

    Raises:
        ValueError: invalid inputs or parameters, arguments the estimator does not take (e.g. no
            propensity for ``ipw``), a non-finite estimate or replicate, or every replicate undefined.
    """
    fn = get_estimator(estimator, "bootstrap_ci")
    n_boot = check_int(n_boot, "n_boot", "bootstrap_ci", low=1)
    level = check_real(level, "level", "bootstrap_ci", low=0.0, high=1.0, low_open=True, high_open=True)
    seed = check_int(seed, "seed", "bootstrap_ci", low=0)
    arrays = [t, y] + ([] if propensity is None else [propensity]) + list(args)
    _check_call(fn, arrays, kwargs, propensity is None)
    point = fn(*arrays, **kwargs)
    _check_finite(point.ate, "estimate", point.method)
    n = _length(t)
    per_unit = {k: v for k, v in kwargs.items() if np.ndim(v) == 1 and len(v) == n}
    fixed = {k: v for k, v in kwargs.items() if k not in per_unit}
    arrays = [np.asarray(a) for a in arrays]
    per_unit = {k: np.asarray(v) for k, v in per_unit.items()}

    plan = _linear_plan(fn, arrays, {**per_unit, **fixed}, point) if vectorized else None
    if plan is not None:
        plan = (np.ascontiguousarray(plan[0].T), plan[1])
    reps: list[np.ndarray] = []
    n_failed = 0
    for idx in _draws(n, n_boot, seed):
        if plan is not None:
            cols_t, finish = plan
            ate, ok = finish(resampled_sums(idx, cols_t))
            reps.append(ate[ok])
            n_failed += int((~ok).sum())
            continue
        for row in idx:
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
    boot = {
        "n_boot": n_boot,
        "n_failed": n_failed,
        "level": level,
        "seed": seed,
        "se": float(values.std(ddof=1)) if values.size > 1 else 0.0,
        "replicates": values,
    }
    for name, value in (("interval's lower end", lo), ("interval's upper end", hi), ("bootstrap se", boot["se"])):
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

"""The refitting interval: inference about a *method* (fit a propensity model, then estimate), not one fit.

:func:`~textcause.estimators.bootstrap_ci` resamples the evaluated users with the fitted propensities
held fixed: its interval describes one fitted model's test-sample noise, and over many tasks such
intervals cover the truth less often than their level, because another draw of training users gives
another model (tested in ``tests/estimators/test_refit.py``).

:func:`refit_interval` bootstraps both sources: each replicate draws the training users with
replacement, refits the propensity model on them (the caller's ``fit_predict``), predicts the
evaluated users, draws those with replacement too and estimates. The interval is the basic
(reverse-percentile) interval ``[2 ate - q_hi, 2 ate - q_lo]``, which moves against the method's
small-sample bias that every refit repeats; ``kind="percentile"`` gives ``[q_lo, q_hi]``. It costs one
refit per replicate, so it suits models whose refit is cheap (full-batch L-BFGS linear models; see
:meth:`textcause.models.PropensityModel.refit`), with 50-200 replicates.

It leaves out choices made once before the fit (a tuned penalty, a fitted vocabulary, LDA topics or
scaling are held as they were, which understates the variability most for LDA) and any bias that
does not shrink with the training sample (a representation that cannot see the confounder).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from textcause.estimators.registry import estimator_kwargs, get_estimator
from textcause.validation import check_consistent_length, check_int, check_options, check_paired, check_real

__all__ = [
    "CI_REFIT",
    "REFIT_KINDS",
    "RefitInterval",
    "refit_interval",
]

#: How a refitting interval is labelled (``refit_ci_method`` of a result row), per kind.
CI_REFIT = {
    "basic": "refitting bootstrap, basic (training and test users resampled, propensity model refit)",
    "percentile": "refitting bootstrap, percentile (training and test users resampled, propensity model refit)",
}
REFIT_KINDS = tuple(CI_REFIT)


@dataclass(frozen=True)
class RefitInterval:
    """One estimator's refitting interval.

    Attributes:
        estimator: the estimator's name.
        ate: the original fit's estimate on all evaluated users.
        low, high: the interval (see ``kind``).
        kind: ``basic`` (``2 ate - q_hi``, ``2 ate - q_lo``, from the ``(1 - level) / 2`` and
            ``(1 + level) / 2`` quantiles ``q_lo``, ``q_hi`` of the replicates) or ``percentile``
            (``q_lo``, ``q_hi``).
        n_reps: replicates asked for; ``n_failed``: replicates dropped (a refit or an estimate that
            raised ``ValueError``, e.g. one treatment class in a resample).
        level: the interval's coverage.
        replicates: the replicate estimates.
    """

    estimator: str
    ate: float
    low: float
    high: float
    kind: str
    n_reps: int
    n_failed: int
    level: float
    replicates: np.ndarray = field(repr=False, compare=False)

    @property
    def method(self) -> str:
        """The interval's label (:data:`CI_REFIT`)."""
        return CI_REFIT[self.kind]

    @property
    def se(self) -> float:
        """The replicates' standard deviation."""
        return float(self.replicates.std(ddof=1)) if self.replicates.size > 1 else 0.0


def refit_interval(
    fit_predict: Callable[[np.ndarray], np.ndarray],
    n_train: int,
    t: Any,
    y: Any,
    propensity: Any,
    estimators: Sequence[str] = ("ipw",),
    *,
    n_reps: int = 100,
    kind: str = "basic",
    level: float = 0.95,
    seed: int = 0,
    estimator_options: Optional[Mapping[str, Mapping[str, Any]]] = None,
    progress: Optional[Callable[[int], None]] = None,
) -> dict[str, RefitInterval]:
    """Intervals of ``estimators`` from bootstrap replicates that refit the propensity model.

    Args:
        fit_predict: ``train_rows -> propensities``: refits the model on the training users at
            positions ``train_rows`` (an int array of length ``n_train`` drawn with replacement:
            a user drawn twice counts twice) and returns the propensities of the ``len(t)``
            evaluated users.
        n_train: the number of training users.
        t: treatment of the evaluated users.
        y: outcome of the evaluated users.
        propensity: the original fit's propensities of the evaluated users (the point estimates).
        estimators: estimator names that take a propensity (``ipw``, ``stratified``,
            ``matching``); every replicate's refit serves all of them.
        n_reps: replicates (>= 2).
        kind: ``basic`` (default) or ``percentile`` (see the module docstring).
        level: coverage of the interval, in (0, 1).
        seed: seed of both resamplings.
        estimator_options: per estimator, keyword arguments overriding its defaults.
        progress: called with the number of replicates done, after each.

    Returns:
        ``{estimator: RefitInterval}`` for the estimators with at least two usable replicates (a
        replicate is unusable when its refit or its estimate raises ``ValueError`` or gives a
        non-finite value); the others are left out with a warning that names them.

    Raises:
        ValueError: bad arguments, a ``fit_predict`` that returns the wrong number of
            propensities, or no estimator with two usable replicates (the message quotes the first
            error a replicate raised).
    """
    owner = "refit_interval"
    n_train = check_int(n_train, "n_train", owner, low=1)
    n_reps = check_int(n_reps, "n_reps", owner, low=2)
    level = check_real(level, "level", owner, low=0.0, high=1.0, low_open=True, high_open=True)
    seed = check_int(seed, "seed", owner, low=0)
    kind = check_options(kind, "kind", owner, REFIT_KINDS)
    check_paired(("t", t), ("y", y), ("propensity", propensity))
    t = np.asarray(t)
    y = np.asarray(y, dtype=np.float64)
    propensity = np.asarray(propensity, dtype=np.float64)
    check_consistent_length(t, y, propensity)
    n_eval = len(t)
    options = dict(estimator_options or {})
    fns = {name: (get_estimator(name, owner), estimator_kwargs(name, **options.get(name, {}))) for name in estimators}
    points = {name: float(fn(t, y, propensity, **kwargs).ate) for name, (fn, kwargs) in fns.items()}
    rng = np.random.default_rng(seed)
    values: dict[str, list[float]] = {name: [] for name in fns}
    failed = dict.fromkeys(fns, 0)
    first_error: Optional[str] = None
    for b in range(n_reps):
        train_rows = rng.integers(0, n_train, size=n_train)
        eval_rows = rng.integers(0, n_eval, size=n_eval)
        try:
            p = np.asarray(fit_predict(train_rows), dtype=np.float64)
        except ValueError as err:
            first_error = first_error or str(err)
            for name in fns:
                failed[name] += 1
            p = None
        if p is not None:
            if p.shape != (n_eval,):
                raise ValueError(
                    f"refit_interval's fit_predict returned {p.shape} propensities; it must return one per "
                    f"evaluated user, shape ({n_eval},)."
                )
            for name, (fn, kwargs) in fns.items():
                try:
                    ate = float(fn(t[eval_rows], y[eval_rows], p[eval_rows], **kwargs).ate)
                except ValueError as err:
                    first_error = first_error or str(err)
                    ate = float("nan")
                if not np.isfinite(ate):
                    failed[name] += 1
                    continue
                values[name].append(ate)
        if progress is not None:
            progress(b + 1)
    alpha = (1.0 - level) / 2.0
    out = {}
    short = []
    for name in fns:
        reps = np.asarray(values[name])
        if reps.size < 2:
            short.append(f"{reps.size} of {n_reps} replicates of {name}")
            continue
        q_lo, q_hi = (float(q) for q in np.quantile(reps, [alpha, 1.0 - alpha]))
        ate = points[name]
        lo, hi = (2.0 * ate - q_hi, 2.0 * ate - q_lo) if kind == "basic" else (q_lo, q_hi)
        out[name] = RefitInterval(name, ate, lo, hi, kind, n_reps, failed[name], level, reps)
    cause = f" (first error: {first_error})" if first_error else ""
    if not out:
        raise ValueError(f"Only {' and '.join(short)} were usable{cause}: no refitting interval can be formed.")
    if short:
        warnings.warn(
            f"No refitting interval for {', '.join(short)} usable{cause}; the other estimators have theirs.",
            stacklevel=2,
        )
    return out

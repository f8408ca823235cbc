"""Cross-fitted nuisance predictions (propensity and outcome models) for AIPW and TMLE.

Double machine learning (Chernozhukov et al. 2018) fits the nuisance models on some units and predicts
on the others, so that no unit's prediction has seen that unit: with flexible learners the doubly
robust estimators' influence-function intervals are valid only then.

:func:`crossfit_folds` draws K folds stratified by treatment (every fold holds ``n_arm / K`` units of
each arm, up to one). :func:`crossfit_predictions` fits, for every fold, a propensity learner on the
other folds and outcome learners **per arm** (a T-learner, as DoubleML's interactive regression
model), and predicts on the fold; per-arm outcome models let the effect vary with X without the
learner having to find T's interaction with every feature. :func:`crossfit` feeds the predictions to
:func:`~textcause.estimators.aipw` or :func:`~textcause.estimators.tmle`.

Learners are scikit-learn estimators: an unfitted estimator (cloned for every fit) or a zero-argument
factory returning one. The propensity learner needs ``fit`` and ``predict_proba``; the outcome learner
``fit`` and ``predict_proba`` for a binary outcome or ``fit`` and ``predict`` for a continuous one. An
arm whose training outcomes are constant predicts that constant without fitting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from textcause.estimators.tmle import OUTCOMES, tmle
from textcause.estimators.types import Estimate
from textcause.estimators.weighting import aipw
from textcause.validation import (
    as_1d_float,
    check_consistent_length,
    check_int,
    check_options,
    check_paired,
    check_that,
    check_treatment,
)

__all__ = [
    "CROSSFIT_ESTIMATORS",
    "CrossFitPredictions",
    "crossfit_folds",
    "crossfit_predictions",
    "crossfit",
]

#: The estimators :func:`crossfit` can feed.
CROSSFIT_ESTIMATORS: dict[str, Callable[..., Estimate]] = {"aipw": aipw, "tmle": tmle}


@dataclasses.dataclass(frozen=True, repr=False)
class CrossFitPredictions:
    """Out-of-fold nuisance predictions, one per unit.

    Attributes:
        propensity: P(T=1 | X) from the learner fitted without the unit's fold (not clipped).
        mu0: E[Y | T=0, X], from the outcome learner fitted on the other folds' untreated units.
        mu1: E[Y | T=1, X], from the outcome learner fitted on the other folds' treated units.
        folds: the fold of every unit, in ``0 .. n_folds - 1``.
        outcome: ``binary`` or ``continuous``: how the outcome learner was used.
    """

    propensity: np.ndarray
    mu0: np.ndarray
    mu1: np.ndarray
    folds: np.ndarray
    outcome: str

    def __repr__(self) -> str:
        n_folds = int(self.folds.max()) + 1 if self.folds.size else 0
        return f"CrossFitPredictions(n={self.folds.size}, n_folds={n_folds}, outcome={self.outcome!r})"


def crossfit_folds(t: Any, n_folds: int = 5, seed: int = 0) -> np.ndarray:
    """K folds stratified by treatment, drawn with ``numpy.random.default_rng(seed)``.

    Each arm's units are permuted and dealt to folds ``0, 1, ..., K-1, 0, 1, ...`` (the untreated
    first, the treated continuing where they stopped), so fold sizes differ by at most one and every
    fold holds both arms.

    Args:
        t: binary treatment, both classes present.
        n_folds: K, at least 2 and at most the size of the smaller arm.
        seed: seed of the permutations, >= 0.

    Returns:
        An int64 array with each unit's fold; the same ``(t, n_folds, seed)`` gives the same folds.

    Raises:
        ValueError: an invalid treatment, ``n_folds`` or ``seed``.
    """
    t = check_treatment(t, "t")
    smaller = int(min(np.count_nonzero(t), t.size - np.count_nonzero(t)))
    n_folds = check_int(n_folds, "n_folds", "crossfit_folds", low=2)
    if smaller < n_folds:
        raise ValueError(
            f"The 'n_folds' parameter of crossfit_folds must be at most the size of the smaller arm "
            f"({smaller} units), so that every fold holds both arms. Got {n_folds} instead."
        )
    seed = check_int(seed, "seed", "crossfit_folds", low=0)
    rng = np.random.default_rng(seed)
    folds = np.empty(t.size, dtype=np.int64)
    start = 0
    for arm in (0, 1):
        units = rng.permutation(np.flatnonzero(t == arm))
        folds[units] = (start + np.arange(units.size)) % n_folds
        start = (start + units.size) % n_folds
    return folds


def crossfit_predictions(
    x: Any,
    t: Any,
    y: Any,
    propensity_learner: Any,
    outcome_learner: Any,
    *,
    n_folds: int = 5,
    seed: int = 0,
    outcome: str = "auto",
) -> CrossFitPredictions:
    """K-fold out-of-fold propensity and per-arm outcome predictions.

    Args:
        x: features, an array or scipy sparse matrix with one row per unit (never modified).
        t: binary treatment per unit, both classes present.
        y: outcome per unit.
        propensity_learner: a scikit-learn classifier (``fit``, ``predict_proba``), or a
            zero-argument callable returning a new one.
        outcome_learner: a classifier (binary outcome) or regressor (continuous), or a callable
            returning one; fitted per arm.
        n_folds: K (see :func:`crossfit_folds`).
        seed: seed of the folds.
        outcome: ``binary`` (``predict_proba``), ``continuous`` (``predict``) or ``auto`` (binary
            when every Y is 0 or 1).

    Returns:
        :class:`CrossFitPredictions`.

    Raises:
        ValueError: invalid inputs or parameters, a learner without the methods it needs, or
            predictions that are not finite (propensities outside [0, 1]).
    """
    owner = "crossfit_predictions"
    check_paired(("x", x), ("t", t), ("y", y))
    t = check_treatment(t, "t")
    y = as_1d_float(y, "y")
    n = _n_rows(x, owner)
    check_consistent_length(np.empty(n), t, y)
    outcome = check_options(outcome, "outcome", owner, OUTCOMES)
    zero_one = bool(np.all((y == 0.0) | (y == 1.0)))
    kind = outcome if outcome != "auto" else ("binary" if zero_one else "continuous")
    if kind == "binary" and not zero_one:
        raise ValueError(
            f"The outcome 'y' of {owner} must be 0/1 for outcome='binary' (the outcome learner is a "
            "classifier): pass outcome='continuous' for other outcomes."
        )
    make_g = _factory(propensity_learner, "propensity_learner", owner, ("fit", "predict_proba"))
    make_q = _factory(
        outcome_learner, "outcome_learner", owner, ("fit", "predict_proba" if kind == "binary" else "predict")
    )
    folds = crossfit_folds(t, n_folds, seed)
    propensity, mu0, mu1 = np.empty(n), np.empty(n), np.empty(n)
    for k in range(int(folds.max()) + 1):
        held = np.flatnonzero(folds == k)
        train = np.flatnonzero(folds != k)
        x_held = _rows(x, held)
        propensity[held] = _predict(make_g, _rows(x, train), t[train], x_held, "binary")
        for arm, out in ((0, mu0), (1, mu1)):
            units = train[t[train] == arm]
            out[held] = _predict(make_q, _rows(x, units), y[units], x_held, kind)
    for name, arr in (("propensity", propensity), ("mu0", mu0), ("mu1", mu1)):
        if not np.all(np.isfinite(arr)) or (name == "propensity" and (arr.min() < 0.0 or arr.max() > 1.0)):
            learner = "propensity_learner" if name == "propensity" else "outcome_learner"
            raise ValueError(
                f"The '{learner}' of {owner} gave {name} predictions that are not finite"
                f"{' probabilities' if name == 'propensity' else ''}: check the learner and the features."
            )
    return CrossFitPredictions(propensity=propensity, mu0=mu0, mu1=mu1, folds=folds, outcome=kind)


def crossfit(
    x: Any,
    t: Any,
    y: Any,
    propensity_learner: Any,
    outcome_learner: Any,
    *,
    estimator: str = "aipw",
    n_folds: int = 5,
    seed: int = 0,
    outcome: str = "auto",
    **kwargs: Any,
) -> Estimate:
    """Cross-fitted AIPW or TMLE: :func:`crossfit_predictions`, then the estimator on them.

    Args:
        x: as for :func:`crossfit_predictions`.
        t: as for :func:`crossfit_predictions`.
        y: as for :func:`crossfit_predictions`.
        propensity_learner: as for :func:`crossfit_predictions`.
        outcome_learner: as for :func:`crossfit_predictions`.
        n_folds: as for :func:`crossfit_predictions`.
        seed: as for :func:`crossfit_predictions`.
        outcome: as for :func:`crossfit_predictions`.
        estimator: ``aipw`` or ``tmle``.
        **kwargs: passed to the estimator (``clip``, ``level``; ``fluctuation``, ``bound`` for tmle).

    Returns:
        The estimator's ``Estimate``, with ``details['crossfit'] = {n_folds, seed, outcome}`` and the
        predictions in ``details['predictions']`` (a :class:`CrossFitPredictions`).

    Raises:
        ValueError: as :func:`crossfit_predictions` and the estimator.
    """
    fn = CROSSFIT_ESTIMATORS[check_options(estimator, "estimator", "crossfit", list(CROSSFIT_ESTIMATORS))]
    pred = crossfit_predictions(
        x, t, y, propensity_learner, outcome_learner, n_folds=n_folds, seed=seed, outcome=outcome
    )
    if estimator == "tmle":
        kwargs.setdefault("outcome", pred.outcome)
    est = fn(t, y, pred.propensity, pred.mu0, pred.mu1, **kwargs)
    info = {"n_folds": int(pred.folds.max()) + 1, "seed": seed, "outcome": pred.outcome}
    return dataclasses.replace(
        est, method=f"{est.method}_crossfit", details={**est.details, "crossfit": info, "predictions": pred}
    )


def _n_rows(x: Any, owner: str) -> int:
    """The number of rows of a 2-D array or sparse matrix ``x``."""
    shape = getattr(x, "shape", None)
    if shape is None:
        x = np.asarray(x)
        shape = x.shape
    check_that(len(shape) == 2 and shape[0] > 0, f"an object with shape {tuple(shape)}", "x", owner,
               "a 2-D array or sparse matrix with one row per unit")  # fmt: skip
    return int(shape[0])


def _rows(x: Any, idx: np.ndarray) -> Any:
    """Rows ``idx`` of an array, sparse matrix or anything ``numpy.asarray`` takes."""
    if not hasattr(x, "shape"):
        x = np.asarray(x)
    return x[idx]


def _factory(learner: Any, name: str, owner: str, methods: tuple[str, ...]) -> Callable[[], Any]:
    """A zero-argument callable giving a fresh, unfitted learner with ``methods``."""
    if not isinstance(learner, type) and all(hasattr(learner, m) for m in methods):
        from sklearn.base import clone

        return lambda: clone(learner)
    requirement = f"a scikit-learn estimator with {' and '.join(methods)}, or a callable returning one"
    check_that(isinstance(learner, type) or (callable(learner) and not hasattr(learner, "fit")), learner, name,
               owner, requirement)  # fmt: skip
    made = learner()
    check_that(all(hasattr(made, m) for m in methods), learner, name, owner, requirement)
    factory: Callable[[], Any] = learner
    return factory


def _predict(make: Callable[[], Any], x_fit: Any, target: np.ndarray, x_new: Any, kind: str) -> np.ndarray:
    """Fit a fresh learner on ``(x_fit, target)`` and predict on ``x_new``: P(target=1) or E[target]."""
    n_new: int = x_new.shape[0]
    values = np.unique(target)
    if values.size == 1:  # a constant target: no learner can (or needs to) be fitted
        return np.full(n_new, float(values[0]))
    model = make().fit(x_fit, target)
    if kind == "binary":
        classes = list(np.asarray(model.classes_, dtype=np.float64))
        return np.asarray(model.predict_proba(x_new), dtype=np.float64)[:, classes.index(1.0)]
    return np.asarray(model.predict(x_new), dtype=np.float64).reshape(n_new)

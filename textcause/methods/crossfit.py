"""Ready-made effect methods: K-fold cross-fitted AIPW and TMLE (double machine learning) on n-grams.

:class:`CrossFitEffect` is an :class:`~textcause.methods.EffectMethod` around
:func:`textcause.estimators.crossfit`: it receives every user the task keeps as a sparse n-gram
matrix, cross-fits a logistic-regression propensity model and one outcome model per arm in K folds
stratified by treatment, and returns AIPW's or TMLE's estimate with its influence-function interval
(estimator labels ``dml_aipw`` / ``dml_tmle``). ``C="auto"`` (the default) chooses each nuisance
model's penalty from :data:`C_GRID` by :data:`CV_FOLDS`-fold cross-validated log-loss, recorded in
``Estimate.details["penalty"]``; ``outcome="auto"`` treats an all-0/1 outcome as binary.
:class:`CrossFitAIPW` and :class:`CrossFitTMLE` need no arguments, so a grid loads them by name
(``--method textcause.methods.crossfit:CrossFitAIPW``). scikit-learn is imported when a method
estimates. Details and measured choices: docs/methods.md, "Ready-made: cross-fitted AIPW and TMLE".
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from textcause.estimators.crossfit import (
    CROSSFIT_ESTIMATORS,
    CrossFitPredictions,
    crossfit,
    crossfit_folds,
    crossfit_predictions,
)
from textcause.estimators.types import Estimate
from textcause.estimators.weighting import check_clip
from textcause.features.kinds import NGRAM_KINDS
from textcause.methods.protocols import EffectResult, method_name
from textcause.methods.protocols import representation_options as check_representation_options
from textcause.validation import (
    as_1d_float,
    check_consistent_length,
    check_int,
    check_options,
    check_real,
    check_treatment,
)

__all__ = [
    "CV_FOLDS",
    "C_GRID",
    "CrossFitAIPW",
    "CrossFitEffect",
    "CrossFitTMLE",
    "DEFAULT_C",
    "LABELS",
    "MAX_ITER",
    "OUTCOMES",
    "cross_validated_C",
]

#: The default ``C``: chosen per nuisance model by cross-validated log-loss (see the module docstring).
DEFAULT_C = "auto"
#: The inverse L2 penalties ``C="auto"`` chooses from (ridge: ``alpha = 1 / C``), strongest first.
C_GRID = (0.001, 0.003, 0.01, 0.03, 0.1)
#: The folds of the cross-validation that chooses C (drawn independently of the cross-fitting folds).
CV_FOLDS = 3
#: The default propensity clipping: propensities are trimmed to [0.01, 0.99] (weights at most 100).
_DEFAULT_CLIP = 0.01
#: What ``outcome`` may be.
OUTCOMES = ("auto", "binary", "continuous")
#: The estimator label of each doubly robust estimator's rows.
LABELS = {"aipw": "dml_aipw", "tmle": "dml_tmle"}
#: Iterations of L-BFGS for the logistic regressions (scikit-learn's default of 100 is too few on n-grams).
MAX_ITER = 1000


class CrossFitEffect:
    """Cross-fitted AIPW or TMLE with logistic-regression nuisances on an n-gram representation.

    Args:
        doubly_robust: the estimator fed with the out-of-fold predictions, ``aipw`` or ``tmle``.
        C: ``"auto"`` (choose each nuisance model's inverse L2 penalty from :data:`C_GRID` by
            cross-validated log-loss, see the module docstring), or an inverse L2 penalty (> 0) for
            the propensity and outcome models alike (ridge: ``alpha = 1 / C``).
        n_folds: K, the cross-fitting folds (>= 2; at most the smaller arm's size).
        seed: seed of the cross-fitting folds and of the folds that choose C (>= 0).
        clip: propensities are trimmed to ``[clip, 1 - clip]`` before the estimator, in
            [MIN_CLIP, 0.5], or None for no clipping (the estimator then refuses weights above
            :data:`~textcause.validation.MAX_WEIGHT`).
        level: coverage of the influence-function interval, in (0, 1).
        outcome: ``auto``, ``binary`` or ``continuous`` (see the module docstring).
        representation: the n-gram representation ``X`` is given in, one of
            :data:`~textcause.features.kinds.NGRAM_KINDS`.
        representation_options: e.g. ``{"min_users": 10}`` (see :mod:`textcause.methods.protocols`).
        name: the name of its rows and cells; default ``crossfit_<estimator>_lr_<representation>``.

    Raises:
        ValueError: a parameter outside its range.
    """

    def __init__(
        self,
        doubly_robust: str = "aipw",
        *,
        C: float | str = DEFAULT_C,
        n_folds: int = 5,
        seed: int = 0,
        clip: float | None = _DEFAULT_CLIP,
        level: float = 0.95,
        outcome: str = "auto",
        representation: str = "bigram_binary",
        representation_options: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        owner = type(self).__name__
        self.doubly_robust = check_options(doubly_robust, "doubly_robust", owner, list(CROSSFIT_ESTIMATORS))
        self.C = _check_C(C, owner)
        self.n_folds = check_int(n_folds, "n_folds", owner, low=2)
        self.seed = check_int(seed, "seed", owner, low=0)
        self.clip = None if clip is None else check_clip(clip, owner)
        self.level = check_real(level, "level", owner, low=0.0, high=1.0, low_open=True, high_open=True)
        self.outcome = check_options(outcome, "outcome", owner, OUTCOMES)
        self.representation = check_options(representation, "representation", owner, NGRAM_KINDS)
        self.representation_options = dict(representation_options or {})
        self.name = name or f"crossfit_{self.doubly_robust}_lr_{self.representation}"
        self.estimator = LABELS[self.doubly_robust]
        method_name(self)
        check_representation_options(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(C={self.C!r}, n_folds={self.n_folds}, name={self.name!r})"

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters (they enter the cell's configuration hash)."""
        return {
            "doubly_robust": self.doubly_robust,
            "C": self.C,
            "n_folds": self.n_folds,
            "seed": self.seed,
            "clip": self.clip,
            "level": self.level,
            "outcome": self.outcome,
            "representation": self.representation,
            "representation_options": dict(self.representation_options),
            "name": self.name,
        }

    def outcome_kind(self, y: Any) -> str:
        """``binary`` or ``continuous``: ``outcome`` unless ``auto``, then binary iff every Y is 0 or 1."""
        if self.outcome != "auto":
            return self.outcome
        y = as_1d_float(y, "y")
        return "binary" if bool(((y == 0.0) | (y == 1.0)).all()) else "continuous"

    def crossfit_estimate(self, X: Any, t: Any, y: Any) -> Estimate:
        """The full :class:`~textcause.estimators.Estimate` of :func:`textcause.estimators.crossfit`
        (``details``: ``se``, ``n_clipped``, ``crossfit``, the out-of-fold ``predictions``, and
        ``penalty``: ``{"C": self.C, "propensity": C, "mu0": C, "mu1": C}``, the inverse penalty each
        nuisance model was cross-fitted with, None for an arm with a constant outcome; with
        ``C="auto"`` also ``"grid"`` (:data:`C_GRID`) and ``"cv_folds"`` (:data:`CV_FOLDS`)).

        Raises:
            ValueError: inconsistent inputs, a binary ``outcome`` with other values, too few units
                of an arm for ``n_folds``, or extreme weights without ``clip``.
        """
        kind = self.outcome_kind(y)
        if self.C == "auto":
            chosen = self.choose_C(X, t, y)
            penalty: dict[str, Any] = {"C": "auto", **chosen, "grid": C_GRID, "cv_folds": CV_FOLDS}
        else:
            chosen = dict.fromkeys(("propensity", "mu0", "mu1"), self.C)
            penalty = {"C": self.C, **chosen}
        est = self._crossfit_with(X, t, y, kind, chosen)
        return dataclasses.replace(est, details={**est.details, "penalty": penalty})

    def choose_C(self, X: Any, t: Any, y: Any) -> dict[str, float | None]:
        """The inverse penalties ``C="auto"`` cross-fits with: ``{"propensity", "mu0", "mu1"}`` (see the
        module docstring), each from :data:`C_GRID`; None for an arm whose outcome is constant.

        Raises:
            ValueError: the input errors of :meth:`crossfit_estimate`, raised before any fit.
        """
        kind = self.outcome_kind(y)
        t, y = check_treatment(t, "t"), as_1d_float(y, "y")
        x = X if hasattr(X, "shape") else np.asarray(X)
        check_consistent_length(np.empty(x.shape[0]), t, y)
        crossfit_folds(t, self.n_folds, self.seed)  # too few units of an arm for n_folds
        if kind == "binary" and not bool(np.all((y == 0.0) | (y == 1.0))):
            raise ValueError(
                f"The outcome 'y' of {type(self).__name__} must be 0/1 for outcome='binary' (the outcome "
                "model is a classifier): pass outcome='continuous' for other outcomes."
            )
        chosen: dict[str, float | None] = {"propensity": cross_validated_C(x, t, "binary", self.seed)}
        for arm in (0, 1):
            rows = np.flatnonzero(t == arm)
            chosen[f"mu{arm}"] = cross_validated_C(x[rows], y[rows], kind, self.seed)
        return chosen

    def _crossfit_with(self, X: Any, t: Any, y: Any, kind: str, chosen: dict[str, float | None]) -> Estimate:
        """Cross-fit with the inverse penalties ``chosen`` (one per nuisance model)."""
        kwargs: dict[str, Any] = {"clip": self.clip, "level": self.level}
        propensity = _learner("binary", chosen["propensity"])
        arms = {chosen[m] for m in ("mu0", "mu1") if chosen[m] is not None}  # None: a constant arm, never fitted
        if len(arms) <= 1:  # one outcome model serves both arms (a number C always)
            outcome_model = _learner(kind, arms.pop() if arms else C_GRID[0])
            return crossfit(X, t, y, propensity, outcome_model, estimator=self.doubly_robust,
                            n_folds=self.n_folds, seed=self.seed, outcome=kind, **kwargs)  # fmt: skip
        # The arms need different penalties, and crossfit_predictions fits one outcome learner for
        # both: run it once per arm with the other arm's outcome set to 0, a constant it predicts
        # without fitting, so every model is fitted once, on the same folds (same t, n_folds, seed).
        from sklearn.dummy import DummyClassifier

        t_arr, y_arr = check_treatment(t, "t"), as_1d_float(y, "y")
        runs = [
            crossfit_predictions(
                X,
                t_arr,
                np.where(t_arr == arm, y_arr, 0.0),
                g,
                _learner(kind, chosen[f"mu{arm}"]),
                n_folds=self.n_folds,
                seed=self.seed,
                outcome=kind,
            )
            for arm, g in ((0, propensity), (1, DummyClassifier(strategy="prior")))
        ]
        pred = CrossFitPredictions(propensity=runs[0].propensity, mu0=runs[0].mu0, mu1=runs[1].mu1,
                                   folds=runs[0].folds, outcome=kind)  # fmt: skip
        if self.doubly_robust == "tmle":
            kwargs["outcome"] = kind
        est = CROSSFIT_ESTIMATORS[self.doubly_robust](t_arr, y_arr, pred.propensity, pred.mu0, pred.mu1, **kwargs)
        info = {"n_folds": int(pred.folds.max()) + 1, "seed": self.seed, "outcome": kind}
        return dataclasses.replace(  # as textcause.estimators.crossfit does
            est, method=f"{est.method}_crossfit", details={**est.details, "crossfit": info, "predictions": pred}
        )

    def estimate(self, X: Any, t: Any, y: Any) -> EffectResult:
        """ATE = E[Y(1)] - E[Y(0)] with its influence-function interval at ``level``."""
        est = self.crossfit_estimate(X, t, y)
        return EffectResult(float(est.ate), est.ci_low, est.ci_high)


def _check_C(C: Any, owner: str) -> float | str:
    """``"auto"``, or ``C`` as a float > 0; else the ValueError naming ``owner``."""
    if isinstance(C, str) and C == "auto":
        return C
    try:
        return check_real(C, "C", owner, low=0.0, low_open=True)
    except ValueError:
        raise ValueError(f"The 'C' parameter of {owner} must be 'auto' or a float > 0.0. Got {C!r} instead.") from None


def cross_validated_C(x: Any, target: np.ndarray, kind: str, seed: int) -> float | None:
    """The C of :data:`C_GRID` with the best :data:`CV_FOLDS`-fold cross-validated score on ``(x, target)``.

    ``binary``: ``LogisticRegressionCV`` with ``StratifiedKFold(CV_FOLDS, shuffle=True,
    random_state=seed)`` and ``neg_log_loss``, the C of the best mean score over the folds (as its
    ``refit=True`` picks it; no refit is needed here). ``continuous``: ``RidgeCV`` over ``alpha = 1 /
    C`` with ``KFold`` and ``neg_mean_squared_error``. Ties go to the stronger penalty. A constant
    target gives None (nothing to fit); a class (or a continuous target) with fewer than
    :data:`CV_FOLDS` units, which cannot be cross-validated, gives the strongest penalty, ``C_GRID[0]``.
    """
    from sklearn.linear_model import LogisticRegressionCV, RidgeCV
    from sklearn.model_selection import KFold, StratifiedKFold

    values, counts = np.unique(target, return_counts=True)
    if values.size == 1:
        return None
    if (counts.min() if kind == "binary" else target.size) < CV_FOLDS:
        return C_GRID[0]
    if kind == "binary":
        model = LogisticRegressionCV(
            Cs=list(C_GRID),
            l1_ratios=(0.0,),
            cv=StratifiedKFold(CV_FOLDS, shuffle=True, random_state=seed),
            scoring="neg_log_loss",
            solver="lbfgs",
            max_iter=MAX_ITER,
            refit=False,
            use_legacy_attributes=False,
        ).fit(x, target)
        scores = np.asarray(model.scores_).reshape(CV_FOLDS, len(C_GRID))  # (folds, Cs); one l1_ratio
        return float(np.asarray(model.Cs_)[int(np.argmax(scores.mean(axis=0)))])
    alphas = [1.0 / c for c in C_GRID]
    model = RidgeCV(alphas=alphas, cv=KFold(CV_FOLDS, shuffle=True, random_state=seed),
                    scoring="neg_mean_squared_error").fit(x, target)  # fmt: skip
    return C_GRID[alphas.index(model.alpha_)]


def _learner(kind: str, C: float) -> Any:
    """An unfitted nuisance model with inverse penalty ``C``: logistic (binary) or ridge (continuous)."""
    from sklearn.linear_model import LogisticRegression, Ridge

    if kind == "binary":
        return LogisticRegression(C=C, solver="lbfgs", max_iter=MAX_ITER)
    return Ridge(alpha=1.0 / C)


class CrossFitAIPW(CrossFitEffect):
    """Cross-fitted AIPW (rows ``dml_aipw``, name ``crossfit_aipw_lr_bigram_binary``); keyword
    arguments as :class:`CrossFitEffect`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("aipw", **kwargs)


class CrossFitTMLE(CrossFitEffect):
    """Cross-fitted TMLE (rows ``dml_tmle``, name ``crossfit_tmle_lr_bigram_binary``); keyword
    arguments as :class:`CrossFitEffect`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("tmle", **kwargs)

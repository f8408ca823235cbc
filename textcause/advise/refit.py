"""The recommended model x estimator, refit on any ``(t, y, X)``: what the refuters and sensitivity rerun.

The refuters (:mod:`textcause.sensitivity`) need ``estimate(t, y, X, rng) -> (point, low, high)``
that refits the recommended method on altered data, many times; the recommended model's own
training run (a Lightning fit on the study's 40% training users) is too slow and too tied to the
study's split for that. :func:`plan_for` reads what the model is and what it chose, and
:class:`RefitPlan` refits its propensity model with scikit-learn as closely as that allows:

* ``unadjusted``: a constant propensity, the training users' treated share (exact);
* an L-BFGS logistic regression (``PropensityModel`` over a ``LogisticRegression`` net, ``lr_*``):
  scikit-learn's L2 logistic regression (lbfgs) on the same representation with
  ``C = 1 / (weight_decay x n_train)``, the same per-user penalty (the torch loss is the mean
  log-loss plus ``weight_decay / 2 ||w||^2``); the intercept goes unpenalised (exact up to that);
* the tuned logistic regression (``TunedLogisticRegression``, ``lr_tuned_*``): the penalty kind, C
  and l1_ratio it chose on validation (read from its result rows' ``tuned`` column, else from its
  checkpoint), with the same solvers (``textcause.models.tuned_lr``'s own estimator: L2 by
  liblinear's primal solver) and the same max-abs feature scaling; C is rescaled to each fold's size so that the penalty per user is
  the one chosen (exact up to that);
* any other model (a network, a joint model, a hierarchical encoder model) or an outside method:
  *approximated* by the L2 logistic regression with its weight decay (``C = 1`` without one), on its
  representation when that is an n-gram or topic one, else on ``bigram_binary``; the report says so.

Every refit is cross-fitted in :data:`FOLDS` folds (each user's propensity from a model that did
not see them; the study's own run predicts its 50% test users from its 40% training users), then
the recommended estimator from :mod:`textcause.estimators.registry` gives the point and a
percentile bootstrap interval (:func:`textcause.estimators.bootstrap_ci`), as the study's estimate.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from textcause.features.kinds import NGRAM_KINDS
from textcause.sensitivity import EstimateFn

__all__ = ["FOLDS", "RefitPlan", "folds_of", "plan_for", "tuned_of"]

#: Cross-fitting folds of every refit.
FOLDS = 5
#: Propensities are clamped to ``[EPS, 1 - EPS]``, as the models clamp theirs.
EPS = 1e-6
#: The representation an approximated model is refit on when its own is not an n-gram or topic one.
FALLBACK_REPRESENTATION = "bigram_binary"


@dataclass(frozen=True)
class RefitPlan:
    """How the recommended model's propensity model is refit (see the module docstring).

    Attributes:
        model: the recommended model's name.
        representation: the features refit on (``none``: no features).
        kind: ``constant`` (the treated share) or ``logistic`` (scikit-learn).
        penalty: ``l1``, ``l2`` or ``elasticnet``.
        c_per_user: the penalty's strength as ``C x n_train`` (``C = c_per_user / n`` on ``n`` users).
        l1_ratio: the elastic net's mixing (1 for l1, 0 for l2).
        scale: ``maxabs`` (columns divided by their largest training value) or ``none``.
        solver: ``lbfgs`` (the L-BFGS models' objective) or ``tuned`` (the tuned LR's solvers).
        approximated: whether the refit only approximates the model.
        note: one sentence saying exactly what is refit.
    """

    model: str
    representation: str
    kind: str
    penalty: str = "l2"
    c_per_user: float = 1.0
    l1_ratio: float = 0.0
    scale: str = "none"
    solver: str = "lbfgs"
    approximated: bool = False
    note: str = ""

    def learner(self, n: int, seed: int = 0) -> Any:
        """A fresh scikit-learn ``LogisticRegression`` for ``n`` training users (None for ``constant``)."""
        from sklearn.linear_model import LogisticRegression

        if self.kind == "constant":
            return None
        c = self.c_per_user / max(n, 1)
        if self.solver == "lbfgs":
            return LogisticRegression(C=c, solver="lbfgs", max_iter=1000)
        from textcause.models.tuned_lr import _estimator

        return _estimator(self.penalty, self.l1_ratio, c, seed)  # the tuned LR's own solvers (L2: primal)

    def fit_predict(self, X: Any, t: np.ndarray, train: np.ndarray, test: np.ndarray, seed: int = 0) -> np.ndarray:
        """Fit on the ``train`` rows; ``P(T=1 | x)`` of the ``test`` rows, clamped to ``[EPS, 1 - EPS]``."""
        if self.kind == "constant" or X is None:
            return np.full(test.size, np.clip(float(np.mean(t[train])), EPS, 1 - EPS))
        x_train, x_test = X[train], X[test]
        if self.scale == "maxabs":
            x_train, x_test = _maxabs(x_train, x_test)
        model = self.learner(train.size, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning at weak penalties, as the tuned LR's own fits
            model.fit(x_train, t[train].astype(np.int64))
        return np.clip(model.predict_proba(x_test)[:, 1], EPS, 1 - EPS)

    def propensity(
        self, t: np.ndarray, X: Any, folds: list[tuple[np.ndarray, np.ndarray]], seed: int = 0
    ) -> np.ndarray:
        """Cross-fitted propensities: each fold's users from a model fitted on the other folds."""
        g = np.empty(t.size)
        for train, test in folds:
            g[test] = self.fit_predict(X, t, train, test, seed)
        return g

    def estimate_fn(self, estimator: str, *, n_boot: int = 200, folds: int = FOLDS) -> EstimateFn:
        """``estimate(t, y, X, rng) -> (point, low, high)``: cross-fitted propensities, then ``estimator``
        with a percentile bootstrap interval of ``n_boot`` replicates (widened to hold the point,
        which a percentile interval of a biased estimator can miss).

        >>> plan = RefitPlan("m", "unigram_binary", "logistic", c_per_user=100.0)
        >>> rng = np.random.default_rng(0); x = rng.normal(size=(300, 2)); t = (rng.random(300) < 0.5).astype(float)
        >>> point, low, high = plan.estimate_fn("ipw", n_boot=50)(t, 0.5 * t + rng.normal(size=300), x, rng)
        >>> bool(low < 0.5 < high)
        True
        """
        from threadpoolctl import threadpool_limits

        from textcause.estimators import bootstrap_ci
        from textcause.estimators.registry import estimator_kwargs

        kwargs = estimator_kwargs(estimator)

        def estimate(t: Any, y: Any, X: Any, rng: np.random.Generator) -> tuple[float, float, float]:
            t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
            seed = int(rng.integers(2**31))
            with threadpool_limits(1, user_api="blas"):  # small fits: a threaded BLAS only waits on a shared machine
                p = None if estimator == "unadjusted" else self.propensity(t, X, folds_of(t, folds, seed), seed)
            est = bootstrap_ci(estimator, t, y, p, n_boot=max(n_boot, 1), seed=seed, **kwargs)
            point = float(est.ate)
            return point, min(float(est.ci_low), point), max(float(est.ci_high), point)

        return estimate


def folds_of(t: np.ndarray, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``k`` stratified folds of the users as ``(train, test)`` index pairs (fewer when an arm is smaller)."""
    from sklearn.model_selection import StratifiedKFold

    t = np.asarray(t).astype(np.int64)
    k = max(2, min(k, int(np.bincount(t, minlength=2).min())))
    split = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(np.zeros(t.size), t)
    return [(np.asarray(a), np.asarray(b)) for a, b in split]


def _maxabs(x_train: Any, x_test: Any) -> tuple[Any, Any]:
    from sklearn.preprocessing import MaxAbsScaler

    scaler = MaxAbsScaler().fit(x_train)
    return scaler.transform(x_train), scaler.transform(x_test)


def _weight_decay(config: dict[str, Any], overrides: dict[str, Any]) -> float:
    init = ((config.get("model") or {}).get("init_args") or {}) if isinstance(config.get("model"), dict) else {}
    return float(overrides.get("model.init_args.weight_decay", init.get("weight_decay", 0.0)) or 0.0)


def tuned_of(record: dict[str, Any]) -> str | None:
    """The ``tuned`` column of an observe record's rows (what a tuned model chose, JSON), or None."""
    return next((str(r["tuned"]) for r in record.get("rows") or [] if r.get("tuned")), None)


def _searched(tuned: str | None) -> dict[str, Any]:
    """The options a searched model chose (its rows' ``tuned`` JSON, as a grid's or a study's ``tune:``
    records it); ``{}`` for none."""
    import json

    if not tuned:
        return {}
    try:
        row = json.loads(tuned)
    except ValueError:
        return {}
    return row if isinstance(row, dict) else {}


def _tuned_choice(checkpoint: str | None, tuned: str | None = None) -> dict[str, Any]:
    """What a ``TunedLogisticRegression`` chose (``{"penalty", "C", "l1_ratio"}``, and ``feature_scaling``
    when read from its checkpoint).

    From ``tuned``, the ``tuned`` column of its result rows (:func:`tuned_of`), when given; else from
    its checkpoint, read through :func:`textcause.io.load_torch` (plain values and tensors only): the
    choice is the module's extra state, its scaling a hyperparameter. ``{}`` when neither holds one.
    """
    import json

    from textcause.io import load_torch

    if tuned:
        row = json.loads(tuned)
        if isinstance(row, dict) and {"penalty", "C"} <= set(row):
            return {k: row[k] for k in ("penalty", "C", "l1_ratio") if k in row}
    if not checkpoint or not Path(checkpoint).is_file():
        return {}
    ckpt = load_torch(checkpoint)
    state = ckpt.get("state_dict", {}).get("_extra_state") if isinstance(ckpt, dict) else None
    if not (isinstance(state, dict) and {"penalty", "C", "l1_ratio"} <= set(state)):
        return {}
    chosen: dict[str, Any] = {"penalty": state["penalty"], "C": state["C"]}
    if state["penalty"] == "elasticnet":
        chosen["l1_ratio"] = state["l1_ratio"]
    scaling = (ckpt.get("hyper_parameters") or {}).get("feature_scaling", "maxabs")
    return {**chosen, "feature_scaling": scaling}


def plan_for(
    model: str,
    config: str | Path | None,
    *,
    overrides: dict[str, Any] | None = None,
    n_train: int,
    checkpoint: str | None = None,
    tuned: str | None = None,
) -> RefitPlan:
    """How to refit the recommended model (see the module docstring).

    Args:
        model: its name; config: its model config YAML (None: an outside method, approximated).
        overrides: the study's dotted overrides for it (``model.init_args.weight_decay``, ``data.*``).
        n_train: the users its own run trained on (the study's training split).
        checkpoint: its run's checkpoint (the tuned LR's choice is read from it without ``tuned``).
        tuned: the tuned LR's choice as its result rows record it (:func:`tuned_of`); its feature
            scaling is then the config's (``model.init_args.feature_scaling``, default ``maxabs``).
            For a searched network, the weight decay it chose replaces its config's in the stand-in.

    >>> plan_for("unadjusted", None, n_train=100).kind
    'constant'
    """
    overrides = dict(overrides or {})
    cfg = yaml.safe_load(Path(config).read_text(encoding="utf-8")) if config is not None else {}
    cfg = cfg or {}
    rep = str(overrides.get("data.representation", (cfg.get("data") or {}).get("representation", "bigram_binary")))
    cls = str((cfg.get("model") or {}).get("class_path", ""))
    text = yaml.safe_dump(cfg.get("model") or {})
    if model == "unadjusted" or "UnadjustedModel" in cls or (config is not None and rep == "none"):
        note = "a constant propensity (each fold's treated share), as the unadjusted model: exact, no features."
        return RefitPlan(model, "none", "constant", note=note)
    own_rep = rep in NGRAM_KINDS
    feats = rep if own_rep else FALLBACK_REPRESENTATION
    wd = _weight_decay(cfg, overrides)
    searched = _searched(tuned)
    if "model.init_args.weight_decay" in searched:  # a searched network: the decay it chose, not its YAML's
        wd = float(searched["model.init_args.weight_decay"] or 0.0)
    optimizer = str(((cfg.get("model") or {}).get("init_args") or {}).get("optimizer", "adam"))
    if cls.endswith("TunedLogisticRegression"):
        chosen = _tuned_choice(checkpoint, tuned)
        if chosen:
            init = (cfg.get("model") or {}).get("init_args") or {}
            own = overrides.get("model.init_args.feature_scaling", init.get("feature_scaling", "maxabs"))
            chosen.setdefault("feature_scaling", own)
            c, penalty = float(chosen["C"]), str(chosen["penalty"])
            ratio = float(chosen.get("l1_ratio", 1.0 if penalty == "l1" else 0.0))
            scale = "maxabs" if chosen.get("feature_scaling", "maxabs") == "maxabs" else "none"
            note = (
                f"scikit-learn's logistic regression with the penalty the tuned model chose on validation "
                f"({penalty}, C = {c:g} on its {n_train} training users, rescaled to each fold's size"
                f"{f', l1_ratio {ratio:g}' if penalty == 'elasticnet' else ''}), its solver and {scale} scaling, "
                f"on its {feats} features."
            )
            return RefitPlan(model, feats, "logistic", penalty, c * n_train, ratio, scale, "tuned", note=note)
    exact = own_rep and cls.endswith("PropensityModel") and optimizer == "lbfgs" and "LogisticRegression" in text
    c_per_user = 1.0 / wd if wd > 0 else float(n_train)
    strength = f"C = 1 / (weight decay {wd:g} x training users)" if wd > 0 else "C = 1"
    if exact:
        note = (
            f"scikit-learn's L2 logistic regression (lbfgs, {strength}: the model's own penalty per user, "
            f"its intercept unpenalised) on its {feats} features."
        )
        return RefitPlan(model, feats, "logistic", c_per_user=c_per_user, note=note)
    what = "an outside method" if config is None else f"the model ({cls.rsplit('.', 1)[-1] or 'unknown'})"
    if cls.endswith("TunedLogisticRegression"):
        what += ", whose checkpoint with its chosen penalty was not found,"
    note = (
        f"approximated: {what} is refit as scikit-learn's L2 logistic regression (lbfgs, {strength}) on "
        f"{'its' if own_rep else 'the'} {feats} features{'' if own_rep else f' (its own are {rep})'}."
    )
    return RefitPlan(model, feats, "logistic", c_per_user=c_per_user, approximated=True, note=note)

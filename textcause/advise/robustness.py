"""Stages 3 and 4: refute the recommended estimate and measure its sensitivity to hidden confounding.

INTEGRATION POINT (textcause.sensitivity, being written beside this room). The refuters (placebo
treatment, random common cause, subsample stability), the Austen plot, the robustness value and the
E-value live in :mod:`textcause.sensitivity`; this module only assembles their inputs and calls
them. Until that package is merged, :func:`robustness` returns ``{"status": "pending", ...}`` and the
report says so; after the merge, replace the ``importlib`` lookup below by a plain
``from textcause.sensitivity import ...`` (and check the names against its ``__all__``) so the
layering test sees the import. What this module hands over:

* ``estimate(t, y, X, rng) -> (point, low, high)``: the recommended pair re-estimated on any
  treatment / outcome / covariates (:func:`estimator_for`): a propensity model of the recommended
  representation (an L2 logistic regression, scikit-learn, cross-fitted in two folds so each user's
  propensity comes from a model that did not see them) and the recommended estimator from the
  estimator registry, with a percentile bootstrap interval;
* ``t``, ``y``, ``X`` of the study's users (X: the representation's features of their text), the
  outcome kind (binary or not) and whether an E-value was asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["SENSITIVITY_MODULE", "estimator_for", "robustness"]

SENSITIVITY_MODULE = "textcause.sensitivity"
Estimate = Callable[[np.ndarray, np.ndarray, Any, np.random.Generator], tuple[float, float, float]]


def estimator_for(estimator: str, *, n_boot: int = 200, clip: float = 0.01) -> Estimate:
    """``estimate(t, y, X, rng) -> (point, low, high)`` with cross-fitted L2 logistic propensities.

    Args:
        estimator: a propensity estimator name of :mod:`textcause.estimators.registry`.
        n_boot: percentile bootstrap replicates of the interval (0: the point only, low = high = point).
        clip: propensities are clipped to ``[clip, 1 - clip]`` before the estimator.

    >>> rng = np.random.default_rng(0); x = rng.normal(size=(400, 2)); t = (rng.random(400) < 0.5).astype(float)
    >>> point, low, high = estimator_for("ipw", n_boot=50)(t, 0.3 * t + rng.normal(size=400), x, rng)
    >>> low < 0.3 < high
    True
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    from textcause.estimators.registry import estimator_kwargs, get_estimator

    fn, kwargs = get_estimator(estimator, "estimator_for"), estimator_kwargs(estimator)

    def run_estimator(t: np.ndarray, y: np.ndarray, p: np.ndarray) -> float:
        return float(fn(t, y, p, **kwargs).ate)

    def propensity(t: np.ndarray, X: Any, rng: np.random.Generator) -> np.ndarray:
        p = np.empty(len(t))
        folds = StratifiedKFold(n_splits=2, shuffle=True, random_state=int(rng.integers(2**31)))
        for train, test in folds.split(np.zeros(len(t)), t):
            model = LogisticRegression(C=1.0, max_iter=1000).fit(X[train], t[train])
            p[test] = model.predict_proba(X[test])[:, 1]
        return np.clip(p, clip, 1 - clip)

    def estimate(t: np.ndarray, y: np.ndarray, X: Any, rng: np.random.Generator) -> tuple[float, float, float]:
        t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
        p = propensity(t, X, rng)
        point = run_estimator(t, y, p)
        if n_boot <= 0:
            return point, point, point
        reps = []
        for _ in range(n_boot):
            i = rng.integers(0, len(t), len(t))
            if 0 < t[i].sum() < len(i):
                reps.append(run_estimator(t[i], y[i], p[i]))
        low, high = np.nanpercentile(reps, [2.5, 97.5])
        return point, float(low), float(high)

    return estimate


def robustness(
    data: Callable[[], tuple[np.ndarray, np.ndarray, Any]],
    *,
    estimator: str,
    binary: bool,
    e_value: bool,
    seed: int = 0,
) -> dict[str, Any]:
    """Refuters and sensitivity of the recommended estimate, through :mod:`textcause.sensitivity`.

    Args:
        data: returns ``(t, y, X)`` of the study's users (called only when the package is there).
        estimator: the recommended estimator's name; binary: whether Y is binary; e_value: asked for.
        seed: the refuters' random generator seed.

    Returns:
        ``{"status": "ok", ...}`` with what the sensitivity package returns (its refuters, the
        Austen curve and benchmark points, the robustness value, the E-value when asked for, one
        sentence on how strong a hidden confounder would have to be), or ``{"status": "pending",
        "reason": ...}`` while the package is not installed.
    """
    try:
        sensitivity = importlib.import_module(SENSITIVITY_MODULE)  # INTEGRATION POINT: a plain import after the merge
    except ModuleNotFoundError:
        return {
            "status": "pending",
            "reason": f"{SENSITIVITY_MODULE} is not installed yet: no refutation or sensitivity analysis was run.",
        }
    analyse = getattr(sensitivity, "analyse", None)
    if analyse is None:
        return {"status": "pending", "reason": f"{SENSITIVITY_MODULE} has no 'analyse' entry point yet."}
    rng = np.random.default_rng(seed)
    t, y, X = data()
    found = analyse(t, y, X, estimate=estimator_for(estimator), rng=rng, binary=binary, e_value=e_value)
    return {"status": "ok", **dict(found)}

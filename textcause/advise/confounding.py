"""Stage 4: how strong a confounder that the text does not carry would have to be to overturn the estimate.

Three numbers from :mod:`textcause.sensitivity`, on the features the recommended model reads:

* **the Austen plot** (Veitch & Zaveri 2020) for a target bias equal to the estimate (the bias that
  would bring it to 0), from the cross-fitted propensity ``g`` of the recommended model's refit
  (:class:`~textcause.advise.refit.RefitPlan`) and an outcome model ``Q(t, x)``: an S-learner, one
  scikit-learn model of Y on the features and T (an L2 logistic regression for a binary outcome,
  ridge regression for a continuous one), its strength chosen once by 3-fold cross-validation
  (:func:`outcome_strength`), cross-fitted in the same folds as ``g``. The benchmark points are
  observed covariate groups left out of both ``g`` and ``Q``: the topics of the text
  (:func:`feature_groups`: non-negative matrix factorisation of the users x features matrix, each
  feature in the topic that loads it most; a hidden confounder is another such aspect of what users
  write), and *all the text* (``g`` constant, ``Q`` on T alone);
* **the robustness value** (Cinelli & Hazlett 2020) of T's coefficient in the OLS of Y on T and the
  features' low-dimensional summary (:func:`summary`: their first ``min(20, n / 10)`` singular
  directions, scikit-learn's TruncatedSVD);
* **the E-value** (VanderWeele & Ding 2017) of the AIPW risk ratio from the same ``g`` and ``Q``,
  for a binary outcome, when asked for.

:func:`headline` says in one sentence how strong a hidden confounder would have to be.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy import sparse

from textcause.advise.refit import RefitPlan
from textcause.sensitivity import (
    AustenCurve,
    RobustnessValue,
    austen_curve,
    e_value,
    ols_coefficient,
    risk_ratio,
    robustness_value,
)

__all__ = [
    "ALL_TEXT",
    "GROUPS",
    "crossfit_outcome",
    "feature_groups",
    "headline",
    "outcome_strength",
    "sensitivity",
    "summary",
]

#: Topics of the text used as benchmark groups.
GROUPS = 5
#: The benchmark that leaves every feature out.
ALL_TEXT = "all the text"
_CS = np.logspace(-2, 2, 5)
_ALPHAS = np.logspace(-2, 3, 6)


#: The propensity clip of the AIPW risk ratio behind the E-value (as the refit's estimator clips).
_RR_CLIP = 0.01


def feature_groups(X: Any, terms: list[str] | None = None, *, k: int = GROUPS, seed: int = 0) -> dict[str, np.ndarray]:
    """The features in ``k`` topics: NMF of the non-negative users x features matrix, each feature
    (column) in the topic that loads it most; named by the topic's three heaviest features.

    Returns:
        ``{name: column indices}`` (no groups for fewer than 2 features).

    >>> X = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1.0]])
    >>> sorted(c.tolist() for c in feature_groups(X, ["a", "b", "c", "d"], k=2).values())
    [[0, 1], [2, 3]]
    """
    from sklearn.decomposition import NMF

    if X is None or min(k, X.shape[1]) < 2:
        return {}
    k = min(k, X.shape[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: topics for naming groups, not a model
        loadings = NMF(n_components=k, init="nndsvd", max_iter=300, random_state=seed).fit(X).components_
    owner = loadings.argmax(axis=0)
    out = {}
    for j in range(k):
        cols = np.flatnonzero(owner == j)
        if cols.size == 0 or cols.size == X.shape[1]:
            continue
        top = cols[np.argsort(-loadings[j, cols], kind="stable")[:3]]
        words = ", ".join(terms[i] for i in top) if terms else f"{cols.size} features"
        out[f"topic {len(out) + 1} ({words})"] = cols
    return out


def summary(X: Any, n: int) -> np.ndarray | None:
    """The features' first ``min(20, n // 10, width - 1)`` singular directions (None without features)."""
    from sklearn.decomposition import TruncatedSVD

    if X is None or X.shape[1] == 0:
        return None
    d = min(20, max(n // 10, 1), X.shape[1] - 1)
    if d < 1:
        return np.asarray(X.todense() if sparse.issparse(X) else X, dtype=float)
    return TruncatedSVD(n_components=d, random_state=0).fit_transform(X)


def _design(X: Any, t: np.ndarray) -> Any:
    col = np.asarray(t, dtype=float).reshape(-1, 1)
    if X is None or X.shape[1] == 0:
        return col
    return sparse.hstack([X, sparse.csr_matrix(col)], format="csr") if sparse.issparse(X) else np.hstack([X, col])


def _learner(binary: bool, strength: float) -> Any:
    from sklearn.linear_model import LogisticRegression, Ridge

    return LogisticRegression(C=strength, max_iter=1000) if binary else Ridge(alpha=strength)


def outcome_strength(X: Any, t: np.ndarray, y: np.ndarray, binary: bool) -> float:
    """The outcome model's strength, chosen once on all users by 3-fold cross-validation: ``C`` of an L2
    logistic regression (log-loss, C from 0.01 to 100) for a binary ``y``, else ridge's ``alpha`` (0.01 to 1000)."""
    from sklearn.linear_model import LogisticRegressionCV, RidgeCV

    design = _design(X, t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if binary:
            fit = LogisticRegressionCV(Cs=_CS, cv=3, scoring="neg_log_loss", max_iter=1000).fit(design, y.astype(int))
            return float(fit.C_[0])
        return float(RidgeCV(alphas=_ALPHAS, cv=3).fit(design, y).alpha_)


def crossfit_outcome(
    X: Any, t: np.ndarray, y: np.ndarray, folds: list, *, binary: bool, strength: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(q, mu0, mu1)``: the S-learner's cross-fitted predictions at the observed T, at T=0 and at T=1."""
    mu0, mu1 = np.empty(t.size), np.empty(t.size)
    for train, test in folds:
        model = _learner(binary, strength)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(_design(None if X is None else X[train], t[train]), y[train].astype(int) if binary else y[train])
        x_test = None if X is None else X[test]
        for arm, dest in ((0.0, mu0), (1.0, mu1)):
            design = _design(x_test, np.full(test.size, arm))
            dest[test] = model.predict_proba(design)[:, 1] if binary else model.predict(design)
    if binary:
        mu0, mu1 = np.clip(mu0, 1e-6, 1 - 1e-6), np.clip(mu1, 1e-6, 1 - 1e-6)
    return np.where(t == 1, mu1, mu0), mu0, mu1


def _drop(X: Any, cols: np.ndarray) -> Any:
    keep = np.setdiff1d(np.arange(X.shape[1]), cols)
    return X[:, keep]


def sensitivity(
    plan: RefitPlan,
    t: np.ndarray,
    y: np.ndarray,
    X: Any,
    terms: list[str] | None,
    folds: list,
    *,
    bias: float,
    binary: bool,
    e_value_asked: bool,
    seed: int = 0,
) -> dict[str, Any]:
    """The Austen curve (with benchmark groups), the robustness value and (when asked) the E-value.

    Returns:
        ``{"curve": AustenCurve, "rv": RobustnessValue, "ols": OLSCoefficient, "e_value": EValue | None,
        "risk_ratio": RiskRatio | None, "groups": {name: size}, "outcome_model": str, "rv_summary": str}``.

    Raises:
        ValueError: from :mod:`textcause.sensitivity` (a degenerate fit, a zero bias).
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):  # many small fits: a threaded BLAS only waits on a shared machine
        t = np.asarray(t, dtype=float)
        y = np.asarray(y, dtype=float)
        if X is not None and X.shape[1] == 0:
            X = None
        g = plan.propensity(t, X, folds, seed)
        strength = outcome_strength(X, t, y, binary)
        q, mu0, mu1 = crossfit_outcome(X, t, y, folds, binary=binary, strength=strength)
        groups = feature_groups(X, terms, seed=seed) if X is not None else {}
        benchmarks: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name, cols in groups.items():
            x_j = _drop(X, cols)
            q_j = crossfit_outcome(x_j, t, y, folds, binary=binary, strength=strength)[0]
            benchmarks[name] = (plan.propensity(t, x_j, folds, seed), q_j)
        if X is not None:
            const = RefitPlan(plan.model, "none", "constant")
            benchmarks[ALL_TEXT] = (
                const.propensity(t, None, folds),
                crossfit_outcome(None, t, y, folds, binary=binary, strength=strength)[0],
            )
        curve = austen_curve(t, y, g, q, bias, benchmarks=benchmarks)
        z = summary(X, t.size)
        ols = ols_coefficient(t, y, z)
        rv = robustness_value(ols.t_statistic, ols.dof)
        rr = ev = None
        e_value_error = None
        if e_value_asked and binary:
            try:  # propensities clipped to [0.01, 0.99] as the refit's estimator clips them
                rr = risk_ratio(t, y, np.clip(g, _RR_CLIP, 1 - _RR_CLIP), mu0, mu1)
                ev = e_value(rr.rr, rr.low, rr.high)
            except ValueError as err:  # no risk ratio exists here: the other analyses still stand
                rr, ev, e_value_error = None, None, str(err)
        kind = (
            f"L2 logistic regression of Y on the features and T (C = {strength:g}, by 3-fold cross-validated log-loss)"
            if binary
            else f"ridge regression of Y on the features and T (alpha = {strength:g}, by 3-fold cross-validation)"
        )
        return {
            "curve": curve,
            "ols": ols,
            "rv": rv,
            "risk_ratio": rr,
            "e_value": ev,
            "e_value_error": e_value_error,
            "groups": {name: int(cols.size) for name, cols in groups.items()},
            "outcome_model": kind + (", no features (the method adjusts for none)" if X is None else ""),
            "rv_summary": "no features (the method adjusts for none)"
            if z is None
            else f"the features' first {z.shape[1]} singular directions (TruncatedSVD)",
        }


def headline(ate: float, low: float, high: float, curve: AustenCurve, rv: RobustnessValue) -> str:
    """One sentence: how strong a hidden confounder would have to be to overturn the conclusion.

    >>> curve = AustenCurve(0.2, "ate", np.array([0.1, 0.3, 0.5]), np.array([0.9, 0.3, 0.1]), np.zeros(3))
    >>> rv = robustness_value(4.18445, 783)
    >>> headline(0.2, 0.1, 0.3, curve, rv).startswith("To overturn the estimated effect (+0.200")
    True
    """
    found = low > 0 or high < 0
    if found:
        text = f"To overturn the estimated effect ({ate:+.3f} [{low:+.3f}, {high:+.3f}], bring it to 0), a hidden confounder"
    else:
        text = (
            f"The estimate ({ate:+.3f} [{low:+.3f}, {high:+.3f}]) already does not exclude 0; to explain even its point "
            "away, a hidden confounder"
        )
    text += " that the text does not carry would need"
    s = curve.balanced()
    if s is not None:
        text += f" an influence on treatment (alpha) and a partial R² with the outcome of at least {s:.2f} each"
    else:
        text += f" a partial R² with the outcome above {float(curve.r2[-1]):.2f} even at an influence on treatment of {float(curve.alpha[-1]):.2f}"
    text += f" (robustness value of the OLS fit: {100 * rv.rv_q:.1f}% of the residual variance of both)"
    strong = curve.beyond()
    if strong:
        names = ", ".join(f"'{b.name}'" for b in strong)
        return text + f", a strength that the observed {names} reach{'' if len(strong) > 1 else 'es'}."
    if curve.benchmarks:
        top = max(curve.benchmarks, key=lambda b: b.r2 / curve.r2_needed(b.alpha))
        return (
            text
            + f", more than the strongest observed covariate group, '{top.name}' (alpha {top.alpha:.2f}, R² {top.r2:.2f})."
        )
    return text + "."

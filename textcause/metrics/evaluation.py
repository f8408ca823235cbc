"""One results table from one set of propensities: every estimator with its interval, and every metric.

``evaluate_propensities`` is the single place that turns (T, Y, estimated propensity, truth) into
result rows (the columns of :mod:`textcause.metrics.schema`); ``evaluate.py``, every run of
:mod:`textcause.run` and the metrics callback (with ``n_boot=0``) all call it, so their numbers
agree by construction.

Given outcome predictions ``mu0, mu1`` the doubly robust estimators ``aipw`` and ``tmle`` have two
intervals, each in its own columns: the percentile bootstrap (``ci_low``, ``ci_high``, as every
estimator) and their influence-function interval (``influence_ci_low``, ``influence_ci_high``). TMLE's
targeting step depends on whether the outcome is binary or continuous; the caller says which
(``outcome=``, from the task's outcome kind), it is never guessed from the values.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from textcause import estimators as est
from textcause import metrics as met
from textcause.metrics.schema import AD_ESTIMATORS
from textcause.validation import (
    as_1d_float,
    check_consistent_length,
    check_options,
    check_propensity,
    check_treatment,
)

__all__ = [
    "CI_METHOD",
    "INFLUENCE_CI_METHOD",
    "OUTCOME_KINDS",
    "ECE_BINS",
    "PROPENSITY_METRICS",
    "TRUTH_METRICS",
    "propensity_metrics",
    "evaluate_propensities",
    "format_table",
]

CI_METHOD = "percentile bootstrap over evaluation units"
#: The label of the doubly robust estimators' second interval (``influence_ci_method``).
INFLUENCE_CI_METHOD = est.CI_INFLUENCE
#: The outcome kinds the doubly robust estimators distinguish (TMLE's ``outcome``).
OUTCOME_KINDS = ("binary", "continuous")
#: The bins of the expected calibration error.
ECE_BINS = 15
#: The propensity metrics of every row, and those that also need the true propensity.
PROPENSITY_METRICS = ("treatment_accuracy", "ece", "brier")
TRUTH_METRICS = ("iptw_weight_mse", "spearman", "rank_agreement")


def propensity_metrics(
    t: np.ndarray, propensity: np.ndarray, true_propensity: np.ndarray | None = None, *, n_bins: int = ECE_BINS
) -> dict[str, float]:
    """Treatment accuracy, calibration and (given the truth) weight MSE, Spearman and Somers' D (``rank_agreement``).

    Args:
        t: observed treatments (0/1).
        propensity: estimated P(T=1 | text).
        true_propensity: the true propensities, for weight MSE and Spearman (None: left out).
        n_bins: equal-width bins of the expected calibration error.
    """
    out = {
        "treatment_accuracy": float(met.treatment_accuracy(t, propensity)),
        "ece": float(met.expected_calibration_error(t, propensity, n_bins)),
        "brier": float(met.brier_score(t, propensity)),
    }
    if true_propensity is not None:
        out["iptw_weight_mse"] = float(met.iptw_weight_mse(t, propensity, true_propensity))
        out["spearman"] = float(met.spearman(propensity, true_propensity))
        out["rank_agreement"] = float(met.rank_agreement(propensity, true_propensity))
    return out


def evaluate_propensities(
    t: ArrayLike,
    y: ArrayLike,
    propensity: ArrayLike,
    *,
    true_propensity: ArrayLike | None = None,
    true_ate: float | None = None,
    estimators: Iterable[str] = est.DEFAULT_ESTIMATORS,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    n_strata: int = est.ESTIMATOR_DEFAULTS["stratified"]["n_strata"],
    caliper: float | None = est.ESTIMATOR_DEFAULTS["matching"]["caliper"],
    mu0: ArrayLike | None = None,
    mu1: ArrayLike | None = None,
    outcome: str = "binary",
    n_bins: int = ECE_BINS,
) -> list[dict[str, Any]]:
    """Estimate the ATE with every requested estimator and compute every metric.

    Args:
        t: observed treatments (0/1).
        y: observed outcomes.
        propensity: estimated P(T=1 | text), strictly inside (0, 1).
        true_propensity: the true propensities (semi-synthetic tasks), for weight MSE, Spearman and the
            Arbour-Dimmery interval of the IPW row.
        true_ate: the true ATE, for the bias column.
        estimators: estimators to run (``ipw``, ``stratified``, ``matching``, and with ``mu0``/``mu1``
            the doubly robust ``aipw`` and ``tmle``; without them those two are skipped with a
            warning); ``unadjusted`` is always added first.
        n_boot: bootstrap replicates for the intervals (0: no interval).
        level: the interval's coverage.
        seed: the bootstrap's seed.
        n_strata: strata of the stratified estimator.
        caliper: the matching caliper in propensity standard deviations (None: no caliper).
        mu0: outcome-model predictions E[Y | T=0, X] per unit (probabilities for a binary outcome,
            means for a continuous one), needed by ``aipw`` and ``tmle``; both or neither.
        mu1: the same for E[Y | T=1, X].
        outcome: ``binary`` or ``continuous``: the outcome kind of the task (TMLE fluctuates a
            binary outcome on its own [0, 1] scale and a continuous one on its observed range).
        n_bins: equal-width bins of the expected calibration error.

    Returns:
        One dict per estimator with ``estimator``, ``ate``, ``ci_low``, ``ci_high`` (bootstrap),
        ``bias``, ``n_used``, ``n_dropped`` and every propensity metric (the same on every row);
        ``aipw`` and ``tmle`` rows also carry ``influence_ci_low``, ``influence_ci_high`` (and
        ``influence_covers_truth`` given the true ATE), labelled by ``influence_ci_method``; given
        the true propensities, the ``ipw`` row alone carries the Arbour-Dimmery interval (``ad_low``,
        ``ad_high``, and ``ci_narrower_than_ad`` with a bootstrap interval), which is centred on it.

    Raises:
        ValueError: invalid treatments, propensities or lengths; only one of ``mu0``/``mu1``;
            non-finite outcome predictions; an unknown ``outcome``.

    Examples:
        >>> from textcause.metrics.evaluation import evaluate_propensities
        >>> t = [0, 1, 0, 1, 0, 1, 0, 1]
        >>> y = [0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
        >>> p = [0.2, 0.3, 0.4, 0.5, 0.5, 0.6, 0.7, 0.8]
        >>> rows = evaluate_propensities(t, y, p, estimators=['ipw'], n_boot=0, true_ate=0.5)
        >>> [(r['estimator'], round(r['ate'], 4), round(r['bias'], 4)) for r in rows]
        [('unadjusted', 0.75, 0.25), ('ipw', 0.7576, 0.2576)]
    """
    t = check_treatment(t)
    y = np.asarray(y, dtype=np.float64)
    p = check_propensity(propensity)
    check_consistent_length(t, y, p)
    p_true = None if true_propensity is None else check_propensity(true_propensity, "true_propensity")
    if p_true is not None:
        check_consistent_length(t, p_true)
    outcome = check_options(outcome, "outcome", "evaluate_propensities", OUTCOME_KINDS)
    if (mu0 is None) != (mu1 is None):
        raise ValueError("Pass both 'mu0' and 'mu1' to evaluate_propensities (the outcome predictions), or neither.")
    if mu0 is not None:
        mu0, mu1 = as_1d_float(mu0, "mu0"), as_1d_float(mu1, "mu1")
        check_consistent_length(t, mu0, mu1)
    names = ["unadjusted"] + [e for e in estimators if e != "unadjusted"]
    shared = propensity_metrics(t, p, p_true, n_bins=n_bins)
    with_ad = p_true is not None and any(name in AD_ESTIMATORS for name in names)
    ad = met.arbour_dimmery_interval(t, y, p, p_true) if with_ad else None

    rows: list[dict[str, Any]] = []
    for name in names:
        if name in est.OUTCOME_ESTIMATORS and (mu0 is None or mu1 is None):
            warnings.warn(f"{name} needs outcome-model predictions (mu0, mu1); it was skipped.", stacklevel=2)
            continue
        kwargs = est.estimator_kwargs(name, n_strata=n_strata, caliper=caliper, outcome=outcome)
        if name == "unadjusted":
            args: tuple[Any, ...] = (t, y)
        elif name in est.OUTCOME_ESTIMATORS:
            args = (t, y, p, mu0, mu1)
        else:
            args = (t, y, p)
        doubly_robust = name in est.OUTCOME_ESTIMATORS
        try:
            # aipw / tmle form their influence-function interval at the evaluation's level.
            point = est.ESTIMATORS[name](*args, **kwargs, **({"level": level} if doubly_robust else {}))
            interval = (
                _bounds(est.bootstrap_ci(name, *args, n_boot=n_boot, level=level, seed=seed, **kwargs))
                if n_boot > 0
                else None
            )
        except ValueError as err:  # e.g. no stratum with both groups: reported, never NaN
            rows.append({"estimator": name, "error": str(err), **shared})
            continue
        row: dict[str, Any] = {
            "estimator": name,
            "ate": float(point.ate),
            "ci_low": None if interval is None else interval[0],
            "ci_high": None if interval is None else interval[1],
            "ci_method": None if interval is None else CI_METHOD,
            "bias": None if true_ate is None else float(point.ate - true_ate),
            "n_used": int(point.n_used),
            "n_dropped": int(point.n_dropped),
        }
        if true_ate is not None and interval is not None:
            row["covers_truth"] = bool(interval[0] <= true_ate <= interval[1])
        if doubly_robust:
            low, high = float(point.details["influence_ci_low"]), float(point.details["influence_ci_high"])
            row.update(influence_ci_low=low, influence_ci_high=high, influence_ci_method=INFLUENCE_CI_METHOD)
            if true_ate is not None:
                row["influence_covers_truth"] = bool(low <= true_ate <= high)
        if ad is not None and name in AD_ESTIMATORS:  # centred on the IPW estimate: the IPW row only
            row["ad_low"], row["ad_high"] = float(ad.low), float(ad.high)
            if interval is not None:
                row["ci_narrower_than_ad"] = met.interval_narrower_than_ad(*interval, ad)
        row.update(shared)
        rows.append(row)
    return rows


def _bounds(interval: est.Estimate) -> tuple[float, float]:
    """The two ends of an estimate's interval (``bootstrap_ci`` always sets both)."""
    if interval.ci_low is None or interval.ci_high is None:
        raise ValueError(f"The {interval.method} estimate has no interval to report.")  # pragma: no cover
    return float(interval.ci_low), float(interval.ci_high)


def format_table(rows: Sequence[dict[str, Any]], *, title: str = "") -> str:
    """A readable fixed-width table of result rows."""

    def num(v: Any, width: int = 7) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "-".rjust(width)
        return f"{v:+.3f}".rjust(width) if isinstance(v, float) else str(v).rjust(width)

    def interval(r: dict[str, Any], prefix: str) -> str:
        low, high = r.get(f"{prefix}ci_low"), r.get(f"{prefix}ci_high")
        return f"[{num(low)}, {num(high)}]" if low is not None else "-".center(17)

    # The refitting interval (training users resampled, model refit) beside the test-sample one when a row has it.
    refit = any(r.get("refit_ci_low") is not None for r in rows)
    lines = [title] if title else []
    head = f"{'estimator':<11} {'ATE':>7}  {'95% interval':^17}"
    if refit:
        head = f"{'estimator':<11} {'ATE':>7}  {'95% test-sample':^17}  {'95% refitting':^17}"
    lines.append(f"{head} {'bias':>7} {'n_used':>7}")
    for r in rows:
        if "error" in r:
            lines.append(f"{r['estimator']:<11} failed: {r['error']}")
            continue
        ci = interval(r, "") + (f"  {interval(r, 'refit_')}" if refit else "")
        lines.append(f"{r['estimator']:<11} {num(r['ate'])}  {ci} {num(r.get('bias'))} {r['n_used']:>7}")
    if rows:
        r0 = rows[0]
        parts = [f"{k}={r0[k]:.3f}" for k in PROPENSITY_METRICS + TRUTH_METRICS if k in r0]
        lines.append("metrics: " + ", ".join(parts))
    return "\n".join(lines)

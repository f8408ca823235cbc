"""Bias of an ATE estimate, and every metric of a propensity model in one call."""

from __future__ import annotations

from typing import Any

from textcause.estimators.matching import matching
from textcause.estimators.stratification import stratified
from textcause.estimators.types import Estimate
from textcause.estimators.weighting import ipw, unadjusted
from textcause.metrics.bounds import arbour_dimmery_bounds
from textcause.metrics.classification import brier_score, expected_calibration_error, treatment_accuracy
from textcause.metrics.propensity import iptw_weight_mse, propensity_brier, spearman
from textcause.validation import check_real


def bias(estimate: Estimate | float, true_ate: float) -> float:
    """``estimate - true_ate`` (signed; 0 is best). Accepts an ``Estimate`` or a float.

    Raises:
        ValueError: a non-finite estimate or truth.
    """
    value = estimate.ate if isinstance(estimate, Estimate) else estimate
    value = check_real(value, "estimate", "bias")
    return value - check_real(true_ate, "true_ate", "bias")


def causal_metrics(
    t: Any,
    y: Any,
    propensity: Any,
    true_propensity: Any = None,
    *,
    true_ate: float | None = None,
    n_strata: int = 10,
    caliper: float | None = 0.2,
    n_bins: int = 15,
    threshold: float = 0.5,
) -> dict[str, float]:
    """All metrics of Weld et al. (section 6.3, appendices A and F) for one set of propensities.

    Keys: ``treatment_accuracy``, ``brier``, ``ece``, ``ate_unadjusted``, ``ate_ipw``,
    ``ate_stratified``, ``ate_matching``; with ``true_ate`` also ``bias_<estimator>`` for the four;
    with ``true_propensity`` also ``propensity_brier``, ``iptw_weight_mse``, ``spearman``,
    ``bound_lower``, ``bound_upper``.

    Args:
        t: observed binary treatment, both classes present.
        y: outcomes.
        propensity: estimated P(T=1 | X), strictly inside (0, 1).
        true_propensity: the true P(T=1 | X) when known (semi-synthetic tasks), else None.
        true_ate: the true ATE when known, else None.
        n_strata: strata of :func:`textcause.estimators.stratified`.
        caliper: caliper of :func:`textcause.estimators.matching` (None: no caliper).
        n_bins: bins of :func:`expected_calibration_error`.
        threshold: decision threshold of :func:`treatment_accuracy`.

    Raises:
        ValueError: invalid inputs, or an estimator that is undefined on them.
    """
    out = {
        "treatment_accuracy": treatment_accuracy(t, propensity, threshold),
        "brier": brier_score(t, propensity),
        "ece": expected_calibration_error(t, propensity, n_bins),
        "ate_unadjusted": unadjusted(t, y).ate,
        "ate_ipw": ipw(t, y, propensity).ate,
        "ate_stratified": stratified(t, y, propensity, n_strata=n_strata).ate,
        "ate_matching": matching(t, y, propensity, caliper=caliper).ate,
    }
    if true_ate is not None:
        for name in ("unadjusted", "ipw", "stratified", "matching"):
            out[f"bias_{name}"] = bias(out[f"ate_{name}"], true_ate)
    if true_propensity is not None:
        bounds = arbour_dimmery_bounds(t, y, propensity, true_propensity)
        out.update(
            propensity_brier=propensity_brier(propensity, true_propensity),
            iptw_weight_mse=iptw_weight_mse(t, propensity, true_propensity),
            spearman=spearman(propensity, true_propensity),
            bound_lower=bounds.lower,
            bound_upper=bounds.upper,
        )
    return out

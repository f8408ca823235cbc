"""Sensitivity to unobserved confounding, and refuters of an effect estimate.

- Austen plots (Veitch & Zaveri 2020): :func:`austen_curve`, :func:`benchmark_point`, :func:`austen_figure`;
- the robustness value (Cinelli & Hazlett 2020): :func:`robustness_value`, :func:`partial_r2`,
  :func:`ols_coefficient`;
- E-values (VanderWeele & Ding 2017): :func:`e_value`, :func:`risk_ratio`, :func:`odds_ratio_to_risk_ratio`;
- refuters (DoWhy's three): :func:`placebo_treatment`, :func:`random_common_cause`, :func:`subsample`,
  :func:`refute`.

Each result (:class:`AustenCurve`, :class:`RobustnessValue`, :class:`EValue`) has a ``sentence()``
saying how strong an unobserved confounder would need to be to overturn the conclusion; each
:class:`Refutation` has a ``reason``. Everything is numpy in, frozen dataclasses out, deterministic.
"""

from textcause.sensitivity.austen import (
    AUSTEN_ALPHAS,
    DEFAULT_ALPHAS,
    AustenCurve,
    Benchmark,
    austen_curve,
    benchmark_point,
)
from textcause.sensitivity.evalue import EValue, RiskRatio, e_value, odds_ratio_to_risk_ratio, risk_ratio
from textcause.sensitivity.figure import austen_figure
from textcause.sensitivity.refute import (
    EstimateFn,
    Refutation,
    placebo_treatment,
    random_common_cause,
    refute,
    subsample,
)
from textcause.sensitivity.robustness import (
    OLSCoefficient,
    RobustnessValue,
    ols_coefficient,
    partial_r2,
    robustness_value,
)

__all__ = [
    "AUSTEN_ALPHAS",
    "AustenCurve",
    "Benchmark",
    "DEFAULT_ALPHAS",
    "EValue",
    "EstimateFn",
    "OLSCoefficient",
    "Refutation",
    "RiskRatio",
    "RobustnessValue",
    "austen_curve",
    "austen_figure",
    "benchmark_point",
    "e_value",
    "odds_ratio_to_risk_ratio",
    "ols_coefficient",
    "partial_r2",
    "placebo_treatment",
    "random_common_cause",
    "refute",
    "risk_ratio",
    "robustness_value",
    "subsample",
]

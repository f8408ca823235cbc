"""ATE estimators: pure functions ``(t, y, propensity, ...) -> Estimate``, the bootstrap, cross-fitting.

Every estimate is ATE = E[Y(1)] - E[Y(0)]. ``ESTIMATORS`` maps names to functions, so a config
or :func:`bootstrap_ci` can choose one by name.
"""

from textcause.estimators.bootstrap import bootstrap_ci, bootstrap_indices
from textcause.estimators.crossfit import CrossFitPredictions, crossfit, crossfit_folds, crossfit_predictions
from textcause.estimators.matching import matching, nearest_opposite
from textcause.estimators.registry import (
    DEFAULT_ESTIMATORS,
    ESTIMATOR_DEFAULTS,
    ESTIMATOR_LABELS,
    ESTIMATORS,
    OUTCOME_ESTIMATORS,
    PROPENSITY_ESTIMATORS,
    estimator_kwargs,
    get_estimator,
)
from textcause.estimators.stratification import propensity_strata, stratified
from textcause.estimators.tmle import tmle
from textcause.estimators.types import CI_BOOTSTRAP, CI_INFLUENCE, Estimate
from textcause.estimators.weighting import aipw, ipw, unadjusted

__all__ = [
    "CI_BOOTSTRAP",
    "CI_INFLUENCE",
    "CrossFitPredictions",
    "DEFAULT_ESTIMATORS",
    "ESTIMATOR_DEFAULTS",
    "ESTIMATOR_LABELS",
    "ESTIMATORS",
    "OUTCOME_ESTIMATORS",
    "PROPENSITY_ESTIMATORS",
    "estimator_kwargs",
    "Estimate",
    "aipw",
    "bootstrap_ci",
    "bootstrap_indices",
    "crossfit",
    "crossfit_folds",
    "crossfit_predictions",
    "get_estimator",
    "ipw",
    "matching",
    "nearest_opposite",
    "propensity_strata",
    "stratified",
    "tmle",
    "unadjusted",
]

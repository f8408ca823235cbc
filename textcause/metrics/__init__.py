"""Metrics as pure functions (numpy in, float out); torchmetrics wrappers in ``textcause.metrics.torch``.

Importing this package does not import torch.
"""

from textcause.metrics.bounds import Bounds, arbour_dimmery_bounds, interval_tighter_than_bounds
from textcause.metrics.causal import bias
from textcause.metrics.classification import brier_score, expected_calibration_error, treatment_accuracy
from textcause.metrics.propensity import iptw_weight_mse, propensity_brier, rank_agreement, spearman

__all__ = [
    "Bounds",
    "arbour_dimmery_bounds",
    "bias",
    "brier_score",
    "expected_calibration_error",
    "interval_tighter_than_bounds",
    "iptw_weight_mse",
    "propensity_brier",
    "rank_agreement",
    "spearman",
    "treatment_accuracy",
]

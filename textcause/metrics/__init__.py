"""Metrics as pure functions (numpy in, float out); torchmetrics wrappers in ``textcause.metrics.torch``.

Importing this package does not import torch.
"""

from textcause.metrics.ad_interval import ADInterval, arbour_dimmery_interval, interval_narrower_than_ad
from textcause.metrics.causal import bias
from textcause.metrics.classification import brier_score, expected_calibration_error, treatment_accuracy
from textcause.metrics.propensity import iptw_weight_mse, propensity_brier, rank_agreement, spearman

__all__ = [
    "ADInterval",
    "arbour_dimmery_interval",
    "bias",
    "brier_score",
    "expected_calibration_error",
    "interval_narrower_than_ad",
    "iptw_weight_mse",
    "propensity_brier",
    "rank_agreement",
    "spearman",
    "treatment_accuracy",
]

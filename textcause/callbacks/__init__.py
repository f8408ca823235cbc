"""Lightning callbacks: causal metrics (ATE, bias, calibration) after each validation epoch; predict outputs gathered over DDP ranks."""

from textcause.callbacks.causal_metrics import CausalMetricsCallback
from textcause.callbacks.predictions import PredictionGather

__all__ = ["CausalMetricsCallback", "PredictionGather"]

"""Lightning callbacks: causal metrics (ATE, bias, calibration) after each validation epoch."""

from textcause.callbacks.causal_metrics import CausalMetricsCallback

__all__ = ["CausalMetricsCallback"]

"""Lightning callbacks: causal metrics (ATE, bias, calibration) after each validation epoch; predict outputs
gathered over DDP ranks; the resumable last checkpoint (every few steps, on SIGTERM, with RNG states); the
per-user CSV of ``train.py predict`` (a ``BasePredictionWriter``); checkpoints written to local disk in 1 MiB
writes (a ``CheckpointIO`` plugin)."""

from textcause.callbacks.causal_metrics import CausalMetricsCallback
from textcause.callbacks.checkpoint_io import ChunkedCheckpointIO
from textcause.callbacks.prediction_writer import UserPredictionWriter
from textcause.callbacks.predictions import PredictionGather
from textcause.callbacks.resume import ResumeCheckpoint

__all__ = [
    "CausalMetricsCallback",
    "ChunkedCheckpointIO",
    "PredictionGather",
    "ResumeCheckpoint",
    "UserPredictionWriter",
]

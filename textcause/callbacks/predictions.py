"""Gather ``trainer.predict`` outputs from every DDP rank, for every launcher.

Under DDP ``trainer.predict`` returns each process only the batches it predicted itself, and under
``ddp_fork`` / ``ddp_spawn`` it returns nothing at all to the process that called it (the ranks are
child processes). :class:`PredictionGather` collects the outputs of ``predict_step`` (dicts of
tensors) batch by batch, gathers them from all ranks at the end of the predict epoch, and keeps
the whole split, concatenated, on every rank (``result``); with a ``folder`` the first process of
each machine also saves it there (``predictions.npz``), where the calling process of a fork / spawn
launch reads it back (:meth:`PredictionGather.load`). Nothing is de-duplicated here: what a unit is
(a user, a masked position) is the caller's business; Lightning's predict sampler never repeats one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import lightning as L
import numpy as np
import torch

from textcause.io import load_npy

__all__ = [
    "FILE",
    "PredictionGather",
    "all_gather_objects",
    "concatenate",
]

FILE = "predictions.npz"


def all_gather_objects(obj: Any) -> list[Any]:
    """``obj`` of every rank, in rank order (``[obj]`` without an initialised multi-process group)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() <= 1:
        return [obj]
    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def concatenate(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The arrays of several batches (or ranks) joined key by key (keys of the first non-empty part)."""
    parts = [p for p in parts if p]
    if not parts:
        return {}
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


class PredictionGather(L.Callback):
    """Collect ``predict_step`` outputs on each rank and gather the whole split on every rank.

    Args:
        folder: where the first process of each machine saves the gathered outputs (``predictions.npz``),
            so that the process that called ``trainer.predict`` under ``ddp_fork`` / ``ddp_spawn``
            can read them; None: keep them in memory only (one process, ``ddp``, ``torchrun``, SLURM).
    """

    def __init__(self, folder: Optional[Path] = None) -> None:
        super().__init__()
        self.folder = None if folder is None else Path(folder)
        self.result: Optional[dict[str, np.ndarray]] = None
        self._batches: list[dict[str, np.ndarray]] = []

    def on_predict_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._batches = []
        self.result = None

    def on_predict_batch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        if not isinstance(outputs, dict):
            raise ValueError(
                f"PredictionGather needs predict_step to return a dict of tensors. Got {type(outputs).__name__} instead."
            )
        self._batches.append({k: _numpy(v) for k, v in outputs.items()})

    def on_predict_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.result = concatenate(all_gather_objects(concatenate(self._batches)))
        self._batches = []
        if self.folder is not None and trainer.local_rank == 0:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.folder / f".{FILE}.tmp"
            with open(tmp, "wb") as fh:
                np.savez(fh, **self.result)
            tmp.replace(self.folder / FILE)

    def load(self) -> dict[str, np.ndarray]:
        """The gathered outputs: from memory when this process ran the predict loop, else from ``folder``.

        Raises:
            FileNotFoundError: neither (the predict loop did not run, or ran elsewhere without a folder).
        """
        if self.result is not None:
            return self.result
        path = None if self.folder is None else self.folder / FILE
        if path is None or not path.is_file():
            raise FileNotFoundError(
                "No gathered predictions: trainer.predict did not run its predict loop with this callback."
            )
        with load_npy(path, "gathered predictions file") as data:
            return {k: data[k] for k in data.files}


def _numpy(value: Any) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.detach()
        if value.dtype == torch.bfloat16:
            value = value.float()
        return value.cpu().numpy().reshape(-1)
    return np.asarray(value).reshape(-1)

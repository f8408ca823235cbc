"""Write ``trainer.predict``'s per-user propensities to a CSV: Lightning's ``BasePredictionWriter``.

``train.py predict --config RUN/config.yaml --ckpt_path RUN/checkpoints/best-....ckpt`` adds a
:class:`UserPredictionWriter` (the CLI does it by code, no config needed), which writes
``predictions-<split>.csv`` into the run folder: one row per user of the predicted split, sorted by
unit index, with the user's id when the data module has a task (``user_id, index, propensity, t,
y, p_true`` and ``mu0, mu1`` for a model with outcome predictions). Under DDP the ranks' outputs
are gathered and the first process writes the file, atomically. No text is written.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import lightning as L
import numpy as np
from lightning.pytorch.callbacks import BasePredictionWriter

from textcause.callbacks.predictions import _numpy, all_gather_objects, concatenate
from textcause.io import atomic_write_text

__all__ = [
    "COLUMNS",
    "UserPredictionWriter",
]

#: The output columns, in order (those a model does not give are left out).
COLUMNS = ("user_id", "index", "propensity", "t", "y", "p_true", "mu0", "mu1")


class UserPredictionWriter(BasePredictionWriter):
    """Write the predict loop's outputs as one CSV row per user, at the end of the predict epoch.

    Args:
        output_dir: the folder of the CSV (None: the trainer's log folder).
        filename: the file name; ``{split}`` is the data module's predict split (``predict`` if unknown).
    """

    def __init__(self, output_dir: Optional[str] = None, filename: str = "predictions-{split}.csv") -> None:
        super().__init__(write_interval="epoch")
        self.output_dir = None if output_dir is None else Path(output_dir)
        self.filename = filename
        self.path: Optional[Path] = None

    def write_on_epoch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        predictions: Sequence[Any],
        batch_indices: Sequence[Any],
    ) -> None:
        batches = predictions[0] if predictions and isinstance(predictions[0], list) else predictions
        local = concatenate([{k: _numpy(v) for k, v in b.items()} for b in batches if isinstance(b, dict)])
        merged = concatenate(all_gather_objects(local))
        if not trainer.is_global_zero or not merged:
            return
        order = np.argsort(merged["index"], kind="stable")
        merged = {k: v[order] for k, v in merged.items()}
        data = trainer.datamodule
        ids = getattr(getattr(data, "task", None), "user_ids", None)
        if ids is not None:
            merged["user_id"] = np.asarray(ids, dtype=object)[merged["index"].astype(np.int64)]
        columns = [c for c in COLUMNS if c in merged]
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(columns)
        for i in range(len(merged["index"])):
            writer.writerow([_cell(merged[c][i]) for c in columns])
        hparams = getattr(data, "hparams", {}) or {}
        split = hparams.get("predict_split", "predict") if hasattr(hparams, "get") else "predict"
        folder = self.output_dir or Path(trainer.log_dir or trainer.default_root_dir)
        self.path = atomic_write_text(folder / self.filename.format(split=split), buf.getvalue())


def _cell(value: Any) -> Any:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, np.floating):
        return repr(float(value))
    return value

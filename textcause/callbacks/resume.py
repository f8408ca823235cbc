"""The checkpoint a killed run resumes from: ``last.ckpt`` every few steps, on SIGTERM, with RNG states.

:class:`ResumeCheckpoint` is a :class:`~lightning.pytorch.callbacks.ModelCheckpoint` that keeps no
"best" files (``save_top_k=0``; the default config's other checkpoint callback keeps the best one)
and writes ``last.ckpt`` every ``every_n_train_steps`` optimizer steps, mid-epoch included. With the
training loader's position (:mod:`textcause.data.resumable`) and the process's random states (torch,
numpy, Python; saved here, restored when the checkpoint is loaded), ``train.py fit ... --ckpt_path
last`` continues a run killed by SIGKILL as if it had never stopped. On SIGTERM (or Ctrl-C) it also
writes ``last.ckpt`` before the run ends, so a scheduler's preemption loses no steps.
"""

from __future__ import annotations

import random
from typing import Any, Optional

import lightning as L
import numpy as np
import torch
from lightning.pytorch.callbacks import ModelCheckpoint

__all__ = [
    "ResumeCheckpoint",
]

_RNG_KEY = "textcause_rng_states"


def _rng_states() -> dict[str, Any]:
    """The process's torch, numpy and Python random states, in types a ``weights_only`` load accepts."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    version, internal, _ = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "gauss": float(gauss),
        },
        "python": {"version": int(version), "internal": torch.tensor(internal, dtype=torch.int64)},
    }


def _set_rng_states(states: dict[str, Any]) -> None:
    """Restore what :func:`_rng_states` recorded."""
    torch.set_rng_state(states["torch"])
    n = states["numpy"]
    np.random.set_state((n["kind"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["gauss"]))
    p = states["python"]
    random.setstate((p["version"], tuple(int(v) for v in p["internal"].tolist()), None))


class ResumeCheckpoint(ModelCheckpoint):
    """``last.ckpt`` every ``every_n_train_steps`` steps and on SIGTERM, with the RNG states.

    Args:
        every_n_train_steps: optimizer steps between two saves of ``last.ckpt`` (>= 1).
        dirpath: the checkpoint folder (default: the run's ``checkpoints/``, as for ModelCheckpoint).
    """

    def __init__(self, every_n_train_steps: int = 25, dirpath: Optional[str] = None) -> None:
        super().__init__(
            dirpath=dirpath, save_last=True, save_top_k=0, every_n_train_steps=every_n_train_steps, monitor=None
        )

    @property
    def state_key(self) -> str:  # distinct from the best-checkpoint callback's key
        return "ResumeCheckpoint"

    def on_save_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule, checkpoint: dict) -> None:
        checkpoint[_RNG_KEY] = _rng_states()

    def on_load_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule, checkpoint: dict) -> None:
        if _RNG_KEY in checkpoint:
            _set_rng_states(checkpoint[_RNG_KEY])

    def on_exception(self, trainer: L.Trainer, pl_module: L.LightningModule, exception: BaseException) -> None:
        from lightning.pytorch.utilities.exceptions import SIGTERMException

        stopped = isinstance(exception, (SIGTERMException, KeyboardInterrupt))
        if stopped and trainer.state.fn == "fit" and self.dirpath is not None:
            trainer.save_checkpoint(self.format_checkpoint_name({}, self.CHECKPOINT_NAME_LAST))

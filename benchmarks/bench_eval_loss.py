#!/usr/bin/env python
"""What logging the validation loss costs a validation step: a `self.log` in every step against one at the epoch's end.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_eval_loss.py [--rounds 7] [--batches 400]

``PropensityModule`` sums the batch-size-weighted validation / test loss itself and logs it once an
epoch (in one process; under DDP a metric object still gathers it over ranks). Before, every
validation step called ``self.log(..., on_epoch=True, batch_size=n)``, and each such call moves
Lightning's result object to the device, field by field. One process, the paper's MLP (hidden size
10) on a small dense feature matrix (so that the step itself is cheap and the bookkeeping shows),
the same weights in both modules, ``Trainer.validate`` over ``--batches`` batches of 8 units, the two
variants alternating for ``--rounds`` rounds (the first left out). Prints each variant's median
seconds a run and milliseconds a batch, the saving a batch, and whether the two logged losses are
bit-identical (they must be: the same float32 sum in the same order).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
import warnings
from pathlib import Path

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textcause.models import MLP, PropensityModel


class LoggedEachStep(PropensityModel):
    """The validation loss as it was logged before: Lightning's epoch mean of a `self.log` in every step."""

    def _evaluate(self, batch, stage, collector):
        p, loss = self.propensity_and_loss(batch)
        n = int(batch["t"].shape[0])
        self.log(
            f"{stage}_loss", loss, on_step=False, on_epoch=True, prog_bar=stage == "val", sync_dist=True, batch_size=n
        )
        collector.update(**self._outputs(batch, p.detach()))
        return loss

    def _log_eval_loss(self, stage):
        pass


def loader(n_batches: int, batch_size: int = 8, dim: int = 20) -> DataLoader:
    rng = np.random.default_rng(0)
    n = n_batches * batch_size - 3  # a short last batch, as real splits have
    x = torch.from_numpy((rng.random((n, dim)) < 0.3).astype(np.float32))
    t = torch.from_numpy((rng.random(n) < 0.5).astype(np.float32))
    y = torch.from_numpy((rng.random(n) < 0.3).astype(np.float32))

    def collate(idx):
        i = torch.as_tensor(idx)
        return {"x": x[i], "t": t[i], "y": y[i], "p_true": torch.full((len(i),), 0.5), "index": i}

    return DataLoader(list(range(n)), batch_size=batch_size, collate_fn=collate)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--batches", type=int, default=400)
    args = parser.parse_args()
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    data = loader(args.batches)
    torch.manual_seed(0)
    net = MLP(input_dim=20, hidden_size=10)
    models = {"once an epoch (now)": PropensityModel(net), "every step (before)": LoggedEachStep(MLP(20, 10))}
    models["every step (before)"].load_state_dict(models["once an epoch (now)"].state_dict())
    trainer = L.Trainer(
        accelerator="cpu", devices=1, logger=False, enable_progress_bar=False, enable_model_summary=False
    )
    times: dict[str, list[float]] = {k: [] for k in models}
    losses: dict[str, float] = {}
    for r in range(args.rounds + 1):
        for name in models if r % 2 else reversed(list(models)):
            t = time.perf_counter()
            out = trainer.validate(models[name], dataloaders=data, verbose=False)
            if r:
                times[name].append(time.perf_counter() - t)
            losses[name] = out[0]["val_loss"]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {len(data)} batches, {args.rounds} rounds")
    per_batch = {}
    for name, secs in times.items():
        per_batch[name] = statistics.median(secs) / len(data) * 1e3
        print(f"{name:<22} {statistics.median(secs):7.3f} s a run, {per_batch[name]:6.3f} ms a batch")
    before, now = per_batch["every step (before)"], per_batch["once an epoch (now)"]
    print(f"saved {before - now:.3f} ms a validation batch ({before / now:.2f}x the step)")
    same = losses["every step (before)"] == losses["once an epoch (now)"]
    print(
        f"val_loss {losses['once an epoch (now)']!r} against {losses['every step (before)']!r}: {'identical' if same else 'DIFFERENT'}"
    )


if __name__ == "__main__":
    main()

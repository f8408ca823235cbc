"""CausalMetricsCallback evaluates again only when the collected outputs changed (issue 18)."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import lightning as L
import numpy as np
import torch
from toydata import ToyData

from textcause.callbacks import CausalMetricsCallback
from textcause.callbacks.causal_metrics import _same_outputs
from textcause.models import LogisticRegression, PropensityModel

TRAINER = dict(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False, enable_model_summary=False)


def counting(callback: CausalMetricsCallback) -> list[dict[str, float]]:
    """The results of every evaluation the callback computes (not those it reuses)."""
    computed: list[dict[str, float]] = []
    compute = callback.compute

    def spy(*args, **kwargs):
        computed.append(compute(*args, **kwargs))
        return computed[-1]

    callback.compute = spy
    return computed


def test_changing_weights_are_evaluated_every_epoch():
    dm = ToyData(n=200, n_val=80, batch_size=40)
    callback = CausalMetricsCallback()
    computed = counting(callback)
    torch.manual_seed(0)
    model = PropensityModel(LogisticRegression(dm.input_dim), lr=0.05)
    with tempfile.TemporaryDirectory() as root:
        L.Trainer(max_epochs=3, callbacks=[callback], default_root_dir=root, **TRAINER).fit(model, datamodule=dm)
    assert len(computed) == 3 and computed[0] != computed[-1]


def test_the_same_outputs_are_not_evaluated_again():
    dm = ToyData(n=200, n_val=80, batch_size=200)
    callback = CausalMetricsCallback()
    computed = counting(callback)
    torch.manual_seed(0)
    model = PropensityModel(LogisticRegression(dm.input_dim), lr=1.0, optimizer="lbfgs", weight_decay=0.01)
    with tempfile.TemporaryDirectory() as root:
        trainer = L.Trainer(max_epochs=3, callbacks=[callback], default_root_dir=root, **TRAINER)
        trainer.fit(model, datamodule=dm)
        first = dict(callback.last_metrics)
        trainer.validate(model, datamodule=dm, verbose=False)  # the same weights: the same outputs
    assert len(computed) == trainer.current_epoch  # once per fit epoch, none for validate
    assert callback.last_metrics == first
    assert {f"val/{k}": v for k, v in callback.compute(model.val_outputs.compute(), dm.true_ate).items()} == first
    assert trainer.callback_metrics["val/ate_ipw"].item() == np.float32(first["val/ate_ipw"])


def test_same_outputs_compares_every_array_with_nan_equal_to_nan():
    a = {"index": np.arange(3), "propensity": np.array([0.2, 0.5, 0.7]), "p_true": np.full(3, np.nan)}
    assert _same_outputs(a, {k: v.copy() for k, v in a.items()})
    assert not _same_outputs(a, {**a, "propensity": np.array([0.2, 0.5, 0.70000001])})
    assert not _same_outputs(a, {**a, "index": np.arange(3).astype(np.int32)})
    assert not _same_outputs(a, {k: v for k, v in a.items() if k != "p_true"})

"""PredictionGather: predict outputs of every rank, back in the calling process for every launcher."""

from __future__ import annotations

from datetime import timedelta

import lightning as L
import numpy as np
import pytest
import torch
from lightning.pytorch.strategies import DDPStrategy
from toydata import ToyData

from textcause.callbacks import PredictionGather
from textcause.callbacks.predictions import FILE, concatenate
from textcause.models import OracleModel

TRAINER = dict(
    accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False
)


def predict(devices: int, folder, dm: ToyData) -> PredictionGather:
    strategy = DDPStrategy(start_method="fork", timeout=timedelta(seconds=60)) if devices > 1 else "auto"
    gather = PredictionGather(folder)
    trainer = L.Trainer(devices=devices, strategy=strategy, callbacks=[gather], **TRAINER)
    trainer.predict(OracleModel(), datamodule=dm, return_predictions=False)
    return gather


def test_one_process_keeps_the_outputs_and_saves_them(tmp_path):
    dm = ToyData(n=300, n_val=101)
    gather = predict(1, tmp_path, dm)
    got = gather.load()
    assert got["index"].tolist() == dm.split["val"].tolist()
    np.testing.assert_allclose(got["propensity"], np.clip(dm.p[dm.split["val"]], 1e-6, 1 - 1e-6), rtol=1e-6)
    again = PredictionGather(tmp_path).load()  # a process that did not run the loop reads the file
    assert set(again) == set(got) and all(np.array_equal(again[k], got[k]) for k in got)


def test_forked_ranks_send_every_unit_back_once(tmp_path):
    dm = ToyData(n=300, n_val=101)  # 101 units on 2 ranks: 51 + 50, none repeated by the predict sampler
    gather = predict(2, tmp_path, dm)
    assert gather.result is None  # this process ran no loop: the forked ranks did
    got = gather.load()
    assert sorted(got["index"].tolist()) == dm.split["val"].tolist()
    order = np.argsort(got["index"])
    np.testing.assert_allclose(got["p_true"][order], dm.p[dm.split["val"]], rtol=1e-6)


def test_errors():
    with pytest.raises(FileNotFoundError, match="No gathered predictions"):
        PredictionGather().load()
    gather = PredictionGather()
    with pytest.raises(ValueError, match="PredictionGather needs predict_step to return a dict of tensors. Got list"):
        gather.on_predict_batch_end(None, None, [torch.zeros(2)], None, 0)
    assert concatenate([{}, {"a": np.arange(2)}, {"a": np.arange(1)}])["a"].tolist() == [0, 1, 0]
    assert concatenate([]) == {} and FILE == "predictions.npz"

"""A model's own early-stopping patience (``PropensityModel(early_stopping_patience=N)``).

SHERBERT's validation loss can sit at chance for several epochs before it falls (Twitter LC 4, seed
0: epochs 0-6 at 0.70, then 0.37); the trainer's patience of 5 stopped such fits at chance. The
model's patience replaces the trainer's EarlyStopping for that model only.
"""

from __future__ import annotations

import tempfile

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import EarlyStopping
from toydata import ToyData

from textcause.models import LogisticRegression, PropensityModel

TRAINER = dict(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False, enable_model_summary=False)


def worsening_data() -> ToyData:
    """Validation units whose treatment runs against the training signal: the validation loss only rises."""
    dm = ToyData(n=300, dim=20, n_val=100, batch_size=200, seed=0, layout="dense")
    val = dm.split["val"]
    dm.t[val] = 1.0 - dm.x[val, 0]
    return dm


def fit(patience: int | None, trainer_patience: int = 5, epochs: int = 30) -> L.Trainer:
    torch.manual_seed(0)
    dm = worsening_data()
    model = PropensityModel(LogisticRegression(dm.input_dim), lr=0.05, early_stopping_patience=patience)
    with tempfile.TemporaryDirectory() as root:
        trainer = L.Trainer(
            max_epochs=epochs,
            callbacks=[EarlyStopping("val_loss", mode="min", patience=trainer_patience)],
            default_root_dir=root,
            **TRAINER,
        )
        trainer.fit(model, datamodule=dm)
    return trainer


def stoppers(trainer: L.Trainer) -> list[EarlyStopping]:
    return [cb for cb in trainer.callbacks if isinstance(cb, EarlyStopping)]


@pytest.mark.usefixtures("one_thread")
def test_the_models_patience_replaces_the_trainers():
    trainer = fit(patience=2)
    (stopper,) = stoppers(trainer)  # one EarlyStopping: the model's took the trainer's place
    assert stopper.patience == 2 and stopper.monitor == "val_loss"
    assert stopper.stopped_epoch == 2  # best at epoch 0, then two epochs without a lower loss


@pytest.mark.usefixtures("one_thread")
def test_without_it_the_trainers_patience_holds():
    trainer = fit(patience=None)
    (stopper,) = stoppers(trainer)
    assert stopper.patience == 5 and stopper.stopped_epoch == 5


@pytest.mark.usefixtures("one_thread")
def test_a_longer_patience_trains_longer_than_the_trainers():
    assert stoppers(fit(patience=8))[0].stopped_epoch == 8


@pytest.mark.parametrize("bad", [0, -1, 2.5, "10"])
def test_a_patience_below_one_is_refused(bad):
    with pytest.raises(ValueError, match="early_stopping_patience"):
        PropensityModel(LogisticRegression(4), early_stopping_patience=bad)


def test_the_patience_is_saved_with_the_model():
    model = PropensityModel(LogisticRegression(4), early_stopping_patience=10)
    assert model.hparams["early_stopping_patience"] == 10

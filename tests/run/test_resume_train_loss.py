"""A checkpoint saved mid-epoch carries the epoch's running training loss, so a resumed run's
``metrics.csv`` gives the whole epoch's mean (issue 43; the kill-and-resume end-to-end check is
``tests/run/test_resume.py``)."""

from __future__ import annotations

import torch

from textcause.models.components.linear import LogisticRegression
from textcause.models.propensity import TRAIN_LOSS_KEY, PropensityModel


def test_the_running_train_loss_goes_into_the_checkpoint_and_comes_back():
    model = PropensityModel(LogisticRegression(3))
    model._add_train_loss(torch.tensor(0.5), 16)
    model._add_train_loss(torch.tensor(0.25), 8)
    checkpoint: dict = {}
    model.on_save_checkpoint(checkpoint)
    assert checkpoint[TRAIN_LOSS_KEY].tolist() == [0.5 * 16 + 0.25 * 8, 24.0]
    resumed = PropensityModel(LogisticRegression(3))
    resumed.on_load_checkpoint(checkpoint)
    resumed._add_train_loss(torch.tensor(1.0), 8)  # the steps after the resume add to it
    total = resumed._train_loss
    assert total is not None and (total[0] / total[1]).item() == (8 + 2 + 8) / 32


def test_a_checkpoint_between_epochs_carries_nothing():
    model = PropensityModel(LogisticRegression(3))
    checkpoint: dict = {}
    model.on_save_checkpoint(checkpoint)
    assert TRAIN_LOSS_KEY not in checkpoint
    model.on_load_checkpoint(checkpoint)
    assert model._train_loss is None

"""``PropensityModel(l1=...)``: an L1 penalty on the network's input weights, for n-gram networks.

The tuned LR wins on n-gram features largely by its L1 penalty (most of tens of thousands of
n-grams are noise); the simple network gets the same penalty on its hidden layer's weights.
"""

from __future__ import annotations

import tempfile

import lightning as L
import pytest
import torch
import torch.nn.functional as F
from toydata import ToyData

from textcause.models import LogisticRegression, PropensityModel
from textcause.models.components import MLP, SHERBERT

TRAINER = dict(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False, enable_model_summary=False)


def _fit(net_kind: str, l1: float, dim: int = 60, epochs: int = 30, weight_decay: float = 0.0) -> PropensityModel:
    torch.manual_seed(0)
    dm = ToyData(n=400, dim=dim, n_val=100, batch_size=50, seed=1, layout="csr")
    net = MLP(dm.input_dim, hidden_size=10) if net_kind == "mlp" else LogisticRegression(dm.input_dim)
    model = PropensityModel(net, lr=0.003, l1=l1, weight_decay=weight_decay)
    with tempfile.TemporaryDirectory() as root:
        trainer = L.Trainer(
            max_epochs=epochs,
            default_root_dir=root,
            enable_checkpointing=False,
            limit_val_batches=0,  # training only: the weights are what is checked
            num_sanity_val_steps=0,
            **TRAINER,
        )
        trainer.fit(model, datamodule=dm)
    return model


@pytest.mark.usefixtures("one_thread")
def test_the_training_loss_is_the_log_loss_plus_l1_times_the_input_weights_abs_sum():
    torch.manual_seed(0)
    dm = ToyData(n=64, dim=12, n_val=16, batch_size=48, seed=0, layout="dense")
    model = PropensityModel(MLP(dm.input_dim, hidden_size=5), l1=0.03)
    batch = dm.collate(list(range(48)))
    loss = model.training_step(batch, 0)
    net = model.net
    logits = net.out(torch.relu(net.hidden(batch["x"]))).squeeze(-1)
    by_hand = F.binary_cross_entropy_with_logits(logits, batch["t"]) + 0.03 * net.hidden.weight.abs().sum()
    assert float(loss) == pytest.approx(float(by_hand), rel=1e-6)
    # only the hidden layer's weights: not its bias, not the output layer
    plain = PropensityModel(model.net, l1=0.0).training_step(batch, 0)
    assert float(loss - plain) == pytest.approx(0.03 * float(net.hidden.weight.abs().sum()), rel=1e-5)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("net_kind", ["mlp", "lr"])
def test_l1_moves_the_input_weights_onto_the_signal_feature(net_kind):
    # ToyData's treatment depends on feature 0 only: the other 59 are noise
    def share_on_signal(model):
        w = model.net.input_weights().detach().abs()
        return float(w[:, 0].sum() / w.sum())

    plain, lasso = _fit(net_kind, 0.0), _fit(net_kind, 0.03)
    assert share_on_signal(plain) < 0.15  # without a penalty the weight spreads over the 59 noise features too
    assert share_on_signal(lasso) > 3 * share_on_signal(plain)


@pytest.mark.usefixtures("one_thread")
def test_the_validation_loss_is_the_plain_log_loss():
    torch.manual_seed(0)
    dm = ToyData(n=200, dim=10, n_val=50, batch_size=200, seed=0, layout="dense")
    model = PropensityModel(LogisticRegression(dm.input_dim), l1=0.5)
    with tempfile.TemporaryDirectory() as root:
        trainer = L.Trainer(max_epochs=1, default_root_dir=root, enable_checkpointing=False, **TRAINER)
        (metrics,) = trainer.validate(model, datamodule=dm, verbose=False)
    val = dm.split["val"]
    batch = dm.collate(val.tolist())
    with torch.no_grad():
        expected = F.binary_cross_entropy_with_logits(model.net(batch["x"]), batch["t"])
    assert metrics["val_loss"] == pytest.approx(float(expected), rel=1e-5)


def test_bad_l1_settings_are_refused_in_one_sentence():
    with pytest.raises(ValueError, match="The 'l1' parameter of PropensityModel must be"):
        PropensityModel(MLP(8), l1=-0.1)
    with pytest.raises(ValueError, match="needs optimizer 'adam'.*Got l1=0.01 with optimizer 'lbfgs'"):
        PropensityModel(LogisticRegression(8), optimizer="lbfgs", weight_decay=0.1, l1=0.01)
    with pytest.raises(ValueError, match="SHERBERT names none.*use it with MLP or LogisticRegression"):
        PropensityModel(SHERBERT(input_dim=8, hidden_size=4, use_tokens=False), l1=0.01)
    # l1 = 0 leaves every other model as it was, L-BFGS and SHERBERT included
    assert PropensityModel(LogisticRegression(8), optimizer="lbfgs", weight_decay=0.1).l1 == 0.0


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_adam_steps_all_weights_at_once_with_the_one_at_a_time_arithmetic(monkeypatch, weight_decay):
    # PropensityModel's Adam uses torch's foreach kernels (4x as fast on an n-gram MLP's weight); the
    # weights after a whole fit with the penalties on a sparse batch's column-major layout must be the
    # ones the per-tensor loop, torch's CPU default, gives
    trained = _fit("mlp", l1=0.01, epochs=5, weight_decay=weight_decay)
    opt = trained.configure_optimizers()
    assert opt.defaults["foreach"] is True

    original = torch.optim.Adam

    class OneAtATime(original):
        def __init__(self, params, **kwargs):
            kwargs["foreach"] = False
            super().__init__(params, **kwargs)

    monkeypatch.setattr(torch.optim, "Adam", OneAtATime)
    alone = _fit("mlp", l1=0.01, epochs=5, weight_decay=weight_decay)
    assert alone.configure_optimizers().defaults["foreach"] is False
    for (name, a), (_, b) in zip(trained.state_dict().items(), alone.state_dict().items()):
        assert torch.equal(a, b), name

"""Propensity networks, the Lightning propensity model, the baselines and the prediction collector.

A tiny in-test data module: sparse binary features where feature 0 sets the treatment
probability (0.12 or 0.88), and a binary outcome with a true ATE of 0.3.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from unittest import mock

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import lightning as L
import numpy as np
import pandas as pd
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.cli import LightningCLI
from lightning.pytorch.loggers import CSVLogger
from torch import nn
from toydata import ToyData

from textcause.estimators import ipw, unadjusted
from textcause.models import (
    MLP,
    LogisticRegression,
    OracleModel,
    PredictionCollector,
    PropensityModel,
    UnadjustedModel,
    build_net,
    net_config,
)

TRAINER = dict(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False, enable_model_summary=False)


def predictions(trainer: L.Trainer, model: L.LightningModule, dm: ToyData) -> dict[str, np.ndarray]:
    out = trainer.predict(model, dataloaders=dm.loader("val"))
    return {k: torch.cat([b[k] for b in out]).numpy() for k in out[0]}


# ---------------------------------------------------------------------- components
@pytest.mark.parametrize("make", [lambda d: LogisticRegression(d), lambda d: MLP(d, hidden_size=10)])
def test_component_sparse_forward_equals_dense(make):
    torch.manual_seed(0)
    net = make(30)
    x = torch.rand(8, 30)
    x[x < 0.7] = 0.0
    dense = net(x)
    assert dense.shape == (8,)
    for sparse in (x.to_sparse_coo(), x.to_sparse_csr()):
        torch.testing.assert_close(net(sparse), dense, rtol=1e-6, atol=1e-6)


def test_component_sparse_gradients_equal_dense():
    torch.manual_seed(0)
    net = MLP(12, hidden_size=4)
    x = (torch.rand(6, 12) < 0.3).float()
    grads = []
    for batch in (x, x.to_sparse_coo()):
        net.zero_grad()
        net(batch).sum().backward()
        grads.append(net.hidden.weight.grad.clone())
    torch.testing.assert_close(grads[0], grads[1])


def test_logistic_regression_is_linear_in_features():
    net = LogisticRegression(3)
    with torch.no_grad():
        net.linear.weight.copy_(torch.tensor([[1.0, -2.0, 0.5]]))
        net.linear.bias.fill_(0.25)
    x = torch.tensor([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]]).to_sparse_coo()
    torch.testing.assert_close(net(x), torch.tensor([2.25, -1.75]))
    assert LogisticRegression(3, bias=False).linear.bias is None


def test_component_errors():
    with pytest.raises(ValueError, match="'input_dim' parameter of LogisticRegression must be an int >= 1. Got 0"):
        LogisticRegression(0)
    with pytest.raises(ValueError, match="'hidden_size' parameter of MLP must be an int >= 1"):
        MLP(5, hidden_size=0)
    with pytest.raises(ValueError, match="'dropout' parameter of MLP must be a float >= 0.0 and < 1.0"):
        MLP(5, dropout=1.0)
    with pytest.raises(ValueError, match=r"Expected features of shape \(batch, 5\). Got a tensor with shape \(2, 4\)"):
        LogisticRegression(5)(torch.zeros(2, 4).to_sparse_coo())


def test_mlp_dropout_only_in_training():
    torch.manual_seed(0)
    net = MLP(10, hidden_size=50, dropout=0.5).eval()
    x = torch.rand(4, 10)
    torch.testing.assert_close(net(x), net(x))
    net.train()
    assert not torch.equal(net(x), net(x))


# ---------------------------------------------------------------------- PropensityModel
class _StepLosses(L.Callback):
    """The loss and batch size of every training step, per epoch."""

    def __init__(self) -> None:
        self.steps: list[list[tuple[float, int]]] = []

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self.steps.append([])

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.steps[-1].append((float(outputs["loss"]), int(batch["t"].shape[0])))


@pytest.mark.parametrize("optimizer", ["adam", "lbfgs"])
def test_train_loss_is_the_epochs_batch_size_weighted_mean(tmp_path, optimizer):
    L.seed_everything(0)
    dm = ToyData(layout="dense", batch_size=32 if optimizer == "adam" else 300)
    model = PropensityModel(LogisticRegression(dm.input_dim), lr=0.1, weight_decay=0.01, optimizer=optimizer)
    seen = _StepLosses()
    logger = CSVLogger(tmp_path, name="log")
    trainer = L.Trainer(
        max_epochs=3,
        default_root_dir=tmp_path,
        enable_checkpointing=False,
        callbacks=[seen],
        **{**TRAINER, "logger": logger},
    )
    trainer.fit(model, dm)
    metrics = pd.read_csv(Path(logger.log_dir) / "metrics.csv")
    rows = metrics.dropna(subset=["train_loss"])
    assert rows["epoch"].tolist() == list(range(len(seen.steps)))
    assert float(trainer.callback_metrics["train_loss"]) == pytest.approx(rows["train_loss"].iloc[-1])
    for steps, logged in zip(seen.steps, rows["train_loss"].tolist()):
        if optimizer == "adam":
            assert steps[-1][1] < steps[0][1]  # a short last batch: an unweighted mean would differ
            expected = sum(v * n for v, n in steps) / sum(n for _, n in steps)
            assert logged == pytest.approx(expected, rel=1e-6)
            assert logged != pytest.approx(np.mean([v for v, _ in steps]), rel=1e-6)
        else:  # every closure call of the L-BFGS step counts, as Lightning's own epoch mean counted it
            assert len(steps) == 1 and np.isfinite(logged)


def _logged_each_step() -> type:
    """benchmarks/bench_eval_loss.py's ``LoggedEachStep``: the evaluation loss logged as before, with a
    `self.log` in every step (Lightning's own epoch mean)."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_eval_loss.py"
    spec = importlib.util.spec_from_file_location("bench_eval_loss", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LoggedEachStep


class _EvalLosses(L.Callback):
    def __init__(self) -> None:
        self.val: list[torch.Tensor] = []

    def on_validation_end(self, trainer, pl_module) -> None:
        self.val.append(trainer.callback_metrics["val_loss"].clone())


@pytest.mark.parametrize("precision", ["32-true", "bf16-mixed"])
def test_the_evaluation_loss_logged_once_an_epoch_has_lightnings_bits(tmp_path, precision):
    """val_loss / test_loss summed by the model and logged at the epoch's end: the same value, bit for
    bit, as a `self.log` in every step (what early stopping and the best checkpoint compare)."""
    runs = {}
    before = _logged_each_step()
    for cls in (PropensityModel, before):
        L.seed_everything(0)
        dm = ToyData(layout="dense", batch_size=32)  # 101 validation units: a last batch of 5
        model = cls(MLP(dm.input_dim, hidden_size=8, dropout=0.1), lr=0.05, weight_decay=0.01)
        seen = _EvalLosses()
        logger = CSVLogger(tmp_path, name=cls.__name__)
        trainer = L.Trainer(
            max_epochs=4,
            default_root_dir=tmp_path,
            enable_checkpointing=False,
            callbacks=[seen],
            precision=precision,
            **{**TRAINER, "logger": logger},
        )
        trainer.fit(model, dm)
        test = trainer.test(model, dataloaders=dm.loader("val"), verbose=False)[0]
        runs[cls] = (seen.val, test["test_loss"], pd.read_csv(Path(logger.log_dir) / "metrics.csv"))
    (new, new_test, new_csv), (old, old_test, old_csv) = runs[PropensityModel], runs[before]
    assert len(new) == len(old) == 5  # the sanity check and 4 epochs
    for a, b in zip(new, old):
        assert a.dtype == b.dtype == torch.float32 and torch.equal(a, b)
    assert len({float(v) for v in new}) > 2  # the model trained: the losses moved
    assert new_test == old_test and np.isfinite(new_test)
    assert list(new_csv.columns) == list(old_csv.columns)
    pd.testing.assert_frame_equal(new_csv, old_csv)


@pytest.mark.parametrize("layout", ["coo", "csr", "dense"])
def test_propensity_model_learns_the_signal(tmp_path, layout):
    L.seed_everything(0)
    dm = ToyData(layout=layout)
    model = PropensityModel(LogisticRegression(dm.input_dim), lr=0.1)
    trainer = L.Trainer(max_epochs=8, default_root_dir=tmp_path, enable_checkpointing=False, **TRAINER)
    trainer.fit(model, dm)
    assert {"train_loss", "val_loss"} <= set(trainer.callback_metrics)
    assert trainer.callback_metrics["val_loss"] < 0.5
    pred = predictions(trainer, model, dm)
    accuracy = np.mean((pred["propensity"] > 0.5) == (pred["t"] == 1))
    best = np.mean((pred["p_true"] > 0.5) == (pred["t"] == 1))  # the Bayes classifier on this sample
    assert accuracy >= best - 0.02 and accuracy > 0.8
    assert np.corrcoef(pred["propensity"], pred["p_true"])[0, 1] > 0.9
    np.testing.assert_array_equal(pred["index"], dm.split["val"])


def test_predict_step_outputs_and_clamping():
    model = PropensityModel(LogisticRegression(2))
    with torch.no_grad():
        model.net.linear.weight.copy_(torch.tensor([[100.0, -100.0]]))
        model.net.linear.bias.zero_()
    batch = {
        "x": torch.tensor([[1.0, 0.0], [0.0, 1.0]]),
        "t": torch.tensor([1.0, 0.0]),
        "y": torch.tensor([0.0, 1.0]),
        "p_true": torch.tensor([0.9, 0.1]),
        "index": torch.tensor([7, 3]),
    }
    out = model.predict_step(batch, 0)
    assert set(out) == {"propensity", "index", "t", "y", "p_true"}
    torch.testing.assert_close(out["propensity"], torch.tensor([1 - 1e-6, 1e-6]))
    assert torch.equal(out["index"], batch["index"])


@pytest.mark.parametrize("make", [lambda d: LogisticRegression(d), lambda d: MLP(d, hidden_size=10, dropout=0.1)])
def test_checkpoint_round_trip_without_arguments(tmp_path, make):
    L.seed_everything(0)
    dm = ToyData()
    model = PropensityModel(make(dm.input_dim), lr=0.05, weight_decay=1e-4)
    ckpt = ModelCheckpoint(dirpath=tmp_path, filename="last")
    trainer = L.Trainer(max_epochs=2, default_root_dir=tmp_path, callbacks=[ckpt], **TRAINER)
    trainer.fit(model, dm)
    before = predictions(trainer, model, dm)["propensity"]

    loaded = PropensityModel.load_from_checkpoint(tmp_path / "last.ckpt")
    assert type(loaded.net) is type(model.net)
    assert (loaded.lr, loaded.weight_decay) == (0.05, 1e-4)
    after = predictions(L.Trainer(**TRAINER), loaded, dm)["propensity"]
    np.testing.assert_array_equal(after, before)


class ToyCLI(LightningCLI):
    def add_arguments_to_parser(self, parser: Any) -> None:
        prefix = "model.init_args" if self.subclass_mode_model else "model"
        parser.link_arguments("data.input_dim", f"{prefix}.net.init_args.input_dim", apply_on="instantiate")


@pytest.mark.parametrize(
    ("subclass_mode", "net_args", "net_type"),
    [
        (False, ["--model.net=textcause.models.components.MLP", "--model.net.init_args.hidden_size=7"], MLP),
        # Every argument of the net is linked: Lightning still needs the net's init_args in the config.
        (
            True,
            ["--model=textcause.models.PropensityModel", "--model.net=textcause.models.components.LogisticRegression"],
            LogisticRegression,
        ),
    ],
)
def test_lightning_cli_checkpoint_round_trip(tmp_path, subclass_mode, net_args, net_type):
    args = [
        "fit",
        *net_args,
        "--model.lr=0.02",
        "--trainer.max_epochs=1",
        "--trainer.accelerator=cpu",
        "--trainer.logger=false",
        "--trainer.enable_progress_bar=false",
        f"--trainer.default_root_dir={tmp_path}",
    ]
    model_class = L.LightningModule if subclass_mode else PropensityModel
    with mock.patch("sys.argv", ["train.py"]):
        cli = ToyCLI(
            model_class,
            ToyData,
            args=args,
            subclass_mode_model=subclass_mode,
            seed_everything_default=0,
            save_config_callback=None,
        )
    assert cli.model.hparams["net"]["init_args"]["input_dim"] == 20
    path = cli.trainer.checkpoint_callback.best_model_path
    loaded = PropensityModel.load_from_checkpoint(path)
    assert type(loaded.net) is net_type and loaded.net.input_dim == 20 and loaded.lr == 0.02
    x = torch.from_numpy(cli.datamodule.x[:16]).to_sparse_coo()
    cli.model.eval()
    loaded.eval()
    torch.testing.assert_close(loaded(x), cli.model(x), rtol=0, atol=0)


class Opaque(nn.Module):
    """A net that does not keep its init arguments as attributes."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.layer = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x).squeeze(-1)


def test_opaque_net_needs_net_at_load(tmp_path):
    with pytest.warns(UserWarning, match="pass net=... to PropensityModel.load_from_checkpoint"):
        model = PropensityModel(Opaque(20))
    assert "net" not in model.hparams
    trainer = L.Trainer(max_epochs=1, default_root_dir=tmp_path, enable_checkpointing=False, **TRAINER)
    dm = ToyData(layout="dense")
    trainer.fit(model, dm)
    trainer.save_checkpoint(tmp_path / "m.ckpt")
    with pytest.warns(UserWarning):
        loaded = PropensityModel.load_from_checkpoint(tmp_path / "m.ckpt", net=Opaque(20))
    x = torch.from_numpy(dm.x[:5])
    torch.testing.assert_close(loaded(x), model(x))


def test_net_config_and_build_net():
    net = MLP(4, hidden_size=3, dropout=0.25)
    config = net_config(net)
    assert config == {
        "class_path": "textcause.models.components.mlp.MLP",
        "init_args": {"input_dim": 4, "hidden_size": 3, "dropout": 0.25},
    }
    rebuilt = build_net(config)
    assert isinstance(rebuilt, MLP) and rebuilt.hidden_size == 3
    assert net_config(Opaque(3)) is None


def test_hparams_keep_the_nets_rebuild_config_not_the_module():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "is an instance of nn.Module" warning: the module is not a hyperparameter
        model = PropensityModel(MLP(6, hidden_size=3), lr=0.01, optimizer="lbfgs")
    expected = {
        "lr": 0.01,
        "weight_decay": 0.0,
        "optimizer": "lbfgs",
        "lbfgs_max_iter": 50,
        "early_stopping_patience": None,
        "l1": 0.0,
        "net": net_config(model.net),
    }
    assert dict(model.hparams) == expected
    assert dict(model.hparams_initial) == expected  # what loggers record
    rebuilt = PropensityModel(model.hparams["net"])  # the stored config rebuilds the model
    assert isinstance(rebuilt.net, MLP) and rebuilt.hparams["net"] == model.hparams["net"]


def test_propensity_model_errors():
    with pytest.raises(ValueError, match="'lr' parameter of PropensityModel must be a float > 0.0. Got 0"):
        PropensityModel(LogisticRegression(2), lr=0)
    with pytest.raises(ValueError, match="'weight_decay' parameter of PropensityModel must be a float >= 0.0"):
        PropensityModel(LogisticRegression(2), weight_decay=-1.0)
    with pytest.raises(ValueError, match="'net' parameter of PropensityModel must be a torch nn.Module. Got str"):
        PropensityModel("mlp")
    with pytest.raises(ValueError, match="'net' config must be a dict with a dotted 'class_path'"):
        build_net({"init_args": {}})
    with pytest.raises(ValueError, match="'os.system' is not an imported torch nn.Module"):
        build_net({"class_path": "os.system", "init_args": {}})
    with pytest.raises(ValueError, match="'not_imported_pkg.Net' is not an imported torch nn.Module"):
        build_net({"class_path": "not_imported_pkg.Net"})


# ---------------------------------------------------------------------- baselines
def test_oracle_returns_true_propensity(tmp_path):
    dm = ToyData()
    model = OracleModel()
    assert OracleModel.requires_training is False and PropensityModel.requires_training is True
    trainer = L.Trainer(max_epochs=1, default_root_dir=tmp_path, enable_checkpointing=False, **TRAINER)
    trainer.fit(model, dm)
    pred = predictions(trainer, model, dm)
    np.testing.assert_array_equal(pred["propensity"], dm.p[dm.split["val"]].astype(np.float32))
    assert torch.equal(model.ddp_anchor, torch.zeros(()))


@pytest.mark.parametrize("through_datamodule", [True, False])
def test_unadjusted_is_the_difference_in_means(tmp_path, through_datamodule):
    dm = ToyData()
    model = UnadjustedModel()
    trainer = L.Trainer(max_epochs=2, default_root_dir=tmp_path, enable_checkpointing=False, **TRAINER)
    if through_datamodule:
        trainer.fit(model, dm)
    else:  # no data module: the share is counted from the training batches
        trainer.fit(model, train_dataloaders=dm.loader("train", shuffle=True), val_dataloaders=dm.loader("val"))
    share = float(dm.t[dm.split["train"]].astype(np.float64).mean())
    assert float(model.treated_share) == pytest.approx(share, abs=1e-12)
    pred = predictions(trainer, model, dm)
    np.testing.assert_array_equal(pred["propensity"], np.full(len(dm.split["val"]), share, dtype=np.float32))
    t, y = pred["t"], pred["y"]
    assert ipw(t, y, pred["propensity"]).ate == pytest.approx(unadjusted(t, y).ate, abs=1e-12)
    assert unadjusted(t, y).ate == pytest.approx(y[t == 1].mean() - y[t == 0].mean())


def test_unadjusted_share_survives_checkpoint(tmp_path):
    dm = ToyData()
    model = UnadjustedModel()
    trainer = L.Trainer(max_epochs=1, default_root_dir=tmp_path, enable_checkpointing=False, **TRAINER)
    trainer.fit(model, dm)
    trainer.save_checkpoint(tmp_path / "u.ckpt")
    loaded = UnadjustedModel.load_from_checkpoint(tmp_path / "u.ckpt")
    assert float(loaded.treated_share) == float(model.treated_share)


def test_unadjusted_errors():
    with pytest.raises(
        ValueError, match="'treated_share' parameter of UnadjustedModel must be a float > 0.0 and < 1.0"
    ):
        UnadjustedModel(treated_share=1.0)
    dm = ToyData()
    batch = dm.collate([0, 1, 2])
    with pytest.raises(ValueError, match="UnadjustedModel has not seen its training data"):
        UnadjustedModel().predict_step(batch, 0)
    fixed = UnadjustedModel(treated_share=0.3).predict_step(batch, 0)
    torch.testing.assert_close(fixed["propensity"], torch.full((3,), 0.3))
    one_class = ToyData()
    one_class.t[:] = 1.0
    trainer = L.Trainer(max_epochs=1, enable_checkpointing=False, **TRAINER)
    with pytest.raises(ValueError, match="treated share of 1.0: it needs treated and untreated units"):
        trainer.fit(UnadjustedModel(), one_class)


# ---------------------------------------------------------------------- collector
def test_collector_deduplicates_and_sorts_by_index():
    c = PredictionCollector()
    f = lambda *v: torch.tensor(v, dtype=torch.float32)  # noqa: E731
    c.update(torch.tensor([4, 1, 2]), f(0.4, 0.1, 0.2), f(1, 0, 1), f(1, 1, 0), f(0.5, 0.5, 0.5))
    c.update(torch.tensor([0, 4]), f(0.0, 0.4), f(0, 1), f(0, 1), f(0.5, 0.5))  # 4 again: DDP padding
    out = c.compute()
    np.testing.assert_array_equal(out["index"], [0, 1, 2, 4])
    np.testing.assert_allclose(out["propensity"], [0.0, 0.1, 0.2, 0.4], rtol=1e-7)
    np.testing.assert_array_equal(out["t"], [0, 0, 1, 1])
    assert out["propensity"].dtype == np.float64 and "mu0" not in out
    c.reset()
    with pytest.warns(UserWarning, match="called before the ``update`` method"):
        assert c.compute()["index"].size == 0


def test_collector_keeps_outcome_predictions():
    c = PredictionCollector()
    v = torch.tensor([0.1, 0.2])
    c.update(torch.tensor([1, 0]), v, v, v, v, mu0=torch.tensor([0.3, 0.4]), mu1=torch.tensor([0.5, 0.6]))
    out = c.compute()
    np.testing.assert_allclose(out["mu0"], [0.4, 0.3], rtol=1e-7)
    np.testing.assert_allclose(out["mu1"], [0.6, 0.5], rtol=1e-7)


def test_collector_errors():
    c = PredictionCollector()
    v = torch.zeros(3)
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples: \[2, 3, 3, 3, 3\]"):
        c.update(torch.tensor([0, 1]), v, v, v, v)
    with pytest.raises(ValueError, match="Pass both 'mu0' and 'mu1'"):
        c.update(torch.arange(3), v, v, v, v, mu0=v)

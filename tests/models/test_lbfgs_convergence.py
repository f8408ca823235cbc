"""Full-batch L-BFGS (issue 18): converges to scikit-learn's solution and stops there; refits alike (issue 15).

The objective of ``PropensityModel(optimizer="lbfgs")`` is the mean log-loss plus
``weight_decay / 2 * ||w||^2`` over every parameter, i.e. scikit-learn's L2 logistic regression with
``C = 1 / (weight_decay * n_train)``; without a bias the two are the same problem, and with one
it is scikit-learn's on a column of ones (the intercept penalised too).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import lightning as L
import numpy as np
import pytest
import torch
from lightning.pytorch.callbacks import EarlyStopping
from sklearn.linear_model import LogisticRegression as SkLogisticRegression
from toydata import ToyData

from textcause.callbacks import CausalMetricsCallback
from textcause.models import MLP, LogisticRegression, PropensityModel
from textcause.models.lbfgs import ConvergedLBFGS

TRAINER = dict(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False, enable_model_summary=False)
WEIGHT_DECAY = 0.02


class Log(L.Callback):
    """Every epoch's logged validation values (``val_loss`` and the causal metrics), and the weights."""

    def __init__(self) -> None:
        self.epochs: list[dict[str, float]] = []
        self.weights: list[torch.Tensor] = []

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        logged = trainer.callback_metrics
        self.epochs.append({k: float(v) for k, v in logged.items() if k == "val_loss" or k.startswith("val/")})
        self.weights.append(torch.cat([p.detach().reshape(-1).clone() for p in pl_module.parameters()]))


def toy(n: int = 400, dim: int = 60) -> ToyData:
    dm = ToyData(n=n, dim=dim, n_val=100, batch_size=n, seed=3, layout="csr")  # one batch: full-batch L-BFGS
    rng = np.random.default_rng(3)
    # a signal in several features, so the L2 solution has many non-trivial coefficients
    z = dm.x @ rng.normal(0.0, 0.8, dim)
    dm.p = 1.0 / (1.0 + np.exp(-(z - z.mean())))
    dm.t = (rng.random(n) < dm.p).astype(np.float32)
    return dm


def fit(dm: ToyData, *, bias: bool, epochs: int = 8, callbacks: tuple = (), **trainer) -> PropensityModel:
    torch.manual_seed(0)
    model = PropensityModel(
        LogisticRegression(dm.input_dim, bias=bias), optimizer="lbfgs", lr=1.0, weight_decay=WEIGHT_DECAY
    )
    with tempfile.TemporaryDirectory() as root:  # the default ModelCheckpoint writes there
        trainer = L.Trainer(
            max_epochs=epochs, callbacks=list(callbacks), default_root_dir=root, **{**TRAINER, **trainer}
        )
        trainer.fit(model, datamodule=dm)
    return model


def sklearn_solution(dm: ToyData, *, bias: bool) -> tuple[np.ndarray, np.ndarray]:
    """(coefficients, validation probabilities) of scikit-learn's solution of the same objective."""
    train, val = dm.split["train"], dm.split["val"]
    x = np.hstack([dm.x, np.ones((len(dm.x), 1), np.float32)]) if bias else dm.x
    c = 1.0 / (WEIGHT_DECAY * len(train))
    sk = SkLogisticRegression(C=c, fit_intercept=False, tol=1e-10, max_iter=10000).fit(x[train], dm.t[train])
    return sk.coef_.ravel(), sk.predict_proba(x[val])[:, 1]


def probabilities(model: PropensityModel, dm: ToyData) -> np.ndarray:
    with torch.no_grad():
        return torch.sigmoid(model(dm.collate(dm.split["val"].tolist())["x"])).numpy()


@pytest.mark.parametrize("bias", [False, True])
def test_full_batch_lbfgs_converges_to_scikit_learns_solution(bias):
    """Float32 L-BFGS stops where the loss no longer changes: within 1e-3 of the float64 optimum."""
    dm = toy()
    model = fit(dm, bias=bias)
    coef, p_sk = sklearn_solution(dm, bias=bias)
    w = model.net.linear.weight.detach().numpy().ravel()
    if bias:
        w = np.append(w, model.net.linear.bias.detach().numpy())
    assert np.abs(coef).max() > 0.3  # a solution far from zero
    np.testing.assert_allclose(w, coef, atol=2e-3)
    np.testing.assert_allclose(probabilities(model, dm), p_sk, atol=1e-3)


def test_a_converged_fit_stops_after_the_converged_epoch():
    dm = toy()
    log = Log()
    model = fit(dm, bias=True, epochs=8, callbacks=(log,))
    optimizer = model.trainer.optimizers[0]
    assert isinstance(optimizer, ConvergedLBFGS) and optimizer.full_batch and optimizer.converged
    assert model.trainer.current_epoch < 8 and len(log.epochs) == model.trainer.current_epoch


def test_stopping_does_not_change_the_logged_validation_values(monkeypatch):
    """The epochs the converged fit no longer runs would only have repeated its last validation.

    ``min_epochs`` keeps the epochs after convergence: their steps leave the weights alone and their
    logged values (the loss and every causal metric, whose evaluation is then not recomputed) are
    exactly the ones computed at the converged epoch, which are also those of a recomputation. The
    old behaviour (every step iterating again) moves the weights by rounding noise only.
    """
    dm = toy()
    stopped, kept, old = Log(), Log(), Log()
    metrics = CausalMetricsCallback
    fit(dm, bias=True, epochs=8, callbacks=(stopped, metrics()))
    callback = metrics()
    evaluations = []
    compute = callback.compute
    callback.compute = lambda *a, **k: evaluations.append(1) or compute(*a, **k)
    model = fit(dm, bias=True, epochs=8, callbacks=(kept, callback), min_epochs=6)
    n = len(stopped.epochs)
    assert len(kept.epochs) == 6 > n
    assert len(evaluations) == n  # the epochs after convergence reuse the last evaluation
    assert kept.epochs[:n] == stopped.epochs  # the same fit up to the stop, bit for bit
    for epoch in range(n, 6):
        assert kept.epochs[epoch] == kept.epochs[n - 1]
        assert torch.equal(kept.weights[epoch], kept.weights[n - 1])
    # the reused numbers are those of evaluating the outputs afresh
    fresh = callback.compute(model.val_outputs.compute(), dm.true_ate)
    assert {f"val/{k}": v for k, v in fresh.items()} == callback.last_metrics
    assert any(k.startswith("val/ate_") for k in callback.last_metrics)

    monkeypatch.setattr(ConvergedLBFGS, "stop_when_converged", False)
    fit(dm, bias=True, epochs=6, callbacks=(old, metrics()))
    assert len(old.epochs) == 6
    assert old.epochs[:n] == stopped.epochs
    assert (old.weights[-1] - kept.weights[-1]).abs().max() < 1e-3
    assert old.epochs[-1]["val_loss"] == pytest.approx(kept.epochs[-1]["val_loss"], abs=1e-5)


def test_mini_batch_lbfgs_keeps_iterating():
    """With several batches an epoch, one batch's converged step says nothing about the others."""
    dm = toy()
    dm.batch_size = 100
    torch.manual_seed(0)
    model = PropensityModel(LogisticRegression(dm.input_dim), optimizer="lbfgs", lr=1.0, weight_decay=WEIGHT_DECAY)
    with tempfile.TemporaryDirectory() as root:
        L.Trainer(max_epochs=3, default_root_dir=root, **TRAINER).fit(model, datamodule=dm)
    optimizer = model.trainer.optimizers[0]
    assert not optimizer.full_batch and not optimizer.frozen
    assert model.trainer.current_epoch == 3


def test_the_converged_flag_is_kept_in_the_optimizer_state():
    dm = toy()
    model = fit(dm, bias=True, epochs=8, callbacks=(EarlyStopping("val_loss", patience=100),))
    state = model.trainer.optimizers[0].state_dict()
    fresh = ConvergedLBFGS(model.parameters(), lr=1.0)
    fresh.load_state_dict(state)
    assert fresh.converged and not fresh.full_batch  # the fit loop sets full_batch again


# ------------------------------------------------------------------ refit (the refitting interval)
# PropensityModel.refit runs the model's own recipe on resampled users. A refit on users drawn with
# replacement solves the same L2 logistic regression with each user weighted by how often it was
# drawn: scikit-learn's solution with ``sample_weight`` = the counts is the reference.


def sklearn_probabilities(dm, rows: np.ndarray) -> np.ndarray:
    train, val = dm.split["train"], dm.split["val"]
    x = np.hstack([dm.x, np.ones((len(dm.x), 1), np.float32)])  # the intercept is penalised too
    counts = np.bincount(rows, minlength=len(train)).astype(float)
    c = 1.0 / (WEIGHT_DECAY * len(train))
    sk = SkLogisticRegression(C=c, fit_intercept=False, tol=1e-10, max_iter=10000)
    sk.fit(x[train], dm.t[train], sample_weight=counts)
    return sk.predict_proba(x[val])[:, 1]


@pytest.fixture(scope="module")
def fitted():
    dm = toy()
    return dm, fit(dm, bias=True)


def test_a_refit_on_all_training_users_is_the_trainer_fit(fitted):
    dm, model = fitted
    train, val = dm.split["train"], dm.split["val"]
    before = [p.detach().clone() for p in model.parameters()]
    p = model.refit(dm.collate(train.tolist()), dm.collate(val.tolist()), dm.collate(val.tolist()), max_steps=8)
    with torch.no_grad():
        trainer_p = torch.sigmoid(model(dm.collate(val.tolist())["x"])).numpy()
    np.testing.assert_allclose(p.numpy(), trainer_p, atol=1e-3)
    np.testing.assert_allclose(p.numpy(), sklearn_probabilities(dm, np.arange(len(train))), atol=1e-3)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))  # the model is left as it was


def test_a_refit_on_a_resample_weights_users_by_their_draws(fitted):
    dm, model = fitted
    train, val = dm.split["train"], dm.split["val"]
    rows = np.random.default_rng(1).integers(0, len(train), len(train))
    p = model.refit(dm.collate(train[rows].tolist()), dm.collate(val.tolist()), dm.collate(val.tolist()), max_steps=8)
    ref = sklearn_probabilities(dm, rows)
    np.testing.assert_allclose(p.numpy(), ref, atol=1e-3)
    assert np.abs(ref - sklearn_probabilities(dm, np.arange(len(train)))).max() > 0.02  # a different fit


def test_only_an_lbfgs_model_refits():
    adam = PropensityModel(MLP(input_dim=4), optimizer="adam")
    assert not adam.refittable
    assert PropensityModel(LogisticRegression(4), optimizer="lbfgs").refittable
    with pytest.raises(ValueError, match="PropensityModel trains with adam, not full-batch L-BFGS"):
        adam.refit({}, {}, {}, max_steps=1)


@pytest.mark.slow
def test_ddp_stops_at_the_same_epoch_with_the_same_numbers(tiny_corpus, tmp_path: Path):
    """Two forked ranks see the same mean loss and averaged gradient: they converge and stop alike."""
    import pandas as pd

    from textcause.paths import config_dir
    from textcause.run.fit import EvaluationSettings, RunSettings, fit_and_evaluate

    configs = config_dir()
    common = {"data.corpus": tiny_corpus, "data.min_users": 3, "data.n_users": 230, "trainer.max_epochs": 6}
    timeout = {"trainer.strategy.init_args.timeout": "0:01:00"}  # a stuck rank fails the test in a minute
    runs = []
    for extra, overrides in (((), common), ((configs / "trainer" / "ddp_cpu.yaml",), {**common, **timeout})):
        settings = RunSettings(
            (configs / "model" / "lr_bigram_binary.yaml", *extra),
            overrides,
            run_dir=tmp_path / str(len(runs)),
            evaluation=EvaluationSettings(n_boot=0),
            quiet=True,
        )
        runs.append(fit_and_evaluate(settings))
    one, two = runs
    frames = [pd.read_csv(r.log_dir / "metrics.csv") for r in runs]
    vals = [f[f["val_loss"].notna()].reset_index(drop=True) for f in frames]
    assert 1 <= len(vals[0]) == len(vals[1]) < 6  # converged and stopped, at the same epoch
    assert one.checkpoint.name.split("-val_loss")[0] == two.checkpoint.name.split("-val_loss")[0]
    # float32 L-BFGS stops at a point that depends on the order of the sums (tests/models/test_ddp.py):
    # 4e-5 apart in validation loss on an Intel host
    for col in [c for c in vals[0].columns if c == "val_loss" or c.startswith("val/")]:
        np.testing.assert_allclose(vals[1][col].to_numpy(), vals[0][col].to_numpy(), rtol=1e-3, atol=1e-6)
    np.testing.assert_allclose(two.predictions["propensity"], one.predictions["propensity"], rtol=1e-3, atol=1e-7)

"""The L2 logistic regression of a full-batch ``lbfgs`` fit and its refits is solved exactly by liblinear (issue 46).

The objective stays ``mean log-loss + weight_decay / 2 * ||(w, b)||^2``; the reference is scikit-learn's
lbfgs on a column of ones to ``tol=1e-10`` (another solver of the same problem). L-BFGS in float32 got
within 1e-3 of it; the exact path gets within liblinear's tolerance, so the tolerances here (5e-5)
fail for an L-BFGS fit.
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import lightning as L
import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression as SkLogisticRegression
from toydata import ToyData

from textcause.models import MLP, LogisticRegression, PropensityModel
from textcause.models.exact_lr import exact_fit

TRAINER = dict(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False, enable_model_summary=False)
WD = 0.02


def toy(n: int = 400, dim: int = 60, layout: str = "csr") -> ToyData:
    dm = ToyData(n=n, dim=dim, n_val=100, batch_size=n, seed=3, layout=layout)
    rng = np.random.default_rng(3)
    z = dm.x @ rng.normal(0.0, 0.8, dim)
    dm.p = 1.0 / (1.0 + np.exp(-(z - z.mean())))
    dm.t = (rng.random(n) < dm.p).astype(np.float32)
    return dm


def reference(x: np.ndarray, t: np.ndarray, *, bias: bool, counts: np.ndarray | None = None) -> np.ndarray:
    """``(w, b)`` of the same objective by scikit-learn's lbfgs, the intercept a penalised column of ones."""
    xo = np.hstack([x, np.ones((len(x), 1))]) if bias else x
    n = len(x) if counts is None else counts.sum()
    sk = SkLogisticRegression(C=1.0 / (WD * n), fit_intercept=False, tol=1e-10, max_iter=10000)
    return sk.fit(xo, t, sample_weight=counts).coef_.ravel()


def fit(dm: ToyData, net: torch.nn.Module, weight_decay: float = WD, epochs: int = 8) -> PropensityModel:
    torch.manual_seed(0)
    model = PropensityModel(net, optimizer="lbfgs", lr=1.0, weight_decay=weight_decay)
    with tempfile.TemporaryDirectory() as root:
        L.Trainer(max_epochs=epochs, default_root_dir=root, **TRAINER).fit(model, datamodule=dm)
    return model


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("layout", ["csr", "dense"])
def test_a_full_batch_fit_is_the_exact_optimum_in_one_epoch(bias, layout):
    dm = toy(layout=layout)
    model = fit(dm, LogisticRegression(dm.input_dim, bias=bias))
    train = dm.split["train"]
    want = reference(dm.x[train].astype(np.float64), dm.t[train], bias=bias)
    got = model.net.linear.weight.detach().numpy().ravel()
    if bias:
        got = np.append(got, model.net.linear.bias.detach().numpy())
    assert np.abs(want).max() > 0.3
    np.testing.assert_allclose(got, want, atol=5e-5)
    assert model.trainer.current_epoch == 1  # converged at the first epoch: the fit ends there
    assert model.trainer.optimizers[0].converged


def test_a_refit_on_a_resample_is_the_exact_weighted_optimum():
    dm = toy()
    model = fit(dm, LogisticRegression(dm.input_dim))
    train, val = dm.split["train"], dm.split["val"]
    rows = np.random.default_rng(1).integers(0, len(train), len(train))
    p = model.refit(dm.collate(train[rows].tolist()), dm.collate(val.tolist()), dm.collate(val.tolist()), max_steps=8)
    coef = reference(
        dm.x[train].astype(np.float64), dm.t[train], bias=True, counts=np.bincount(rows, minlength=len(train))
    )
    want = 1.0 / (1.0 + np.exp(-(dm.x[val] @ coef[:-1] + coef[-1])))
    np.testing.assert_allclose(p.numpy(), want, atol=5e-5)


def test_other_nets_and_no_penalty_keep_lbfgs():
    dm = toy()
    mlp = fit(dm, MLP(input_dim=dm.input_dim, hidden_size=8), epochs=2)
    assert not mlp.exact
    unpenalised = fit(dm, LogisticRegression(dm.input_dim), weight_decay=0.0, epochs=2)
    assert not unpenalised.exact
    state = unpenalised.trainer.optimizers[0].state[unpenalised.trainer.optimizers[0]._params[0]]
    assert state["n_iter"] > 0  # L-BFGS iterations ran


def test_exact_fit_declines_what_it_cannot_solve():
    x = np.eye(4)
    assert exact_fit(x, np.ones(4), 0.1, bias=True) is None  # one class
    assert exact_fit(x, np.array([0, 1, 0, 1]), 0.0, bias=True) is None  # no finite C
    w, b = exact_fit(x, np.array([0, 1, 0, 1]), 0.1, bias=True)
    assert w.shape == (4,) and w[1] > 0 > w[0]

"""TunedLogisticRegression: the penalty kind and strength chosen on validation with scikit-learn,
the choice recorded in every row, the weights in the checkpoint as tensors, the refit as chosen."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch
import yaml
from sklearn.linear_model import LogisticRegression as SkLR
from sklearn.metrics import log_loss

from textcause.grid.cell import run_config_cell
from textcause.grid.spec import grid_from_dict, load_grid
from textcause.models import TunedLogisticRegression
from textcause.models.components import LogisticRegression
from textcause.models.tuned_lr import DEFAULT_CS, fit_path, maxabs_scale

ROOT = Path(__file__).resolve().parents[2]


def _sparse_signal(seed=0, n=600, d=300, k=5):
    """A sparse logistic model: 5 of 300 binary features carry the treatment (L1's home ground)."""
    rng = np.random.default_rng(seed)
    x = (rng.random((n, d)) < 0.1).astype(np.float64)
    w = np.zeros(d)
    w[:k] = 2.5
    t = (rng.random(n) < 1 / (1 + np.exp(-(x @ w - 1.2)))).astype(np.int64)
    return sp.csr_matrix(x), t


def test_fit_path_keeps_the_lowest_validation_loss_of_independent_sklearn_fits():
    x, t = _sparse_signal()
    tr, va = slice(0, 400), slice(400, 600)
    coef, intercept, chosen = fit_path(x[tr], t[tr], x[va], t[va], seed=0)
    # every candidate refitted here with scikit-learn directly gives the same validation loss
    for penalty, ratio, c, loss, _ in chosen["candidates"]:
        if penalty == "elasticnet":
            continue  # warm-started along its path: checked below through the chosen weights only
        m = SkLR(C=c, l1_ratio=ratio, solver="liblinear", dual=False, max_iter=1000, random_state=0)  # L2: primal
        m.fit(x[tr], t[tr])
        assert loss == pytest.approx(log_loss(t[va], m.predict_proba(x[va])[:, 1]), rel=1e-6)
    losses = [row[3] for row in chosen["candidates"]]
    assert chosen["val_loss"] == min(losses)
    logits = x[va] @ coef + intercept
    assert chosen["val_loss"] == pytest.approx(float(np.mean(np.logaddexp(0, logits) - t[va] * logits)))
    # a sparse truth: the search prefers a sparsity-inducing penalty and keeps the signal
    assert chosen["penalty"] in ("l1", "elasticnet")
    assert np.all(coef[:5] > 0.5) and np.sum(coef[5:] != 0) < 100
    kinds = {row[0] for row in chosen["candidates"]}
    assert kinds == {"l1", "l2", "elasticnet"}
    assert sum(row[0] == "elasticnet" for row in chosen["candidates"]) == sum(c <= 1.0 for c in DEFAULT_CS)


def test_the_l2_solvers_match_scikit_learns_and_minimise_the_same_objective():
    x, t = _sparse_signal(seed=2)
    tr, va = slice(0, 400), slice(400, 600)
    runs = {}
    for solver in ("primal", "dual"):
        _, _, chosen = fit_path(x[tr], t[tr], x[va], t[va], penalties=["l2"], cs=[0.1, 1.0], l2_solver=solver)
        runs[solver] = [row[3] for row in chosen["candidates"]]
        for _, _, c, loss, _ in chosen["candidates"]:
            m = SkLR(C=c, solver="liblinear", dual=solver == "dual", max_iter=1000, random_state=0).fit(x[tr], t[tr])
            assert loss == pytest.approx(log_loss(t[va], m.predict_proba(x[va])[:, 1]), rel=1e-9)
    # both converge here, to the one optimum of the same objective: validation losses agree to the tolerance
    np.testing.assert_allclose(runs["primal"], runs["dual"], rtol=1e-3)
    assert runs["primal"] != runs["dual"]  # yet they are two solvers, not one called twice


def _first_stop(losses, k):
    """How many candidates a path of ``losses`` fits with patience ``k``: it stops once the latest fit is
    k past the first occurrence of the running minimum."""
    for i in range(len(losses)):
        if i - int(np.argmin(losses[: i + 1])) >= k:
            return i + 1
    return len(losses)


@pytest.mark.parametrize("patience", [1, 2, 3])
def test_path_patience_stops_each_path_after_k_strengths_without_improvement(patience):
    x, t = _sparse_signal(seed=3)
    tr, va = slice(0, 400), slice(400, 600)
    cs = list(np.logspace(-2, 2, 9))
    _, _, full = fit_path(x[tr], t[tr], x[va], t[va], cs=cs, seed=0)
    coef, intercept, cut = fit_path(x[tr], t[tr], x[va], t[va], cs=cs, seed=0, path_patience=patience)
    expected, n_full = [], 0
    for key in (("l1", 1.0), ("l2", 0.0), ("elasticnet", 0.5)):
        path = [row for row in full["candidates"] if (row[0], row[1]) == key]
        n_full += len(path)
        expected += path[: _first_stop([row[3] for row in path], patience)]
    assert cut["candidates"] == expected  # the same fits, in the same order, and no others
    assert cut["skipped"] == n_full - len(expected) > 0
    assert full["skipped"] == 0
    assert cut["val_loss"] == min(row[3] for row in expected)
    if full["val_loss"] in [row[3] for row in expected]:  # the full search's choice was reached: it is kept
        assert (cut["penalty"], cut["C"]) == (full["penalty"], full["C"])


def test_maxabs_scaling_is_folded_back_into_the_weights():
    x, t = _sparse_signal(seed=1)
    counts = x.multiply(np.arange(1, x.shape[1] + 1)).tocsr()  # columns with very different ranges
    scale = maxabs_scale(counts[:400])
    assert scale.shape == (counts.shape[1],) and np.all(scale >= 1)
    model = TunedLogisticRegression(LogisticRegression(input_dim=counts.shape[1]), penalties=["l1"], Cs=[0.3])
    coef, intercept, _ = model._fit(counts[:400], t[:400], counts[400:], t[400:], seed=0)
    ref = SkLR(C=0.3, l1_ratio=1.0, solver="liblinear", random_state=0).fit(counts[:400].multiply(1 / scale), t[:400])
    np.testing.assert_allclose(coef, ref.coef_.ravel() / scale, rtol=1e-12)
    assert intercept == pytest.approx(float(ref.intercept_[0]))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"penalties": ["l3"]}, "The 'penalties' parameter of TunedLogisticRegression must be one of"),
        ({"penalties": []}, "must be a non-empty list"),
        ({"Cs": []}, "must be a non-empty list of floats > 0"),
        ({"Cs": [0.0]}, "The 'Cs' parameter of TunedLogisticRegression"),
        ({"l1_ratios": [1.0]}, "The 'l1_ratios' parameter of TunedLogisticRegression"),
        ({"feature_scaling": "zscore"}, "The 'feature_scaling' parameter"),
        ({"l2_solver": "newton"}, "The 'l2_solver' parameter of TunedLogisticRegression must be one of"),
        ({"path_patience": 0}, "The 'path_patience' parameter of TunedLogisticRegression must be an int >= 1"),
        ({"path_patience": True}, "The 'path_patience' parameter"),
    ],
)
def test_bad_settings_are_one_sentence(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TunedLogisticRegression(LogisticRegression(input_dim=3), **kwargs)


def test_fit_path_refuses_an_unknown_solver_or_patience_in_one_sentence():
    x, t = _sparse_signal()
    with pytest.raises(ValueError, match="The 'l2_solver' parameter of fit_path must be one of"):
        fit_path(x[:400], t[:400], x[400:], t[400:], l2_solver="Dual")
    with pytest.raises(ValueError, match="The 'path_patience' parameter of fit_path must be an int >= 1"):
        fit_path(x[:400], t[:400], x[400:], t[400:], path_patience=2.5)


def test_one_class_in_training_is_refused():
    x, _ = _sparse_signal()
    with pytest.raises(ValueError, match="needs treated and untreated users in its training split"):
        fit_path(x[:50], np.zeros(50), x[50:80], np.zeros(30))


def _cell(corpus, seed=0):
    spec = {
        "name": "tiny",
        "corpora": {"tiny": corpus},
        "tasks": {"linguistic_complexity": [2]},
        "models": ["lr_tuned_unigram_binary"],
        "seeds": [seed],
        "evaluation": {"n_boot": 20},
    }
    return grid_from_dict(spec).cells[0]


def test_a_cell_records_its_chosen_hyperparameters_and_its_checkpoint_rebuilds_them(tmp_path, tiny_corpus):
    cell = _cell(tiny_corpus)
    outcome = run_config_cell(cell, tmp_path / "out")
    assert outcome.status == "ok", outcome.error
    tuned = {r["tuned"] for r in outcome.rows}
    assert len(tuned) == 1
    chosen = json.loads(tuned.pop())
    assert chosen["penalty"] in ("l1", "l2", "elasticnet") and chosen["C"] in DEFAULT_CS
    assert ("l1_ratio" in chosen) == (chosen["penalty"] == "elasticnet")
    # the checkpoint holds tensors and plain values only, and gives the same choice and weights back
    (ckpt,) = (tmp_path / "out" / "runs").rglob("best-*.ckpt")
    state = torch.load(ckpt, weights_only=True)
    model = TunedLogisticRegression.load_from_checkpoint(ckpt, weights_only=True)
    assert model.chosen_hyperparameters() == chosen
    assert torch.equal(model.net.linear.weight, state["state_dict"]["net.linear.weight"])
    assert model.net.linear.weight.abs().sum() > 0
    # the same seed gives the same choice and the same rows (determinism)
    again = run_config_cell(cell, tmp_path / "again")
    assert [r["ate"] for r in again.rows] == [r["ate"] for r in outcome.rows]
    assert {r["tuned"] for r in again.rows} == {json.dumps(chosen, sort_keys=True, separators=(",", ":"))}


def test_refit_keeps_the_choice_and_fits_the_given_rows():
    x, t = _sparse_signal(seed=2)
    model = TunedLogisticRegression(LogisticRegression(input_dim=x.shape[1]), penalties=["l1"], Cs=[0.5])
    with pytest.raises(ValueError, match="has not been fitted"):
        model.refit({"x": None, "t": None}, {}, {}, max_steps=1)
    coef, intercept, chosen = model._fit(x[:400], t[:400], x[400:], t[400:], seed=0)
    model._set_weights(coef, intercept)
    model._chosen = chosen

    def batch(rows):
        xr = x[rows].tocoo()
        idx = torch.tensor(np.vstack([xr.row, xr.col]), dtype=torch.int64)
        return {"x": torch.sparse_coo_tensor(idx, torch.tensor(xr.data), xr.shape), "t": torch.tensor(t[rows])}

    p = model.refit(batch(slice(0, 400)), batch(slice(400, 600)), batch(slice(400, 600)), max_steps=1)
    expected = 1 / (1 + np.exp(-(x[400:] @ coef + intercept)))
    np.testing.assert_allclose(p.numpy(), expected, rtol=1e-5, atol=1e-6)
    half = model.refit(batch(slice(0, 200)), batch(slice(400, 600)), batch(slice(400, 600)), max_steps=1)
    assert not torch.allclose(half, p)  # other training rows, another fit
    assert model._chosen is chosen  # the model itself is left as it was
    assert torch.equal(model.net.linear.weight.detach().ravel(), torch.tensor(coef, dtype=torch.float32))


def test_the_weld_grids_use_the_tuned_lr_and_search_the_networks_learning_rate():
    weld = load_grid(ROOT / "configs" / "benchmark" / "weld.yaml")
    models = {c.model for c in weld.cells}
    for rep in ("unigram_binary", "bigram_binary", "bigram_counts", "lda"):
        assert f"lr_tuned_{rep}" in models and f"lr_{rep}" not in models
        config = yaml.safe_load((ROOT / "configs" / "model" / f"lr_tuned_{rep}.yaml").read_text())
        assert config["model"]["class_path"] == "textcause.models.TunedLogisticRegression"
        assert config["data"]["representation"] == rep
    searched = {c.model: dict(c.search) for c in weld.cells if c.search}
    networks = {f"nn_{r}" for r in ("unigram_binary", "bigram_binary", "bigram_counts", "lda")}
    assert set(searched) == networks | {"sherbert_pooled", "order_count"}
    wd, l1, lr = (f"model.init_args.{k}" for k in ("weight_decay", "l1", "lr"))
    assert all(set(searched[n]) == {wd, l1, lr} for n in networks - {"nn_lda"})  # the penalty kind too
    assert set(searched["nn_lda"]) == {wd, lr}  # 20 topic proportions: nothing for an L1 penalty to select
    assert set(searched["sherbert_pooled"]) == {"model.init_args.lr"}
    assert searched["order_count"] == {"model.init_args.net.init_args.input_norm": (False, True)}

"""A tuned cell's candidates trained side by side (textcause.grid.bank): each point's validation loss, best
epoch and epoch count are its lone fit's, bit for bit; selection through the bank chooses and evaluates
what selection one fit at a time does; and every run a bank cannot reproduce is fitted alone."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from tinygrid import grid_spec

import textcause.grid.bank as bank_module
from textcause.grid.bank import BankResult, bank_scores
from textcause.grid.spec import grid_from_dict
from textcause.grid.tuning import _fit_candidate, grid_points, select

LR, WD, L1 = "model.init_args.lr", "model.init_args.weight_decay", "model.init_args.l1"


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread, as a grid worker runs: SciPy's kernels take the sparse products then, and
    each point's batch must be prepared afresh for them (textcause.grid.bank._forget_sparse_batch)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _cell(corpus, tune, *, epochs=8, overrides=None):
    spec = grid_spec(
        corpus,
        tasks={"linguistic_complexity": [2]},
        models=["nn_unigram_binary"],
        epochs=None,
        threads=None,
        overrides={"trainer.max_epochs": epochs, "model.init_args.early_stopping_patience": 2, **(overrides or {})},
        tune={"nn_unigram_binary": tune},
    )
    return grid_from_dict(spec).cells[0]


def _epochs_run(log_dir: str) -> int:
    with open(Path(log_dir) / "metrics.csv", newline="", encoding="utf-8") as f:
        return 1 + max(int(r["epoch"]) for r in csv.DictReader(f) if r.get("val_loss"))


def _best_epoch(log_dir: str) -> int:
    (ckpt,) = (Path(log_dir) / "checkpoints").glob("best-*.ckpt")
    return int(ckpt.name.split("epoch=")[1].split("-")[0])


def test_every_point_scores_as_its_lone_fit_to_the_bit(tmp_path, tiny_corpus):
    cell = _cell(tiny_corpus, {LR: [0.01, 0.1], L1: [0.0, 0.01], WD: [0.0, 0.01]}, epochs=12)
    settings = cell.run_settings(tmp_path / "run")
    points = grid_points(cell.search)
    banked = bank_scores(settings, points, bank_dir=tmp_path / "bank")
    assert banked is not None
    results, seconds = banked
    assert len(results) == 8 and seconds > 0
    alone = [_fit_candidate(settings, p, tmp_path / "alone" / str(i)) for i, p in enumerate(points)]
    for point, r, a in zip(points, results, alone):
        assert r.score == a.score, point  # exactly: the same float32 loss
        assert r.best_epoch == _best_epoch(a.log_dir), point
        assert r.epochs == _epochs_run(a.log_dir), point
    # the points stop at different epochs (a patience of 2 out of 12 epochs), so stopping is exercised
    assert len({r.epochs for r in results}) > 1
    assert min(r.epochs for r in results) < 12


def test_selection_through_the_bank_is_selection_one_fit_at_a_time(tmp_path, tiny_corpus, monkeypatch):
    cell = _cell(tiny_corpus, {LR: [0.003, 0.03], L1: [0.0, 0.01]})
    best, cands = select(cell.run_settings(tmp_path / "bank"), cell.search, tmp_path / "bank")
    record = json.loads((tmp_path / "bank" / "tune" / "candidates.json").read_text())
    engines = [c["engine"] for c in record["candidates"]]
    assert engines.count("alone") == 1 and engines.count("bank") == 3  # the chosen point is refitted alone
    assert best.engine == "alone" and (Path(best.log_dir) / "checkpoints").is_dir()
    assert [c.log_dir for c in cands if c is not best] == [None] * 3
    assert not (tmp_path / "bank" / "tune" / "bank").exists()

    monkeypatch.setattr(bank_module, "bank_scores", lambda *a, **k: None)
    best_alone, alone = select(cell.run_settings(tmp_path / "alone"), cell.search, tmp_path / "alone")
    assert {c.engine for c in alone} == {"alone"}
    assert best.params == best_alone.params and best.score == best_alone.score
    by_params = {json.dumps(c.params, sort_keys=True): c.score for c in alone}
    assert {json.dumps(c.params, sort_keys=True): c.score for c in cands} == by_params


def test_a_network_that_draws_random_numbers_is_fitted_alone(tmp_path, tiny_corpus):
    cell = _cell(tiny_corpus, {LR: [0.003, 0.03]}, epochs=2, overrides={"model.init_args.net.init_args.dropout": 0.3})
    settings = cell.run_settings(tmp_path / "run")
    assert bank_scores(settings, grid_points(cell.search), bank_dir=tmp_path / "bank") is None
    best, cands = select(settings, cell.search, tmp_path / "run")
    assert [c.engine for c in cands] == ["alone", "alone"] and all(c.log_dir for c in cands)


@pytest.mark.parametrize(
    "tune, overrides",
    [
        ({"model.init_args.net.init_args.hidden_size": [4, 8]}, {}),  # another network, not an optimiser setting
        ({LR: [0.003, 0.03]}, {"trainer.accumulate_grad_batches": 2}),  # another training loop
        ({LR: [0.003, 0.03]}, {"model.init_args.optimizer": "lbfgs"}),
        ({LR: [0.003, 0.03]}, {"trainer.limit_train_batches": 1}),  # one batch an epoch, not all of them
        ({LR: [0.003, 0.03]}, {"trainer.reload_dataloaders_every_n_epochs": 1}),
        ({LR: [0.003, 0.03]}, {"trainer.max_time": "00:00:10:00"}),
        ({LR: ["fast", "slow"]}, {}),
    ],
)
def test_runs_a_bank_does_not_reproduce_are_refused(tmp_path, tiny_corpus, tune, overrides):
    cell = _cell(tiny_corpus, tune, epochs=1, overrides=overrides)
    assert bank_scores(cell.run_settings(tmp_path / "run"), grid_points(cell.search), bank_dir=tmp_path / "b") is None


def test_a_refit_that_disagrees_with_the_bank_sends_every_point_to_its_own_fit(tmp_path, tiny_corpus, monkeypatch):
    cell = _cell(tiny_corpus, {LR: [0.003, 0.03]}, epochs=2)
    monkeypatch.setattr(
        bank_module, "bank_scores", lambda *a, **k: ([BankResult(0.1, 0, 2), BankResult(0.2, 0, 2)], 1.0)
    )
    with pytest.warns(UserWarning, match="its lone fit gives .* every point is fitted alone instead"):
        best, cands = select(cell.run_settings(tmp_path / "run"), cell.search, tmp_path / "run")
    assert [c.engine for c in cands] == ["alone", "alone"]
    assert best.score != 0.1 and best.score == min(c.score for c in cands)


def test_a_search_written_with_yaml_strings_scores_as_the_cli_reads_it(tmp_path, tiny_corpus):
    # PyYAML reads 1e-2 as the string "1e-2"; the CLI (and so a lone fit) reads it as a float
    cell = _cell(tiny_corpus, {LR: ["1e-2", "1e-1"]}, epochs=2)
    settings = cell.run_settings(tmp_path / "run")
    results, _ = bank_scores(settings, grid_points(cell.search), bank_dir=tmp_path / "bank")
    alone = [_fit_candidate(settings, p, tmp_path / "alone" / str(i)) for i, p in enumerate(grid_points(cell.search))]
    assert [r.score for r in results] == [a.score for a in alone]


def test_a_network_that_draws_from_numpy_or_python_is_fitted_alone(tmp_path, tiny_corpus, monkeypatch):
    import random

    import numpy as np

    from textcause.models.components.mlp import MLP

    forward = MLP.forward
    for draw in (np.random.rand, random.random):

        def drawing(self, x, draw=draw):
            draw()  # one draw inside NumPy's current block of 624 words leaves its key array as it was
            return forward(self, x)

        monkeypatch.setattr(MLP, "forward", drawing)
        cell = _cell(tiny_corpus, {LR: [0.003, 0.03]}, epochs=1)
        assert (
            bank_scores(cell.run_settings(tmp_path / "run"), grid_points(cell.search), bank_dir=tmp_path / "b") is None
        )


def test_a_bank_that_fails_warns_and_every_point_is_fitted_alone(tmp_path, tiny_corpus, monkeypatch):
    def broken(*a, **k):
        raise MemoryError("20 copies of the network")

    monkeypatch.setattr(bank_module, "bank_scores", broken)
    cell = _cell(tiny_corpus, {LR: [0.003, 0.03]}, epochs=1)
    with pytest.warns(UserWarning, match=r"side-by-side search failed \(MemoryError: 20 copies"):
        best, cands = select(cell.run_settings(tmp_path / "run"), cell.search, tmp_path / "run")
    assert [c.engine for c in cands] == ["alone", "alone"]

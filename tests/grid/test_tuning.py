"""Tuned grid models: the `tune` key, config hashes, selection on the validation split only, the
`tuned` column, and a tuned grid through the benchmark command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from tinygrid import grid_spec, write_grid_spec

from textcause import store
from textcause.cli.benchmark import benchmark_main
from textcause.grid.cell import run_config_cell
from textcause.grid.spec import grid_from_dict, load_grid
from textcause.grid.tuning import as_search, grid_points, select, tuned_label
from textcause.run.fit import EvaluationSettings, evaluate_run

ROOT = Path(__file__).resolve().parents[2]
WD = "model.init_args.weight_decay"
BASE = {"corpora": ["t"], "models": ["oracle", "lr_bigram_binary"], "seeds": [0, 1]}


def test_grid_points_are_every_combination_in_a_fixed_order():
    search = as_search({"b": [1, 2], "a": ["x", "y", "z"]})
    assert search == (("a", ("x", "y", "z")), ("b", (1, 2)))
    points = grid_points(search)
    assert len(points) == 6 and points[0] == {"a": "x", "b": 1} and points[-1] == {"a": "z", "b": 2}
    assert tuned_label({"b": 0.5, "a": 1}) == '{"a":1,"b":0.5}'


def test_a_tune_block_changes_only_the_tuned_models_hashes():
    plain = {(c.model, c.seed): c for c in grid_from_dict(BASE).cells}
    tuned = grid_from_dict({**BASE, "tune": {"lr_bigram_binary": {WD: [0.002, 0.02]}}})
    for c in tuned.cells:
        if c.model == "oracle":
            assert c.config_hash == plain[(c.model, c.seed)].config_hash and c.search == ()
        else:
            assert c.config_hash != plain[(c.model, c.seed)].config_hash
            assert c.search == ((WD, (0.002, 0.02)),)
    other = grid_from_dict({**BASE, "tune": {"lr_bigram_binary": {WD: [0.002, 0.2]}}})
    assert {c.config_hash for c in other.cells if c.search} != {c.config_hash for c in tuned.cells if c.search}


def test_the_shipped_weld_grids_tune_every_network_and_agree():
    weld = load_grid(ROOT / "configs" / "benchmark" / "weld.yaml")
    twitter = load_grid(ROOT / "configs" / "benchmark" / "weld_twitter.yaml")
    tuned = {c.model for c in weld.cells if c.search}  # the LRs choose their penalty inside their own fit
    networks = {f"nn_{r}" for r in ("unigram_binary", "bigram_binary", "bigram_counts", "lda")}
    assert tuned == networks | {"sherbert_pooled", "order_count"}
    sherbert = next(c for c in weld.cells if c.model == "sherbert_pooled")
    assert dict(sherbert.search) == {"model.init_args.lr": (0.001, 0.003)}  # the YAML's 0.001 is a candidate
    nn = next(c for c in weld.cells if c.model == "nn_bigram_binary")
    # the penalty kind and strength, as the tuned LR's: none, L2 (the YAML's weight decay), L1, both
    assert dict(nn.search) == {
        WD: (0.0, 0.01),
        "model.init_args.l1": (0.0, 0.001, 0.003, 0.01, 0.02),
        "model.init_args.lr": (0.001, 0.003),
    }
    order_count = next(c for c in weld.cells if c.model == "order_count")
    assert dict(order_count.search) == {"model.init_args.net.init_args.input_norm": (False, True)}
    hashes = {c.cell_id: (c.config_hash, c.search) for c in weld.cells}
    assert all(hashes[c.cell_id] == (c.config_hash, c.search) for c in twitter.cells)


@pytest.mark.parametrize(
    ("tune", "message"),
    [
        ({"nosuch": {WD: [1]}}, "'tune' must be a mapping from model names of 'models' \\(model configs"),
        ({"lr_bigram_binary": {WD: []}}, "'tune' must be a mapping from model names"),
        ({"lr_bigram_binary": {WD: 0.1}}, "'tune' must be a mapping from model names"),
        ({"lr_bigram_binary": {WD: [0.1, 0.1]}}, r"'tune' must be .*distinct scalar values\). Got"),
        ({"lr_bigram_binary": {}}, "'tune' must be a mapping"),
        ({"lr_bigram_binary": [WD]}, "'tune' must be a mapping"),
    ],
)
def test_tune_errors(tune, message):
    with pytest.raises(ValueError, match=r"^Benchmark config 'x.yaml': " + message):
        grid_from_dict({**BASE, "tune": tune}, source="x.yaml")


def _tiny_cell(tmp_path, corpus, values=(0.0001, 1.0)):
    spec = grid_spec(
        corpus,
        tasks={"linguistic_complexity": [2]},
        models=["lr_unigram_binary"],
        epochs=2,
        threads=None,
        tune={"lr_unigram_binary": {WD: list(values)}},
    )
    return grid_from_dict(spec).cells[0]


def test_a_tuned_cell_selects_on_validation_and_evaluates_the_choice_on_test(tmp_path, tiny_corpus):
    cell = _tiny_cell(tmp_path, tiny_corpus)
    outcome = run_config_cell(cell, tmp_path / "out")
    assert outcome.status == "ok", outcome.error
    run = tmp_path / "out" / "runs" / cell.cell_id
    assert not list(run.rglob("propensity_overlap.png"))  # a grid cell (quiet) draws no figure, tuned or not
    record = json.loads((run / "tune" / "candidates.json").read_text())
    cands = record["candidates"]
    assert sorted(c["params"][WD] for c in cands) == [0.0001, 1.0]
    best = min(cands, key=lambda c: c["score"])
    assert record["chosen"] == best["params"]
    # the candidates looked at the validation split only; the chosen run was then evaluated on test
    # (its results.json is that final evaluation), and only its checkpoint is kept
    for c in cands:
        chosen = c["params"] == best["params"]
        rows = json.loads((Path(c["log_dir"]) / "results.json").read_text())["rows"]
        assert {r["split"] for r in rows} == ({"test"} if chosen else {"val"})
        assert (Path(c["log_dir"]) / "checkpoints").is_dir() == chosen
    # the cell's rows are the chosen run evaluated on the test split, and say what was chosen
    assert {r["split"] for r in outcome.rows} == {"test"}
    assert {r["tuned"] for r in outcome.rows} == {tuned_label(best["params"])}
    again = evaluate_run(best["log_dir"], EvaluationSettings(n_boot=20, split="test", seed=0), csv_dir=tmp_path)
    by_est = {r["estimator"]: r for r in again.rows}
    for r in outcome.rows:
        assert r["ate"] == by_est[r["estimator"]]["ate"] and r["ci_low"] == by_est[r["estimator"]]["ci_low"]


def test_selection_picks_the_lowest_validation_loss_and_refuses_an_empty_space(tmp_path, tiny_corpus):
    cell = _tiny_cell(tmp_path, tiny_corpus, values=(0.0001, 0.01, 100.0))
    best, cands = select(cell.run_settings(tmp_path / "run"), cell.search, tmp_path / "run")
    assert len(cands) == 3 and best.score == min(c.score for c in cands)
    assert best.params[WD] != 100.0  # a penalty that flattens every weight predicts the base rate only
    with pytest.raises(ValueError, match="must name at least one option"):
        select(cell.run_settings(tmp_path / "run2"), (), tmp_path / "run2")


def test_a_tuned_grid_through_the_benchmark_command(tmp_path, tiny_corpus):
    spec = grid_spec(
        tiny_corpus,
        tasks={"linguistic_complexity": [2]},
        models=["unadjusted", "lr_unigram_binary"],
        n_boot=10,
        tune={"lr_unigram_binary": {WD: [0.001, 0.1]}},
    )
    config = write_grid_spec(tmp_path, spec)
    assert benchmark_main(["--config", str(config), "--out", str(tmp_path / "out")]) == 0
    engine = store.open_store(store.default_url(tmp_path / "out"))
    with engine.begin() as conn:
        rows = conn.execute(sa.text("SELECT model, tuned FROM results")).all()
    tuned = {m: t for m, t in rows}
    assert tuned["unadjusted"] is None
    assert json.loads(tuned["lr_unigram_binary"])[WD] in (0.001, 0.1)

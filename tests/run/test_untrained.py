"""A model with nothing to train (oracle, unadjusted) is evaluated on the one path without the Trainer:
the same rows as through the Trainer, a run folder that evaluate.py reads, and a trained model still
goes through the Trainer (issue 18)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from tinygrid import tiny_cells

from textcause.grid import cell as cell_module
from textcause.grid.cell import release_memory, run_config_cell
from textcause.paths import config_dir
from textcause.run.fit import FULL_PATH_ENV, RunSettings, evaluate_run, fit_and_evaluate, run_config, untrained_config

# Columns that differ between two runs of the same cell: when and how long, and the folder it ran in.
TIMING = ("train_seconds", "eval_seconds", "started_at", "finished_at", "run")


def cells(corpus, models=("oracle", "unadjusted"), **extra):
    return tiny_cells(corpus, models, **extra)


def numbers(rows):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def same(a, b):
    """Equal rows, NaN equal to NaN."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert set(x) == set(y)
        for k in x:
            both_nan = isinstance(x[k], float) and isinstance(y[k], float) and math.isnan(x[k]) and math.isnan(y[k])
            assert both_nan or x[k] == y[k], (x["estimator"], k, x[k], y[k])


@pytest.mark.parametrize("model", ["oracle", "unadjusted"])
def test_rows_are_the_trainers(tiny_corpus, tmp_path, monkeypatch, model):
    (cell,) = cells(tiny_corpus, models=(model,))
    monkeypatch.setenv(FULL_PATH_ENV, "1")
    full = run_config_cell(cell, tmp_path / "full")
    monkeypatch.delenv(FULL_PATH_ENV)
    fast = run_config_cell(cell, tmp_path / "fast")
    assert full.status == fast.status == "ok", (full.error, fast.error)
    assert [r["estimator"] for r in fast.rows] == ["unadjusted", "ipw", "stratified", "matching"]
    same(numbers(full.rows), numbers(fast.rows))
    run = Path(fast.rows[0]["run"])  # the same folder as the Trainer's CSV log
    assert run.relative_to(tmp_path / "fast") == Path(full.rows[0]["run"]).relative_to(tmp_path / "full")
    assert all(r["train_seconds"] > 0 and r["eval_seconds"] > 0 for r in fast.rows)


@pytest.mark.parametrize("model", ["oracle", "unadjusted"])
def test_the_run_folder_and_evaluate_py(tiny_corpus, tmp_path, monkeypatch, model):
    (cell,) = cells(tiny_corpus, models=(model,))
    settings = cell.run_settings(tmp_path / "run")
    result = fit_and_evaluate(settings)
    monkeypatch.setenv(FULL_PATH_ENV, "1")
    full = fit_and_evaluate(cell.run_settings(tmp_path / "full"))
    assert not result.via_trainer and full.via_trainer
    assert result.checkpoint is None and full.checkpoint is None  # a baseline keeps no best checkpoint
    assert (result.monitor, result.best_score) == (full.monitor, full.best_score)
    assert result.representation == full.representation
    for key in result.predictions:
        assert (result.predictions[key] == full.predictions[key]).all()

    log_dir = tmp_path / "run" / "fit" / "version_0"
    assert result.log_dir == log_dir
    for name in ("config.yaml", "results.json", "metrics.csv", "model_card.md"):
        assert (log_dir / name).is_file(), name
    assert not (log_dir / "checkpoints").exists()  # nothing to save
    csv = pd.read_csv(tmp_path / "run" / "results.csv")
    assert list(csv["estimator"]) == [r["estimator"] for r in result.rows] and (csv["run"] == str(log_dir)).all()
    assert pd.read_csv(log_dir / "metrics.csv")["eval/unadjusted/ate"].iloc[-1] == pytest.approx(result.rows[0]["ate"])
    card = (log_dir / "model_card.md").read_text(encoding="utf-8")
    assert "a baseline: no checkpoint" in card and f"| {result.rows[0]['estimator']} |" in card

    # evaluate.py on the folder (through the LightningCLI) reads its config.yaml and gives the same rows
    again = evaluate_run(log_dir, settings.evaluation, csv_dir=tmp_path / "csv", figure=False)
    same(again.rows, result.rows)


def test_a_trained_model_takes_the_trainers_path(tiny_corpus, tmp_path):
    (cell,) = cells(tiny_corpus, models=("lr_bigram_binary",), overrides={"trainer.max_epochs": 1})
    result = fit_and_evaluate(cell.run_settings(tmp_path / "run"))
    assert result.via_trainer and result.checkpoint is not None and result.checkpoint.is_file()


@pytest.mark.parametrize("path", sorted(p.name for p in (config_dir() / "model").glob("*.yaml")))
def test_only_the_baselines_skip_the_trainer(tmp_path, path):
    settings = RunSettings(configs=(config_dir() / "model" / path,), run_dir=tmp_path, quiet=True)
    found = untrained_config(settings, run_config(settings))
    assert (found is not None) == (path in ("oracle.yaml", "unadjusted.yaml"))
    if found is not None:
        assert found["data"]["init_args"]["representation"] == "none" and "seed" not in found["data"]["init_args"]


@pytest.mark.parametrize(
    "change",
    [
        {"overrides": {"trainer.devices": 2}},
        {"overrides": {"trainer.precision": "bf16-true"}},
        {"overrides": {"trainer.limit_predict_batches": 1}},
        {"overrides": {"trainer.fast_dev_run": True}},
        {"overrides": {"trainer.max_epochs": 0}},
        {"overrides": {"trainer.callbacks": []}},
        {"overrides": {"ckpt_path": "last"}},
        {"overrides": {"seed_everything": True}},
        {"overrides": {"data.level": "2"}},  # the CLI decides what a string means
        {"overrides": {"data.nosuch": 1}},
        {"overrides": {"data.seed": 3}},
        {"overrides": {"data.class_path": "textcause.gender.GenderDataModule"}},
        {"overrides": {"model.init_args.treated_share": 1}},
        {"callbacks": (object(),)},
        {"run_dir": None},
    ],
)
def test_what_needs_the_trainer(tmp_path, change):
    kwargs = {"configs": (config_dir() / "model" / "unadjusted.yaml",), "run_dir": tmp_path, "quiet": True, **change}
    settings = RunSettings(**kwargs)
    assert untrained_config(settings, run_config(settings)) is None


def test_the_switch_and_the_harmless_options(tmp_path, monkeypatch):
    overrides = {"trainer.max_epochs": 5, "data.batch_size": 7, "model.init_args.treated_share": 0.25}
    settings = RunSettings(configs=(config_dir() / "model" / "unadjusted.yaml",), overrides=overrides, run_dir=tmp_path)
    found = untrained_config(settings, run_config(settings))
    assert found["model"]["init_args"] == {"treated_share": 0.25} and found["data"]["init_args"]["batch_size"] == 7
    monkeypatch.setenv(FULL_PATH_ENV, "1")
    assert untrained_config(settings, run_config(settings)) is None


def test_an_option_the_cli_rejects_is_the_clis_error(tiny_corpus, tmp_path):
    (cell,) = cells(tiny_corpus, models=("oracle",), overrides={"data.nosuch": 1})
    with pytest.raises(ValueError, match="rejected"):
        fit_and_evaluate(cell.run_settings(tmp_path / "run"))


def test_a_missing_corpus_is_the_corpus_loaders_own_error(tmp_path):
    (cell,) = cells(str(tmp_path / "nope.jsonl"), models=("lr_bigram_binary",))
    with pytest.raises(FileNotFoundError, match=r"^No corpus found at '.*nope\.jsonl'") as info:
        fit_and_evaluate(cell.run_settings(tmp_path / "run"))
    assert "compute_fn" not in str(info.value)  # the model's size is linked to the data: not wrapped by that link


def test_garbage_is_collected_after_training_or_growth(monkeypatch):
    calls = []
    monkeypatch.setattr(cell_module.gc, "collect", lambda: calls.append(1))
    rss = [1_000_000_000]
    monkeypatch.setattr(cell_module, "rss_bytes", lambda: rss[0])
    release_memory()  # a cell that went through the Trainer
    assert len(calls) == 1
    release_memory(trained=False)  # nothing trained, the process did not grow
    assert len(calls) == 1
    rss[0] += cell_module.GC_GROWTH_BYTES + 1
    release_memory(trained=False)
    assert len(calls) == 2
    monkeypatch.setattr(cell_module, "rss_bytes", lambda: None)  # no way to tell: collect
    release_memory(trained=False)
    assert len(calls) == 3


def test_a_sigterm_during_an_untrained_cell_is_re_raised(tiny_corpus, tmp_path, monkeypatch):
    """A SIGTERMException (the worker was told to stop) is not the cell's failure, with or without the Trainer."""
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    import textcause.run.untrained

    def stopped(*args, **kwargs):
        raise SIGTERMException()

    monkeypatch.setattr(textcause.run.untrained, "predict_untrained", stopped)
    (cell,) = cells(tiny_corpus, models=("unadjusted",))
    with pytest.raises(SIGTERMException):
        run_config_cell(cell, tmp_path / "out")

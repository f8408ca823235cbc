"""End-to-end: train.py fit and evaluate.py, in-process, on a tiny corpus written to tmp_path."""

from __future__ import annotations

import copy
import csv
import json
import re
import shutil
from pathlib import Path

import cliargs
import numpy as np
import pytest
import torch

from textcause import estimators as est
from textcause.cli.errors import friendly_errors
from textcause.cli.evaluate import main as evaluate_main
from textcause.run.lightning_cli import make_cli

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def fit_args(corpus: str, root: Path, config: str = "lr_bigram_binary.yaml", *extra: str) -> list[str]:
    data = ["--data.min_users", "2", "--data.batch_size", "32"]
    return cliargs.fit_args(config, corpus, *data, *cliargs.quiet_trainer(root, "t"), *extra)


def config_args(corpus: str, config: str = "lr_bigram_binary.yaml", *extra: str) -> list[str]:
    """Options of a CLI that only instantiates (``make_cli(..., run=False)``: no subcommand)."""
    return ["--config", str(CONFIGS / "model" / config), "--data.corpus", corpus, "--data.min_users", "2", *extra]


def test_fast_dev_run_sizes_the_model_from_the_data(tiny_corpus, tmp_path):
    cli = make_cli(fit_args(tiny_corpus, tmp_path, "lr_bigram_binary.yaml", "--trainer.fast_dev_run", "true"))
    assert cli.model.net.input_dim == cli.datamodule.input_dim > 0
    assert cli.trainer.state.finished
    # the trainer optimised with the model's own optimizer (model.init_args.optimizer: lbfgs)
    (optimizer,) = cli.trainer.optimizers
    assert isinstance(optimizer, torch.optim.LBFGS)  # textcause's ConvergedLBFGS, a torch LBFGS


def test_the_link_sizes_the_net_and_the_data_are_built_once(tiny_corpus, tmp_path, monkeypatch):
    from textcause.data import build

    calls = []
    features = build._features

    def counted(*args, **kwargs):
        calls.append(args[1].representation)
        return features(*args, **kwargs)

    build.clear_built()
    monkeypatch.setattr(build, "_features", counted)
    cli = make_cli(fit_args(tiny_corpus, tmp_path, "lr_bigram_binary.yaml", "--trainer.fast_dev_run", "true"))
    width = cli.datamodule.input_dim
    assert cli.model.net.input_dim == width > 0
    assert cli.model.hparams["net"]["init_args"]["input_dim"] == width  # the real width, stored for reloading
    assert calls == ["bigram_binary"]  # the link, prepare_data and setup share one build
    # a net config that gives its width keeps it (no link is made)
    explicit = make_cli(
        config_args(tiny_corpus, "lr_bigram_binary.yaml", "--model.init_args.net.init_args.input_dim", "7"), run=False
    )
    assert explicit.model.net.input_dim == 7 != width
    assert calls == ["bigram_binary"]


def test_the_optimizer_is_the_models_own(tiny_corpus, tmp_path, capsys):
    # LightningCLI's automatic --optimizer is off: nothing can silently replace the model's optimizer.
    with pytest.raises(SystemExit) as exit_info:
        make_cli(fit_args(tiny_corpus, tmp_path, "lr_bigram_binary.yaml", "--optimizer", "AdamW"))
    assert exit_info.value.code != 0
    assert "--optimizer" in capsys.readouterr().err
    from textcause.run.fit import instantiate, read_config

    config = {
        **read_config(CONFIGS / "model" / "lr_bigram_binary.yaml"),
        "data": {"corpus": tiny_corpus, "min_users": 2},
        "optimizer": {"class_path": "torch.optim.AdamW"},
    }
    with pytest.raises(ValueError, match="The run's options were rejected: .*optimizer"):
        instantiate(config)
    cli = make_cli(config_args(tiny_corpus), run=False)
    assert cli.model.hparams.optimizer == "lbfgs"
    assert isinstance(cli.model.configure_optimizers(), torch.optim.LBFGS)


def test_fit_then_evaluate_round_trip(tiny_corpus, tmp_path, capsys):
    cli = make_cli(fit_args(tiny_corpus, tmp_path, "lr_bigram_binary.yaml", "--trainer.max_epochs", "2"))
    run_dir = Path(cli.trainer.log_dir)
    assert (run_dir / "config.yaml").exists()
    assert list((run_dir / "checkpoints").glob("best-*.ckpt"))
    # the callback logged causal metrics after the validation epochs
    assert "val/bias_stratified" in cli.trainer.callback_metrics

    result = evaluate_main([str(run_dir), "--evaluation.n_boot", "200", "--out", str(tmp_path / "out")])
    rows = {r["estimator"]: r for r in result["rows"]}
    assert set(rows) == {"unadjusted", "ipw", "stratified", "matching"}
    # the written numbers equal a direct call of the estimators on the checkpoint's predictions
    from textcause.run.fit import find_checkpoint, predict_propensities

    pred = predict_propensities(cli.trainer, cli.model, cli.datamodule, find_checkpoint(run_dir))
    task = cli.datamodule.task
    assert np.array_equal(pred["index"], task.split.test)
    direct = est.ipw(pred["t"], pred["y"], pred["propensity"]).ate
    assert rows["ipw"]["ate"] == pytest.approx(direct, abs=1e-12)
    assert rows["ipw"]["bias"] == pytest.approx(direct - 0.4, abs=1e-12)
    assert rows["ipw"]["ci_low"] <= rows["ipw"]["ate"] <= rows["ipw"]["ci_high"]
    saved = json.loads((run_dir / "results.json").read_text())
    assert saved["rows"][1]["ate"] == pytest.approx(rows[saved["rows"][1]["estimator"]]["ate"])
    with open(tmp_path / "out" / "results.csv") as fh:
        assert [r["estimator"] for r in csv.DictReader(fh)] == ["unadjusted", "ipw", "stratified", "matching"]
    assert "stratified" in capsys.readouterr().out


def test_oracle_run_reproduces_true_propensity_estimates(tiny_corpus, tmp_path):
    cli = make_cli(fit_args(tiny_corpus, tmp_path, "oracle.yaml"))
    result = evaluate_main([str(Path(cli.trainer.log_dir)), "--evaluation.n_boot", "50"])
    task = cli.datamodule.task
    test = task.split.test
    expected = est.stratified(task.treatment[test], task.outcome[test], task.propensity[test]).ate
    strat = next(r for r in result["rows"] if r["estimator"] == "stratified")
    assert strat["ate"] == pytest.approx(expected, abs=1e-12)
    assert strat["treatment_accuracy"] == pytest.approx(
        np.mean((task.propensity[test] > 0.5) == task.treatment[test]), abs=1e-12
    )


def test_a_trainer_without_a_log_folder_is_one_clear_error_before_any_config_is_written():
    from types import SimpleNamespace

    from textcause.run.lightning_cli import SaveAndLogConfig

    callback = SaveAndLogConfig(parser=None, config={})
    trainer = SimpleNamespace(log_dir=None)
    with pytest.raises(ValueError, match="The trainer has no log folder to write config.yaml into"):
        callback.setup(trainer, None, "fit")
    callback.setup(trainer, None, "test")  # only a fit writes a config: nothing asked of the trainer
    assert not callback.already_saved


@pytest.mark.parametrize("config", ["lr_bigram_binary.yaml", "nn_lda.yaml", "oracle.yaml"])
def test_the_config_dumps_are_lightnings_own(tiny_corpus, tmp_path, monkeypatch, config):
    """The CLI dumps its config without validating it a second time (faster): the mapping the model and
    data module record as hyperparameters, and config.yaml, must be what Lightning's own methods make."""
    from lightning.pytorch.cli import LightningCLI, SaveConfigCallback

    from textcause.run.lightning_cli import TextCauseCLI

    ours_then_lightnings = []
    dump = TextCauseCLI._dump_config

    def both(cli):  # at the same moment (an instantiation link is applied meanwhile)
        if hasattr(cli, "config_dump"):
            return
        dump(cli)
        ours = cli.config_dump
        del cli.config_dump
        LightningCLI._dump_config(cli)
        ours_then_lightnings.append((copy.deepcopy(ours), cli.config_dump))
        cli.config_dump = ours  # the instantiators then add the linked values (input_dim) to it

    monkeypatch.setattr(TextCauseCLI, "_dump_config", both)
    cli = make_cli(fit_args(tiny_corpus, tmp_path, config, "--trainer.max_epochs", "1"))
    make_cli(config_args(tiny_corpus, config), run=False)  # the internal runs' CLI (no subcommand)
    assert len(ours_then_lightnings) == 2
    for k, (ours, lightnings) in enumerate(ours_then_lightnings):
        assert ours == lightnings, k
    assert cli.model.hparams["_instantiator"]  # the model recorded the dump (load_from_checkpoint support)
    run_dir = Path(cli.trainer.log_dir)
    reference = SaveConfigCallback(cli._parser("fit"), cli.config["fit"], config_filename="lightning.yaml")
    reference.setup(cli.trainer, cli.model, "fit")
    assert (run_dir / "config.yaml").read_text() == (run_dir / "lightning.yaml").read_text()


def test_print_config_shows_resolved_values(capsys):
    with pytest.raises(SystemExit) as exit_info:
        make_cli(["fit", "--config", str(CONFIGS / "model" / "nn_lda.yaml"), "--data.level", "3", "--print_config"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "representation: lda" in out and "level: 3" in out and "hidden_size: 10" in out


def test_unknown_config_key_is_rejected(capsys):
    with pytest.raises(SystemExit) as exit_info:
        make_cli(["fit", "--config", str(CONFIGS / "model" / "lr_bigram_binary.yaml"), "--data.no_such_key", "1"])
    assert exit_info.value.code != 0
    assert "no_such_key" in capsys.readouterr().err


def test_missing_corpus_is_one_sentence(tmp_path, capsys):
    code = friendly_errors(lambda: make_cli(fit_args(str(tmp_path / "nope.jsonl"), tmp_path)))
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: No corpus found at ") and "nope.jsonl" in err and "Traceback" not in err
    assert "compute_fn" not in err and "dataloader" not in err and len(err.splitlines()) == 1  # not jsonargparse's wrap


def test_evaluate_without_a_run_folder_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="No config.yaml"):
        evaluate_main([str(tmp_path)])


def test_unadjusted_run_evaluates_to_the_difference_in_means(tiny_corpus, tmp_path):
    cli = make_cli(fit_args(tiny_corpus, tmp_path, "unadjusted.yaml"))
    result = evaluate_main([str(Path(cli.trainer.log_dir)), "--evaluation.n_boot", "20"])
    rows = {r["estimator"]: r for r in result["rows"]}
    task = cli.datamodule.task
    test = task.split.test
    naive = task.outcome[test][task.treatment[test] == 1].mean() - task.outcome[test][task.treatment[test] == 0].mean()
    for name in ("unadjusted", "ipw", "stratified"):
        assert rows[name]["ate"] == pytest.approx(naive, abs=1e-9)


def test_evaluating_a_trained_model_needs_its_checkpoint(tiny_corpus, tmp_path):
    from textcause.models import PropensityModel
    from textcause.run.fit import find_checkpoint

    cli = make_cli(fit_args(tiny_corpus, tmp_path, "lr_bigram_binary.yaml", "--trainer.max_epochs", "1"))
    run_dir = Path(cli.trainer.log_dir)
    # the checkpoint rebuilds its model with no arguments, the net sized as the CLI sized it
    loaded = PropensityModel.load_from_checkpoint(find_checkpoint(run_dir))
    assert loaded.net.input_dim == cli.datamodule.input_dim and loaded.optimizer_name == "lbfgs"
    assert cli.model.requires_training
    shutil.rmtree(run_dir / "checkpoints")
    with pytest.raises(
        FileNotFoundError, match=f"No checkpoint in '{re.escape(str(run_dir))}': PropensityModel must be trained"
    ):
        evaluate_main([str(run_dir), "--evaluation.n_boot", "0"])
    assert not (run_dir / "results.json").exists()


def test_a_baseline_evaluates_without_a_checkpoint(tiny_corpus, tmp_path):
    from textcause.run.fit import find_checkpoint

    cli = make_cli(fit_args(tiny_corpus, tmp_path, "oracle.yaml", "--trainer.max_epochs", "1"))
    run_dir = Path(cli.trainer.log_dir)
    shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
    assert find_checkpoint(run_dir) is None and not cli.model.requires_training
    result = evaluate_main([str(run_dir), "--evaluation.n_boot", "0"])
    test = cli.datamodule.task.split.test
    task = cli.datamodule.task
    ipw = next(r for r in result["rows"] if r["estimator"] == "ipw")
    assert ipw["ate"] == pytest.approx(
        est.ipw(task.treatment[test], task.outcome[test], task.propensity[test]).ate, abs=1e-6
    )
    assert result["meta"]["checkpoint"] is None

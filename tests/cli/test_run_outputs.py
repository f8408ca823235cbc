"""What a run leaves behind: ``train.py test`` / ``predict`` in the run's own folder (the intervals of
``evaluate.py``, a per-user predictions CSV, no stray folders), the model card, the propensity overlap
figure (not for a grid cell), and the resolved config, evaluation results and figure in the CSV log
and an offline wandb run."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from tinygrid import grid_spec

from textcause.cli.evaluate import main as evaluate_main
from textcause.run.fit import find_checkpoint
from textcause.run.lightning_cli import make_cli
from textcause.run.model_card import model_card_text

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def assert_figure(path: Path) -> None:
    """``path`` is a PNG of a drawn figure: decodable, figure-sized, not blank (many colours, both arms')."""
    import matplotlib.image
    import numpy as np

    from textcause.run.figure import _COLOURS

    assert path.is_file(), path
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = matplotlib.image.imread(path)
    assert pixels.shape[0] >= 200 and pixels.shape[1] >= 300
    rgb = (pixels[..., :3].reshape(-1, 3) * 255).round().astype(int)
    assert len(np.unique(rgb, axis=0)) > 20  # not a blank canvas
    for colour in _COLOURS.values():  # the edges of both arms' histograms are drawn in their colour
        want = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
        assert (np.abs(rgb - want).max(axis=1) <= 2).sum() > 50, colour


def test_test_and_predict_work_in_the_run_folder_and_agree_with_evaluate(tiny_corpus, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the default config's logger and root are ./runs: nothing may appear there
    cli = make_cli(
        [
            "fit",
            "--config",
            str(CONFIGS / "model" / "lr_bigram_binary.yaml"),
            "--data.corpus",
            tiny_corpus,
            "--data.min_users",
            "2",
            "--trainer.max_epochs",
            "2",
            "--trainer.enable_progress_bar",
            "false",
        ]
    )
    run = Path(cli.trainer.log_dir).resolve()
    assert run == tmp_path / "runs" / "textcause" / "version_0"
    ckpt = str(find_checkpoint(run))
    before = tree(tmp_path)
    assert not (run / "propensity_overlap.png").exists()  # fit alone evaluates nothing
    for sub, extra in (("test", ["--evaluation.n_boot", "60"]), ("predict", [])):
        make_cli(
            [
                sub,
                "--config",
                str(run / "config.yaml"),
                "--ckpt_path",
                ckpt,
                "--trainer.enable_progress_bar",
                "false",
                *extra,
            ]
        )
    # train.py test draws the propensity overlap figure beside the model card and in its CSV log folder
    assert_figure(run / "propensity_overlap.png")
    assert_figure(run / "test" / "propensity_overlap.png")
    (run / "propensity_overlap.png").unlink()
    evaluated = evaluate_main([str(run), "--evaluation.n_boot", "60"])
    assert_figure(run / "propensity_overlap.png")  # and so does evaluate.py
    added = tree(tmp_path) - before
    # no stray runs/config.yaml, no new version_N: test logs into RUN/test, predict writes RUN/predictions-test.csv
    assert not any(p.startswith("runs/textcause/version_1") for p in added)
    assert not (tmp_path / "runs" / "config.yaml").exists()
    assert {p for p in added if not p.startswith("runs/textcause/version_0/")} == set()
    assert "runs/textcause/version_0/predictions-test.csv" in added
    assert "runs/textcause/version_0/test/results.json" in added
    assert "runs/textcause/version_0/test/config.yaml" not in added
    # train.py test reports the estimates and intervals of evaluate.py: the same evaluation
    tested = json.loads((run / "test" / "results.json").read_text())["rows"]
    keys = ("estimator", "ate", "ci_low", "ci_high", "bias", "n_used", "treatment_accuracy")
    assert [{k: r[k] for k in keys} for r in tested] == [{k: r[k] for k in keys} for r in evaluated["rows"]]
    assert tested[1]["ci_low"] < tested[1]["ate"] < tested[1]["ci_high"]
    with open(run / "test" / "metrics.csv") as fh:
        logged = list(csv.DictReader(fh))
    assert any(r.get("eval/ipw/ci_low") for r in logged)  # the intervals reached the test's CSV log
    out = capsys.readouterr().out
    assert "95% interval" in out
    # the model card beside the checkpoints, with the numbers of the evaluation
    card = (run / "model_card.md").read_text()
    ipw = next(r for r in evaluated["rows"] if r["estimator"] == "ipw")
    for text in (
        f"- corpus: `{tiny_corpus}`",
        "- task: `linguistic_complexity` level 2 (semi-synthetic",
        "- representation: `bigram_binary`",
        "| seed | 0 |",
        "| optimizer | lbfgs |",
        "| learning rate | 1.0 |",
        "| weight decay | 0.02 |",
        "| max epochs | 2 |",
        "| val_loss |",
        f"| ipw | {ipw['ate']:+.3f} | [{ipw['ci_low']:+.3f}, {ipw['ci_high']:+.3f}] | {ipw['bias']:+.3f} |",
        "True ATE +0.400",
        "60 bootstrap replicates",
        "featurizer: saved in the checkpoint",
        "Weld et al., 2022, section 7",
        "known only in this simulation",
        "[propensity_overlap.png](propensity_overlap.png)",
    ):
        assert text in card, text
    # train.py predict's per-user CSV: the test users with their ids, the propensities of the evaluation
    with open(run / "predictions-test.csv") as fh:
        rows = list(csv.DictReader(fh))
    task = cli.datamodule.task
    assert [r["user_id"] for r in rows] == [task.user_ids[i] for i in task.split.test]
    assert [int(r["index"]) for r in rows] == task.split.test.tolist()
    from textcause.run.fit import EvaluationSettings, evaluate_run

    pred = evaluate_run(run, EvaluationSettings(n_boot=0)).predictions
    assert [float(r["propensity"]) for r in rows] == pytest.approx(pred["propensity"].tolist(), abs=1e-7)


def test_config_and_results_reach_the_csv_log_and_an_offline_wandb_run(tiny_corpus, tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WANDB_MODE", "offline")
    from textcause.run.fit import EvaluationSettings, RunSettings, fit_and_evaluate

    wandb_logger = {
        "class_path": "lightning.pytorch.loggers.WandbLogger",
        "init_args": {"project": "t", "save_dir": str(tmp_path / "w"), "offline": True, "log_model": False},
    }
    result = fit_and_evaluate(
        RunSettings(
            configs=(CONFIGS / "model" / "lr_bigram_binary.yaml",),
            overrides={"data.corpus": tiny_corpus, "data.min_users": 2, "trainer.max_epochs": 1},
            run_dir=tmp_path / "run",
            evaluation=EvaluationSettings(n_boot=20),
            quiet=True,
            loggers=(wandb_logger,),
            figure=True,  # a quiet run draws no figure unless asked
        )
    )
    log_dir = result.log_dir
    hparams = yaml.safe_load((log_dir / "hparams.yaml").read_text())
    config = hparams["config"]  # the whole resolved config, not only the model's arguments
    assert config["seed_everything"] == 0
    assert config["trainer"]["max_epochs"] == 1
    assert any(str(cb["class_path"]).endswith("EarlyStopping") for cb in config["trainer"]["callbacks"])
    with open(log_dir / "metrics.csv") as fh:
        logged = [r for r in csv.DictReader(fh) if r.get("eval/ipw/ate")]
    ipw = next(r for r in result.rows if r["estimator"] == "ipw")
    assert float(logged[-1]["eval/ipw/ate"]) == pytest.approx(ipw["ate"])
    assert float(logged[-1]["eval/ipw/ci_high"]) == pytest.approx(ipw["ci_high"])
    assert (log_dir / "model_card.md").is_file()
    assert_figure(log_dir / "propensity_overlap.png")  # the CSV log folder is the run folder: the figure is in it
    # the offline wandb run: its config and the evaluation's numbers, and no post text
    runs = list((tmp_path / "w" / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    blob = b"".join(p.read_bytes() for p in runs[0].glob("*.wandb"))  # an offline run keeps it all in its log
    assert b'"seed_everything":0' in blob and b"lightning.pytorch.callbacks.EarlyStopping" in blob
    assert b"eval/ipw/ci_low" in blob and b"eval/treatment_accuracy" in blob
    # the figure, logged as an image: its file in the run's media, its key in the log
    images = list((runs[0] / "files" / "media" / "images").glob("propensity_overlap_*.png"))
    assert len(images) == 1
    assert images[0].read_bytes() == (log_dir / "propensity_overlap.png").read_bytes()
    assert b"propensity_overlap" in blob
    post = result.predictions  # any user's first post must not be in the wandb run
    from textcause.corpus import read_corpus

    first_post = read_corpus(tiny_corpus).texts[int(post["index"][0])][0]
    assert first_post.encode() not in blob
    assert not (tmp_path / "runs").exists()  # nothing in the default ./runs


def test_a_grid_cell_draws_no_figure(tiny_corpus, tmp_path):
    from textcause.grid.cell import run_config_cell
    from textcause.grid.spec import grid_from_dict
    from textcause.run.fit import RunSettings

    overrides = {"trainer.max_epochs": 1, "data.min_users": 2}
    spec = grid_spec(tiny_corpus, name=None, models=["lr_bigram_binary"], n_boot=0, threads=None, overrides=overrides)
    cell = grid_from_dict(spec).cells[0]
    outcome = run_config_cell(cell, tmp_path / "out")
    assert outcome.status == "ok", outcome.error
    run = tmp_path / "out" / "runs" / cell.cell_id
    assert list(run.rglob("model_card.md"))  # the cell was evaluated and its card written...
    assert not list(run.rglob("propensity_overlap.png"))  # ...but a quiet run pays for no figure
    card = next(run.rglob("model_card.md")).read_text()
    assert "propensity_overlap.png" not in card  # and its card links none
    settings = cell.run_settings(tmp_path / "x")
    assert settings.quiet and not settings.writes_figure
    people = RunSettings(configs=settings.configs)
    assert people.writes_figure and RunSettings(configs=settings.configs, quiet=True, figure=True).writes_figure


def _row(estimator: str, **kw):
    base = {
        "estimator": estimator,
        "ate": 0.1,
        "ci_low": 0.0,
        "ci_high": 0.2,
        "bias": None,
        "n_used": 100,
        "n_dropped": 0,
    }
    return {**base, "treatment_accuracy": 0.51, "ece": 0.1, "brier": 0.25, **kw}


def test_model_card_flags_and_observational_limits(tmp_path):
    meta = {
        "model": "MLP",
        "representation": "lda",
        "corpus": "twitter",
        "task": "t",
        "level": 1,
        "split": "test",
        "true_ate": None,
    }
    text = model_card_text(
        meta=meta,
        rows=[_row("unadjusted"), _row("stratified", n_dropped=7, n_used=93), _row("matching", error="no match")],
        config={"data": {"observational": "configs/observational/x.yaml"}, "model": {"init_args": {"lr": 0.01}}},
        representation={"kind": "lda"},
        checkpoint=None,
        log_dir=tmp_path,
        n_boot=0,
        treated_share=0.5,
    )
    assert "observational study `configs/observational/x.yaml`" in text
    assert "there is no true ATE" in text and "True ATE" not in text
    assert "at chance" in text  # accuracy 0.51 with half the users treated
    assert "stratified dropped 7 of 100 users (in strata with one treatment class)" in text
    assert "matching: no estimate (no match)." in text
    assert "No intervals (n_boot = 0)." in text
    assert "| learning rate | 0.01 |" in text
    assert "featurizer: not saved" in text


@pytest.mark.parametrize(("model_patience", "shown"), [(None, 5), (10, 10)])
def test_the_model_card_gives_the_patience_that_stopped_training(tmp_path, model_patience, shown):
    """A model's own ``early_stopping_patience`` replaces the trainer's EarlyStopping: the card says so."""
    early = {
        "class_path": "lightning.pytorch.callbacks.EarlyStopping",
        "init_args": {"monitor": "val_loss", "patience": 5},
    }
    init = {"lr": 0.001} if model_patience is None else {"lr": 0.001, "early_stopping_patience": model_patience}
    text = model_card_text(
        meta={"model": "SHERBERT", "representation": "post_embeddings", "split": "test", "true_ate": 0.4},
        rows=[_row("stratified")],
        config={"model": {"init_args": init}, "trainer": {"callbacks": [early]}},
        representation={"kind": "post_embeddings"},
        checkpoint=None,
        log_dir=tmp_path,
        n_boot=0,
    )
    assert f"| early stopping | val_loss, patience {shown} |" in text


@pytest.mark.parametrize(("l1", "shown"), [(None, False), (0.0, False), (0.003, True)])
def test_the_model_card_gives_an_l1_penalty_when_there_is_one(tmp_path, l1, shown):
    init = {"lr": 0.001, "weight_decay": 0.0} if l1 is None else {"lr": 0.001, "weight_decay": 0.0, "l1": l1}
    text = model_card_text(
        meta={"model": "nn_unigram_binary", "representation": "unigram_binary", "split": "test", "true_ate": 0.4},
        rows=[_row("stratified")],
        config={"model": {"init_args": init}, "trainer": {}},
        representation={"kind": "unigram_binary"},
        checkpoint=None,
        log_dir=tmp_path,
        n_boot=0,
    )
    assert ("| L1 penalty on the input weights | 0.003 |" in text) is shown
    assert "| weight decay | 0.0 |" in text

"""``--trainer.default_root_dir`` moves a run's outputs (issue 43): the loggers that the config files put
at their root follow it, so checkpoints, ``config.yaml``, ``metrics.csv``, the model card and the figure
land under it, and ``--ckpt_path last`` looks for the run to resume there; a logger given a folder of
its own keeps it."""

from __future__ import annotations

from pathlib import Path

from textcause.run.lightning_cli import make_cli
from textcause.run.root_dir import config_roots, follow_root

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _logger(save_dir: str, cls: str = "CSVLogger") -> dict:
    return {"class_path": f"lightning.pytorch.loggers.{cls}", "init_args": {"save_dir": save_dir, "name": "x"}}


def test_loggers_at_a_config_files_root_follow_the_root_and_others_stay():
    trainer = {
        "default_root_dir": "elsewhere/",
        "logger": [_logger("runs"), _logger("runs/", "WandbLogger"), _logger("mine")],
    }
    moved = follow_root(trainer, {"runs", "runs/gender"})
    assert [lg["init_args"]["save_dir"] for lg in trainer["logger"]] == ["elsewhere/", "elsewhere/", "mine"]
    assert moved == 2
    one = {"default_root_dir": "runs", "logger": _logger("runs")}  # the root as the files give it: nothing moves
    assert follow_root(one, {"runs"}) == 0 and one["logger"]["init_args"]["save_dir"] == "runs"
    for logger in (False, True, None):  # no logger, or Lightning's own (which uses default_root_dir already)
        assert follow_root({"default_root_dir": "elsewhere", "logger": logger}, {"runs"}) == 0


def _fit(corpus: str, *extra: str):
    return make_cli(
        [
            "fit",
            "--config",
            str(CONFIGS / "model" / "lr_bigram_binary.yaml"),
            "--data.corpus",
            corpus,
            "--data.min_users",
            "2",
            "--trainer.max_epochs",
            "1",
            "--trainer.enable_progress_bar",
            "false",
            *extra,
        ]
    )


def test_default_root_dir_moves_every_output_and_last_resolves_within_it(tiny_corpus, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli = _fit(tiny_corpus, "--trainer.default_root_dir", "elsewhere/")
    run = Path(cli.trainer.log_dir).resolve()
    assert run == tmp_path / "elsewhere" / "textcause" / "version_0"
    assert (run / "config.yaml").is_file() and (run / "metrics.csv").is_file()
    assert (run / "checkpoints" / "last.ckpt").is_file() and list((run / "checkpoints").glob("best-*.ckpt"))
    make_cli(
        ["test", "--config", str(run / "config.yaml"), "--ckpt_path", str(run / "checkpoints" / "last.ckpt")]
        + ["--evaluation.n_boot", "20", "--trainer.enable_progress_bar", "false"]
    )
    assert (run / "model_card.md").is_file()
    assert (run / "propensity_overlap.png").is_file()
    resumed = _fit(
        tiny_corpus, "--trainer.default_root_dir", "elsewhere/", "--trainer.max_epochs", "2", "--ckpt_path", "last"
    )
    assert Path(resumed.trainer.log_dir).resolve() == run  # `last` is this configuration's run under elsewhere/
    assert not (tmp_path / "runs").exists()  # nothing at the config files' root


def test_config_roots_reads_the_defaults_and_given_files(tmp_path):
    from jsonargparse import Path as ArgPath

    from textcause.paths import default_configs

    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "trainer:\n  default_root_dir: out\nfit:\n  trainer:\n    default_root_dir: fitted\n", encoding="utf-8"
    )
    broken = tmp_path / "broken.yaml"
    broken.write_text("trainer: [\n", encoding="utf-8")
    files = [*default_configs(), ArgPath(str(mine), mode="fr"), broken, tmp_path / "missing.yaml"]
    assert config_roots(files) == {"runs", "out"}
    assert config_roots(files, "fit") == {"runs", "out", "fitted"}
    # a config file that moves only the root takes the defaults' logger with it
    trainer = {"default_root_dir": "out", "logger": [_logger("runs")]}
    assert follow_root(trainer, config_roots(files)) == 1 and trainer["logger"][0]["init_args"]["save_dir"] == "out"

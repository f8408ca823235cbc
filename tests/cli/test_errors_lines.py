"""One line for every mistake of the user's that a library catches: rejected options (no usage dump),
Lightning's misconfiguration errors, refused checkpoints; a run config's classes checked before import."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest
import torch
import yaml
from cliargs import fit_args, quiet_trainer

from textcause.cli.errors import friendly_errors, user_error_line
from textcause.validation import option_error_sentence

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

# The messages jsonargparse raises for these mistakes (captured from the real parser).
UNION = """Parser key "trainer.max_epochs":
  Does not validate against any of the Union subtypes
  Subtypes: [<class 'int'>, <class 'NoneType'>]
  Errors:
    - Expected a <class 'int'>
    - Expected a <class 'NoneType'>
  Given value type: <class 'str'>
  Given value: abc"""
NOT_ACCEPTED = """Parser key "data":
  Does not validate against any of the Union subtypes
  Subtypes: [<class 'lightning.pytorch.core.datamodule.LightningDataModule'>, <class 'NoneType'>]
  Errors:
    - Problem with given class_path 'textcause.data.CausalTextDataModule':
        Option 'levell' is not accepted
    - Expected a <class 'NoneType'>
  Given value type: <class 'jsonargparse._util.NestedArg'>
  Given value: NestedArg(key='levell', val='5')"""
NESTED_TYPE = """Parser key "model":
  Does not validate against any of the Union subtypes
  Subtypes: [<class 'lightning.pytorch.core.module.LightningModule'>, <class 'NoneType'>]
  Errors:
    - Problem with given class_path 'textcause.models.PropensityModel':
        Parser key "lr":
          Expected a <class 'float'>. Got value: x
    - Expected a <class 'NoneType'>
  Given value type: <class 'jsonargparse._util.NestedArg'>
  Given value: NestedArg(key='lr', val='x')"""


@pytest.mark.parametrize(
    ("message", "line"),
    [
        (UNION, "The option --trainer.max_epochs must be an int or null. Got 'abc' instead."),
        (
            NOT_ACCEPTED,
            "Unknown option --data.levell (textcause.data.CausalTextDataModule takes no such argument): "
            "run with --help for the options.",
        ),
        (NESTED_TYPE, "The option --model.lr must be a float. Got 'x' instead."),
        ("unrecognized arguments: --trainer.foo 5", "Unknown option --trainer.foo: run with --help for the options."),
        (
            "Parser key \"config\": File does not exist: '/x/nope.yaml'",
            "No file at '/x/nope.yaml' (the option --config).",
        ),
    ],
)
def test_a_parser_message_becomes_one_line_with_the_key_expected_and_given(message, line):
    assert option_error_sentence(message) == line
    assert user_error_line(argparse.ArgumentError(None, message)) == line


def error_lines(err: str) -> list[str]:
    """The ``error:`` lines of a command's stderr (Lightning's info lines aside; under pytest its log
    handler may also report writing to an earlier test's closed capture)."""
    return [ln for ln in err.splitlines() if ln.startswith("error:")]


def _fit(corpus: str, root: Path, *extra: str) -> list[str]:
    return fit_args("lr_bigram_binary.yaml", corpus, "--data.min_users", "2", *quiet_trainer(root), *extra)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (("--trainer.max_epochs", "abc"), "error: The option --trainer.max_epochs must be an int or null. Got 'abc'"),
        (("--data.no_such_key", "1"), "error: Unknown option --data.no_such_key (textcause.data.CausalTextDataModule"),
        (("--trainer.no_such_key", "1"), "error: Unknown option --trainer.no_such_key: see "),
    ],
)
def test_train_prints_one_line_not_the_usage(tiny_corpus, tmp_path, capsys, extra, expected):
    """Before: a 67-77-line usage dump, then the message."""
    from textcause.run.lightning_cli import make_cli

    with pytest.raises(SystemExit) as exit_info:
        make_cli(_fit(tiny_corpus, tmp_path, *extra))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    (line,) = error_lines(err)
    assert line.startswith(expected), line
    assert "usage:" not in err and "--trainer.accelerator" not in err  # no usage dump


def test_help_still_prints_the_full_usage(capsys):
    from textcause.run.lightning_cli import make_cli

    with pytest.raises(SystemExit) as exit_info:
        make_cli(["fit", "--help"])
    assert exit_info.value.code == 0
    assert "--trainer.max_epochs" in capsys.readouterr().out


def test_lightnings_misconfiguration_is_one_line(tiny_corpus, tmp_path, capsys):
    """Before: a raw MisconfigurationException traceback."""
    from textcause.run.lightning_cli import make_cli

    code = friendly_errors(lambda: make_cli(_fit(tiny_corpus, tmp_path, "--trainer.max_epochs", "-5")))
    assert code == 2
    err = capsys.readouterr().err
    assert error_lines(err) == [
        "error: Lightning refused the run's configuration: `max_epochs` must be a non-negative integer or -1. "
        "You passed in -5."
    ]
    assert "MisconfigurationException" not in err  # (Lightning's own "Seed set to 0" info line may precede it)


def _crafted_checkpoint(path: Path) -> Path:
    """A checkpoint holding an object weights_only loading refuses (harmless: a Namespace)."""
    torch.save({"state_dict": {}, "hyper_parameters": argparse.Namespace(x=1)}, path)
    return path


def test_a_refused_checkpoint_is_named_in_one_line(tmp_path):
    ckpt = _crafted_checkpoint(tmp_path / "crafted.ckpt")
    with pytest.raises(Exception) as info:
        torch.load(ckpt, weights_only=True)
    line = user_error_line(info.value)
    assert line is not None and line.startswith(f"The checkpoint '{ckpt}' was refused: it holds objects")


def _run_folder(tmp_path: Path, corpus: str, **model: object) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    config = yaml.safe_load((CONFIGS / "model" / "lr_bigram_binary.yaml").read_text())
    config["data"] = {**config["data"], "corpus": corpus, "min_users": 2}
    config["model"].update(model)
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    return run


def test_evaluate_with_a_crafted_checkpoint_is_one_line(tiny_corpus, tmp_path, capsys):
    """Before: a raw UnpicklingError traceback."""
    from textcause.cli.evaluate import main as evaluate_main

    run = _run_folder(tmp_path, tiny_corpus)
    ckpt = _crafted_checkpoint(tmp_path / "crafted.ckpt")
    assert friendly_errors(lambda: evaluate_main([str(run), "--ckpt", str(ckpt), "--evaluation.n_boot", "0"])) == 2
    err = capsys.readouterr().err
    (line,) = error_lines(err)
    assert line.startswith(f"error: The checkpoint '{ckpt}' was refused"), line
    assert "UnpicklingError" not in err and not (run / "results.json").exists()


@pytest.fixture
def sentinel(tmp_path, monkeypatch):
    """A module that records being imported: a run config naming it must not import it."""
    (tmp_path / "evil_sentinel.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_suffix('.imported').touch()\nclass Model:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / "evil_sentinel.imported"
    sys.modules.pop("evil_sentinel", None)


def test_a_run_config_naming_another_package_is_refused_before_import(tiny_corpus, tmp_path, sentinel, capsys):
    """Before: the module was imported (its code ran) and only then rejected."""
    from textcause.cli.evaluate import main as evaluate_main

    run = _run_folder(tmp_path, tiny_corpus, class_path="evil_sentinel.Model")
    assert friendly_errors(lambda: evaluate_main([str(run), "--evaluation.n_boot", "0"])) == 2
    (err,) = error_lines(capsys.readouterr().err)
    assert err == (
        f"error: The run config '{run / 'config.yaml'}' names the class 'evil_sentinel.Model' at 'model', "
        "outside the packages textcause, lightning, torch, torchmetrics: it was not imported "
        "(pass --allow-module evil_sentinel if you trust this run folder)."
    )
    assert not sentinel.exists()
    # trusted explicitly: imported, and still refused as it is no LightningModule
    assert (
        friendly_errors(
            lambda: evaluate_main([str(run), "--evaluation.n_boot", "0", "--allow-module", "evil_sentinel"])
        )
        == 2
    )
    assert sentinel.exists()
    assert "which is not a LightningModule subclass" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"model": {"class_path": "textcause.models.components.LogisticRegression"}}, "not a LightningModule subclass"),
        (
            {
                "model": {
                    "class_path": "textcause.models.PropensityModel",
                    "init_args": {"net": {"class_path": "textcause.data.CausalTextDataModule"}},
                }
            },
            "at 'model.init_args.net', which is not a Module subclass",
        ),
        ({"data": {"class_path": "textcause.models.PropensityModel"}}, "not a LightningDataModule subclass"),
        ({"trainer": {"callbacks": [{"class_path": "os.system"}]}}, "'os.system' at 'trainer.callbacks', outside"),
        ({"trainer": {"logger": "subprocess.Popen"}}, "'subprocess.Popen' at 'trainer.logger', outside"),
        ({"model": {"class_path": "textcause.models.NoSuchModel"}}, "which does not exist"),
    ],
)
def test_class_paths_must_be_allowed_and_of_the_expected_kind(config, message):
    from textcause.run.class_paths import check_class_paths

    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_class_paths(config, "run/config.yaml")


def test_a_saved_config_of_this_tool_passes(tmp_path):
    from textcause.run.class_paths import check_class_paths

    config = yaml.safe_load((CONFIGS / "model" / "lr_bigram_binary.yaml").read_text())
    config["trainer"] = {
        "logger": {"class_path": "lightning.pytorch.loggers.CSVLogger", "init_args": {"save_dir": "x"}},
        "callbacks": [{"class_path": "lightning.pytorch.callbacks.ModelCheckpoint"}],
    }
    config["data"] = {"class_path": "textcause.data.CausalTextDataModule", "init_args": {"corpus": "tiny.jsonl.gz"}}
    check_class_paths(config, "run/config.yaml")  # nothing raised
    assert json.dumps(config)  # unchanged, plain data

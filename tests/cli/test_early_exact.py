"""A mistake in an option is one sentence that names the option as it was typed (issue 43, "Early and exact")."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from cliargs import fit_args, quiet_trainer

from textcause.cli.errors import friendly_errors
from textcause.validation import as_typed_options

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("error:")]


@pytest.fixture
def table(tmp_path) -> str:
    """A comment table whose columns are ``user`` and ``body`` (no time column)."""
    path = tmp_path / "comments.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["user", "body"])
        for u in range(40):
            writer.writerows([f"u{u}", f"post {p} of a user with words"] for p in range(12))
    return str(path)


def fit(corpus: str, root: Path, *extra: str) -> list[str]:
    columns = ["--data.author_col", "user", "--data.time_col", "null", "--data.min_users", "2"]
    return fit_args("lr_bigram_binary.yaml", corpus, *columns, *quiet_trainer(root), *extra)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (("--data.batch_size", "0"), "error: The option --data.batch_size must be an int >= 1. Got 0 instead."),
        (
            ("--data.representation", "bogus"),
            "error: The option --data.representation must be one of ['none', 'unigram_binary', 'bigram_binary', "
            "'bigram_counts', 'lda', 'post_embeddings', 'post_tokens']. Got 'bogus' instead.",
        ),
        (
            ("--data.text_col", "text"),
            "error: Column 'text' (the option --data.text_col) is not in '{table}'; its columns are ['user', 'body']: "
            "pass --data.text_col=<one of them>.",
        ),
    ],
)
def test_a_data_setting_the_module_refuses_is_one_sentence_naming_the_option(table, tmp_path, capsys, extra, expected):
    """Before: an 8-line jsonargparse dump (Subtypes, Errors, the whole Namespace) with the sentence on
    line 4, and ``text_col=`` for the option the user typed as ``--data.text_col``."""
    from textcause.run.lightning_cli import make_cli

    if extra[0] == "--data.text_col":
        extra = (*extra, "--data.representation", "bigram_binary")
    code = friendly_errors(lambda: make_cli(fit(table, tmp_path, *extra)))
    err = capsys.readouterr().err
    assert code == 2
    assert error_lines(err) == [expected.format(table=table)], err
    assert "Subtypes" not in err and "Namespace(" not in err


def test_a_value_of_the_wrong_type_names_the_options_own_type(table, tmp_path, capsys):
    """Before: "The option 'data.n_users' must be a LightningDataModule or null"."""
    from textcause.run.lightning_cli import make_cli

    with pytest.raises(SystemExit):
        make_cli(fit(table, tmp_path, "--data.n_users", "abc"))
    (line,) = error_lines(capsys.readouterr().err)
    assert line.startswith("error: The option --data.n_users must be an int or null. Got 'abc' instead."), line


def test_parameters_are_spelled_as_options_and_nothing_else():
    names = {"text_col", "time_col", "batch_size"}
    assert as_typed_options("pass time_col=<one> (or time_col=None to keep it).", names, "--data.") == (
        "pass --data.time_col=<one> (or --data.time_col=null to keep it)."
    )
    assert as_typed_options("The 'batch_size' parameter of X must be > 0.", names, "--data.") == (
        "The option --data.batch_size must be > 0."
    )
    untouched = "The 'n_strata' parameter of stratified must be an int; pass caliper=None or k=3."
    assert as_typed_options(untouched, names, "--data.") == untouched


def test_predict_names_its_column_options_as_typed(tmp_path, capsys):
    from textcause.cli.predict import predict_main

    def fake(args, time_col):
        raise ValueError("Column 'text' (the text_col parameter) is not in 'x.csv': pass text_col=<one of them>.")

    import textcause.cli.predict as predict

    run = tmp_path / "run"
    run.mkdir()
    old, predict._predict = predict._predict, fake
    try:
        code = friendly_errors(lambda: predict_main([str(run), "--corpus", "x.csv", "--out", str(tmp_path / "p.csv")]))
    finally:
        predict._predict = old
    assert code == 2
    assert error_lines(capsys.readouterr().err) == [
        "error: Column 'text' (the option --data.text_col) is not in 'x.csv': pass --data.text_col=<one of them>."
    ]


# ---------------------------------------------------------------------------------------- before Lightning
SEE = "(all options: train.py fit --help)"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--data.levell", "3"], f"Unknown option --data.levell: did you mean --data.level? {SEE}"),
        (["--trainer.max_epoch=3"], f"Unknown option --trainer.max_epoch: did you mean --trainer.max_epochs? {SEE}"),
        (["--seed", "3"], f"Unknown option --seed {SEE}"),
        (
            ["--data.task", "linguistic_complexty"],
            "Unknown task 'linguistic_complexty' (did you mean 'linguistic_complexity'?). Choose one of "
            "['linguistic_complexity', 'signal_intensity', 'selection_strength', 'sample_size', 'placebo', "
            "'order_of_text'].",
        ),
        (["--data.level", "9"], "The task 'linguistic_complexity' has levels [1, 2, 3, 4]. Got level 9 instead."),
        (["--data.task=placebo", "--data.level=2"], "The task 'placebo' has levels [1]. Got level 2 instead."),
        # what the full parser must judge, or right
        (["--data.level", "abc"], None),
        (["--data.level", "2", "--trainer.max_epochs", "3", "--data.batch_size", "8", "--model.lr", "0.1"], None),
        (["--trainer.logger.init_args.save_dir", "x", "--trainer.callbacks+=x", "--print_config"], None),
        (["--data.class_path", "textcause.gender.GenderDataModule", "--data.no_such", "1"], None),
        (["--help", "--data.levell", "3"], None),
    ],
)
def test_mistakes_are_found_before_lightning_is_imported(args, expected):
    from textcause.cli.precheck import early_error

    assert early_error(["fit", "--config", str(CONFIGS / "model" / "lr_bigram_binary.yaml"), *args]) == expected


def test_a_config_naming_another_package_leaves_the_task_to_the_full_parser(tmp_path):
    """Another package's class may register tasks when it is imported: its task is not refused early."""
    from textcause.cli.precheck import early_error

    config = tmp_path / "c.yaml"
    config.write_text("model:\n  class_path: mypkg.Model\n", encoding="utf-8")
    assert early_error(["fit", "--config", str(config), "--data.task", "my_task"]) is None
    assert early_error(["fit", "--data.task", "my_task"]).startswith("Unknown task 'my_task'")


@pytest.mark.parametrize("entry", ["train.py", "textcause train"])
def test_train_says_it_without_importing_lightning(entry):
    """Before: the sentence came after Lightning, torch and the data module were imported (13-17 s here)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    run = (
        "import runpy, sys\n"
        f"sys.argv = [{entry.split()[0]!r}, *{entry.split()[1:]!r}, 'fit', '--data.levell', '3']\n"
        "try:\n"
        "    runpy.run_path('train.py', run_name='__main__') if sys.argv[0] == 'train.py' else "
        "sys.exit(__import__('textcause.cli.main', fromlist=['main']).main(sys.argv[1:]))\n"
        "except SystemExit as e:\n"
        "    print(e.code, 'lightning' in sys.modules, 'torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", run], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["2", "False", "False"], done.stderr
    prog = "train.py" if entry == "train.py" else "textcause train"
    assert done.stderr.strip() == (
        f"error: Unknown option --data.levell: did you mean --data.level? (all options: {prog} fit --help)"
    )


def test_an_unknown_model_option_suggests_the_closest_argument(table, tmp_path, capsys):
    """The model's options depend on its class, so the full parser judges them; it suggests too."""
    from textcause.run.lightning_cli import make_cli

    with pytest.raises(SystemExit):
        make_cli(fit(table, tmp_path, "--model.lrr", "0.1"))
    (line,) = error_lines(capsys.readouterr().err)
    assert line.startswith(
        "error: Unknown option --model.lrr (textcause.models.PropensityModel takes no such argument): "
        "did you mean --model.lr? See "
    ), line

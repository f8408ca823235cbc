"""Faults that used to end in a traceback are one ``error:`` sentence, and nothing is half-written:
a truncated checkpoint, an ``--out`` that cannot be written, a database URL of an unknown scheme, a
read-only results database, a lone surrogate in a post scored through an encoder (issue 43)."""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import write_history_jsonl
from textcause.cli.errors import friendly_errors
from textcause.cli.main import main as textcause_main


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


def train(corpus: str, root: Path, config: str = "lr_bigram_binary.yaml", *extra: str) -> Path:
    from cliargs import fit_args, quiet_trainer

    from textcause.run.lightning_cli import make_cli

    options = ["--data.min_users", "2", "--trainer.max_epochs", "1", *quiet_trainer(root, "t")]
    cli = make_cli(fit_args(config, corpus, *options, *extra))
    return Path(cli.trainer.log_dir)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(corpus, run folder) of a one-epoch bigram run; tests copy what they damage."""
    root = tmp_path_factory.mktemp("trained")
    corpus = write_history_jsonl(root / "tiny.jsonl.gz", n_users=120, n_posts=12)
    return corpus, train(corpus, root / "runs")


def truncated_copy(run: Path, dest: Path, keep: int | None = None) -> Path:
    from textcause.run.fit import find_checkpoint

    data = find_checkpoint(run).read_bytes()
    dest.write_bytes(data[: len(data) // 2 if keep is None else keep])
    return dest


@pytest.mark.parametrize("keep", [0, 10, None])
def test_evaluate_with_a_truncated_checkpoint_is_one_sentence(trained, tmp_path, capsys, keep):
    """Before: a raw EOFError / RuntimeError (PytorchStreamReader ...) traceback."""
    from textcause.cli.evaluate import main as evaluate_main

    _, run = trained
    bad = truncated_copy(run, tmp_path / "bad.ckpt", keep)
    out = tmp_path / "out"
    assert (
        friendly_errors(
            lambda: evaluate_main([str(run), "--ckpt", str(bad), "--evaluation.n_boot", "0", "--out", str(out)])
        )
        == 2
    )
    line = one_error_line(capsys)
    assert line.startswith(f"error: The checkpoint '{bad}' is damaged or truncated"), line
    assert not (out / "results.csv").exists()


def test_predict_with_a_truncated_checkpoint_is_one_sentence(trained, tmp_path, capsys):
    corpus, run = trained
    bad = truncated_copy(run, tmp_path / "bad.ckpt")
    out = tmp_path / "p.csv"
    assert textcause_main(["predict", str(run), "--corpus", corpus, "--out", str(out), "--ckpt", str(bad)]) == 2
    assert one_error_line(capsys).startswith(f"error: The checkpoint '{bad}' is damaged or truncated")
    assert not out.exists()


def test_predict_out_naming_a_folder_is_one_sentence_before_any_work(trained, tmp_path, capsys, monkeypatch):
    corpus, run = trained
    import textcause.run.predict as predict

    monkeypatch.setattr(predict, "score_texts", lambda *a, **k: pytest.fail("scored before --out was checked"))
    assert textcause_main(["predict", str(run), "--corpus", corpus, "--out", str(tmp_path)]) == 2
    assert one_error_line(capsys) == f"error: --out '{tmp_path}' is a folder: give the CSV file to write."
    below_a_file = tmp_path / "f.txt"
    below_a_file.write_text("x")
    assert textcause_main(["predict", str(run), "--corpus", corpus, "--out", str(below_a_file / "p.csv")]) == 2
    assert one_error_line(capsys) == f"error: --out '{below_a_file / 'p.csv'}' lies under '{below_a_file}', a file."


def test_evaluate_out_naming_a_file_is_one_sentence_and_writes_nothing(trained, tmp_path, capsys):
    from textcause.cli.evaluate import main as evaluate_main

    _, original = trained
    run = tmp_path / "run"
    shutil.copytree(original, run)
    out = tmp_path / "results.csv"
    out.write_text("mine\n")
    assert friendly_errors(lambda: evaluate_main([str(run), "--evaluation.n_boot", "0", "--out", str(out)])) == 2
    assert one_error_line(capsys) == f"error: --out '{out}' is a file: give a folder (results.csv is written into it)."
    assert out.read_text() == "mine\n" and not (run / "results.json").exists()


def test_report_out_naming_a_file_is_one_sentence(tmp_path, capsys):
    out = tmp_path / "report.md"
    out.write_text("mine\n")
    db = tmp_path / "nothing.db"
    assert textcause_main(["report", "--db", str(db), "--out", str(out)]) == 2
    assert one_error_line(capsys) == f"error: --out '{out}' is a file: give a folder for the report."
    assert out.read_text() == "mine\n"


# ---------------------------------------------------------------------------------------- benchmark
def write_grid(tmp_path: Path, corpus: str) -> Path:
    from tinygrid import grid_spec, write_grid_spec

    return write_grid_spec(tmp_path, grid_spec(corpus, n_boot=5))


def benchmark(*args: str) -> int:
    from textcause.cli.benchmark import benchmark_main

    return benchmark_main(list(args))


@pytest.mark.parametrize("dry", [(), ("--dry-run",)])
@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("foo://host/db", "error: The database URL 'foo://host/db' has the unknown scheme 'foo' (SQLAlchemy has "),
        ("postgresql+nodriver://h/db", "error: The database URL 'postgresql+nodriver://h/db' has the unknown scheme"),
    ],
)
def test_a_database_url_of_an_unknown_scheme_is_one_sentence(tiny_corpus, tmp_path, capsys, url, message, dry):
    """Before: sqlalchemy.exc.NoSuchModuleError: Can't load plugin: sqlalchemy.dialects:foo."""
    config = write_grid(tmp_path, tiny_corpus)
    assert benchmark("--config", str(config), "--out", str(tmp_path / "out"), "--db", url, *dry) == 2
    assert one_error_line(capsys).startswith(message)


def read_only_url(path: Path) -> str:
    """A SQLite database opened read-only (as a file the user may not write opens, whoever runs the test)."""
    return f"sqlite:///file:{path}?mode=ro&uri=true"


@pytest.mark.parametrize("made", [False, True])
@pytest.mark.parametrize("dry", [(), ("--dry-run",)])
def test_a_read_only_results_database_is_one_sentence(tiny_corpus, tmp_path, capsys, dry, made):
    """Before: sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) attempt to write a readonly database."""
    import sqlite3

    from textcause import store

    path = tmp_path / "results.db"
    if made:  # a benchmark's database, its tables made
        store.open_store(f"sqlite:///{path}").dispose()
        for extra in tmp_path.glob("results.db-*"):
            extra.unlink()
    else:  # an empty database: its tables would have to be made
        sqlite3.connect(path).close()
    size = path.stat().st_size
    config = write_grid(tmp_path, tiny_corpus)
    code = benchmark("--config", str(config), "--out", str(tmp_path / "out"), "--db", read_only_url(path), *dry)
    if dry:  # a dry run reads only: the cells are listed as still to do
        assert code == 0, capsys.readouterr().err
        assert "tiny/tiny/linguistic_complexity-1/unadjusted/s0\ttodo" in capsys.readouterr().out
        return
    assert code == 2
    assert one_error_line(capsys).startswith(f"error: The results database '{path}' is read-only")
    assert path.stat().st_size == size


def test_an_unwritable_lock_file_is_one_sentence(tiny_corpus, tmp_path, capsys):
    """Before: a PermissionError traceback from filelock (here: the lock file's place is a folder)."""
    out = tmp_path / "out"
    (out / "results.db.lock").mkdir(parents=True)
    config = write_grid(tmp_path, tiny_corpus)
    assert benchmark("--config", str(config), "--out", str(out)) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"error: Cannot take the lock file '{out / 'results.db.lock'}'"), line
    assert benchmark("--config", str(config), "--out", str(out), "--dry-run") == 0  # reads need no lock


# ---------------------------------------------------------------------------------------- lone surrogates
def test_a_lone_surrogate_is_encoded_as_the_replacement_character(tiny_encoder):
    """Half an emoji in a tweet dump ('\\ud83d' alone) is read by every corpus reader; the Rust tokenizer
    raised a TypeError / UnicodeEncodeError on it. It is tokenised as U+FFFD, as Python's
    ``errors="replace"`` decodes a broken byte."""
    from textcause.features.encoder import Encoder

    encoder = Encoder(tiny_encoder, precision="fp32")
    assert encoder.tokenize(["a \ud83d b", "c\udc00"]) == encoder.tokenize(["a \ufffd b", "c\ufffd"])
    got = encoder.encode(["a \ud83d b"]).vectors
    np.testing.assert_array_equal(got, encoder.encode(["a \ufffd b"]).vectors)


@pytest.mark.slow
def test_predict_on_a_sherbert_pooled_run_scores_a_post_with_a_lone_surrogate(tmp_path, tiny_encoder, capsys):
    """Before: ``textcause predict`` on a ``sherbert_pooled`` run ended in the tokenizer's TypeError."""
    corpus = write_history_jsonl(tmp_path / "tiny.jsonl.gz", n_users=60, n_posts=12)
    run = train(corpus, tmp_path / "runs", "sherbert_pooled.yaml", "--data.encoder", tiny_encoder)
    rows = [{"user_id": "a", "posts": [{"text": "half an emoji \ud83d here", "time": None}] * 3, "meta": {}}]
    rows.append({"user_id": "b", "posts": [{"text": "half an emoji \ufffd here", "time": None}] * 3, "meta": {}})
    new = tmp_path / "new.jsonl"
    new.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")  # ASCII escapes: \ud83d kept
    out = tmp_path / "p.csv"
    assert textcause_main(["predict", str(run), "--corpus", str(new), "--out", str(out)]) == 0, capsys.readouterr().err
    a, b = out.read_text().splitlines()[1:]
    assert a.split(",")[0] == "a" and a.split(",")[1] == b.split(",")[1]  # scored as the replacement character


# ---------------------------------------------------------------------------------------- full disks
def full_disk(monkeypatch, under: Path) -> None:
    """Every text written under ``under`` fails as a full disk does (after opening its file)."""
    write_text = Path.write_text

    def fail(self, *args, **kwargs):
        if str(self).startswith(str(under)):
            self.open("w").close()
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return write_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", fail)


def test_predict_on_a_full_disk_is_one_sentence_and_leaves_nothing(trained, tmp_path, capsys, monkeypatch):
    corpus, run = trained
    out = tmp_path / "full" / "p.csv"
    full_disk(monkeypatch, tmp_path / "full")
    assert textcause_main(["predict", str(run), "--corpus", corpus, "--out", str(out)]) == 2
    line = one_error_line(capsys)
    assert line.startswith("error: Could not write '") and "(No space left on device): free some space" in line
    assert list(out.parent.iterdir()) == []  # no CSV, no temporary file


def test_fit_on_a_full_disk_leaves_no_empty_config(tiny_corpus, tmp_path, capsys, monkeypatch):
    """Before: train.py fit left a 0-byte config.yaml in the run folder, and a traceback."""
    from textcause.run.lightning_cli import OneLineParser

    def save(self, cfg, path, *args, **kwargs):
        Path(path).open("w").close()
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(OneLineParser, "save", save)
    root = tmp_path / "runs"
    assert friendly_errors(lambda: train(tiny_corpus, root)) == 2
    assert "(No space left on device): free some space" in one_error_line(capsys)
    assert list(root.rglob("config.yaml")) == [] and list(root.rglob("*.tmp")) == []

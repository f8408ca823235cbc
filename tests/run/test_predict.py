"""``textcause predict``: a trained run scores users it never saw, with the featurizer saved in its checkpoint.

The must-show check: the held-out (test) users of a run, written out as a NEW corpus file, get from
``textcause predict`` the propensities that ``evaluate.py``'s evaluation gives them, to float
tolerance, and the vocabulary is never refitted on them.
"""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from cliargs import fit_args, quiet_trainer

from textcause.cli.main import main as textcause_main
from textcause.data.featurizer import unpack_terms
from textcause.run.fit import EvaluationSettings, evaluate_run, find_checkpoint
from textcause.run.lightning_cli import make_cli

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def train(corpus: str, root: Path, config: str, *extra: str):
    options = ["--data.min_users", "2", "--trainer.max_epochs", "2", *quiet_trainer(root, "t")]
    args = fit_args(config, corpus, *options, *extra)
    cli = make_cli(args)
    return cli, Path(cli.trainer.log_dir)


def write_users_jsonl(path: Path, user_ids, texts) -> str:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for uid, posts in zip(user_ids, texts):
            fh.write(
                json.dumps({"user_id": uid, "posts": [{"text": p, "time": None} for p in posts], "meta": {}}) + "\n"
            )
    return str(path)


def write_users_csv(path: Path, user_ids, texts) -> str:
    """A flat comment table with the user's own column names (``user``, ``body``) and no time column."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["user", "body"])
        for uid, posts in zip(user_ids, texts):
            writer.writerows([uid, p] for p in posts)
    return str(path)


def read_propensities(path: Path) -> dict[str, float]:
    with open(path, newline="", encoding="utf-8") as fh:
        return {r["user_id"]: float(r["propensity"]) for r in csv.DictReader(fh)}


@pytest.mark.parametrize("config", ["lr_bigram_binary.yaml", "lr_lda.yaml"])
def test_predict_gives_held_out_users_the_propensities_of_evaluate(config, tiny_corpus, tmp_path, monkeypatch, capsys):
    cli, run_dir = train(tiny_corpus, tmp_path / "runs", config)
    task = cli.datamodule.task
    test_users = task.split.test
    # the checkpoint loads with weights_only=True and carries the training vocabulary
    ckpt = torch.load(find_checkpoint(run_dir), map_location="cpu", weights_only=True)
    saved = ckpt["CausalTextDataModule"]["featurizer"]
    assert saved["representation"] == cli.datamodule.settings.representation
    # the n-grams as two tensors (pack_terms), not tens of thousands of strings
    assert set(saved["ngram"]["terms"]) == {"utf8", "ends"}
    assert unpack_terms(saved["ngram"]["terms"]) == unpack_terms(cli.datamodule.featurizer["ngram"]["terms"])
    assert len(unpack_terms(saved["ngram"]["terms"])) == cli.datamodule.input_dim or config == "lr_lda.yaml"
    if config == "lr_lda.yaml":
        assert isinstance(saved["ngram"]["lda_components"], torch.Tensor)

    reference = evaluate_run(run_dir, EvaluationSettings(n_boot=0)).predictions
    assert np.array_equal(reference["index"], test_users)
    expected = {task.user_ids[i]: p for i, p in zip(reference["index"], reference["propensity"])}

    # the held-out users as a new corpus file the run never read; a CSV with the user's own columns for one
    ids, texts = [task.user_ids[i] for i in test_users], [task.texts[i] for i in test_users]
    if config == "lr_bigram_binary.yaml":
        new = write_users_csv(tmp_path / "new.csv", ids, texts)
        columns = ["--data.author_col", "user", "--data.text_col", "body", "--data.time_col", "null"]
    else:
        new = write_users_jsonl(tmp_path / "new.jsonl.gz", ids, texts)
        columns = []
    from textcause.features.ngrams import NgramFeaturizer

    def no_refit(*args, **kwargs):
        raise AssertionError("predict refitted the featurizer on the new users")

    monkeypatch.setattr(NgramFeaturizer, "_fit_transform_encoded", no_refit)
    out = tmp_path / "scores" / "propensities.csv"
    code = textcause_main(["predict", str(run_dir), "--corpus", new, "--out", str(out), *columns])
    assert code == 0, capsys.readouterr().err
    got = read_propensities(out)
    assert list(got) == ids  # every new user, in the corpus's order
    np.testing.assert_allclose([got[u] for u in ids], [expected[u] for u in ids], rtol=0, atol=1e-6)
    assert f"wrote {out}" in capsys.readouterr().out


def test_predict_errors_are_one_sentence(tiny_corpus, tmp_path, capsys):
    def run(*args: str) -> str:
        code = textcause_main(["predict", *args])
        err = capsys.readouterr().err.strip()
        assert code == 2 and err.startswith("error: ") and "\n" not in err and "Traceback" not in err, err
        return err

    out = str(tmp_path / "p.csv")
    assert "No run folder" in run(str(tmp_path / "nowhere"), "--corpus", tiny_corpus, "--out", out)
    _, run_dir = train(tiny_corpus, tmp_path / "runs", "lr_bigram_binary.yaml")
    assert "No user in" in run(str(run_dir), "--corpus", tiny_corpus, "--out", out, "--data.min_posts", "50")
    empty = tmp_path / "empty.csv"
    empty.write_text("author,text,time\n")
    assert str(empty) in run(str(run_dir), "--corpus", str(empty), "--out", out)
    # a checkpoint of an older version: no featurizer saved with it
    ckpt_path = find_checkpoint(run_dir)
    ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    del ckpt["CausalTextDataModule"]
    old = run_dir / "checkpoints" / "old.ckpt"
    torch.save(ckpt, old)
    assert "retrain the model with this version" in run(
        str(run_dir), "--corpus", tiny_corpus, "--out", out, "--ckpt", str(old)
    )
    for path in (run_dir / "checkpoints").glob("*.ckpt"):
        path.unlink()
    assert "No checkpoint in" in run(str(run_dir), "--corpus", tiny_corpus, "--out", out)
    assert not Path(out).exists()  # nothing half-written
    _, oracle_dir = train(tiny_corpus, tmp_path / "oracle", "oracle.yaml")
    if find_checkpoint(oracle_dir) is not None:
        assert "reads no text" in run(str(oracle_dir), "--corpus", tiny_corpus, "--out", out)


@pytest.mark.slow
def test_predict_with_the_embedding_featurizer(tiny_corpus, tiny_encoder, tmp_path, capsys):
    cli, run_dir = train(
        tiny_corpus,
        tmp_path / "runs",
        "order_count.yaml",
        "--data.encoder",
        tiny_encoder,
        "--trainer.max_epochs",
        "1",
        "--data.batch_size",
        "64",
    )
    task = cli.datamodule.task
    saved = cli.datamodule.featurizer["embedding"]
    assert saved["encoder"] == tiny_encoder and saved["identity"]
    reference = evaluate_run(run_dir, EvaluationSettings(n_boot=0)).predictions
    expected = {task.user_ids[i]: p for i, p in zip(reference["index"], reference["propensity"])}
    ids = [task.user_ids[i] for i in task.split.test]
    new = write_users_jsonl(tmp_path / "new.jsonl.gz", ids, [task.texts[i] for i in task.split.test])
    out = tmp_path / "p.csv"
    assert textcause_main(["predict", str(run_dir), "--corpus", new, "--out", str(out)]) == 0, capsys.readouterr().err
    got = read_propensities(out)
    np.testing.assert_allclose([got[u] for u in ids], [expected[u] for u in ids], rtol=0, atol=1e-5)

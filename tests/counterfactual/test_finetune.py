"""The fine-tuned classifier (subtask 1) and span extractor (subtask 2): modules, data, evaluation, CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import pandas as pd
import pytest
import torch

from textcause.counterfactual import finetuned
from textcause.counterfactual.datamodule import IGNORE, SemEvalDataModule
from textcause.counterfactual.models import CounterfactualClassifier, CounterfactualSpanModel
from textcause.counterfactual.scoring import score_files
from textcause.models.components.text_heads import EncoderClassifier, SpanExtractor

from .conftest import NOUNS, VERBS, span, write_rows

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "counterfactual"
TRAINER = dict(
    accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False
)


def subtask2_file(path: Path, n: int, seed: int, start_id: int) -> Path:
    """A subtask-2 CSV of template sentences, a quarter of them without a consequent."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        a, b = rng.choice(NOUNS, 2, replace=False)
        v, w = rng.choice(VERBS, 2)
        if i % 4 == 0:
            sentence, ante, cons = f"I wish the {a} had {v} sooner.", f"I wish the {a} had {v} sooner", None
        else:
            ante, cons = f"If the {a} had {v}", f"the {b} would have {w}"
            sentence = f"{ante}, {cons}."
        s, e = span(sentence, ante)
        cs, ce = span(sentence, cons) if cons else (-1, -1)
        rows.append(
            {
                "sentenceID": start_id + i,
                "sentence": sentence,
                "antecedent": ante,
                "consequent": cons or "{}",
                "antecedent_startid": s,
                "antecedent_endid": e,
                "consequent_startid": cs,
                "consequent_endid": ce,
            }
        )
    return write_rows(path, rows)


@pytest.fixture
def files2(tmp_path):
    return subtask2_file(tmp_path / "train2.csv", 48, 0, 1000), subtask2_file(tmp_path / "test2.csv", 16, 1, 5000)


# ---------------------------------------------------------------------- modules
def test_the_networks_forward_and_backward_shapes(tiny_encoder):
    ids = torch.randint(5, 200, (3, 7))
    mask = torch.ones_like(ids)
    mask[2, 5:] = 0
    clf = EncoderClassifier(encoder=tiny_encoder)
    out = clf(ids, mask)
    assert out.shape == (3,)
    out.sum().backward()
    assert clf.head.weight.grad is not None and clf.backbone.embeddings.word_embeddings.weight.grad is not None
    ext = SpanExtractor(encoder=tiny_encoder)
    logits = ext(ids, mask)
    assert logits.shape == (3, 4, 7)
    logits.sum().backward()
    assert ext.head.weight.grad.shape == (4, 32)
    with pytest.raises(ValueError, match="'dropout' parameter of SpanExtractor must be a float"):
        SpanExtractor(encoder=tiny_encoder, dropout=1.0)


def test_the_span_loss_ignores_cut_off_spans_and_masks_outside_the_sentence(tiny_encoder, files2):
    train, test = files2
    dm = SemEvalDataModule(subtask=2, train=str(train), test=str(test), encoder=tiny_encoder, batch_size=4)
    dm.setup("fit")
    model = CounterfactualSpanModel(SpanExtractor(encoder=tiny_encoder))
    batch = next(iter(dm.val_dataloader()))
    logits = model.masked_logits(batch)
    assert logits.shape[:2] == (4, 4)
    outside = ~batch["context"]
    assert (logits[:, 0][outside] <= -1e4).all()  # antecedent: never [CLS] or padding
    assert (logits[:, 2, 0] > -1e4).all()  # the consequent's null answer stays allowed
    labels = batch["labels"].clone()
    labels[0] = IGNORE
    per = model.loss(logits, labels)
    assert per.shape == (4,) and float(per[0].detach()) == 0.0 and torch.isfinite(per).all()
    loss = per.mean()
    loss.backward()


def test_the_data_module_carves_validation_from_train_and_never_from_test(toy_files, tiny_encoder):
    train, test = toy_files
    dm = SemEvalDataModule(subtask=1, train=str(train), test=str(test), encoder=tiny_encoder, seed=3)
    splits = dm.splits
    ids = {k: set(v.frame["sentenceID"]) for k, v in splits.items()}
    assert not ids["train"] & ids["val"] and not (ids["train"] | ids["val"]) & ids["test"]
    assert ids["train"] | ids["val"] == set(pd.read_csv(train)["sentenceID"])
    assert ids["test"] == set(pd.read_csv(test)["sentenceID"])
    again = SemEvalDataModule(subtask=1, train=str(train), test=str(test), encoder=tiny_encoder, seed=3)
    assert set(again.splits["val"].frame["sentenceID"]) == ids["val"]  # seeded
    y = splits["train"].labels
    assert dm.pos_weight == pytest.approx((len(y) - y.sum()) / y.sum())
    batch = next(iter(dm.train_dataloader()))
    assert set(batch) == {"input_ids", "attention_mask", "context", "labels", "index"}
    assert not batch["context"][:, 0].any()  # [CLS] is not a sentence token
    with pytest.raises(ValueError, match="'subtask' parameter of SemEvalDataModule must be"):
        SemEvalDataModule(subtask=3)
    with pytest.raises(ValueError, match="'predict_split' parameter of SemEvalDataModule must be"):
        SemEvalDataModule(predict_split="dev")


def test_the_threshold_is_chosen_on_validation_only(toy_files, tiny_encoder, tmp_path, monkeypatch):
    train, test = toy_files
    dm = SemEvalDataModule(subtask=1, train=str(train), test=str(test), encoder=tiny_encoder)
    model = CounterfactualClassifier(EncoderClassifier(encoder=tiny_encoder))
    trainer = L.Trainer(devices=1, **TRAINER)
    seen = []
    real = finetuned.choose_threshold

    def spy(y, scores):
        seen.append(len(y))
        return real(y, scores)

    monkeypatch.setattr(finetuned, "choose_threshold", spy)
    first = finetuned.evaluate_finetuned(trainer, model, dm, tmp_path / "a")
    assert seen == [len(dm.splits["val"])]  # one choice, on the validation labels
    flipped = dm.splits["test"].frame
    flipped["gold_label"] = 1 - flipped["gold_label"]  # the test labels cannot move the threshold
    second = finetuned.evaluate_finetuned(trainer, model, dm, tmp_path / "b")
    assert first["threshold_logit"] == second["threshold_logit"]
    a, b = (pd.read_csv(tmp_path / x / "subtask1.csv") for x in "ab")
    pd.testing.assert_frame_equal(a, b)
    assert list(a.columns) == ["sentenceID", "pred_label"]


def test_the_encoders_of_data_and_network_must_agree(toy_files, tiny_encoder, tmp_path):
    train, test = toy_files
    dm = SemEvalDataModule(subtask=1, train=str(train), test=str(test), encoder=None)
    model = CounterfactualClassifier(EncoderClassifier(encoder=tiny_encoder))
    trainer = L.Trainer(fast_dev_run=True, devices=1, default_root_dir=tmp_path, **TRAINER)
    with pytest.raises(ValueError, match="The data were tokenised with the encoder None, but the network"):
        trainer.fit(model, dm)


# ---------------------------------------------------------------------- train.py fit + evaluate.py
def train_py_fit(config: str, train: Path, test: Path, root: Path, *extra: str) -> tuple[Path, Any]:
    """``train.py fit --config configs/counterfactual/<config>`` on the given files: (the run folder, the model)."""
    from textcause.run.lightning_cli import make_cli

    logger = {"class_path": "lightning.pytorch.loggers.CSVLogger", "init_args": {"save_dir": str(root), "name": "r"}}
    cli = make_cli(
        [
            "fit",
            "--config",
            str(CONFIGS / config),
            "--data.init_args.train",
            str(train),
            "--data.init_args.test",
            str(test),
            "--trainer.default_root_dir",
            str(root),
            "--trainer.logger",
            json.dumps(logger),
            "--trainer.enable_progress_bar",
            "false",
            *extra,
        ]
    )
    return root / "r" / "version_0", cli.model


def fit_and_evaluate(config: str, train: Path, test: Path, encoder: str, root: Path) -> tuple[Path, dict]:
    from textcause.cli.evaluate import main as evaluate_main

    run, _ = train_py_fit(
        config,
        train,
        test,
        root,
        *("--data.init_args.encoder", encoder, "--data.init_args.batch_size", "8"),
        *("--model.init_args.net.init_args.encoder", encoder),
        *("--trainer.max_epochs", "1", "--trainer.limit_train_batches", "2", "--trainer.limit_val_batches", "1"),
    )
    assert (run / "config.yaml").is_file() and list((run / "checkpoints").glob("best-*.ckpt"))
    summary = evaluate_main([str(run)])
    return run, summary


def test_subtask1_trains_through_train_py_and_evaluate_py_scores_the_test_file(
    toy_files, tiny_encoder, tmp_path, capsys
):
    train, test = toy_files
    run, summary = fit_and_evaluate("subtask1_minilm.yaml", train, test, tiny_encoder, tmp_path)
    assert set(summary["test"]) >= {"precision", "recall", "f1", "accuracy"}
    saved = json.loads((run / "results.json").read_text())
    assert saved["test"] == summary["test"] and saved["checkpoint"].endswith(".ckpt")
    assert score_files(test, run / "subtask1.csv", 1) == summary["test"]  # the official format, the same scores
    assert "threshold" in capsys.readouterr().out
    from textcause.cli.main import main

    assert main(["semeval", "score", "--gold", str(test), "--pred", str(run / "subtask1.csv"), "--subtask", "1"]) == 0
    assert f"f1 {100 * summary['test']['f1']:.2f}" in capsys.readouterr().out


def test_subtask2_trains_through_train_py_and_evaluate_py_scores_the_test_file(files2, tiny_encoder, tmp_path):
    train, test = files2
    run, summary = fit_and_evaluate("subtask2_minilm.yaml", train, test, tiny_encoder, tmp_path)
    assert {"exact_match", "f1"} <= set(summary["test"]) and summary["test"]["n_malformed"] == 0
    pred = pd.read_csv(run / "subtask2.csv")
    assert list(pred.columns) == [
        "sentenceID",
        "antecedent_startid",
        "antecedent_endid",
        "consequent_startid",
        "consequent_endid",
    ]
    assert (pred["antecedent_endid"] >= pred["antecedent_startid"]).all()
    none = pred["consequent_startid"] == -1
    assert (pred.loc[none, "consequent_endid"] == -1).all()
    assert (pred.loc[~none, "consequent_endid"] >= pred.loc[~none, "consequent_startid"]).all()
    assert score_files(test, run / "subtask2.csv", 2) == summary["test"]
    info = summary["info"]
    assert info["train_spans_exact_round_trip"] == info["train_spans"]  # word-aligned gold spans map exactly


def test_evaluate_py_on_a_counterfactual_run_without_a_checkpoint_is_one_line(tmp_path, capsys):
    import shutil

    from textcause.cli.errors import friendly_errors
    from textcause.cli.evaluate import main as evaluate_main

    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(CONFIGS / "subtask1_minilm.yaml", run / "config.yaml")
    assert friendly_errors(lambda: evaluate_main([str(run)])) == 2
    err = capsys.readouterr().err
    assert "No checkpoint in" in err and "Traceback" not in err

"""The subtask-1 baselines as runs: ``train.py fit`` fits them once, ``evaluate.py`` scores the test file,
the checkpoint is tensors and plain values, and the numbers are those of ``textcause counterfactual baseline``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from textcause.counterfactual.datamodule import SemEvalDataModule
from textcause.counterfactual.finetuned import evaluate_finetuned
from textcause.counterfactual.fitted import FittedTextClassifier, export_state, rebuild
from textcause.counterfactual.scoring import score_files

from .test_finetune import subtask2_file, train_py_fit

UNSEEN = ["If the court had ruled, the city would have changed.", "The plane rose today.", "zzz qqq", ""]


def baseline_command(model: str, train: Path, test: Path, out: Path, *extra: str) -> dict:
    """``textcause counterfactual baseline --model <model>`` on the same files; its ``results.json``."""
    from textcause.cli.counterfactual import counterfactual_main

    argv = ["baseline", "--model", model, "--train", str(train), "--test", str(test), "--out", str(out), *extra]
    assert counterfactual_main([*argv, "--no-progress"]) == 0
    return json.loads((out / "results.json").read_text())


def reload(checkpoint: Path, **kwargs) -> FittedTextClassifier:
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)  # no pickled scikit-learn object
    model = FittedTextClassifier(**kwargs)
    model.load_state_dict(state["state_dict"])
    return model


def assert_same_numbers(summary: dict, reference: dict) -> None:
    assert summary["test"] == reference["test"]
    assert summary["validation"] == reference["validation"]
    assert summary["C"] == reference["C"] and summary["threshold"] == reference["threshold"]
    assert summary["threshold_logit"] == reference["threshold"]
    assert summary["grid_validation_f1"] == reference["grid_validation_f1"]


# ---------------------------------------------------------------------- the SVM
def test_the_svm_fits_through_train_py_and_evaluate_py_gives_the_baseline_commands_numbers(toy_files, tmp_path, capsys):
    from textcause.cli.evaluate import main as evaluate_main

    train, test = toy_files
    run, fitted = train_py_fit("subtask1_svm.yaml", train, test, tmp_path / "logs")
    assert (run / "config.yaml").is_file()
    assert [p.name for p in (run / "checkpoints").glob("*.ckpt")] == ["fitted.ckpt"]
    logged = pd.read_csv(run / "metrics.csv")
    assert len(logged) == 1 and {"val_f1", "C", "threshold"} <= set(logged.columns)  # one fit, one epoch

    summary = evaluate_main([str(run)])
    assert "FittedTextClassifier on the test file (120 sentences)" in capsys.readouterr().out
    saved = json.loads((run / "results.json").read_text())
    assert saved["test"] == summary["test"] and saved["checkpoint"].endswith("fitted.ckpt")
    assert saved["baseline"] == "svm" and saved["timings"]["fit_seconds"] > 0
    # the keys of the fine-tuned classifier's results.json are all there, so tables quote both alike
    assert {"task", "model", "validation", "test", "threshold_logit", "info", "predictions", "timings"} <= set(saved)
    assert score_files(test, run / "subtask1.csv", 1) == summary["test"]

    reference = baseline_command("svm", train, test, tmp_path / "command")
    assert_same_numbers(saved, reference)
    assert saved["fit_info"]["vocabulary_size"] == reference["info"]["vocabulary_size"]
    ours, theirs = (pd.read_csv(folder / "subtask1.csv") for folder in (run, tmp_path / "command"))
    pd.testing.assert_frame_equal(ours, theirs)
    reloaded = reload(run / "checkpoints" / "fitted.ckpt", baseline="svm")  # as evaluate.py reads it
    sentences = pd.read_csv(test)["sentence"].tolist() + UNSEEN
    assert np.array_equal(reloaded.decision(sentences), fitted.decision(sentences))


def test_the_svm_checkpoint_round_trip_gives_identical_decisions(toy_files, tmp_path):
    train, test = toy_files
    data = SemEvalDataModule(subtask=1, train=str(train), test=str(test))
    fitted = FittedTextClassifier(baseline="svm")
    original = fitted.fit_on(data)
    path = tmp_path / "m.ckpt"
    torch.save({"state_dict": fitted.state_dict()}, path)
    again = reload(path, baseline="svm")
    sentences = data.splits["test"].sentences + data.splits["val"].sentences + UNSEEN
    expected = original.decision(sentences)
    assert np.array_equal(again.decision(sentences), expected)  # bit-identical margins
    assert np.array_equal(again.fitted.predict(sentences), original.predict(sentences))
    assert (again.fitted.C, again.fitted.threshold) == (original.C, original.threshold)
    assert again.fitted.validation == original.validation and again.fitted.grid == original.grid
    # the state itself is tensors and plain values only
    state = export_state(original)
    assert isinstance(state["features"]["terms"], list) and all(isinstance(t, str) for t in state["features"]["terms"])
    assert isinstance(state["features"]["idf"], torch.Tensor) and isinstance(state["estimator"]["coef"], torch.Tensor)
    assert np.array_equal(rebuild(state).decision(sentences), expected)


# ---------------------------------------------------------------------- frozen MiniLM (a tiny random encoder) + LR
def test_minilm_lr_fits_through_train_py_and_matches_the_baseline_command(toy_files, tiny_encoder, tmp_path):
    from textcause.cli.evaluate import main as evaluate_main

    train, test = toy_files
    run, fitted = train_py_fit(
        "subtask1_minilm_lr.yaml",
        train,
        test,
        tmp_path / "logs",
        "--data.init_args.encoder",
        tiny_encoder,
        "--model.init_args.progress",
        "false",
    )
    summary = evaluate_main([str(run)])
    assert summary["baseline"] == "minilm_lr" and summary["fit_info"]["encoder"]
    assert {"encode_seconds", "fit_seconds", "evaluate_seconds"} <= set(summary["timings"])
    reference = baseline_command("minilm_lr", train, test, tmp_path / "command", "--encoder", tiny_encoder)
    assert_same_numbers(summary, reference)

    model = reload(run / "checkpoints" / "fitted.ckpt", baseline="minilm_lr", progress=False)  # the encoder is saved
    sentences = pd.read_csv(test)["sentence"].tolist() + UNSEEN[:3]
    scores = model.decision(sentences)
    assert np.array_equal(scores >= model.fitted.threshold, model.fitted.predict(sentences))
    assert np.array_equal(scores, fitted.decision(sentences))  # the same vectors, the same coefficients


# ---------------------------------------------------------------------- misuse
def test_subtask2_data_with_a_subtask1_baseline_is_a_clear_error(toy_files, tmp_path):
    train = subtask2_file(tmp_path / "train2.csv", 48, 0, 1000)
    test = subtask2_file(tmp_path / "test2.csv", 16, 1, 5000)
    with pytest.raises(ValueError, match="FittedTextClassifier is a subtask-1 model .* serves subtask 2: set data"):
        train_py_fit("subtask1_svm.yaml", train, test, tmp_path / "logs", "--data.init_args.subtask", "2")
    with pytest.raises(ValueError, match="needs a textcause.counterfactual.datamodule.SemEvalDataModule"):
        FittedTextClassifier().fit_on(object())
    data1 = SemEvalDataModule(subtask=1, train=str(toy_files[0]), test=str(toy_files[1]))
    svm = FittedTextClassifier(Cs=[1.0])
    svm.fit_on(data1)
    data2 = SemEvalDataModule(subtask=2, train=str(train), test=str(test))
    with pytest.raises(ValueError, match="FittedTextClassifier is a subtask-1 model, but the data module serves"):
        evaluate_finetuned(None, svm, data2, tmp_path / "out")
    assert not (tmp_path / "out" / "results.json").exists()


def test_options_and_unfitted_models_are_checked(toy_files, tmp_path):
    with pytest.raises(ValueError, match="'baseline' parameter of FittedTextClassifier must be one of"):
        FittedTextClassifier(baseline="bert")
    with pytest.raises(ValueError, match="'Cs' parameter of FittedTextClassifier must be a non-empty list"):
        FittedTextClassifier(Cs=[])
    with pytest.raises(ValueError, match="'Cs' parameter of FittedTextClassifier must be a float > 0.0"):
        FittedTextClassifier(Cs=[1.0, 0.0])
    with pytest.raises(ValueError, match="has not been fitted: run train.py fit"):
        FittedTextClassifier().decision(["If it had rained."])
    train, test = toy_files
    svm = FittedTextClassifier(Cs=[1.0])
    svm.fit_on(SemEvalDataModule(subtask=1, train=str(train), test=str(test)))
    with pytest.raises(ValueError, match="holds a fitted 'svm', but this FittedTextClassifier is 'minilm_lr'"):
        FittedTextClassifier(baseline="minilm_lr").load_state_dict(svm.state_dict())
    with pytest.raises(ValueError, match="holds no fitted baseline of format 1"):
        FittedTextClassifier().load_state_dict({"_extra_state": {"format": 99}})

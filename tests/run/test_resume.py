"""Resumable training: a run killed with SIGKILL mid-epoch and resumed with `--ckpt_path last` ends
exactly where an uninterrupted run with the same seed ends (weights, best checkpoint, estimates),
in its own run folder, with nothing of its log lost."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from conftest import write_history_jsonl

from textcause.run.fit import EvaluationSettings, evaluate_run

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _callbacks(folder: Path, kill_at: int | None) -> Path:
    callbacks = [
        {
            "class_path": "lightning.pytorch.callbacks.EarlyStopping",
            "init_args": {"monitor": "val_loss", "patience": 5},
        },
        {
            "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
            "init_args": {"monitor": "val_loss", "save_top_k": 1, "filename": "best-{epoch}-{val_loss:.4f}"},
        },
        {"class_path": "textcause.callbacks.ResumeCheckpoint", "init_args": {"every_n_train_steps": 2}},
        {"class_path": "textcause.callbacks.CausalMetricsCallback"},
    ]
    if kill_at is not None:
        callbacks.append({"class_path": "resume_killer.KillAtStep", "init_args": {"step": kill_at}})
    path = folder / ("kill.yaml" if kill_at else "plain.yaml")
    path.write_text(yaml.safe_dump({"trainer": {"callbacks": callbacks}}), encoding="utf-8")
    return path


def _fit(folder: Path, corpus: str, *extra: str, kill_at: int | None = None) -> subprocess.CompletedProcess:
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'tests'}{os.pathsep}{ROOT}", "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable, str(ROOT / "train.py"), "fit",
        "--config", str(ROOT / "configs" / "model" / "nn_unigram_binary.yaml"),
        "--config", str(_callbacks(folder, kill_at)),
        f"--data.corpus={corpus}", "--data.batch_size=16", "--data.min_users=3",
        "--model.init_args.net.init_args.dropout=0.3", "--trainer.max_epochs=4",
        "--trainer.enable_progress_bar=false", *extra,
    ]  # fmt: skip
    return subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def _epoch_train_loss(*paths: Path) -> dict[int, float]:
    """Each epoch's ``train_loss`` in ``metrics.csv`` files (a resumed run's parts, oldest first)."""
    out: dict[int, float] = {}
    for path in paths:
        with path.open(encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                if row.get("train_loss"):
                    out[int(row["epoch"])] = float(row["train_loss"])
    assert out, paths
    return out


def _weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, map_location="cpu", weights_only=False)["state_dict"]


def test_a_run_killed_mid_epoch_resumes_to_the_uninterrupted_result(tmp_path):
    corpus = write_history_jsonl(tmp_path / "tiny.jsonl.gz", n_users=240, n_posts=12, seed=3)
    plain = _fit(tmp_path / "plain", corpus)
    assert plain.returncode == 0, plain.stderr[-2000:]
    killed = _fit(tmp_path / "resumed", corpus, kill_at=9)  # 6 steps an epoch: killed in epoch 2, last at step 8
    assert killed.returncode == -signal.SIGKILL
    run = tmp_path / "resumed" / "runs" / "textcause" / "version_0"
    assert torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["global_step"] == 8
    resumed = _fit(tmp_path / "resumed", corpus, "--ckpt_path=last")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "not resumable" not in resumed.stderr  # Lightning's warning for a loader without state
    assert not (tmp_path / "resumed" / "runs" / "textcause" / "version_1").exists()  # same folder
    assert (run / "metrics.part-1.csv").is_file() and (run / "metrics.csv").is_file()  # nothing lost

    base = tmp_path / "plain" / "runs" / "textcause" / "version_0"
    # the epoch killed mid-way logs the mean over ALL its steps, not over the resumed ones only (issue 43)
    assert _epoch_train_loss(base / "metrics.csv") == _epoch_train_loss(run / "metrics.part-1.csv", run / "metrics.csv")
    a, b = _weights(base / "checkpoints" / "last.ckpt"), _weights(run / "checkpoints" / "last.ckpt")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    best_a = sorted((base / "checkpoints").glob("best-*.ckpt"))
    best_b = sorted((run / "checkpoints").glob("best-*.ckpt"))
    assert [p.name for p in best_a] == [p.name for p in best_b]
    ev = EvaluationSettings(n_boot=50, split="test", seed=0)
    rows_a = evaluate_run(base, ev, csv_dir=tmp_path).rows
    rows_b = evaluate_run(run, ev, csv_dir=tmp_path).rows
    keys = ("estimator", "ate", "ci_low", "ci_high", "treatment_accuracy", "n_used")
    assert [{k: r[k] for k in keys} for r in rows_a] == [{k: r[k] for k in keys} for r in rows_b]


def test_last_with_nothing_to_resume_is_one_clear_error(tmp_path):
    corpus = write_history_jsonl(tmp_path / "tiny.jsonl.gz", n_users=240, n_posts=12, seed=3)
    out = _fit(tmp_path / "empty", corpus, "--ckpt_path=last")
    assert out.returncode != 0
    assert "no run of this configuration under 'runs/textcause' has a checkpoints/last.ckpt" in out.stderr
    assert "Traceback" not in out.stderr

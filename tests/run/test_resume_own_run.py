"""``fit --ckpt_path last`` resumes only this configuration's own run; a checkpoint that does not fit the
model is refused before anything is written; no fit changes a run folder it did not create (issue 43)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from conftest import write_history_jsonl

from textcause.run.resume import check_checkpoint_fits, choose_resume, run_settings

ROOT = Path(__file__).resolve().parents[2]
A = {"model": {"class_path": "m.A", "init_args": {"x": 1}}, "data": {"init_args": {"level": 1}}, "seed_everything": 0}
B = {**A, "model": {"class_path": "m.B", "init_args": {"x": 1}}}


def _run(root: Path, n: int, config: dict) -> Path:
    run = root / f"version_{n}"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump({**config, "trainer": {"max_epochs": n}}), encoding="utf-8")
    torch.save({"state_dict": {}}, run / "checkpoints" / "last.ckpt")
    return run


def test_last_is_the_newest_run_of_this_configuration(tmp_path):
    root = tmp_path / "runs" / "textcause"
    own = _run(root, 0, A)
    _run(root, 1, B)  # a later run of another model: before, `last` picked it
    path, run = choose_resume(root, "last", run_settings(A))
    assert (path, run) == (own / "checkpoints" / "last.ckpt", own)
    path, run = choose_resume(root, "last", run_settings(B))
    assert run == root / "version_1"


def test_last_without_a_run_of_this_configuration_is_one_sentence(tmp_path):
    root = tmp_path / "runs" / "textcause"
    _run(root, 0, B)
    with pytest.raises(
        FileNotFoundError, match=r"no run of this configuration under .* \(1 run\(s\) there are of another"
    ):
        choose_resume(root, "last", run_settings(A))


def test_a_path_into_another_configurations_run_starts_a_new_folder(tmp_path):
    root = tmp_path / "runs" / "textcause"
    other = _run(root, 0, B)
    path, run = choose_resume(root, str(other / "checkpoints" / "last.ckpt"), run_settings(A))
    assert path == other / "checkpoints" / "last.ckpt" and run is None  # its folder is not resumed into


def test_a_checkpoint_that_does_not_fit_the_model_is_one_sentence(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(3, 1))
    path = tmp_path / "x.ckpt"
    torch.save({"state_dict": {"0.weight": torch.zeros(1, 5), "0.bias": torch.zeros(1)}}, path)
    with pytest.raises(
        ValueError, match=r"does not fit this Sequential: 1 differ in shape \(such as '0.weight': \[1, 5\]"
    ):
        check_checkpoint_fits(model, path)
    torch.save({"state_dict": {"net.w": torch.zeros(1)}}, path)
    with pytest.raises(ValueError, match=r"2 of this model's parameters are not in it .*1 of its parameters are not"):
        check_checkpoint_fits(model, path)
    torch.save({"state_dict": model.state_dict()}, path)
    check_checkpoint_fits(model, path)  # fits: no error


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _fit(cwd: Path, config: str, corpus: str, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable, str(ROOT / "train.py"), "fit", "--config", str(ROOT / "configs" / "model" / config),
        f"--data.corpus={corpus}", "--data.batch_size=16", "--data.min_users=3", "--trainer.max_epochs=1",
        "--trainer.enable_progress_bar=false", *extra,
    ]  # fmt: skip
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_resuming_another_models_run_is_refused_and_leaves_it_whole(tmp_path):
    corpus = write_history_jsonl(tmp_path / "tiny.jsonl.gz", n_users=200, n_posts=12, seed=3)
    first = _fit(tmp_path, "nn_unigram_binary.yaml", corpus)
    assert first.returncode == 0, first.stderr[-2000:]
    runs = tmp_path / "runs" / "textcause"
    other = runs / "version_0"
    assert (other / "checkpoints" / "last.ckpt").is_file()
    before = _digest(other)

    out = _fit(tmp_path, "lr_bigram_binary.yaml", corpus, "--ckpt_path", "last")
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "no run of this configuration under 'runs/textcause' has a checkpoints/last.ckpt" in out.stderr
    out = _fit(tmp_path, "lr_bigram_binary.yaml", corpus, "--ckpt_path", str(other / "checkpoints" / "last.ckpt"))
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "does not fit this" in out.stderr
    assert _digest(other) == before  # neither its config.yaml nor its metrics.csv was touched
    assert sorted(p.name for p in runs.iterdir()) == ["version_0"]  # nothing written for the refused fits


def test_the_linked_input_width_does_not_make_another_configuration():
    net = {"class_path": "m.MLP", "init_args": {"hidden_size": 10, "input_dim": None}}
    saved = {**A, "model": {"class_path": "m.A", "init_args": {"net": {**net, "init_args": {"hidden_size": 10}}}}}
    assert run_settings({**A, "model": {"class_path": "m.A", "init_args": {"net": net}}}) == run_settings(saved)

"""The trainer configs of GPU and multi-process runs, and benchmarks/gpu_check.sh (no GPU here)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from lightning.pytorch.strategies import DDPStrategy, StrategyRegistry

from textcause.run.lightning_cli import make_cli

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
TRAINERS = CONFIGS / "trainer"
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"


def trainer_keys(name: str) -> dict:
    return yaml.safe_load((TRAINERS / name).read_text())["trainer"]


def test_the_gpu_configs_say_what_they_promise():
    gpu, ddp = trainer_keys("gpu.yaml"), trainer_keys("ddp.yaml")
    assert gpu == {"accelerator": "gpu", "devices": 1, "precision": "bf16-mixed"}
    assert ddp["accelerator"] == "gpu" and ddp["devices"] == "auto" and ddp["precision"] == "bf16-mixed"
    assert ddp["strategy"] in StrategyRegistry and StrategyRegistry[ddp["strategy"]]["init_params"] == {
        "find_unused_parameters": True,
        "start_method": "popen",  # one process per GPU runs the command line: joins torchrun and SLURM too
    }
    # Extra configs: only these keys, merged over the defaults (no logger or callbacks replaced).
    for name in ("gpu.yaml", "ddp.yaml", "ddp_cpu.yaml"):
        assert set(yaml.safe_load((TRAINERS / name).read_text())) == {"trainer"}
        assert not {"logger", "callbacks"} & set(trainer_keys(name))


def test_ddp_cpu_builds_a_forking_gloo_strategy(tiny_corpus):
    cli = make_cli(
        [
            "--config",
            str(CONFIGS / "model" / "oracle.yaml"),
            "--config",
            str(TRAINERS / "ddp_cpu.yaml"),
            f"--data.corpus={tiny_corpus}",
            "--trainer.logger=false",
        ],
        run=False,
    )
    strategy = cli.trainer.strategy
    assert isinstance(strategy, DDPStrategy) and cli.trainer.world_size == 2
    assert strategy.process_group_backend == "gloo" and strategy._start_method == "fork"
    assert strategy._timeout == timedelta(minutes=5)
    assert cli.trainer.num_devices == 2 and cli.trainer.precision == "32-true"
    # The defaults stay: early stopping, the checkpoint and the causal-metrics callback.
    names = {type(c).__name__ for c in cli.trainer.callbacks}
    assert {"EarlyStopping", "ModelCheckpoint", "CausalMetricsCallback"} <= names


# ---------------------------------------------------------------------- benchmarks/gpu_check.sh
def run_script(*args: str, timeout: int = 60, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
    )


def test_gpu_check_is_valid_bash_and_parses_its_options():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0
    assert run_script("--help").stdout.startswith("usage: benchmarks/gpu_check.sh")
    dry = run_script("--dry-run", "--level", "3", "--seed", "1", "--python", sys.executable)
    assert dry.returncode == 0
    assert "level 3 seed 1" in dry.stdout and "configs/trainer/gpu.yaml" in dry.stdout and "timeout" in dry.stdout
    cpu = run_script("--cpu", "--dry-run", "--python", sys.executable)
    assert cpu.returncode == 0 and "device=cpu" in cpu.stdout and "gpu.yaml" not in cpu.stdout
    for args, message in (
        (("--level", "two"), "--level must be a whole number. Got 'two' instead."),
        (("--bogus",), "unknown option '--bogus'."),
        (("--out",), "--out needs a value"),
        (("--sherbert-limit", "400"), "must stay within 450 s"),
    ):
        bad = run_script(*args)
        assert bad.returncode == 2 and message in bad.stderr, (args, bad.stderr)


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU machine: the check would run")
def test_gpu_check_without_a_gpu_says_so(tmp_path):
    out = run_script("--python", sys.executable, "--out", str(tmp_path / "out"))
    assert out.returncode == 2
    assert "no CUDA GPU is visible" in out.stderr and "--cpu" in out.stderr
    assert not (tmp_path / "out").exists()  # nothing started


@pytest.mark.slow
def test_gpu_check_cpu_run_end_to_end(tiny_corpus, tiny_encoder, tmp_path):
    """The script's two runs on the CPU, on tiny data (the code a GPU day would run first)."""
    blogs = tmp_path / "blogs.jsonl.gz"
    with gzip.open(blogs, "wt", encoding="utf-8") as fh:
        for u in range(24):
            text = "She said her sister was here. He met his brother." if u % 2 else "He said no. My wife is tall."
            meta = {"gender": "female" if u % 2 else "male", "age": 20 + u}
            fh.write(json.dumps({"user_id": f"u{u}", "posts": [{"text": text, "time": None}] * 3, "meta": meta}) + "\n")
    out = tmp_path / "out"
    done = run_script(
        "--cpu",
        "--python",
        sys.executable,
        "--out",
        str(out),
        "--corpus",
        tiny_corpus,
        "--users",
        "120",
        "--gender-source",
        str(blogs),
        "--encoder",
        tiny_encoder,
        "--sentences",
        "40",
        "--epochs",
        "1",
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    sherbert = json.loads((out / "sherbert" / "summary.json").read_text())
    gender = json.loads((out / "gender" / "summary.json").read_text())
    assert 0.0 <= sherbert["treatment_accuracy"] <= 1.0 and sherbert["true_ate"] is not None
    assert {"val_loss", "val_acc", "val_f1", "fit_seconds"} <= set(gender)
    assert "gpu_check: done (cpu)" in done.stdout

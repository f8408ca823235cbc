"""Determinism: two processes, the same config and seed, give bit-identical results on CPU."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(run_dir: Path, corpus: str, cache: Path) -> dict:
    """Train and evaluate in a fresh process (the one run path); return its results.json."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from textcause.paths import config_dir
        from textcause.run.fit import EvaluationSettings, RunSettings, fit_and_evaluate
        settings = RunSettings(
            configs=(config_dir() / "model" / "nn_bigram_binary.yaml",),
            overrides={{"data.corpus": {corpus!r}, "data.min_users": 2, "trainer.max_epochs": 3,
                        "trainer.accelerator": "cpu", "data.task": "linguistic_complexity", "data.level": 2}},
            run_dir=Path({str(run_dir)!r}),
            evaluation=EvaluationSettings(n_boot=50),
            quiet=True,
        )
        result = fit_and_evaluate(settings)
        print(result.log_dir)
    """)
    env = {**os.environ, "TEXTCAUSE_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "PYTHONHASHSEED": "0"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    log_dir = Path(proc.stdout.strip().splitlines()[-1])
    return json.loads((log_dir / "results.json").read_text(encoding="utf-8"))


@pytest.mark.slow  # two processes that import Lightning and train: about a minute
def test_two_processes_same_config_and_seed_give_identical_results_json(tmp_path, tiny_corpus):
    run_dir = tmp_path / "run"  # the same folder for both (the paths are in results.json), one after the other
    first = _run(run_dir, tiny_corpus, tmp_path / "cache-1")
    shutil.rmtree(run_dir)
    second = _run(run_dir, tiny_corpus, tmp_path / "cache-2")  # fresh caches: nothing reused
    # Everything but the evaluation's wall time is bit-identical (floats are written exactly: repr round-trips).
    for doc in (first, second):
        assert isinstance(doc["meta"].pop("seconds"), float)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert len(first["rows"]) == 4 and all(r["ate"] is not None for r in first["rows"])

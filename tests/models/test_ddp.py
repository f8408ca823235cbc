"""Two DDP processes (gloo on CPU, forked) give the evaluation numbers of one process.

What is compared, and why the comparison means something:

* Each model is trained twice from the same seed on the same data, once in one process and once
  in two (``configs/trainer/ddp_cpu.yaml``: DDP with gloo, ``start_method: fork``), through the
  same path a benchmark cell takes (:func:`textcause.run.fit.fit_and_evaluate`: the LightningCLI,
  early stopping and checkpoint on ``val_loss``, the causal-metrics callback, the test split
  predicted from the best checkpoint and evaluated with bootstrap intervals).
* Training is full-batch (one batch holds the whole training split; the split is even, so the two
  ranks hold equal halves) and dropout is off: DDP's averaged gradient is then the one-process
  gradient, and both runs take the same optimiser steps up to floating-point summation order. What
  differs between the runs is everything DDP touches: sharded batches, gradient all-reduce, the
  validation split served as two unequal shards (23 units: 12 + 11), the val loss reduced over
  ranks, the causal metrics computed on outputs gathered from both ranks, the test split (115
  units) predicted on two ranks and gathered back into the calling process, and the files written
  by rank 0 only.
* A unit counted twice or a rank's half missing would move an ATE or an accuracy by about 1e-2 on
  these splits; the tolerances are 1e-4 or tighter.

The masked-gender module is trained the same way through ``train.py fit`` (the CLI with both the
gender config and the DDP config), then its fit-time validation metrics, a test run and its
weights are compared.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from textcause.run.fit import EvaluationSettings, RunSettings, evaluate_run, fit_and_evaluate

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
DDP_CPU = CONFIGS / "trainer" / "ddp_cpu.yaml"
SHORT_TIMEOUT = {"trainer.strategy.init_args.timeout": "0:01:00"}  # a stuck rank fails the test in a minute
FULL_BATCH = 100_000
#: 230 users: train 92 (even, so the two training shards are equal), val 23 and test 115 (odd, so a
#: padding sampler would repeat a unit).
N_USERS = 230
METRIC_COLUMNS = (
    "ate",
    "ci_low",
    "ci_high",
    "bias",
    "treatment_accuracy",
    "ece",
    "brier",
    "iptw_weight_mse",
    "spearman",
)

pytestmark = pytest.mark.slow  # two fits and two forked process groups per model: 10-30 s each


def fit_both(config: str, overrides: dict, tmp_path: Path):
    """The same run in one process and in two (DDP over gloo, forked)."""
    common = {"data.n_users": N_USERS, "data.batch_size": FULL_BATCH, **overrides}
    evaluation = EvaluationSettings(n_boot=50)
    one = fit_and_evaluate(
        RunSettings((CONFIGS / "model" / config,), common, run_dir=tmp_path / "one", evaluation=evaluation, quiet=True)
    )
    two = fit_and_evaluate(
        RunSettings(
            (CONFIGS / "model" / config, DDP_CPU),
            {**common, **SHORT_TIMEOUT},
            run_dir=tmp_path / "two",
            evaluation=evaluation,
            quiet=True,
        )
    )
    return one, two


def logged(run) -> pd.DataFrame:
    """The per-epoch validation rows of a run's CSV log (written by rank 0)."""
    frame = pd.read_csv(run.log_dir / "metrics.csv")
    return frame[frame["val_loss"].notna()].reset_index(drop=True)


def assert_same_evaluation(one, two, *, rel: float, train_loss: bool = True) -> None:
    # The whole test split, each unit once, in index order, in both.
    assert len(one.predictions["index"]) == 115
    assert np.array_equal(one.predictions["index"], two.predictions["index"])
    for key in ("t", "y", "p_true"):
        assert np.array_equal(one.predictions[key], two.predictions[key]), key
    np.testing.assert_allclose(two.predictions["propensity"], one.predictions["propensity"], rtol=rel, atol=1e-7)
    # The same rows: estimates, bootstrap intervals (same seed, same units), biases, metrics.
    assert [r["estimator"] for r in one.rows] == [r["estimator"] for r in two.rows]
    for a, b in zip(one.rows, two.rows):
        assert a["n_used"] == b["n_used"] and a["split"] == b["split"] == "test"
        for col in METRIC_COLUMNS:
            if a[col] is None or (isinstance(a[col], float) and math.isnan(a[col])):
                assert b[col] is None or math.isnan(b[col]), (a["estimator"], col)
            else:
                assert b[col] == pytest.approx(a[col], rel=rel, abs=1e-6), (a["estimator"], col)
    # The same best checkpoint, chosen on the same validation losses.
    assert one.checkpoint.name.split("-val_loss")[0] == two.checkpoint.name.split("-val_loss")[0]
    # The fit-time validation metrics (val loss over both shards, causal metrics on gathered outputs).
    a, b = logged(one), logged(two)
    assert len(a) == len(b) > 0
    columns = [c for c in a.columns if c == "val_loss" or c.startswith("val/")]
    assert "val/ate_ipw" in columns and "val/treatment_accuracy" in columns
    for col in columns:
        np.testing.assert_allclose(b[col].to_numpy(), a[col].to_numpy(), rtol=rel, atol=1e-6, err_msg=col)
    # The training loss of each epoch: the mean over every training unit of both ranks, as in one process.
    a, b = (pd.read_csv(run.log_dir / "metrics.csv").dropna(subset=["train_loss"]) for run in (one, two))
    assert len(a) == len(b) > 0
    if train_loss:
        np.testing.assert_allclose(b["train_loss"].to_numpy(), a["train_loss"].to_numpy(), rtol=rel, atol=1e-6)
    # Rank 0 alone wrote the results: one results.json, one block of rows in results.csv.
    results = pd.read_csv(two.log_dir.parent.parent / "results.csv")
    assert len(results) == len(two.rows)
    assert json.loads((two.log_dir / "results.json").read_text())["rows"][0]["estimator"] == "unadjusted"


def test_ngram_logistic_regression(tiny_corpus, tmp_path):
    """The shipped LR config: full-batch L-BFGS (which steers by the loss value: all ranks see the mean)."""
    one, two = fit_both(
        "lr_bigram_binary.yaml", {"data.corpus": tiny_corpus, "data.min_users": 3, "trainer.max_epochs": 1}, tmp_path
    )
    # L-BFGS in float32 stops once the loss stops changing, at a point that depends on the order of
    # the sums (one process, or two shards and an all-reduce): 2.6e-4 apart in propensity at most on
    # an Intel host (under 1e-5 on an AMD one). The epoch's training loss
    # is the mean over L-BFGS's closure calls, whose number the same rounding can change (0.2265
    # against 0.2085 on the Intel host): it is not compared here (the Adam models below compare it)
    assert_same_evaluation(one, two, rel=1e-3, train_loss=False)
    # evaluate.py on the 2-process run folder (one process; its saved config forks): the same rows.
    again = evaluate_run(two.log_dir, EvaluationSettings(n_boot=50))
    assert again.checkpoint == two.checkpoint
    for a, b in zip(two.rows, again.rows):
        for col in ("ate", "ci_low", "ci_high", "treatment_accuracy", "brier"):
            assert b[col] == pytest.approx(a[col], rel=1e-6, abs=1e-9), (a["estimator"], col)


def hierarchical(corpus: str, encoder: str, **net) -> dict:
    return {
        "data.corpus": corpus,
        "data.encoder": encoder,
        "data.max_tokens": 16,
        "data.token_cap": 8,
        "trainer.max_epochs": 3,
        "trainer.precision": "32-true",
        **{f"model.init_args.net.init_args.{k}": v for k, v in {"dropout": 0.0, **net}.items()},
    }


def test_sherbert(tiny_corpus, tiny_encoder, tmp_path):
    """Token attention over token states (post_tokens), Adam, full batch."""
    one, two = fit_both("sherbert.yaml", hierarchical(tiny_corpus, tiny_encoder, hidden_size=16), tmp_path)
    assert_same_evaluation(one, two, rel=1e-4)


def test_order_count_net(tiny_corpus, tiny_encoder, tmp_path):
    """Pooled post vectors (its token attention is unused: DDP must be told), Adam, full batch."""
    overrides = hierarchical(tiny_corpus, tiny_encoder, hidden_size=16, n_heads=2)
    one, two = fit_both("order_count.yaml", overrides, tmp_path)
    assert_same_evaluation(one, two, rel=1e-4)


# ---------------------------------------------------------------------- masked gender
FEMALE = ("She said it was fine.", "I met her sister today.", "My wife cooked dinner.", "Her mother is kind.")
MALE = ("He said no.", "His brother left.", "My husband is tall.", "We met him there.")
NEUTRAL = ("The weather is nice.", "We went to the park.", "The train was late.")


def write_blog_corpus(path: Path, n_authors: int = 40, n_posts: int = 4) -> str:
    rng = np.random.default_rng(0)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for u in range(n_authors):
            gender = "female" if u % 2 else "male"
            lines = FEMALE if gender == "female" else MALE
            posts = [
                {"text": " ".join([*rng.choice(lines, 2), rng.choice(NEUTRAL)]), "time": None} for _ in range(n_posts)
            ]
            fh.write(
                json.dumps({"user_id": f"u{u}", "posts": posts, "meta": {"gender": gender, "age": 20 + u % 7}}) + "\n"
            )
    return str(path)


@pytest.fixture(scope="module")
def still_encoder(tmp_path_factory) -> str:
    """A tiny random BERT without dropout (the encoder is fine-tuned in train mode) and the MiniLM tokenizer."""
    from tinybert import save_tiny_bert

    folder = tmp_path_factory.mktemp("still-bert")
    return save_tiny_bert(folder, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def fit_gender(corpus: str, encoder: str, root: Path, ddp: bool):
    from textcause.run.lightning_cli import make_cli

    args = ["fit", "--config", str(CONFIGS / "gender" / "finetune.yaml")]
    if ddp:
        args += ["--config", str(DDP_CPU), "--trainer.strategy.init_args.timeout", "0:01:00"]
    args += [
        f"--data.source={corpus}",
        f"--data.encoder={encoder}",
        f"--model.init_args.net.init_args.encoder={encoder}",
        "--model.init_args.net.init_args.dropout=0.0",
        "--model.init_args.lr=0.003",
        "--model.init_args.warmup=0.0",
        "--data.n_sentences=60",
        f"--data.batch_size={FULL_BATCH}",
        "--data.fractions=[0.5, 0.25, 0.25]",
        "--trainer.max_epochs=3",
        "--trainer.precision=32-true",
        f"--trainer.default_root_dir={root}",
        "--trainer.logger="
        + json.dumps({"class_path": "lightning.pytorch.loggers.CSVLogger", "init_args": {"save_dir": str(root)}}),
        "--trainer.enable_progress_bar=false",
        "--trainer.enable_model_summary=false",
    ]
    cli = make_cli(args)
    fit_metrics = {k: float(v) for k, v in cli.trainer.callback_metrics.items() if k.startswith("val_")}
    cli.trainer.test(cli.model, datamodule=cli.datamodule, ckpt_path=None, verbose=False)
    test_metrics = {k: float(v) for k, v in cli.trainer.callback_metrics.items() if k.startswith("test_")}
    return cli, fit_metrics, test_metrics


def test_masked_gender_finetuning(tmp_path, still_encoder):
    """Full-batch AdamW: the loss is the mean over every mask of the step on both ranks together."""
    corpus = write_blog_corpus(tmp_path / "blogs.jsonl.gz")
    one, one_fit, one_test = fit_gender(corpus, still_encoder, tmp_path / "one", ddp=False)
    split = one.datamodule.built.split
    assert len(split.train) % 2 == 0 and len(split.val) % 2 == 1  # equal training shards; unequal val shards
    two, two_fit, two_test = fit_gender(corpus, still_encoder, tmp_path / "two", ddp=True)
    assert two.trainer.world_size == 2
    assert set(one_fit) == set(two_fit) == {"val_loss", "val_acc", "val_f1"}
    assert set(one_test) == set(two_test) == {"test_loss", "test_acc", "test_f1"}
    for key in one_fit:
        assert two_fit[key] == pytest.approx(one_fit[key], rel=1e-4, abs=1e-6), key
    for key in one_test:
        assert two_test[key] == pytest.approx(one_test[key], rel=1e-4, abs=1e-6), key
    a, b = one.model.state_dict(), two.model.state_dict()
    assert set(a) == set(b)
    moved = max(float((a[k] - b[k]).abs().max()) for k in a if a[k].is_floating_point())
    assert moved < 1e-4


FORKED_AFTER_THREADS = """
import lightning as L, torch
from datetime import timedelta
from lightning.pytorch.strategies import DDPStrategy
from toydata import ToyData
from textcause.models import LogisticRegression, PropensityModel
torch.set_num_threads(2)
x = (torch.rand(300, 4000) < 0.05).float().to_sparse_csr()
x @ torch.rand(4000, 1)  # the parent runs an OpenMP parallel region with two threads
dm = ToyData(n=3000, dim=4000, n_val=1001, batch_size=1000, layout="csr")
trainer = L.Trainer(accelerator="cpu", devices=1, strategy=DDPStrategy(start_method="fork", timeout=timedelta(seconds=60)),
                    logger=False, enable_progress_bar=False, enable_model_summary=False, max_epochs=1)
trainer.fit(PropensityModel(LogisticRegression(dm.input_dim)), dm)
print("finished", trainer.state.finished)
"""


def test_a_forked_rank_after_threaded_work_in_the_parent_does_not_hang(tmp_path):
    """OpenMP's pool does not survive fork: a forked rank with two threads (Lightning gives one rank
    all the cores) would wait forever in its first parallel region; the models make it use one."""
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    env.pop("OMP_NUM_THREADS", None)
    done = subprocess.run(
        [sys.executable, "-c", FORKED_AFTER_THREADS], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0 and "finished True" in done.stdout, done.stderr[-2000:]

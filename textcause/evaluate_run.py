"""``evaluate.py``: reload a run's config and best checkpoint, predict, estimate, write, print."""

from __future__ import annotations

import argparse
import csv
import io
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import yaml

from textcause.evaluation import PROPENSITY_ESTIMATORS, evaluate_propensities, format_table
from textcause.io import atomic_write_json, atomic_write_text

RESULT_COLUMNS = [
    "run", "model", "corpus", "task", "level", "seed", "representation", "split", "estimator",
    "ate", "ci_low", "ci_high", "bias", "true_ate", "sample_ate", "n_used", "n_dropped",
    "treatment_accuracy", "ece", "brier", "iptw_weight_mse", "spearman", "bound_low", "bound_high",
    "ci_tighter_than_bound", "covers_truth", "ci_method", "error",
]


def find_checkpoint(run_dir: Path) -> Path | None:
    """The best checkpoint of a run (``best-*.ckpt``), else its newest checkpoint, else None."""
    ckpts = sorted((run_dir / "checkpoints").glob("*.ckpt"), key=lambda p: p.stat().st_mtime)
    best = [p for p in ckpts if p.name.startswith("best")]
    return (best or ckpts or [None])[-1]


def predict_propensities(trainer: Any, model: Any, data: Any, ckpt: Path | None) -> dict[str, np.ndarray]:
    """Run ``trainer.predict`` and return the concatenated outputs sorted by unit index."""
    outputs = trainer.predict(model, datamodule=data, ckpt_path=str(ckpt) if ckpt else None)
    keys = outputs[0].keys()
    merged = {k: np.concatenate([o[k].detach().cpu().numpy().reshape(-1) for o in outputs]) for k in keys}
    order = np.argsort(merged["index"], kind="stable")
    return {k: v[order] for k, v in merged.items()}


def _append_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Append rows to a CSV atomically (old content + new rows written to a temp file, renamed)."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=RESULT_COLUMNS, extrasaction="ignore")
    if not old:
        writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, old + buf.getvalue())


def main(argv: Sequence[str]) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="evaluate.py", description=__doc__)
    parser.add_argument("run_dir", help="a training run folder (holds config.yaml and checkpoints/)")
    parser.add_argument("--ckpt", default=None, help="checkpoint to evaluate (default: the run's best)")
    parser.add_argument("--split", default="test", choices=["train", "val", "test"])
    parser.add_argument("--estimators", nargs="+", default=list(PROPENSITY_ESTIMATORS))
    parser.add_argument("--n_boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument("--out", default=None, help="folder for results.csv (default: the run folder)")
    args = parser.parse_args(list(argv))

    run_dir = Path(args.run_dir)
    config = run_dir / "config.yaml"
    if not config.exists():
        raise FileNotFoundError(f"No config.yaml in '{run_dir}': give the folder of a run made by train.py.")
    ckpt = Path(args.ckpt) if args.ckpt else find_checkpoint(run_dir)
    if args.ckpt and not ckpt.exists():
        raise FileNotFoundError(f"No checkpoint at '{ckpt}'.")

    from textcause.cli import make_cli

    # The saved config is a `fit` config; its fit-only keys are not options of a bare (run=False) CLI.
    saved = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    for key in ("ckpt_path", "weights_only"):
        saved.pop(key, None)
    cli = make_cli(
        [
            "--config", yaml.safe_dump(saved),
            "--data.predict_split", args.split,
            "--trainer.logger", "false",
            "--trainer.devices", "1",
            "--trainer.callbacks", "[]",
            "--trainer.enable_progress_bar", "false",
        ],
        run=False,
    )
    data, model, trainer = cli.datamodule, cli.model, cli.trainer
    started = time.perf_counter()
    pred = predict_propensities(trainer, model, data, ckpt)
    task = data.task
    # Observational data (textcause observe) have no true propensities or ATE: no truth-based columns.
    p_true = pred["p_true"] if np.isfinite(pred["p_true"]).all() else None
    rows = evaluate_propensities(
        pred["t"], pred["y"], pred["propensity"],
        true_propensity=p_true, true_ate=task.true_ate,
        estimators=args.estimators, n_boot=args.n_boot, seed=args.seed,
    )
    hp = data.hparams
    model_name = type(model).__name__
    net = getattr(model, "net", None)
    if net is not None:
        model_name = f"{type(net).__name__}"
    meta = {
        "run": str(run_dir), "model": model_name, "corpus": hp.corpus, "task": hp.task, "level": hp.level,
        "seed": hp.seed, "representation": hp.representation, "split": args.split,
        "true_ate": task.true_ate, "sample_ate": task.sample_ate,
    }
    rows = [{**meta, **r} for r in rows]
    result = {
        "meta": {**meta, "checkpoint": str(ckpt) if ckpt else None, "n_boot": args.n_boot,
                 "seconds": round(time.perf_counter() - started, 3)},
        "rows": rows,
    }
    atomic_write_json(run_dir / "results.json", result)
    out_dir = Path(args.out) if args.out else run_dir
    _append_csv(out_dir / "results.csv", rows)
    title = (
        f"{model_name} ({hp.representation}) on {hp.corpus} {hp.task}-{hp.level}, seed {hp.seed}, "
        f"{args.split} split: " + ("no true ATE (observational)" if task.true_ate is None else f"true ATE {task.true_ate:+.3f}")
    )
    print(format_table(rows, title=title))
    print(f"wrote {run_dir / 'results.json'} and {out_dir / 'results.csv'}")
    return result

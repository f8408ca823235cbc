"""``evaluate.py`` / ``textcause evaluate``: reload a run's config and best checkpoint, predict, estimate, write, print.

    python evaluate.py runs/textcause/version_0
    python evaluate.py runs/textcause/version_0 --evaluation.n_boot 2000 --out results/

Writes ``results.json`` (all rows and the run's provenance) into the run folder and appends one CSV
row per estimator to ``results.csv`` in ``--out`` (default: the run folder), then prints a table.
The work is :func:`textcause.run.fit.evaluate_run`, the path every run is evaluated on.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textcause.cli.parsing import CommandParser

__all__ = [
    "add_allow_module",
    "build_parser",
    "counterfactual_main",
    "main",
]

#: Old spellings of this command's flags (deprecated: they go in the next release).
RENAMED = {
    "--split": "--evaluation.split",
    "--estimators": "--evaluation.estimators",
    "--n-boot": "--evaluation.n_boot",
    "--n_boot": "--evaluation.n_boot",
    "--seed": "--evaluation.seed",
    "--refit-reps": "--evaluation.refit_reps",
    "--refit-kind": "--evaluation.refit_kind",
}


def build_parser(prog: str = "evaluate.py") -> CommandParser:
    """The parser: ``--evaluation.*`` are the run config's evaluation keys (as ``train.py test`` takes them)."""
    from textcause.corpus.types import SPLITS
    from textcause.estimators.registry import DEFAULT_ESTIMATORS, PROPENSITY_ESTIMATORS

    parser = CommandParser(prog=prog, description=__doc__, renamed=RENAMED)
    parser.add_argument("run_dir", help="a training run folder (holds config.yaml and checkpoints/)")
    parser.add_argument("--ckpt", default=None, help="checkpoint to evaluate (default: the run's best)")
    parser.add_argument("--out", default=None, help="folder for results.csv (default: the run folder)")
    parser.add_argument(
        "--evaluation.split", dest="split", default="test", choices=list(SPLITS), help="the users evaluated"
    )
    parser.add_argument(
        "--evaluation.estimators",
        dest="estimators",
        nargs="+",
        default=list(DEFAULT_ESTIMATORS),
        choices=list(PROPENSITY_ESTIMATORS),
        help="propensity estimators (unadjusted is always reported first)",
    )
    parser.add_argument(
        "--evaluation.n_boot",
        dest="n_boot",
        type=int,
        default=1000,
        help="bootstrap replicates of each interval (0: none)",
    )
    parser.add_argument(
        "--evaluation.seed", dest="seed", type=int, default=None, help="bootstrap seed (default: the run's seed)"
    )
    parser.add_argument(
        "--evaluation.refit_reps",
        dest="refit_reps",
        type=int,
        default=0,
        help="replicates of a refitting interval: the propensity model refit on resampled training users "
        "(the tuned LR and L-BFGS models only; 0: none)",
    )
    parser.add_argument(
        "--evaluation.refit_kind",
        dest="refit_kind",
        default="basic",
        choices=["basic", "percentile"],
        help="the refitting interval's kind",
    )
    add_allow_module(parser)
    return parser


def add_allow_module(parser: argparse.ArgumentParser) -> None:
    """The ``--allow-module PACKAGE`` option of the commands that load a saved run's config."""
    parser.add_argument(
        "--allow-module",
        action="append",
        default=[],
        metavar="PACKAGE",
        help="trust classes of this package in the run's config.yaml (default: textcause, lightning, torch only)",
    )


def main(argv: Sequence[str], *, prog: str = "evaluate.py") -> dict[str, Any]:
    """Evaluate a run folder; returns ``{"meta", "rows"}`` as written to ``results.json``.

    ``prog`` names the command in usage lines (``textcause evaluate`` when called from there).
    A fine-tuned SemEval-2020 Task 5 run (``configs/counterfactual/``) is scored on the official test
    file instead (:func:`counterfactual_main`)."""
    argv = list(argv)
    from textcause.experiments.counterfactual import is_counterfactual_run

    if any(is_counterfactual_run(a) for a in argv if not a.startswith("-")):
        return counterfactual_main(argv, prog=prog)
    args = build_parser(prog).parse_args(argv)
    from textcause.io import check_out_folder
    from textcause.metrics.evaluation import format_table

    if args.out is not None:  # before any work: nothing is written when results.csv cannot be
        check_out_folder(args.out, purpose=" (results.csv is written into it)")
    from textcause.run.fit import EvaluationSettings, evaluate_run

    evaluation = EvaluationSettings(
        n_boot=args.n_boot,
        split=args.split,
        estimators=tuple(args.estimators),
        seed=args.seed,
        refit_reps=args.refit_reps,
        refit_kind=args.refit_kind,
    )
    result = evaluate_run(args.run_dir, evaluation, ckpt=args.ckpt, csv_dir=args.out, allow_modules=args.allow_module)
    m = result.meta
    truth = "no true ATE (observational)" if m["true_ate"] is None else f"true ATE {m['true_ate']:+.3f}"
    title = (
        f"{m['model']} ({m['representation']}) on {m['corpus']} {m['task']}-{m['level']}, seed {m['seed']}, "
        f"{args.split} split: {truth}"
    )
    print(format_table(result.rows, title=title))
    out_dir = Path(args.out) if args.out else Path(args.run_dir)
    print(f"wrote {Path(args.run_dir) / 'results.json'} and {out_dir / 'results.csv'}")
    return {
        "meta": {**m, "checkpoint": str(result.checkpoint) if result.checkpoint else None, "n_boot": args.n_boot},
        "rows": result.rows,
    }


def counterfactual_main(argv: Sequence[str], *, prog: str = "evaluate.py") -> dict[str, Any]:
    """``evaluate.py RUN_DIR`` of a fine-tuned SemEval-2020 Task 5 run: test-set scores and official predictions."""
    parser = CommandParser(prog=prog, description="Score a fine-tuned SemEval-2020 Task 5 run on its test file.")
    parser.add_argument("run_dir", help="a training run folder (holds config.yaml and checkpoints/)")
    parser.add_argument("--ckpt", default=None, help="checkpoint to evaluate (default: the run's best)")
    parser.add_argument(
        "--out", default=None, help="folder for subtask<k>.csv and results.json (default: the run folder)"
    )
    add_allow_module(parser)
    args = parser.parse_args(list(argv))
    from textcause.experiments.counterfactual import evaluate_counterfactual_run
    from textcause.io import check_out_folder

    if args.out is not None:
        check_out_folder(args.out, purpose=" (subtask<k>.csv and results.json are written into it)")

    summary = evaluate_counterfactual_run(args.run_dir, ckpt=args.ckpt, out=args.out, allow_modules=args.allow_module)
    t, v = summary["test"], summary["validation"]
    if "accuracy" in t:
        names = ("precision", "recall", "f1", "accuracy")
        chosen = f"threshold {summary['threshold_logit']:.4f} (logit, chosen on validation)"
    else:
        names = ("exact_match", "precision", "recall", "f1")
        chosen = f"no-consequent margin {summary['no_consequent_margin']:.4f} (chosen on validation)"
    line = "  ".join(f"{n} {100 * t[n]:.2f}" for n in names)
    print(f"{summary['model']} on the test file ({t['n']} sentences): {line}")
    print(f"  validation F1 {100 * v['f1']:.2f} at {chosen}")
    out = Path(args.out) if args.out else Path(args.run_dir)
    print(f"wrote {summary['predictions']} and {out / 'results.json'}")
    return summary

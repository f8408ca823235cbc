"""``textcause counterfactual``: SemEval-2020 Task 5 baselines and the scorer.

    textcause counterfactual baseline --model svm
    textcause counterfactual baseline --model minilm_lr --out runs/counterfactual/minilm_lr
    textcause counterfactual baseline --model svm --train my_train.csv --test my_test.csv
    textcause counterfactual score --gold subtask2_test.csv --pred subtask2.csv --subtask 2
    textcause semeval score --gold subtask1_test.csv --pred subtask1.csv --subtask 1   (the same command)

``baseline`` fits a subtask-1 model on the training file (C and the decision threshold chosen on a
validation part carved from it), prints precision / recall / F1 of the counterfactual class and
accuracy on the test file, and writes ``subtask1.csv`` (the official prediction format) and
``results.json`` under ``--out`` (default ``runs/counterfactual/<model>``). The default files are
the official ones under the data root. ``score`` scores any system's official prediction file
(rows in any order; a malformed row is an error naming it, or scores 0 with ``--malformed zero``);
``--official`` scores subtask 2 as the organisers' script does, for comparing with published numbers.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from textcause.cli.parsing import CommandParser, options, progress_option

__all__ = [
    "build_parser",
    "counterfactual_main",
]


def build_parser(prog: str = "textcause counterfactual") -> CommandParser:
    """The ``textcause counterfactual`` arguments; ``prog`` names the command in usage lines."""
    from textcause.counterfactual.run import MODELS
    from textcause.counterfactual.scoring import MALFORMED, SUBTASKS

    parser = CommandParser(prog=prog, description=__doc__)
    sub = parser.add_subparsers(dest="action", required=True, metavar="{baseline,score}")
    base = sub.add_parser("baseline", help="fit a subtask-1 baseline and score it on the test file")
    base.add_argument("--model", required=True, choices=MODELS, help="TF-IDF + linear SVM, or frozen MiniLM + LR")
    base.add_argument("--train", default=None, help="the training CSV (default: the official subtask1_train.csv)")
    base.add_argument("--test", default=None, help="the test CSV (default: the official subtask1_test.csv)")
    base.add_argument("--out", default=None, help="the output folder (default: runs/counterfactual/<model>)")
    base.add_argument("--val-fraction", type=float, default=0.15, help="share of the training file held out")
    base.add_argument("--seed", type=int, default=0, help="the validation split's seed")
    base.add_argument("--encoder", default=None, help="minilm_lr's frozen encoder (default: all-MiniLM-L6-v2)")
    base.add_argument("--no-progress", action="store_true", help="no encoder progress bar")
    score = sub.add_parser("score", help="score an official prediction file against a gold file")
    score.add_argument("--gold", required=True, help="the gold CSV (subtask1_test.csv or subtask2_test.csv)")
    score.add_argument("--pred", required=True, help="the prediction CSV in the official format")
    score.add_argument("--subtask", type=int, required=True, choices=SUBTASKS)
    score.add_argument(
        "--malformed", default="raise", choices=MALFORMED, help="a malformed row: an error, or a 0 and a warning"
    )
    score.add_argument(
        "--official",
        action="store_true",
        help="subtask 2 as the organisers' script scores it (end-exclusive slices, exact match on the "
        "cells' text; also prints its swapped precision / recall), for comparing with published numbers",
    )
    return parser


def _pct(x: float) -> str:
    return f"{100 * x:.2f}"


def run_baseline_command(args: argparse.Namespace) -> list[Path]:
    """``textcause counterfactual baseline`` from parsed arguments; returns the files written."""
    from textcause.counterfactual.run import BaselineSettings, run_baseline, write_outputs

    settings = BaselineSettings(
        **options(args, "model", "train", "test", "val_fraction", "seed", "encoder"), progress=progress_option(args)
    )
    result = run_baseline(settings)
    t, v, s = result.test, result.validation, result.timings
    print(f"{args.model} on {Path(result.info['test']).name} ({t['n']} sentences, {t['n_positive']} counterfactual):")
    print(
        f"  precision {_pct(t['precision'])}  recall {_pct(t['recall'])}  F1 {_pct(t['f1'])}  accuracy {_pct(t['accuracy'])}"
    )
    print(f"  validation F1 {_pct(v['f1'])} at C={result.C:g}, threshold {result.threshold:.4f} (chosen on validation)")
    timing = ", ".join(f"{k.removesuffix('_seconds')} {s[k]:.1f} s" for k in s)
    print(f"  time: {timing}")
    out = Path(args.out) if args.out else Path("runs") / "counterfactual" / args.model
    return write_outputs(result, out)


def run_score_command(args: argparse.Namespace) -> None:
    """``textcause counterfactual score`` from parsed arguments: prints the scores."""
    from textcause.counterfactual.scoring import score_files

    scores = score_files(args.gold, args.pred, args.subtask, malformed=args.malformed, official=args.official)
    if args.subtask == 1:
        names = ("precision", "recall", "f1", "accuracy")
        if args.official:
            print("(subtask 1 is scored the same with or without --official)")
    elif args.official:
        names = ("exact_match", "precision", "recall", "f1")
    else:
        names = ("exact_match", "precision", "recall", "f1", "char_f1")
    print("  ".join(f"{name} {_pct(scores[name])}" for name in names) + f"  (n={scores['n']})")
    if args.subtask == 2 and args.official:
        print(
            f"  as the organisers' script prints them: pre {_pct(scores['printed_precision'])}  "
            f"rec {_pct(scores['printed_recall'])}  f1 {_pct(scores['f1'])}  exact match "
            f"{_pct(scores['exact_match'])} (its pre / rec are the mean recall / precision, swapped)"
        )
        for key, what in (("n_invalid", "its validity rule scores 0"), ("n_unparsable", "it would crash on")):
            if scores[key]:
                print(f"  {scores[key]} row(s) {what}")
    if scores.get("n_malformed"):
        print(f"  {scores['n_malformed']} malformed row(s) scored 0")


def counterfactual_main(argv: Sequence[str], *, prog: str = "textcause counterfactual") -> int:
    """The ``textcause counterfactual`` command (also ``textcause semeval``); returns the exit code (2: a user's mistake)."""
    args = build_parser(prog).parse_args(list(argv))
    from textcause.cli.errors import command

    return command(lambda: _counterfactual(args), interrupted="nothing half-written is left; rerun the command.")


def _counterfactual(args: argparse.Namespace) -> None:
    from textcause.cli.errors import package_warnings

    with package_warnings():
        if args.action == "baseline":
            files = run_baseline_command(args)
            print("wrote " + ", ".join(map(str, files)), file=sys.stderr)
        else:
            run_score_command(args)

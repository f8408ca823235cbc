"""``textcause advise``: choose a text-adjustment method on your own users, estimate, refute, report.

    textcause advise --config configs/advise/reddit_drunk.yaml
    textcause advise --study observational/twitter_gender.yaml --candidates unadjusted lr_bigram_binary --budget 30
    textcause advise --corpus comments.csv --data.author_col user --data.text_col body \\
        --treatment verified --outcome score --budget 20

With ``--config`` every other option overrides the config's key of the same meaning; without it the
options are the config. The loop (:func:`textcause.advise.advise`): the study's inputs are checked
(bad input is one sentence, before any work); a calibration grid built from the same users runs
through the benchmark machinery into the results store (``--db``: SQLite under the output folder by
default, or a shared PostgreSQL URL); every candidate is fitted on the real treatment and outcome;
the report ``advise.md`` / ``advise.html`` goes to ``runs/advise/<name>/`` (or ``--out``). Rerunning
the same command resumes: finished calibration cells and fitted models are kept.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textcause.cli.parsing import CommandParser

__all__ = [
    "advise_main",
    "build_parser",
]


def build_parser() -> CommandParser:
    """The ``textcause advise`` arguments."""
    p = CommandParser(prog="textcause advise", description=__doc__)
    p.add_argument("--config", default=None, help="an advise YAML (configs/advise/*.yaml)")
    p.add_argument("--name", default=None, help="the run's name (default: the config's, else 'advise')")
    p.add_argument("--study", default=None, help="an observational study config giving T, Y and the users")
    p.add_argument("--corpus", default=None, help="a corpus: short name, history JSONL, CSV/Parquet/NDJSON, HF folder")
    for flag in ("author_col", "text_col", "time_col"):
        p.add_argument(f"--data.{flag}", dest=flag, default=None, help=f"a comment table's {flag.split('_')[0]} column")
    p.add_argument("--data.drop_duplicates", dest="drop_duplicates", action="store_true", default=None)
    p.add_argument("--treatment", default=None, help="the treatment column (or meta field); T = 1 above its median")
    p.add_argument("--outcome", default=None, help="the outcome column (or meta field), averaged per user")
    p.add_argument("--continuous", action="store_true", help="keep the outcome continuous (no median threshold)")
    p.add_argument("--candidates", nargs="+", default=None, help="model configs (default: all with no true propensity)")
    p.add_argument("--methods", nargs="+", default=None, help="textcause.methods methods, graded on calibration only")
    p.add_argument("--seeds", type=int, default=None, help="calibration seeds per task level (at least 3)")
    p.add_argument("--budget", type=float, default=None, help="the time budget in minutes")
    p.add_argument("--e-value", action="store_true", default=None, help="ask for an E-value (binary outcomes)")
    p.add_argument("--out", default=None, help="the output folder (default: runs/advise/<name>)")
    p.add_argument("--db", default=None, help="the results store URL (default: SQLite under the output folder)")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes of the calibration and the real fits (default: one per usable CPU, one per 2 GiB free)",
    )
    return p


def config_from_args(args: argparse.Namespace) -> tuple[dict[str, Any], str, str]:
    """The advise config mapping of the options (over ``--config``'s), its source and default name."""
    from textcause.specs import read_yaml

    spec: dict[str, Any] = {}
    source, name = "<command line>", "advise"
    if args.config:
        spec, _ = read_yaml(args.config, kind="Advise config", example="configs/advise/reddit_drunk.yaml")
        spec, source, name = dict(spec), args.config, Path(args.config).stem
    simple = {"name": args.name, "study": args.study, "corpus": args.corpus, "candidates": args.candidates}
    simple.update(methods=args.methods, seeds=args.seeds, budget_minutes=args.budget, e_value=args.e_value)
    spec.update({k: v for k, v in simple.items() if v is not None})
    columns = {k: getattr(args, k) for k in ("author_col", "text_col", "time_col", "drop_duplicates")}
    if any(v is not None for v in columns.values()):
        spec["columns"] = {**(spec.get("columns") or {}), **{k: v for k, v in columns.items() if v is not None}}
    if args.treatment:
        spec["treatment"] = {"column": args.treatment, "aggregate": "last", "threshold": "median"}
    if args.outcome:
        spec["outcome"] = {
            "column": args.outcome,
            "aggregate": "mean",
            "threshold": None if args.continuous else "median",
        }
    return spec, source, name


def advise_main(argv: Sequence[str]) -> int:
    """The ``textcause advise`` command; returns the exit code (2: bad input)."""
    args = build_parser().parse_args(list(argv))
    from textcause.cli.errors import command

    return command(lambda: _advise(args))


def _advise(args: argparse.Namespace) -> int:
    from textcause.advise import advise
    from textcause.advise.spec import advise_from_dict

    config, source, name = config_from_args(args)
    spec = advise_from_dict(config, source=source, default_name=name)
    result = advise(spec, args.out, db=args.db, workers=args.workers)
    print(result["verdict"])
    print("wrote " + ", ".join(result["files"]), file=sys.stderr)
    return 0

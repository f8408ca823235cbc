"""``textcause observe``: fit every propensity model of an observational study, compare their ATEs.

    textcause observe --config configs/observational/twitter_gender.yaml          # all models
    textcause observe --config configs/observational/blogs_gender.yaml --models unadjusted lr_lda
    textcause observe --config ... --dry-run        # build the task, print its counts, fit nothing
    textcause observe --config ... --workers 2      # two models at a time, in two processes

The models run through :func:`textcause.experiments.observational.run_study`; the tables and the paper's figure 2
layout come from :func:`textcause.reports.study.write_outputs`. Results go to
``runs/observe/<name>/`` (or ``--out``): ``models/<model>.json`` (one record per model, written when
it finishes), ``runs/<model>/`` (its training run), ``results.json`` / ``.csv`` / ``.md`` and
``fig2_<name>.png`` / ``.svg``. A rerun skips finished models (a killed run resumes); a model that
fails is recorded with its error and the run goes on (``--retry-failed`` runs it again). Progress
goes to stderr, one line a model: its accuracy and ATE, the time elapsed and, while models remain
to fit, the ETA (the mean time of the models fitted so far times the number left).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textcause.cli.parsing import CommandParser

__all__ = [
    "build_parser",
    "observe",
    "observe_main",
]


def observe(config: str | Path, out_dir: str | Path | None = None, **run: Any) -> dict[str, Any]:
    """Run (or resume) a study's models, then write its tables and figure.

    Args:
        config: the study's YAML.
        out_dir: the output folder (default ``runs/observe/<name>``).
        **run: ``models``, ``retry_failed``, ``echo``, ``workers``: as
            :func:`~textcause.experiments.observational.run_study` takes them.

    Returns:
        ``{"study", "rows", "disagreement", "files"}`` as also written to ``results.json``.
    """
    from textcause.experiments.observational import run_study
    from textcause.reports.study import write_outputs

    ran = run_study(config, out_dir, **run)
    return write_outputs(ran["spec"], ran["task"], ran["out"])


def build_parser() -> CommandParser:
    """The ``textcause observe`` arguments."""
    parser = CommandParser(prog="textcause observe", description=__doc__)
    parser.add_argument("--config", required=True, help="an observational study YAML (configs/observational/*.yaml)")
    parser.add_argument("--out", default=None, help="the output folder (default: runs/observe/<name>)")
    parser.add_argument("--models", nargs="+", default=None, help="run only these models of the study")
    parser.add_argument("--retry-failed", action="store_true", help="run models recorded as failed again")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument(
        "--workers", type=int, default=1, help="processes fitting models at once, each with its share of the CPUs"
    )
    parser.add_argument("--dry-run", action="store_true", help="build the task, print its counts, fit nothing")
    return parser


def observe_main(argv: Sequence[str]) -> int:
    """The ``textcause observe`` command; returns the exit code (2: a bad config, 1: a model failed)."""
    args = build_parser().parse_args(list(argv))
    from textcause.cli.errors import command

    return command(lambda: _observe(args))


def _observe(args: argparse.Namespace) -> int:
    if args.threads is not None:
        if args.threads < 1:
            raise ValueError(f"The '--threads' option must be an int >= 1. Got {args.threads} instead.")
        import torch

        torch.set_num_threads(args.threads)
    if args.dry_run:
        from textcause.observational.task import load_task

        task = load_task(args.config)
        print(json.dumps({"task": repr(task), **task.info}, indent=2, default=str))
        return 0
    result = observe(args.config, args.out, models=args.models, retry_failed=args.retry_failed, workers=args.workers)
    md = Path(result["files"][0])
    print(md.read_text(encoding="utf-8"))
    print("wrote " + ", ".join(result["files"]), file=sys.stderr)
    failed = [r["model"] for r in result["rows"] if r.get("estimator") is None]  # a model, not one estimator
    return 1 if failed else 0

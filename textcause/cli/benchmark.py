"""``textcause benchmark``: run a grid of real fits + evaluations, resumable, on many workers.

    textcause benchmark --config configs/benchmark/smoke.yaml                  # one worker, SQLite
    textcause benchmark --config configs/benchmark/weld.yaml --workers 2       # two processes
    textcause benchmark --config configs/benchmark/weld.yaml --db postgresql://host/textcause  # on each machine
    textcause benchmark --config configs/benchmark/smoke.yaml --method mypkg.methods:MyMethod  # add a method
    textcause benchmark --config configs/benchmark/weld.yaml --archive weld.jsonl.gz  # carried in one file

See :mod:`textcause.grid.runner` for how cells are scheduled, claimed and resumed. Rerunning the
same command resumes a killed run; ``--retry-failed`` runs failed cells again, ``--rerun-changed``
the finished cells whose model YAML, options or evaluation settings changed since they ran.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from textcause.cli.parsing import CommandParser

__all__ = [
    "benchmark_main",
    "build_parser",
]


def build_parser() -> CommandParser:
    """The ``textcause benchmark`` arguments."""
    from textcause.grid.runner import WORKER_STARTS
    from textcause.grid.worker import HEARTBEAT_INTERVAL

    parser = CommandParser(prog="textcause benchmark", description=__doc__)
    parser.add_argument("--config", required=True, help="a benchmark grid YAML (configs/benchmark/*.yaml)")
    parser.add_argument("--db", default=None, help="a SQLAlchemy URL (default: sqlite:///<out>/results.db)")
    parser.add_argument("--out", default=None, help="run folders go to <out>/runs/ (default: runs/benchmark/<grid>)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes on this machine")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads per worker (default: cores // workers)"
    )
    parser.add_argument(
        "--method",
        action="append",
        default=None,
        metavar="PACKAGE.MODULE:NAME",
        help="also evaluate this importable method (a textcause.methods propensity or effect method; repeatable)",
    )
    parser.add_argument("--retry-failed", action="store_true", help="run failed cells again")
    parser.add_argument(
        "--rerun-changed",
        action="store_true",
        help="run again finished cells whose configuration changed (their old rows are deleted)",
    )
    parser.add_argument(
        "--archive",
        default=None,
        metavar="FILE.jsonl.gz",
        help="add this archive's cells to the store first (if it exists), and keep it rewritten with the "
        "grid's finished cells as they come in (textcause results export|import)",
    )
    parser.add_argument("--dry-run", action="store_true", help="list the cells and their status, run nothing")
    parser.add_argument("--heartbeat", type=int, default=HEARTBEAT_INTERVAL, help=argparse.SUPPRESS)
    parser.add_argument(
        "--worker-start",
        choices=WORKER_STARTS,
        default="auto",
        help="how worker processes start: forked from one server that imported what cells use "
        "(forkserver; the default on Linux) or each a new Python process that imports for itself",
    )
    return parser


def benchmark_main(argv: Sequence[str]) -> int:
    """The ``textcause benchmark`` command; returns the exit code (1: a worker or the database failed)."""
    args = build_parser().parse_args(list(argv))
    from textcause.cli.errors import command
    from textcause.grid.runner import run_benchmark

    return command(
        lambda: run_benchmark(
            args.config,
            db=args.db,
            out=args.out,
            workers=args.workers,
            threads=args.threads,
            methods=args.method or (),
            retry_failed=args.retry_failed,
            rerun_changed=args.rerun_changed,
            dry_run=args.dry_run,
            heartbeat=args.heartbeat,
            freeze_gc=True,  # this command's own process
            worker_start=args.worker_start,
            archive=args.archive,
        ),
        sigterm=True,  # kill or a scheduler's stop ends the run as Ctrl-C does: the archive gets its last write
    )


if __name__ == "__main__":
    sys.exit(benchmark_main(sys.argv[1:]))

"""``textcause cfr``: counterfactual representations vs true counterfactual texts (PIP, ATV, TPR gaps).

    textcause cfr --config configs/cfr/blogs.yaml
    textcause cfr --config configs/cfr/templates.yaml --out runs/cfr/templates
    textcause cfr --config my_pairs.yaml --db postgresql://host/results

Builds the config's pairs (blog posts with their gendered words swapped, EEEC-style templates, or a
CSV of pairs), embeds both sides with the frozen encoder (the embedding cache: a rerun encodes
nothing), fits the classifier, the CFR of Lemberger et al., the LEACE and oracle erasers and the
LEACE class-mean CFRs, and compares each intervention with the true counterfactual texts. Writes, under ``--out`` (default
``runs/cfr/<name>``): ``<name>_cfr.md`` (the table, also printed), ``<name>_cfr.csv``,
``<name>_cfr.png`` / ``.svg`` and ``<name>_summary.json``; the rows go to the results database
(``<out>/results.db`` unless ``--db``), table ``cfr_results``. See docs/cfr.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

from textcause.cli.parsing import CommandParser, progress_option

__all__ = [
    "build_parser",
    "cfr_main",
]


def build_parser() -> CommandParser:
    """The ``textcause cfr`` arguments."""
    parser = CommandParser(prog="textcause cfr", description=__doc__)
    parser.add_argument(
        "--config", required=True, help="the CFR YAML (configs/cfr/blogs.yaml, configs/cfr/templates.yaml)"
    )
    parser.add_argument("--out", default=None, help="the output folder (default: runs/cfr/<name>)")
    parser.add_argument("--db", default=None, help="a results database URL (default: sqlite:///<out>/results.db)")
    parser.add_argument("--seed", type=int, default=None, help="override the config's seed")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads while encoding and BLAS threads while evaluating (default: the config's)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no encoder progress bar")
    return parser


def run_cfr_command(args: argparse.Namespace) -> dict:
    """``textcause cfr`` from parsed arguments: the run's summary and the files written."""
    from textcause.counterfactual.cfr.spec import load_cfr
    from textcause.experiments.cfr import run_cfr
    from textcause.reports.cfr import write_cfr_report

    experiment = load_cfr(args.config)
    changes = {}
    for opt in ("seed", "threads"):
        value = getattr(args, opt)
        if value is not None:
            low = 0 if opt == "seed" else 1
            if value < low:
                raise ValueError(f"The '--{opt}' option must be an int >= {low}. Got {value} instead.")
            changes[opt] = value
    if changes:
        experiment = dataclasses.replace(experiment, spec=dataclasses.replace(experiment.spec, **changes))
    out = Path(args.out) if args.out else Path("runs") / "cfr" / experiment.name
    run = run_cfr(
        experiment,
        out,
        db=args.db,
        progress=progress_option(args),
        echo=lambda line: print(line, file=sys.stderr, flush=True),
    )
    result = run.pop("result")
    files = write_cfr_report(result.rows, run, out, experiment.name)
    return {"run": run, "files": files}


def cfr_main(argv: Sequence[str]) -> int:
    """The ``textcause cfr`` command; returns the exit code (2: a user's mistake)."""
    args = build_parser().parse_args(list(argv))
    from textcause.cli.errors import command

    return command(lambda: _cfr(args), interrupted="finished encodings are cached; rerun the command.")


def _cfr(args: argparse.Namespace) -> int:
    from textcause.cli.errors import package_warnings

    with package_warnings():
        done = run_cfr_command(args)
    print(Path(done["files"][0]).read_text(encoding="utf-8"))
    print(
        f"{done['run']['run_id']}: {done['run']['seconds']:.0f} s; rows in {done['run']['url']} (table cfr_results); "
        "wrote " + ", ".join(map(str, done["files"])),
        file=sys.stderr,
    )
    return 0

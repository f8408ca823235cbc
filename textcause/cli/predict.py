"""``textcause predict``: per-user propensities of new users' text from a trained run.

    textcause predict runs/textcause/version_0 --corpus new.csv --out propensities.csv
    textcause predict RUN_DIR --corpus comments.parquet --data.author_col user --data.text_col body --out p.csv

The run's checkpoint carries its featurizer (vocabulary, topics or encoder identity), so the new
users are featurised exactly as the training users were, and nothing is refitted on them. The work is
:func:`textcause.run.predict.predict_corpus`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from textcause.cli.evaluate import add_allow_module
from textcause.cli.parsing import CommandParser

__all__ = [
    "build_parser",
    "predict_main",
]


def _flag(value: str) -> bool:
    if str(value).lower() in ("true", "1", "yes"):
        return True
    if str(value).lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


#: Old spellings of this command's flags (deprecated: they go in the next release).
RENAMED = {"--min-posts": "--data.min_posts", "--max-posts": "--data.max_posts", "--batch-size": "--data.batch_size"}


def build_parser(prog: str = "textcause predict") -> CommandParser:
    """The parser: ``--data.*`` are the run config's data keys, read for the new users."""
    parser = CommandParser(prog=prog, description=__doc__, renamed=RENAMED)
    parser.add_argument("run_dir", help="a training run folder (holds config.yaml and checkpoints/)")
    parser.add_argument(
        "--corpus", required=True, help="the new users: a history JSONL, CSV / Parquet / NDJSON table or HF dataset"
    )
    parser.add_argument("--out", required=True, help="the CSV to write: user_id,propensity (written atomically)")
    parser.add_argument("--ckpt", default=None, help="checkpoint to score with (default: the run's best)")
    parser.add_argument("--data.author_col", dest="author_col", default="author", help="a table's author column")
    parser.add_argument("--data.text_col", dest="text_col", default="text", help="a table's text column")
    parser.add_argument(
        "--data.time_col", dest="time_col", default="time", help="a table's time column ('null': keep the table order)"
    )
    parser.add_argument(
        "--data.drop_duplicates",
        dest="drop_duplicates",
        nargs="?",
        const=True,
        default=False,
        type=_flag,
        help="drop a post whose text and time repeat an earlier post of the same user (true / false)",
    )
    parser.add_argument(
        "--data.min_posts", dest="min_posts", type=int, default=1, help="score users with at least this many posts"
    )
    parser.add_argument(
        "--data.max_posts",
        dest="max_posts",
        type=int,
        default=-1,
        help="keep each user's first N posts (default: the run's own max_posts)",
    )
    parser.add_argument(
        "--data.batch_size", dest="batch_size", type=int, default=None, help="users per batch (default: the run's)"
    )
    add_allow_module(parser)
    return parser


def predict_main(argv: Sequence[str], *, prog: str = "textcause predict") -> int:
    """Score a corpus with a run and write the CSV; prints where it went."""
    args = build_parser(prog).parse_args(list(argv))
    from textcause.io import check_out_file

    check_out_file(args.out)  # before any work: a folder, or a path under a file

    time_col = None if str(args.time_col).lower() in ("null", "none", "") else args.time_col
    try:
        result = _predict(args, time_col)
    except ValueError as err:  # the corpus readers' parameters, as this command's options
        from textcause.validation import as_typed_options

        names = ("author_col", "text_col", "time_col", "drop_duplicates", "min_posts", "max_posts", "batch_size")
        typed = as_typed_options(str(err), names, "--data.")
        if typed == str(err):
            raise
        raise ValueError(typed) from err
    print(f"wrote {result.out}: propensities of {len(result.user_ids)} users (checkpoint {result.checkpoint.name})")
    return 0


def _predict(args: argparse.Namespace, time_col: str | None) -> Any:
    from textcause.run.predict import predict_corpus

    return predict_corpus(
        args.run_dir,
        args.corpus,
        args.out,
        ckpt=args.ckpt,
        author_col=args.author_col,
        text_col=args.text_col,
        time_col=time_col,
        drop_duplicates=args.drop_duplicates,
        min_posts=args.min_posts,
        max_posts=args.max_posts,
        batch_size=args.batch_size,
        allow_modules=args.allow_module,
    )

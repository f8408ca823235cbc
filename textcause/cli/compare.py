"""``textcause compare``: two methods across the seeds of a results database (:func:`textcause.analysis.inference.compare`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textcause.cli.parsing import CommandParser, options

__all__ = [
    "compare_main",
]


def compare_main(argv: Sequence[str] | None = None) -> Any:
    """``textcause compare --db URL A B [--metric abs_bias] [--estimator stratified]``: print the table."""
    parser = CommandParser(
        prog="textcause compare",
        description="Compare two methods (model or model:estimator) over the seeds of a results database: "
        "corrected resampled t-test per task level, Holm-adjusted across task levels.",
    )
    parser.add_argument(
        "--db", required=True, help="SQLite file, CSV/Parquet export or SQLAlchemy URL (table 'results')"
    )
    parser.add_argument("method_a", metavar="A", help="model or model:estimator")
    parser.add_argument("method_b", metavar="B", help="model or model:estimator")
    parser.add_argument("--metric", default="abs_bias", choices=sorted(_metrics()))
    parser.add_argument("--estimator", default="stratified", help="estimator for methods given without one")
    parser.add_argument("--corpus", default=None, help="only this corpus")
    parser.add_argument("--grid", default=None, help="only this grid (a database may hold several)")
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args(list(argv) if argv is not None else None)
    from textcause.analysis.frame import load_results
    from textcause.analysis.inference import compare, format_comparison

    results = load_results(args.db, grid=args.grid)
    table = compare(results, args.method_a, args.method_b, **options(args, "metric", "estimator", "corpus", "alpha"))
    print(format_comparison(table))
    return table


def _metrics() -> Any:
    from textcause.analysis.inference import METRICS

    return METRICS

"""``textcause report``: figures and a Markdown / HTML report of a results database (:func:`textcause.reports.report.write_report`).

    textcause report --db runs/benchmark/weld/results.db --corpus blogs --out docs/reports/weld-blogs

``--corpus NAME [NAME ...]`` keeps only those corpora (an unknown one is named, with the corpora there are).

A database that also holds the masked-gender selection experiment (table ``gender_selection``)
gets its dose-response table and figure too (:func:`textcause.reports.gender.write_selection_report`);
one that holds only that experiment gets only those.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textcause.cli.parsing import CommandParser, options

__all__ = [
    "report_main",
]


def report_main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """``textcause report --db URL --out report/``: write the report and print what was written."""
    parser = CommandParser(prog="textcause report", description=__doc__)
    parser.add_argument(
        "--db", required=True, help="SQLite file, CSV/Parquet export or SQLAlchemy URL (table 'results')"
    )
    parser.add_argument("--out", default="report", help="output folder (default: report/)")
    parser.add_argument(
        "--interval",
        default="auto",
        choices=["auto", "seeds", "bootstrap"],
        help="figure error bars: across seeds (corrected) or per-cell bootstrap (auto: seeds if >= 2)",
    )
    parser.add_argument("--estimator", default="stratified", help="estimator compared with the unadjusted estimate")
    parser.add_argument("--formats", nargs="+", default=["png", "svg"])
    parser.add_argument("--grid", default=None, help="only this grid (a database may hold several)")
    parser.add_argument(
        "--corpus", nargs="+", default=None, metavar="NAME", help="only these corpora (default: every corpus)"
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    from textcause.io import check_out_folder

    check_out_folder(args.out, purpose=" for the report")  # before the database is read
    from textcause.reports.gender import has_benchmark_results, selection_url, write_selection_report
    from textcause.reports.report import write_report

    url = selection_url(args.db)  # a database holding the gender selection experiment: its dose-response too
    selection = write_selection_report(url, args.out, formats=args.formats) if url else None
    if selection is not None:
        print(f"wrote the selection experiment's dose-response ({', '.join(map(str, selection['files']))})")
        if not has_benchmark_results(url):
            return {"selection": selection}
    result = write_report(
        args.db, args.out, **options(args, "interval", "estimator", "formats", "grid"), corpora=args.corpus
    )
    if selection is not None:
        result["selection"] = selection
    n_files = sum(len(v) for v in result["figures"].values())
    print(f"wrote {result['markdown']}, {result['html']}, {result['summary']} and {n_files} figure files in {args.out}")
    return result

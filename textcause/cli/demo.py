"""``make demo``: the main job, on the real Twitter corpus, and its report.

1. ``textcause benchmark --config configs/benchmark/demo.yaml``: 1,200 real PAN 2019 Twitter users,
   five task levels that tell the paper's story (Linguistic Complexity 1 and 4, Signal Intensity 2,
   Placebo, Order of Text 2) x the oracle, the unadjusted estimate, a tuned logistic regression on
   1,2-gram counts and OrderCountNet on frozen MiniLM post vectors, 3 seeds; each cell a real fit +
   evaluation, results in SQLite. Resumable: a rerun skips the finished cells (delete the output
   folder to start over).
2. ``textcause report``: figures (PNG + SVG), ``report.md`` and ``report.html``.
3. Prints the headline: per task level and model, the true ATE, treatment accuracy, units used,
   the stratified estimate's bias with its interval, and a flag on every cell whose estimate is
   unreliable; then the placebo false discoveries.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from textcause.cli.parsing import CommandParser
from textcause.paths import PROJECT_ROOT, config_dir

__all__ = [
    "main",
]


def main(argv: Sequence[str] = ()) -> None:
    """The ``textcause demo`` command: parse ``argv`` and run the demo."""
    parser = CommandParser(prog="textcause demo", description=__doc__)
    parser.add_argument("--config", default=str(config_dir() / "benchmark" / "demo.yaml"), help="a benchmark grid YAML")
    parser.add_argument("--out", default=str(PROJECT_ROOT / "runs" / "demo"), help="output folder")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    args = parser.parse_args(list(argv))

    from textcause.analysis.frame import load_results
    from textcause.analysis.headline import format_cells
    from textcause.analysis.inference import seed_summary
    from textcause.grid.runner import run_benchmark
    from textcause.reports.report import write_report

    out = Path(args.out)
    db = out / "results.db"
    t0 = time.perf_counter()
    code = run_benchmark(args.config, out=out, workers=args.workers, freeze_gc=True)  # this command's own process
    if code != 0:
        raise RuntimeError(f"The benchmark stopped with exit code {code}; rerun `make demo` to resume it.")
    bench_s = time.perf_counter() - t0
    written = write_report(db, out / "report")
    data = load_results(db)
    summary = seed_summary(data)
    print()
    for corpus in sorted(set(summary["corpus"])):
        print(format_cells(summary, corpus))
    n_fig = sum(len(v) for v in written["figures"].values())
    print(f"\nbenchmark {bench_s:.0f} s, report {time.perf_counter() - t0 - bench_s:.0f} s; results in {db}")
    print(f"report: {written['markdown']} (and .html), {n_fig} figure files in {out / 'report'}")


if __name__ == "__main__":
    import sys

    from textcause.cli.errors import friendly_errors

    sys.exit(friendly_errors(lambda: main(sys.argv[1:])))

#!/usr/bin/env python
"""How good was the grid's ETA? Replay a finished grid's ledger and compare both estimates with the truth.

At the moments when 5%, 10%, 20%, ... of the grid's cells had finished, the ledger is cut back to
what it held then (cells finished by then ``ok``, cells started by then ``running``, the rest not yet
claimed), and three figures are printed: the wall time the grid actually still needed (the union of
the cells' start-finish intervals after that moment, as the report's Time section counts it), the
per-model estimate of :func:`textcause.grid.eta.remaining_work` (the progress line's ETA), and the
rate estimate that the progress line gave before (the wall time so far over the cells finished, times
the cells left). The database is only read.

    .venv/bin/python benchmarks/eta_replay.py --config configs/benchmark/weld_twitter.yaml \\
        --db runs/benchmark/weld/results.db --workers 2
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)


def wall_after(intervals: list[tuple[datetime, datetime]], moment: datetime) -> float:
    """Seconds of the union of ``intervals`` (sorted by start) that lie after ``moment``."""
    total, start, end = 0.0, None, None
    for s, f in intervals:
        if f <= moment:
            continue
        s = max(s, moment)
        if end is None or s > end:
            if end is not None:
                total += (end - start).total_seconds()
            start, end = s, f
        else:
            end = max(end, f)
    if end is not None:
        total += (end - start).total_seconds()
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="the grid's YAML")
    parser.add_argument("--db", required=True, help="its results database (SQLite file)")
    parser.add_argument("--workers", type=int, default=2, help="the workers it ran on")
    args = parser.parse_args(argv)

    from textcause import store
    from textcause.grid.eta import draw_keys, remaining_work
    from textcause.grid.spec import load_grid

    grid = load_grid(args.config)
    if not Path(args.db).is_file():
        raise SystemExit(f"error: no results database at {args.db}.")
    ledger = store.ledger(store.open_store(f"sqlite:///{args.db}"), grid.name)
    rows = {c.cell_id: ledger[c.cell_id] for c in grid.cells if c.cell_id in ledger}
    timed = {i: r for i, r in rows.items() if r.status == "ok" and r.started_at and r.finished_at}
    if len(timed) < len(grid.cells):
        raise SystemExit(
            f"error: {len(grid.cells) - len(timed)} of the grid's {len(grid.cells)} cells are not finished; "
            "replay a whole grid."
        )
    intervals = sorted((r.started_at, r.finished_at) for r in timed.values())
    ends = sorted(r.finished_at for r in timed.values())
    first, keys, total = intervals[0][0], draw_keys(grid.cells), len(grid.cells)
    print(f"{grid.name} ({args.config}): {total} cells, {wall_after(intervals, first) / 3600:.2f} h of wall time")
    print("| cells done | wall time left, actual | per-model ETA | rate ETA (before) |")
    print("|---|---|---|---|")
    for fraction in FRACTIONS:
        moment = ends[int(fraction * len(ends))]
        then = {}
        for cell_id, r in timed.items():
            if r.finished_at <= moment:
                then[cell_id] = SimpleNamespace(status="ok", started_at=r.started_at, finished_at=r.finished_at)
            elif r.started_at <= moment:
                then[cell_id] = SimpleNamespace(status="running", started_at=r.started_at, finished_at=None)
        done = sum(r.status == "ok" for r in then.values())
        work = remaining_work(grid.cells, then, workers=args.workers, now=moment, keys=keys)
        actual = wall_after(intervals, moment)
        rate = (wall_after(intervals, first) - actual) / done * (total - done)
        estimate = "?" if work.seconds is None else f"{work.seconds / 3600:.2f} h"
        print(f"| {done} | {actual / 3600:.2f} h | {estimate} | {rate / 3600:.2f} h |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""What a grid cell that trains nothing costs: the oracle / unadjusted cells of the smoke grid, through
the Trainer and without it, in one process.

    OMP_NUM_THREADS=1 python benchmarks/bench_cell_overhead.py                  # 12 smoke cells
    OMP_NUM_THREADS=1 python benchmarks/bench_cell_overhead.py --cells 20 --n-users 0 --n-boot 1000

Each cell runs twice, alternately: with ``TEXTCAUSE_FULL_PATH=1`` (the LightningCLI, the Trainer's fit
and predict, ``gc.collect()`` after the cell: the path every cell took before issue 18) and without it
(:func:`textcause.run.fit.untrained_config`: the data module and the model built directly). The caches
are warm first (the corpus read, one cell of each path). It prints, per path, the median seconds of a
whole cell (``run_config_cell``, its memory release included), the part spent in the evaluation
(estimates and bootstrap intervals: real work, the same on both paths), the rest, and the ratios; and
how many cells gave identical rows on both paths (timings aside).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: Row fields that differ between runs of the same numbers (timings, and which code and host ran them).
TIMING = ("train_seconds", "eval_seconds", "started_at", "finished_at", "run", "code_version", "host")


def numbers(rows: list[dict]) -> list[dict]:
    def norm(v):
        return "nan" if isinstance(v, float) and math.isnan(v) else v

    return [{k: norm(v) for k, v in r.items() if k not in TIMING} for r in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=12, help="oracle / unadjusted cells timed (default 12)")
    parser.add_argument("--n-users", type=int, default=None, help="data.n_users (default: the smoke grid's; 0: all)")
    parser.add_argument("--n-boot", type=int, default=None, help="bootstrap replicates (default: the smoke grid's)")
    args = parser.parse_args(argv)

    from textcause.grid.cell import run_config_cell
    from textcause.grid.spec import load_grid
    from textcause.run.fit import FULL_PATH_ENV

    grid = load_grid(ROOT / "configs" / "benchmark" / "smoke.yaml")
    cells = [c for c in grid.cells if c.model in ("oracle", "unadjusted")]
    if args.n_users is not None:
        n_users = None if args.n_users == 0 else args.n_users
        cells = [
            dataclasses.replace(c, overrides=tuple((k, n_users if k == "data.n_users" else v) for k, v in c.overrides))
            for c in cells
        ]
    if args.n_boot is not None:
        cells = [dataclasses.replace(c, n_boot=args.n_boot) for c in cells]
    cells = (cells * (1 + args.cells // max(len(cells), 1)))[: args.cells]
    load_start = os.getloadavg()

    with tempfile.TemporaryDirectory(prefix="bench-cell-") as tmp:

        def run(cell, full: bool, i: int):
            if full:
                os.environ[FULL_PATH_ENV] = "1"
            else:
                os.environ.pop(FULL_PATH_ENV, None)
            t0 = time.perf_counter()
            out = run_config_cell(cell, Path(tmp) / ("full" if full else "fast") / str(i))
            seconds = time.perf_counter() - t0
            if out.status != "ok":
                raise SystemExit(f"{cell.cell_id} failed: {out.error}")
            return seconds, float(out.rows[0]["eval_seconds"]), numbers(out.rows)

        for full in (True, False):  # warm: the corpus read, the imports, each path once
            run(cells[0], full, -1)
        times: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        identical = 0
        for i, cell in enumerate(cells):
            results = {}
            for full in (True, False) if i % 2 == 0 else (False, True):  # alternate which goes first
                seconds, eval_s, rows = run(cell, full, i)
                times[full].append((seconds, eval_s))
                results[full] = rows
            identical += results[True] == results[False]
        os.environ.pop(FULL_PATH_ENV, None)

    def med(full: bool, part: int) -> float:
        return statistics.median(t[part] for t in times[full])

    def rest(full: bool) -> float:
        return statistics.median(t[0] - t[1] for t in times[full])

    n_users = dict(cells[0].overrides).get("data.n_users")
    print(
        f"{len(cells)} oracle / unadjusted smoke cells (data.n_users {n_users}, n_boot {cells[0].n_boot}), "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, load {load_start[0]:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end"
    )
    print()
    print("| per cell (median s) | Trainer path | without the Trainer | ratio |")
    print("|---|---|---|---|")
    print(f"| whole cell | {med(True, 0):.3f} | {med(False, 0):.3f} | {med(True, 0) / med(False, 0):.1f}x |")
    print(
        f"| evaluation (estimates, bootstrap) | {med(True, 1):.3f} | {med(False, 1):.3f} | {med(True, 1) / med(False, 1):.2f}x |"
    )
    print(
        f"| the rest (overhead) | {rest(True):.3f} | {rest(False):.3f} | {rest(True) / max(rest(False), 1e-9):.1f}x |"
    )
    print()
    print(f"identical rows (timings aside) in {identical} of {len(cells)} cells")
    return 0 if identical == len(cells) else 1


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python
"""What one cell of each model of the Twitter weld grid costs, as a grid worker runs it (issue 18).

    OMP_NUM_THREADS=1 python benchmarks/bench_cells.py                       # every model, LC-2, 3 rounds
    OMP_NUM_THREADS=1 python benchmarks/bench_cells.py --models sherbert_pooled --rounds 5
    OMP_NUM_THREADS=1 python benchmarks/bench_cells.py --save /tmp/before.json     # (from another commit)
    OMP_NUM_THREADS=1 python benchmarks/bench_cells.py --baseline /tmp/before.json

For each model of ``configs/benchmark/weld_twitter_seed0.yaml`` (the Twitter weld grid, seed 0)
it runs the cell at one task level (``--level``, default Linguistic Complexity 2) as a grid worker
runs it (:func:`textcause.grid.cell.run_config_cell`: tuning candidates, the chosen fit, the
evaluation with its 1,000 bootstrap replicates, the memory release), once to warm up (features and
embeddings must be cached: a first run builds them), then ``--rounds`` times, the models in turn.
Where this commit's grid workers freeze the garbage collector after their first trained cell
(``worker_loop(freeze_gc=True)``), so does the script after its warm-up. One thread, as each of two
workers on two cores has (``OMP_NUM_THREADS=1``).

It prints per model the median seconds of a whole cell, of its training (tuning included) and of
its evaluation. ``--save PATH`` writes them with each cell's result rows (timings left out);
``--baseline PATH``, a file saved by another commit on the same machine, adds that commit's
medians, the ratio, and whether this commit's rows are identical to the baseline's (to 1e-9).
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
GRID = ROOT / "configs" / "benchmark" / "weld_twitter_seed0.yaml"
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_cell_overhead import numbers  # a cell's rows without timings, NaN as a string


def same_rows(a: list[dict], b: list[dict], tol: float = 1e-9) -> bool:
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b):
        if ra.keys() != rb.keys():
            return False
        for k in ra:
            x, y = ra[k], rb[k]
            if isinstance(x, float) and isinstance(y, float):
                if abs(x - y) > tol:
                    return False
            elif x != y:
                return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=None, help="models of the grid (default: all)")
    parser.add_argument("--level", default="linguistic_complexity-2", help="task-level of the cells")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--save", type=Path, default=None)
    parser.add_argument("--baseline", type=Path, default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from textcause.grid.cell import run_config_cell
    from textcause.grid.spec import load_grid
    from textcause.grid.worker import worker_loop

    grid = load_grid(GRID)
    cells = {c.model: c for c in grid.cells if f"/{args.level}/" in c.cell_id}
    if not cells:
        raise SystemExit(f"error: no cell of the grid at the level {args.level!r}.")
    models = args.models or list(cells)
    unknown = [m for m in models if m not in cells]
    if unknown:
        raise SystemExit(f"error: the grid has no model {unknown}; it has {sorted(cells)}.")
    freezes = "freeze_gc" in inspect.signature(worker_loop).parameters
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    load = os.getloadavg()[0]
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cells-") as tmp:

        def run(model: str, tag: str) -> tuple[float, dict]:
            t0 = time.perf_counter()
            out = run_config_cell(cells[model], Path(tmp) / tag / model)
            seconds = time.perf_counter() - t0
            if out.status != "ok":
                raise SystemExit(f"error: {cells[model].cell_id} failed: {out.error}")
            return seconds, out.rows[0] | {"rows": numbers(out.rows)}

        for model in models:
            seconds, _ = run(model, "warm")
            print(f"warm-up {model}: {seconds:.1f} s", file=sys.stderr, flush=True)
        if freezes:
            gc.freeze()
        for r in range(args.rounds):
            for model in models:
                seconds, row = run(model, str(r))
                entry = results.setdefault(model, {"cell": [], "train": [], "eval": [], "rows": row["rows"]})
                entry["cell"].append(seconds)
                entry["train"].append(float(row["train_seconds"]))
                entry["eval"].append(float(row["eval_seconds"]))
                if not same_rows(entry["rows"], row["rows"]):
                    raise SystemExit(f"error: {model}'s rows changed between rounds of one process.")
            print(f"round {r + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    base = json.loads(args.baseline.read_text()) if args.baseline else None
    print(
        f"commit {commit.strip() or '?'}, level {args.level}, {args.rounds} rounds, OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS')}, gc frozen after warm-up: {freezes}, load {load:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end"
    )
    head = "| model | cell s | train s | eval s |"
    if base:
        head += f" baseline ({base['commit']}) cell s | ratio | rows identical |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    total = total_base = 0.0
    for model in models:
        e = results[model]
        med = {k: statistics.median(e[k]) for k in ("cell", "train", "eval")}
        total += med["cell"]
        line = f"| {model} | {med['cell']:.2f} | {med['train']:.2f} | {med['eval']:.2f} |"
        if base and model in base["models"]:
            b = base["models"][model]
            total_base += b["cell"]
            same = same_rows(e["rows"], b["rows"])
            line += f" {b['cell']:.2f} | {b['cell'] / med['cell']:.2f}x | {'yes' if same else 'NO'} |"
        print(line)
    line = f"| all | {total:.2f} | | |"
    if base:
        line += f" {total_base:.2f} | {total_base / total:.2f}x | |"
    print(line)
    if args.save:
        payload = {
            "commit": commit.strip(),
            "level": args.level,
            "models": {
                m: {"cell": statistics.median(e["cell"]), "rows": e["rows"], "seconds": e["cell"]}
                for m, e in results.items()
            },
        }
        args.save.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

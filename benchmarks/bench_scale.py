#!/usr/bin/env python
"""Scaling and scheduling overhead: the smoke grid on 1 vs 2 worker processes, and a sweep's trials.

    python benchmarks/bench_scale.py                     # the whole smoke grid (84 cells), then a 8-trial sweep
    python benchmarks/bench_scale.py --models oracle unadjusted lr_bigram_binary --trials 6

Everything runs in this one process, one measurement after the other, on the same machine state
(the embedding and feature caches warmed by a first, untimed pass), so the ratios compare like with like:

- **grid**: ``textcause benchmark`` on the smoke grid (or its ``--models`` subset) with ``--workers 1``,
  then ``--workers 2``, each into a fresh results database. Printed: wall time of each, the 2-vs-1
  ratio, and the **scheduling overhead per cell**: the time the workers spent outside any cell
  (process start, imports, Optuna asks and tells, claims, result writes), ``(workers x span - sum of
  cell durations) / cells``, where a cell's duration is its ``cells`` row's ``finished_at -
  started_at`` and the span runs from the command's start to the last cell's end. The cells that
  train nothing (``oracle``, ``unadjusted``) give the fixed cost of one run of the fit-and-evaluate
  path (config parsing, data module, trainer, evaluation).
- **sweep**: ``textcause sweep`` on ``configs/sweeps/lr_penalty.yaml`` with ``--trials N``; the
  **overhead per trial** is ``(wall - sum of the trials' own seconds) / N``.

Target (issue 12): under 1 s per cell and per trial.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _smoke import smoke_subset


def _run_grid(
    config: Path, out: Path, workers: int, start: str = "auto", fresh: bool = False, keep_runs: bool = False
) -> dict[str, float]:
    from textcause.grid.runner import run_benchmark

    started_wall = datetime.now(timezone.utc).replace(tzinfo=None)  # naive UTC, as the store's columns
    t0 = time.perf_counter()
    if fresh:  # a new `textcause benchmark` process: its imports (and its fork server's) counted
        command = [sys.executable, "-m", "textcause.cli.benchmark", "--config", str(config), "--out", str(out)]
        command += ["--workers", str(workers), "--worker-start", start]
        code = subprocess.run(command, capture_output=True, cwd=ROOT).returncode
    else:
        if workers == 1:  # in this process: start it as a forked worker starts, imports done, no data in memory
            from textcause.corpus import memo
            from textcause.data.build import clear_built

            clear_built()
            memo._read.cache_clear()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = run_benchmark(config, out=out, workers=workers, freeze_gc=True, worker_start=start)
    wall = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"the benchmark with {workers} worker(s) exited with code {code}; see {out}")
    with sqlite3.connect(out / "results.db") as con:
        cells = con.execute("SELECT cell_id, status, started_at, finished_at FROM cells").fetchall()
    durations, idle_cells = [], []
    last_end = None
    for cell_id, status, started, finished in cells:
        if status != "ok":
            raise SystemExit(f"cell {cell_id} is {status}; see {out}")
        s, f = datetime.fromisoformat(started), datetime.fromisoformat(finished)
        durations.append((f - s).total_seconds())
        last_end = f if last_end is None or f > last_end else last_end
        if "/oracle/" in cell_id or "/unadjusted/" in cell_id:
            idle_cells.append(durations[-1])
    span = (last_end - started_wall).total_seconds()
    n = len(durations)
    if not keep_runs:  # the cells' run folders (checkpoints, logs: about 150 MB); results.db and logs/ stay
        shutil.rmtree(out / "runs", ignore_errors=True)
    return {
        "wall": wall,
        "cells": n,
        "busy": sum(durations),
        "overhead_per_cell": (workers * span - sum(durations)) / n,
        "no_training_cell": sum(idle_cells) / len(idle_cells) if idle_cells else float("nan"),
    }


def _run_sweep(trials: int, out: Path) -> dict[str, float]:
    from textcause.cli.sweep import sweep_main
    from textcause.sweep.runner import default_storage, open_study
    from textcause.sweep.spec import load_sweep

    config = ROOT / "configs" / "sweeps" / "lr_penalty.yaml"
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = sweep_main(["--config", str(config), "--trials", str(trials), "--out", str(out)])
    wall = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"the sweep exited with code {code}; see {out}")
    study = open_study(load_sweep(config), default_storage(out), create=False)
    own = [t.user_attrs.get("seconds", 0.0) for t in study.trials if t.state.name == "COMPLETE"]
    return {"wall": wall, "trials": len(own), "busy": sum(own), "overhead_per_trial": (wall - sum(own)) / len(own)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=None, help="a subset of the smoke grid's models")
    parser.add_argument("--trials", type=int, default=8, help="sweep trials (0: no sweep)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of 1 worker, 2 forked, 2 subprocess workers")
    parser.add_argument(
        "--fresh", action="store_true", help="each run a new `textcause benchmark` process (imports counted)"
    )
    parser.add_argument("--no-warm", action="store_true", help="skip the untimed first pass that warms the caches")
    parser.add_argument(
        "--keep-runs",
        action="store_true",
        help="keep each run's cell folders (checkpoints) instead of deleting them once its rows are read",
    )
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    config = smoke_subset(args.models, work, "scale")
    if not args.no_warm:
        print("warming the caches (untimed) ...", flush=True)
        _run_grid(config, work / "warm", 2, "forkserver", args.fresh, args.keep_runs)
    runs = [
        ("1 worker", 1, "auto"),
        ("2 workers, forkserver", 2, "forkserver"),
        ("2 workers, subprocess", 2, "subprocess"),
    ]
    rows: list[tuple[str, dict[str, float]]] = []
    for k in range(args.rounds):
        for name, workers, start in runs:
            r = _run_grid(config, work / f"r{k}-{workers}-{start}", workers, start, args.fresh, args.keep_runs)
            print(f"round {k + 1}, {name}: {r['wall']:.1f} s for {r['cells']} cells", flush=True)
            rows.append((name, r))
    sweep = None
    if args.trials:
        sweep = _run_sweep(args.trials, work / "sweep")
        print(f"sweep: {sweep['wall']:.1f} s for {sweep['trials']} trials", flush=True)

    where = "each run a new `textcause benchmark` process" if args.fresh else "measured in one process, caches warm"
    models = ", models " + " ".join(args.models) if args.models else ""
    print(f"\nsmoke grid ({rows[0][1]['cells']} cells{models}); {where}\n")
    print(
        "| round | run | wall s | sum of cell s | scheduling overhead per cell s | no-training cell s | vs 1 worker |"
    )
    print("|---|---|---|---|---|---|---|")
    for i, (name, r) in enumerate(rows):
        one = rows[i - i % len(runs)][1]
        print(
            f"| {i // len(runs) + 1} | {name} | {r['wall']:.1f} | {r['busy']:.1f} | {r['overhead_per_cell']:.2f} | "
            f"{r['no_training_cell']:.2f} | {one['wall'] / r['wall']:.2f}x |"
        )
    for name, _, _ in runs[1:]:
        ratios = [rows[i - i % len(runs)][1]["wall"] / r["wall"] for i, (n, r) in enumerate(rows) if n == name]
        print(f"\n{name} vs 1 worker: {', '.join(f'{x:.2f}x' for x in ratios)} (issue 18's target: 1.85x)")
    if sweep:
        print(
            f"\nsweep lr_penalty, {sweep['trials']} trials: wall {sweep['wall']:.1f} s, trials' own time "
            f"{sweep['busy']:.1f} s, overhead per trial {sweep['overhead_per_trial']:.2f} s"
        )
    worst = max([r["overhead_per_cell"] for _, r in rows] + [sweep["overhead_per_trial"] if sweep else 0.0])
    print(f"\ntarget under 1 s per cell and per trial: {'met' if worst < 1.0 else 'NOT met'} (worst {worst:.2f} s)")
    print(f"outputs: {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

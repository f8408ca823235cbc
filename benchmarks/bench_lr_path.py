#!/usr/bin/env python
"""The tuned LR's search on one weld cell: L2's dual solver against its primal one, with and without path patience.

    python benchmarks/bench_lr_path.py                                   # Twitter, Order of Text 2, seed 1
    python benchmarks/bench_lr_path.py --corpus blogs --rounds 1         # a blog cell (~15 min for 'before')
    python benchmarks/bench_lr_path.py --configs primal primal+p3 --representation bigram_counts

On one cell's features and split, exactly as the grid builds them (``textcause.data.build``), the
search of ``TunedLogisticRegression`` (L1 and L2 by liblinear, elastic net by saga, C 0.01-100,
max-abs scaling) runs under each configuration in turn, in one process on one thread, the
configurations alternating by round:

* ``before``: L2 by liblinear's dual coordinate descent (1,000-iteration cap), every candidate fitted:
  the search the grid ran until issue 46's LR change;
* ``primal``: L2 by liblinear's primal trust-region Newton solver (the same objective), every candidate;
* ``primal+p3``: the primal solver, and each penalty's path stopped after 3 strengths in a row
  without a lower validation loss (the grid's model YAMLs since that change);
* ``dual+p3``: the dual solver with the same patience.

For each it prints the wall and CPU seconds of the search (median over rounds), the seconds per
penalty kind, the candidates fitted and skipped, the L2 fits that stopped at the iteration cap, the
chosen candidate and its validation loss, the test users' treatment accuracy, and the largest
difference of the test propensities from ``before``'s. Ratios are against ``before`` in the same
rounds. Each fit's seconds come from a timing wrapper around the search's own fitting function.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread, as a grid worker

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONFIGS = {
    "before": ("dual", None),
    "primal": ("primal", None),
    "primal+p3": ("primal", 3),
    "dual+p3": ("dual", 3),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="twitter")
    parser.add_argument("--task", default="order_of_text")
    parser.add_argument("--level", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--representation", default="bigram_binary")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    import numpy as np

    import textcause.models.tuned_lr as tl
    from textcause.data.build import DataSettings, build_data

    started = time.perf_counter()
    built = build_data(
        DataSettings(
            corpus=args.corpus, task=args.task, level=args.level, seed=args.seed, representation=args.representation
        )
    )
    import scipy.sparse as sp

    x = sp.csr_matrix(built.features, dtype=np.float64)
    x.indices, x.indptr = x.indices.astype(np.int32), x.indptr.astype(np.int32)  # what liblinear reads uncopied
    t = np.asarray(built.task.treatment).astype(np.int64)
    split = built.task.split
    tr, va, te = split["train"], split["val"], split["test"]
    scale = tl.maxabs_scale(x[tr])
    xtr, xva, xte = (tl._scaled(x[rows], scale) for rows in (tr, va, te))
    print(
        f"{args.corpus} {args.task}-{args.level} seed {args.seed} {args.representation}: {x.shape[0]} users x "
        f"{x.shape[1]} features ({x.nnz} non-zeros), train {len(tr)} / val {len(va)} / test {len(te)}; "
        f"features in {time.perf_counter() - started:.0f} s; load average {os.getloadavg()[0]:.2f}; "
        f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}",
        flush=True,
    )

    fits: list[tuple[str, float, int]] = []
    inner = tl._fit_one

    def timed(penalty, l1_ratio, c, seed, xx, tt, warm, l2_solver="primal"):
        wall = time.perf_counter()
        out = inner(penalty, l1_ratio, c, seed, xx, tt, warm, l2_solver)
        fits.append((penalty, time.perf_counter() - wall, out[2]))
        return out

    tl._fit_one = timed
    results: dict[str, dict] = {}
    walls: dict[str, list[float]] = defaultdict(list)
    cpus: dict[str, list[float]] = defaultdict(list)
    for r in range(args.rounds):
        order = args.configs if r % 2 == 0 else args.configs[::-1]
        for name in order:
            solver, patience = CONFIGS[name]
            fits.clear()
            wall, cpu = time.perf_counter(), time.process_time()
            coef, intercept, chosen = tl.fit_path(
                xtr, t[tr], xva, t[va], seed=args.seed, l2_solver=solver, path_patience=patience
            )
            walls[name].append(time.perf_counter() - wall)
            cpus[name].append(time.process_time() - cpu)
            per_kind: dict[str, float] = defaultdict(float)
            for penalty, seconds, _ in fits:
                per_kind[penalty] += seconds
            p = 1.0 / (1.0 + np.exp(-(np.asarray(xte @ coef).ravel() + intercept)))
            results[name] = {
                "chosen": chosen,
                "p": p,
                "per_kind": dict(per_kind),
                "capped": sum(1 for penalty, _, it in fits if penalty == "l2" and it >= 1000),
                "n_l2": sum(1 for penalty, _, _ in fits if penalty == "l2"),
            }
            print(f"  round {r + 1} {name}: {walls[name][-1]:.1f} s", flush=True)

    base = "before" if "before" in results else args.configs[0]
    print(f"\nmedians over {args.rounds} round(s); ratios against '{base}' (above 1: faster than it)")
    print(
        f"{'config':<11} {'wall s':>8} {'cpu s':>8} {'speed-up':>8} {'L1 s':>7} {'L2 s':>7} {'EN s':>7} "
        f"{'fitted':>6} {'skipped':>7} {'L2 at cap':>9}  chosen (val loss)                  test acc  max |dp|"
    )
    for name in args.configs:
        res = results[name]
        ch = res["chosen"]
        kind = res["per_kind"]
        acc = float(np.mean((res["p"] >= 0.5) == t[te]))
        dp = float(np.max(np.abs(res["p"] - results[base]["p"])))
        label = f"{ch['penalty']} C={ch['C']:.3g}" + (f" r={ch['l1_ratio']:g}" if ch["penalty"] == "elasticnet" else "")
        w = statistics.median(walls[name])
        print(
            f"{name:<11} {w:>8.1f} {statistics.median(cpus[name]):>8.1f} {statistics.median(walls[base]) / w:>7.2f}x "
            f"{kind.get('l1', 0):>7.1f} {kind.get('l2', 0):>7.1f} {kind.get('elasticnet', 0):>7.1f} "
            f"{len(ch['candidates']):>6} {ch['skipped']:>7} {res['capped']:>4} of {res['n_l2']:<2}  "
            f"{label:<22} ({ch['val_loss']:.5f})   {acc:>8.4f}  {dp:.1e}"
        )
    print(f"load average after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Time every ATE estimator and the bootstrap at n = 4,000 and n = 1,000,000 units.

Run: ``.venv/bin/python benchmarks/bench_estimators.py`` (about a minute on 2 cores).
Data: the paper's DGP (true ATE 0.4) with a noisy, continuous estimated propensity, so matching
sees no ties. Point estimates: best of several runs. Bootstraps: one run of 1,000 replicates,
except the per-replicate (non-vectorised) stratified and matching bootstraps at n = 1e6, which
run ``--loop-reps`` replicates and are scaled to 1,000 (marked ``*``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from textcause.estimators import aipw, bootstrap_ci, ipw, matching, stratified, unadjusted


def simulate(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    class1 = rng.random(n) < 0.5
    p = np.where(class1, 0.9, 0.1)
    t = (rng.random(n) < p).astype(np.int64)
    y = (rng.random(n) < np.where(class1 & (t == 0), 0.1, 0.9)).astype(np.float64)
    p_hat = np.clip(p + rng.normal(0, 0.05, n), 0.01, 0.99)
    return {"t": t, "y": y, "p": p_hat, "mu0": np.where(p_hat > 0.5, 0.1, 0.9), "mu1": np.full(n, 0.9)}


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run(n: int, loop_reps: int) -> dict[str, tuple[float, bool]]:
    d = simulate(n)
    t, y, p = d["t"], d["y"], d["p"]
    repeats = 5 if n <= 10_000 else 2
    bootstrap_ci("ipw", t[:100], y[:100], p[:100], n_boot=10)  # warm-up (first-call costs)
    out: dict[str, tuple[float, bool]] = {
        "unadjusted": (best_of(lambda: unadjusted(t, y), repeats), False),
        "ipw": (best_of(lambda: ipw(t, y, p), repeats), False),
        "stratified": (best_of(lambda: stratified(t, y, p), repeats), False),
        "matching": (best_of(lambda: matching(t, y, p), repeats), False),
        "aipw": (best_of(lambda: aipw(t, y, p, d["mu0"], d["mu1"]), repeats), False),
    }
    for name, args in (("unadjusted", (t, y)), ("ipw", (t, y, p)), ("aipw", (t, y, p, d["mu0"], d["mu1"]))):
        out[f"bootstrap {name} x1000"] = (
            best_of(lambda name=name, args=args: bootstrap_ci(name, *args, n_boot=1000), 1),
            False,
        )
    for name in ("stratified", "matching"):
        reps = 1000 if n <= 10_000 else loop_reps
        secs = best_of(lambda name=name, reps=reps: bootstrap_ci(name, t, y, p, n_boot=reps), 1)
        out[f"bootstrap {name} x1000"] = (secs * 1000 / reps, reps != 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=4_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--loop-reps", type=int, default=20)
    args = parser.parse_args()
    small, large = run(args.small, args.loop_reps), run(args.large, args.loop_reps)
    ratio_n = args.large / args.small
    ratio_nlogn = ratio_n * math.log(args.large) / math.log(args.small)
    print(f"{'operation':<30}{'n=' + format(args.small, ','):>14}{'n=' + format(args.large, ','):>16}{'ratio':>9}")
    for key in small:
        (a, _), (b, scaled) = small[key], large[key]
        mark = "*" if scaled else " "
        print(f"{key:<30}{a * 1e3:>11.2f} ms{b:>13.3f} s{mark}{b / a:>8.0f}x")
    print(f"\nlinear scaling would be {ratio_n:.0f}x, n log n {ratio_nlogn:.0f}x.")
    print(f"* per-replicate bootstrap timed on {args.loop_reps} replicates at n={args.large:,} and scaled to 1,000.")


if __name__ == "__main__":
    main()

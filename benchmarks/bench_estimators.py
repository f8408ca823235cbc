"""Time the ATE estimators against the plain numpy formula, and the bootstrap, in one process.

Run: ``.venv/bin/python benchmarks/bench_estimators.py`` (about 1.5 minutes on 2 cores; threads are
left at numpy's default). ``--scaling`` adds the older table: every estimator and bootstrap at
n = 4,000 and n = 1,000,000 and the ratio between them.

Data: the paper's DGP (true ATE 0.4) with a noisy, continuous estimated propensity in
[0.02, 0.98], so matching sees no ties. The numpy peers are the formulas a user would write without validation or
diagnostics: Hajek IPW in four lines, the difference in means, rank strata with ``np.argsort``
and ``np.bincount``, nearest-neighbour matching with ``np.searchsorted`` and a caliper, the AIPW
score mean, TMLE's logistic fluctuation by plain Newton steps; each gives the same estimate as
textcause on this data (checked, 1e-9). Point estimates: medians of ``--rounds`` alternated rounds
(textcause, then numpy, in each) and the median of the per-round ratios; ``--only-numpy`` prints that
table alone. Bootstraps: one run of 1,000
replicates of each linear estimator with ``scheme="multinomial"`` (the resamples of old) and then
with the default (``"auto"``: Poisson weights at this n), the ratio, and how far the interval ends
moved in multinomial bootstrap SEs (the two are equal in distribution, not in value); beside them
the time of drawing the multinomial indices alone and the Poisson scheme's random bytes alone (one
byte a weight, one thread). First, at a grid cell's size (``--cell-n``, 2,060 test users):
``bootstrap_ci("matching" | "stratified")`` with 1,000 replicates, batched from the count matrix
(the default) against the estimator called per replicate (``vectorized=False``), on the estimated
propensity and on a two-valued one (ties everywhere), with the largest replicate difference.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from textcause.estimators import aipw, bootstrap_ci, ipw, matching, stratified, tmle, unadjusted


def simulate(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    class1 = rng.random(n) < 0.5
    p = np.where(class1, 0.9, 0.1)
    t = (rng.random(n) < p).astype(np.int64)
    y = (rng.random(n) < np.where(class1 & (t == 0), 0.1, 0.9)).astype(np.float64)
    p_hat = p + 0.08 * np.tanh(rng.normal(0, 0.625, n))  # about N(0, 0.05) noise, bounded, no ties
    return {"t": t, "y": y, "p": p_hat, "mu0": np.where(p_hat > 0.5, 0.1, 0.9), "mu1": np.full(n, 0.9)}


# ------------------------------------------------------------------ the plain numpy formulas (peers)
def np_unadjusted(t, y, p=None):
    return y[t == 1].mean() - y[t == 0].mean()


def np_ipw(t, y, p):
    w1, w0 = t / p, (1 - t) / (1 - p)
    return (w1 * y).sum() / w1.sum() - (w0 * y).sum() / w0.sum()


def np_stratified(t, y, p, n_strata=10):
    n = p.size
    k = np.empty(n, dtype=np.int64)
    k[np.argsort(p)] = np.arange(n) * n_strata // n  # rank strata (no ties in this data)
    key = 2 * k + t
    cnt = np.bincount(key, minlength=2 * n_strata).reshape(-1, 2)
    tot = np.bincount(key, weights=y, minlength=2 * n_strata).reshape(-1, 2)
    return np.sum(cnt.sum(1) * (tot[:, 1] / cnt[:, 1] - tot[:, 0] / cnt[:, 0])) / n


def np_matching(t, y, p, caliper=0.2):
    contrib, kept = np.empty(p.size), np.empty(p.size, dtype=bool)
    for arm in (0, 1):
        q, pool = t == arm, t != arm
        order = np.argsort(p[pool])
        ps, ys = p[pool][order], y[pool][order]
        pq = p[q]
        pos = np.clip(np.searchsorted(ps, pq), 1, ps.size - 1)
        right = (ps[pos] - pq) < (pq - ps[pos - 1])
        j = np.where(right, pos, pos - 1)
        sign = 1.0 if arm == 1 else -1.0
        contrib[q] = sign * (y[q] - ys[j])
        kept[q] = np.abs(pq - ps[j]) <= caliper * p.std()
    return contrib[kept].mean()


def np_aipw(t, y, p, mu0, mu1):
    psi = mu1 - mu0 + t * (y - mu1) / p - (1 - t) * (y - mu0) / (1 - p)
    return psi.mean(), psi.std(ddof=1) / math.sqrt(psi.size)


def np_tmle(t, y, g, mu0, mu1, bound=0.005):
    """TMLE with the logistic fluctuation on H = T/g - (1-T)/(1-g), plain Newton steps (no step halving),
    the same stopping rule as textcause's; the influence-curve SE."""
    q0, q1 = np.clip(mu0, bound, 1 - bound), np.clip(mu1, bound, 1 - bound)
    l0, l1 = np.log(q0 / (1 - q0)), np.log(q1 / (1 - q1))
    h = t / g - (1 - t) / (1 - g)
    offset, eps, h_max = np.where(t == 1, l1, l0), 0.0, np.abs(h).max()
    for _ in range(100):
        q = 1 / (1 + np.exp(-(offset + eps * h)))
        step = (h @ (y - q)) / ((h * h) @ (q * (1 - q)))
        eps += step
        if abs(step) * h_max < 1e-10:
            break
    q1s, q0s = 1 / (1 + np.exp(-(l1 + eps / g))), 1 / (1 + np.exp(-(l0 - eps / (1 - g))))
    ate = q1s.mean() - q0s.mean()
    eic = h * (y - np.where(t == 1, q1s, q0s)) + q1s - q0s - ate
    return ate, eic.std(ddof=1) / math.sqrt(t.size)


PAIRS = {
    "unadjusted": (lambda d: unadjusted(d["t"], d["y"]), lambda d: np_unadjusted(d["t"], d["y"])),
    "ipw": (lambda d: ipw(d["t"], d["y"], d["p"]), lambda d: np_ipw(d["t"], d["y"], d["p"])),
    "stratified": (lambda d: stratified(d["t"], d["y"], d["p"]), lambda d: np_stratified(d["t"], d["y"], d["p"])),
    "matching": (lambda d: matching(d["t"], d["y"], d["p"]), lambda d: np_matching(d["t"], d["y"], d["p"])),
    "aipw": (
        lambda d: aipw(d["t"], d["y"], d["p"], d["mu0"], d["mu1"]),
        lambda d: np_aipw(d["t"], d["y"], d["p"], d["mu0"], d["mu1"])[0],
    ),
    "tmle": (
        lambda d: tmle(d["t"], d["y"], d["p"], d["mu0"], d["mu1"]),
        lambda d: np_tmle(d["t"], d["y"], d["p"], d["mu0"], d["mu1"])[0],
    ),
}


def best_pair(ours, peer, repeats: int) -> tuple[float, float, float]:
    """Median times of ``ours`` and ``peer`` and the median of the per-round ratios, run alternately
    (each round: one call of each) so both see the same load."""
    a, b = [], []
    for _ in range(repeats):
        for fn, out in ((ours, a), (peer, b)):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return statistics.median(a), statistics.median(b), statistics.median(x / y for x, y in zip(a, b))


def versus_numpy(sizes: list[int], rounds: int) -> None:
    print(
        f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}; medians of {rounds} alternated rounds"
    )
    print(f"{'estimator':<12}" + "".join(f"{'n=' + format(n, ','):>34}" for n in sizes))
    print(f"{'':<12}" + f"{'textcause':>12}{'numpy':>11}{'ratio':>11}" * len(sizes))
    rows: dict[str, list[str]] = {name: [] for name in PAIRS}
    for n in sizes:
        d = simulate(n)
        for name, (ours, peer) in PAIRS.items():
            ate, ref = ours(d).ate, peer(d)
            if abs(ate - ref) > 1e-9:
                raise SystemExit(f"{name}: textcause {ate!r} != numpy formula {ref!r} at n={n}")
            a, b, r = best_pair(lambda ours=ours, d=d: ours(d), lambda peer=peer, d=d: peer(d), rounds)
            rows[name].append(f"{a * 1e3:>9.2f} ms{b * 1e3:>8.2f} ms{r:>10.2f}x")
    for name, cells in rows.items():
        print(f"{name:<12}" + "".join(cells))


def bootstraps(n: int, n_boot: int) -> None:
    """Each linear estimator's bootstrap, the old multinomial path against the default, in turn."""
    d = simulate(n)
    bootstrap_ci("ipw", d["t"][:100], d["y"][:100], d["p"][:100], n_boot=10)  # warm-up
    bootstrap_ci("ipw", d["t"][:1000], d["y"][:1000], d["p"][:1000], n_boot=70, scheme="poisson")
    start = time.perf_counter()
    rng = np.random.default_rng(0)
    for _ in range(n_boot):
        rng.integers(0, n, size=n, dtype=np.uint32)  # the same values as int64 draws
    floor = time.perf_counter() - start
    start = time.perf_counter()
    bits = np.random.SFC64(0)
    for _ in range(n_boot):
        bits.random_raw(n // 8)  # one byte a Poisson weight, as the default draws them
    weights = time.perf_counter() - start
    print(f"\nbootstrap_ci, {n_boot:,} replicates at n={n:,} (default scheme here: poisson)")
    print(f"{'the multinomial indices alone':<40}{floor:>8.2f} s")
    print(f"{'the Poisson random bytes alone, 1 thread':<40}{weights:>8.2f} s")
    print(f"{'':<40}{'multinomial':>12}{'default':>10}{'ratio':>9}   interval ends moved, in multinomial SEs")
    for name, args in (
        ("ipw", (d["t"], d["y"], d["p"])),
        ("unadjusted", (d["t"], d["y"])),
        ("aipw", (d["t"], d["y"], d["p"], d["mu0"], d["mu1"])),
    ):
        start = time.perf_counter()
        old = bootstrap_ci(name, *args, n_boot=n_boot, scheme="multinomial")
        secs_old = time.perf_counter() - start
        start = time.perf_counter()
        new = bootstrap_ci(name, *args, n_boot=n_boot)
        secs_new = time.perf_counter() - start
        se = old.details["bootstrap"]["se"]
        moved = f"{(new.ci_low - old.ci_low) / se:+.2f}, {(new.ci_high - old.ci_high) / se:+.2f}"
        label = f"bootstrap_ci({name!r}) [{new.details['bootstrap']['scheme']}]"
        print(f"{label:<40}{secs_old:>10.2f} s{secs_new:>8.2f} s{secs_old / secs_new:>8.1f}x   {moved}")


def count_bootstraps(n: int, n_boot: int, repeats: int = 3) -> None:
    """Matching's and stratification's bootstrap at a grid cell's size: the batched count-matrix path
    (the default) against calling the estimator per replicate (``vectorized=False``), interleaved."""
    d = simulate(n, seed=1)
    true_p = np.where(d["p"] > 0.5, 0.9, 0.1)  # an oracle cell's two-valued propensity: heavy ties
    print(
        f"\nbootstrap_ci, {n_boot:,} replicates at n={n:,} (a grid cell's test split; multinomial), best of {repeats}"
    )
    print(f"{'':<44}{'per replicate':>14}{'batched':>10}{'ratio':>8}   max replicate difference")
    for name in ("matching", "stratified"):
        for label, p in (("estimated propensity", d["p"]), ("two-valued propensity", true_p)):
            loop, fast, out = [], [], {}
            for _ in range(repeats):
                for vectorized, times in ((False, loop), (True, fast)):
                    start = time.perf_counter()
                    out[vectorized] = bootstrap_ci(name, d["t"], d["y"], p, n_boot=n_boot, vectorized=vectorized)
                    times.append(time.perf_counter() - start)
            diff = np.abs(out[True].details["bootstrap"]["replicates"] - out[False].details["bootstrap"]["replicates"])
            row = f"bootstrap_ci({name!r}), {label}"
            print(f"{row:<44}{min(loop):>12.3f} s{min(fast):>8.3f} s{min(loop) / min(fast):>7.1f}x   {diff.max():.1e}")


# ------------------------------------------------------------------ the older scaling table
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
        name: (best_of(lambda ours=ours: ours(d), repeats), False) for name, (ours, _) in PAIRS.items()
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


def scaling(small_n: int, large_n: int, loop_reps: int) -> None:
    small, large = run(small_n, loop_reps), run(large_n, loop_reps)
    ratio_n = large_n / small_n
    ratio_nlogn = ratio_n * math.log(large_n) / math.log(small_n)
    print(f"\n{'operation':<30}{'n=' + format(small_n, ','):>14}{'n=' + format(large_n, ','):>16}{'ratio':>9}")
    for key in small:
        (a, _), (b, scaled) = small[key], large[key]
        mark = "*" if scaled else " "
        print(f"{key:<30}{a * 1e3:>11.2f} ms{b:>13.3f} s{mark}{b / a:>8.0f}x")
    print(f"\nlinear scaling would be {ratio_n:.0f}x, n log n {ratio_nlogn:.0f}x.")
    print(f"* per-replicate bootstrap timed on {loop_reps} replicates at n={large_n:,} and scaled to 1,000.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--scaling", action="store_true", help="also print the n = 4,000 vs 1e6 table")
    parser.add_argument("--small", type=int, default=4_000)
    parser.add_argument("--loop-reps", type=int, default=20)
    parser.add_argument("--cell-n", type=int, default=2060, help="units of the matching / stratified bootstrap table")
    parser.add_argument("--rounds", type=int, default=15, help="alternated rounds of each estimator against numpy")
    parser.add_argument("--only-numpy", action="store_true", help="print the table against numpy only")
    args = parser.parse_args()
    if args.only_numpy:
        versus_numpy(args.sizes, args.rounds)
        return
    count_bootstraps(args.cell_n, args.n_boot)
    versus_numpy(args.sizes, args.rounds)
    bootstraps(max(args.sizes), args.n_boot)
    if args.scaling:
        scaling(args.small, max(args.sizes), args.loop_reps)


if __name__ == "__main__":
    main()

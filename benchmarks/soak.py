#!/usr/bin/env python
"""Soak test of the benchmark store: workers SIGKILLed at random while a grid runs, then every row checked.

    python benchmarks/soak.py                         # the smoke grid, 2 workers, 10 minutes of kills
    python benchmarks/soak.py --minutes 3 --models oracle unadjusted lr_bigram_binary

1. A clean run of the grid (``textcause benchmark --workers 2``) into ``<work>/clean``: the reference.
2. The soak, in rounds (``<work>/soak-<k>``, a fresh SQLite database each) until ``--minutes`` have
   passed (bounded: it stops by itself): ``--workers`` worker processes (``python -m
   textcause.grid.worker``, what ``textcause benchmark`` starts); a driver SIGKILLs a random live
   worker every 2-``--max-gap`` seconds and starts a new one in its place until the grid is done.
3. Checks: every cell ``ok`` exactly once, no failed cell, one row per (cell, estimator), and every
   row identical to the clean run's, timings, hosts, attempts and run folders aside.

Prints, per round, the kills, the cells taken over after a kill, and PASS or FAIL with the first
differences; exit code 0 only when every round passes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _smoke import smoke_subset

IGNORED = {
    "id", "code_version", "host", "started_at", "finished_at", "train_seconds", "eval_seconds", "run", "attempt",
}  # fmt: skip


def _rows(db: Path):
    import pandas as pd

    with sqlite3.connect(db) as con:
        df = pd.read_sql("SELECT * FROM results", con)
    cols = sorted(c for c in df.columns if c not in IGNORED)
    return df[cols].sort_values(["cell_id", "estimator"]).reset_index(drop=True)


def _worker(config: Path, url: str, out: Path, heartbeat: int, log) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "textcause.grid.worker", "--config", str(config), "--db", url, "--out", str(out),
           "--threads", "1", "--heartbeat", str(heartbeat)]  # fmt: skip
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long the driver kills workers")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-gap", type=float, default=20.0, help="longest pause between two kills (s)")
    parser.add_argument("--models", nargs="+", default=None, help="a subset of the smoke grid's models")
    parser.add_argument("--seed", type=int, default=0, help="the driver's choices (which worker, when)")
    parser.add_argument("--heartbeat", type=int, default=2, help="worker heartbeat interval (s)")
    args = parser.parse_args(argv)

    from textcause.cli.benchmark import benchmark_main
    from textcause.grid.spec import load_grid

    work = Path(tempfile.mkdtemp(prefix="soak-"))
    config = smoke_subset(args.models, work, "soak")
    grid = load_grid(config)
    print(f"{len(grid.cells)} cells; work folder {work}", flush=True)

    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = benchmark_main(["--config", str(config), "--out", str(work / "clean"), "--workers", "2"])
    if code != 0:
        print(f"FAIL: the clean run exited with code {code}; see {work / 'clean'}")
        return 1
    print(f"clean run: {time.perf_counter() - t0:.0f} s", flush=True)

    clean = _rows(work / "clean" / "results.db")
    rng = random.Random(args.seed)
    t1 = time.perf_counter()
    deadline = t1 + 60 * args.minutes
    rounds, total_kills, failures = 0, 0, 0
    while rounds == 0 or time.perf_counter() < deadline:  # fresh rounds until the kills have lasted long enough
        rounds += 1
        kills, problems = _soak_round(grid, config, work / f"soak-{rounds}", clean, rng, deadline, args)
        total_kills += kills
        failures += bool(problems)
        print(
            f"round {rounds}: {kills} SIGKILLs; " + ("PASS" if not problems else "FAIL:\n  " + "\n  ".join(problems)),
            flush=True,
        )
    print(
        f"\nsoak: {time.perf_counter() - t1:.0f} s, {rounds} round(s) of the {len(grid.cells)}-cell grid, "
        f"{total_kills} SIGKILLs in all; {rounds - failures} of {rounds} rounds PASS"
    )
    return 0 if failures == 0 else 1


def _soak_round(
    grid, config: Path, out: Path, clean, rng: random.Random, deadline: float, args
) -> tuple[int, list[str]]:
    """One run of the grid into ``out`` with workers SIGKILLed at random until it is done; its problems."""
    from textcause import store
    from textcause.grid.worker import GRACE_FACTOR, open_study

    url = store.default_url(out)
    engine = store.open_store(url)
    open_study(grid, url, create=True, heartbeat_interval=args.heartbeat, grace_period=GRACE_FACTOR * args.heartbeat)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    log = open(out / "logs" / "workers.log", "a", encoding="utf-8")  # noqa: SIM115 - closed below
    workers = [_worker(config, url, out, args.heartbeat, log) for _ in range(args.workers)]
    kills = 0

    def finished() -> bool:
        rows = store.ledger(engine, grid.name)
        return len(rows) == len(grid.cells) and all(r.status in ("ok", "failed") for r in rows.values())

    while time.perf_counter() < deadline and not finished():
        time.sleep(rng.uniform(2.0, args.max_gap))
        alive = [w for w in workers if w.poll() is None]
        if not alive or finished():
            break
        victim = rng.choice(alive)
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        kills += 1
        workers[workers.index(victim)] = _worker(config, url, out, args.heartbeat, log)
    for w in workers:
        w.wait()
    log.close()
    if not finished():  # the last workers may have exited while a killed worker's cell awaited takeover
        _worker(config, url, out, args.heartbeat, subprocess.DEVNULL).wait()

    problems = []
    ledger = store.ledger(engine, grid.name)
    bad = {k: r.status for k, r in ledger.items() if r.status != "ok"}
    if len(ledger) != len(grid.cells) or bad:
        problems.append(
            f"{len(ledger)} of {len(grid.cells)} cells in the ledger; not ok: {dict(list(bad.items())[:5])}"
        )
    soaked = _rows(out / "results.db")
    if soaked.duplicated(["cell_id", "estimator"]).any():
        problems.append("a (cell, estimator) row appears twice")
    if len(clean) != len(soaked):
        problems.append(f"{len(soaked)} rows after the soak, {len(clean)} in the clean run")
    else:
        diff = ~((clean == soaked) | (clean.isna() & soaked.isna()))
        for i in list(diff.index[diff.any(axis=1)])[:5]:
            cols = [c for c in clean.columns if diff.loc[i, c]]
            problems.append(f"{clean.loc[i, 'cell_id']} {clean.loc[i, 'estimator']} differs in {cols}")
    retried = sum(r.attempts > 1 for r in ledger.values())
    print(
        f"  {kills} kills, {retried} cells taken over after a kill (most attempts "
        f"{max((r.attempts for r in ledger.values()), default=0)})",
        flush=True,
    )
    return kills, problems


if __name__ == "__main__":
    raise SystemExit(main())

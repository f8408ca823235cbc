#!/usr/bin/env python
"""Soak test of the benchmark store: SIGKILL the processes that hold cells, then check every row.

    python benchmarks/soak.py                                  # configs/benchmark/soak.yaml, 2 workers x 1 thread
    python benchmarks/soak.py --config configs/benchmark/smoke.yaml --min-takeovers 8

1. The soak: ``textcause benchmark --config C --out <work>/soak --workers 2 --threads 1``, run as a
   user would. A driver reads the ``cells`` ledger every 0.2 s; for a claim it sees ``running``
   (``--kill-share`` of them, each at most twice a cell) it waits a moment, so the kill lands
   mid-cell, then SIGKILLs the worker process that holds it (the ledger's ``pid``, checked to be a
   descendant of the command) or, ``--runner-share`` of the time, the command itself (its fork
   server and workers die with it). Whenever the command has exited with the grid unfinished, the
   driver starts the same command again. Kills stop once ``--min-takeovers`` + 2 cells lost a claim.
2. The same command once more: it must find nothing to run (exit 0, no new claim).
3. A clean run of the grid into ``<work>/clean`` (no kills), the reference.
4. Checks: every cell ``ok``; every lost attempt in the ledger (``attempts - 1``) is a claim the
   driver killed; every killed claim was finished later by another process (a takeover: the
   cell's final token differs); one row per (cell, estimator) and every row identical to the clean
   run's (every column but timings, host, attempt, run folder and code version).

Prints the kills of workers holding cells, the kills of the command, the takeovers, the cells, the
rows compared and the rows identical; exit code 0 only when every check passes and at least
``--min-takeovers`` cells were taken over.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
__all__ = ["Claim", "RowComparison", "compare_rows", "ledger_problems", "read_ledger", "takeovers"]

IGNORED = {
    "id", "code_version", "host", "started_at", "finished_at", "train_seconds", "eval_seconds", "run", "attempt",
}  # fmt: skip  # bookkeeping of a results row: everything else must be identical to the clean run's
KEY = ["cell_id", "estimator"]


# ---------------------------------------------------------------------------------------- counting
@dataclass(frozen=True)
class Claim:
    """A claim of a cell (its ledger ``token``) held by a process when the driver killed it."""

    cell_id: str
    token: str
    pid: int
    by: str  # "worker": its worker was killed; "runner": the command was killed, its workers with it


@dataclass(frozen=True)
class LedgerRow:
    """The ledger columns the soak reads (``cells`` table)."""

    cell_id: str
    status: str
    token: str
    pid: int | None
    attempts: int


def read_ledger(db: Path) -> dict[str, LedgerRow]:
    """Every row of the ``cells`` table of the SQLite database ``db``, by cell id (read-only; {} before it exists)."""
    if not db.exists():
        return {}
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as con:
            found = con.execute("SELECT cell_id, status, token, pid, attempts FROM cells").fetchall()
    except sqlite3.OperationalError as err:
        if "no such table" in str(err):
            return {}
        raise
    return {r[0]: LedgerRow(*r) for r in found}


def takeovers(killed: Iterable[Claim], final: Mapping[str, LedgerRow]) -> list[Claim]:
    """The killed claims whose cell another process finished later: final status ``ok`` under another token.

    >>> row = LedgerRow("a", "ok", "t2", 7, 2)
    >>> [c.token for c in takeovers([Claim("a", "t1", 5, "worker")], {"a": row})]
    ['t1']
    """
    return [
        c for c in killed if (row := final.get(c.cell_id)) is not None and row.status == "ok" and row.token != c.token
    ]


def ledger_problems(final: Mapping[str, LedgerRow], cell_ids: Iterable[str], killed: Iterable[Claim]) -> list[str]:
    """What is wrong with the soaked ledger: a lost cell, a cell not ``ok`` (a stuck ``running`` one
    included), a killed claim never taken over, or a lost attempt that no kill explains."""
    killed = list(killed)
    problems = []
    missing = sorted(set(cell_ids) - set(final))
    if missing:
        problems.append(f"{len(missing)} cells never claimed, e.g. {missing[0]}")
    bad = {k: r.status for k, r in sorted(final.items()) if r.status != "ok"}
    if bad:
        problems.append(f"{len(bad)} cells not ok: {dict(list(bad.items())[:3])}")
    taken = {(c.cell_id, c.token) for c in takeovers(killed, final)}
    left = [c for c in killed if (c.cell_id, c.token) not in taken]
    if left:
        problems.append(f"{len(left)} killed claims never taken over, e.g. {left[0].cell_id} ({left[0].by} kill)")
    for cell_id, row in sorted(final.items()):
        n_killed = sum(c.cell_id == cell_id for c in killed)
        if row.attempts - 1 != n_killed:
            problems.append(
                f"{cell_id}: {row.attempts} attempts but {n_killed} killed claims "
                "(an attempt was lost without a kill, or a kill left no trace)"
            )
    return problems


@dataclass
class RowComparison:
    """Result rows of the soaked run against the clean run's, keyed by (cell, estimator)."""

    compared: int = 0
    identical: int = 0
    problems: list[str] = field(default_factory=list)


def _equal(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return (a is None and b is None) or (a is not None and b is not None and a == b)


def compare_rows(clean: list[dict], soaked: list[dict]) -> RowComparison:
    """Compare every row of ``soaked`` with the clean row of its (cell, estimator), every column but
    :data:`IGNORED`: floats must be identical (NaN equals NaN), not close.

    >>> row = {"cell_id": "c", "estimator": "ipw", "ate": 0.5, "train_seconds": 1.0}
    >>> r = compare_rows([row], [{**row, "train_seconds": 9.0}])
    >>> (r.compared, r.identical, r.problems)
    (1, 1, [])
    """
    out = RowComparison()
    for name, rows in (("clean", clean), ("soaked", soaked)):
        keys = [tuple(r[k] for k in KEY) for r in rows]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            out.problems.append(f"{len(dupes)} (cell, estimator) rows appear twice in the {name} run, e.g. {dupes[0]}")
    ref = {tuple(r[k] for k in KEY): r for r in clean}
    got = {tuple(r[k] for k in KEY): r for r in soaked}
    for side, a, b in (("soaked", ref, got), ("clean", got, ref)):
        absent = sorted(set(a) - set(b))
        if absent:
            out.problems.append(f"{len(absent)} rows missing from the {side} run, e.g. {absent[0]}")
    for key in sorted(set(ref) & set(got)):
        out.compared += 1
        columns = sorted((set(ref[key]) | set(got[key])) - IGNORED)
        differ = [c for c in columns if not _equal(ref[key].get(c), got[key].get(c))]
        if differ:
            out.problems.append(f"{key[0]} {key[1]} differs in {differ[:6]}")
        else:
            out.identical += 1
    return out


def _result_rows(db: Path) -> list[dict]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute("SELECT * FROM results")]


# ---------------------------------------------------------------------------------------- processes
def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, killed and not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _descendants(pid: int) -> set[int]:
    """The live processes below ``pid`` (its fork server, workers, resource tracker), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and _alive(child):
                found.add(child)
                todo.append(child)
    return found


def _wait_dead(pids: Iterable[int], seconds: float) -> set[int]:
    """Wait until every process of ``pids`` has ended; those still alive after ``seconds``."""
    end = time.monotonic() + seconds
    left = {p for p in pids if _alive(p)}
    while left and time.monotonic() < end:
        time.sleep(0.05)
        left = {p for p in left if _alive(p)}
    return left


class Soak:
    """The driver: runs the command, kills holders of cells (or the command), restarts it."""

    def __init__(self, command: list[str], db: Path, log: Path, args: argparse.Namespace) -> None:
        self.command, self.db, self.log, self.args = command, db, log, args
        self.rng = random.Random(args.seed)
        self.killed: dict[tuple[str, str], Claim] = {}
        self.worker_kills = self.missed = self.runner_kills = self.runner_missed = self.starts = 0
        self.problems: list[str] = []
        self.exit_codes: list[int] = []

    def start(self) -> subprocess.Popen:
        self.starts += 1
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(f"\n=== start {self.starts}: {' '.join(self.command)}\n")
            fh.flush()
            return subprocess.Popen(self.command, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT)

    def record(self, by: str, pids: set[int] | None) -> int:
        """The claims the killed processes held (``pids``; None: every running claim): how many."""
        found = 0
        for row in read_ledger(self.db).values():
            if row.status == "running" and (pids is None or row.pid in pids):
                key = (row.cell_id, row.token)
                if key not in self.killed:
                    self.killed[key] = Claim(row.cell_id, row.token, row.pid, by)
                    found += 1
        return found

    def kill_worker(self, runner: subprocess.Popen, pid: int) -> None:
        if pid not in _descendants(runner.pid):  # finished, or not ours: never kill another process
            return
        os.kill(pid, signal.SIGKILL)
        if _wait_dead([pid], 30):
            self.problems.append(f"worker {pid} outlived SIGKILL for 30 s")
        if self.record("worker", {pid}):
            self.worker_kills += 1
        else:
            self.missed += 1  # it had finished its cell between the ledger read and the kill

    def kill_runner(self, runner: subprocess.Popen) -> None:
        below = _descendants(runner.pid)
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait()
        orphans = _wait_dead(below, 30)
        if orphans:
            self.problems.append(f"{len(orphans)} processes outlived the killed command by 30 s: {sorted(orphans)}")
            for pid in orphans:
                os.kill(pid, signal.SIGKILL)
            _wait_dead(orphans, 10)
        holders = {r.pid for r in read_ledger(self.db).values() if r.status == "running" and r.pid is not None}
        _wait_dead(holders, 10)
        if not self.record("runner", None):  # nothing of this run is alive now: every running claim was killed
            self.runner_missed += 1  # its cell finished between the ledger read and the kill
        else:
            self.runner_kills += 1

    def run(self, n_cells: int) -> None:
        target = self.args.min_takeovers + 2  # cells killed while held, then no more kills
        deadline = time.monotonic() + 60 * self.args.timeout_minutes
        seen: set[tuple[str, str]] = set()
        due: dict[tuple[str, str], tuple[float, int]] = {}  # claim -> (when to kill, its holder's pid)
        runner = self.start()
        while True:
            if time.monotonic() > deadline:
                self.problems.append(f"the soak ran past --timeout-minutes {self.args.timeout_minutes}")
                runner.kill()
                runner.wait()
                return
            if runner.poll() is not None:
                self.exit_codes.append(runner.returncode)
                ledger = read_ledger(self.db)
                if len(ledger) == n_cells and all(r.status in ("ok", "failed") for r in ledger.values()):
                    return
                if self.starts > self.args.max_starts:
                    self.problems.append(f"the grid was unfinished after {self.starts} starts of the command")
                    return
                runner, due = self.start(), {}
            now = time.monotonic()
            for row in read_ledger(self.db).values():
                key = (row.cell_id, row.token)
                if row.status != "running" or key in seen or key in self.killed:
                    continue
                seen.add(key)
                earlier = sum(c.cell_id == row.cell_id for c in self.killed.values())
                if earlier < 2 and self.rng.random() < self.args.kill_share:
                    due[key] = (now + self.rng.uniform(0.3, self.args.max_delay), row.pid)
            if len({c for c, _ in self.killed}) < target and runner.poll() is None:
                for key, (when, pid) in sorted(due.items(), key=lambda kv: kv[1][0]):
                    if when > now:
                        continue
                    del due[key]
                    row = read_ledger(self.db).get(key[0])
                    if row is None or (row.cell_id, row.token, row.status) != (*key, "running"):
                        continue  # finished before its kill was due
                    if self.rng.random() < self.args.runner_share:
                        self.kill_runner(runner)
                    else:
                        self.kill_worker(runner, pid)
                    break  # one kill a round: read the ledger again first
            time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(ROOT / "configs" / "benchmark" / "soak.yaml"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--min-takeovers", type=int, default=5, help="fail with fewer cells taken over")
    parser.add_argument("--kill-share", type=float, default=0.7, help="share of claims the driver kills")
    parser.add_argument("--runner-share", type=float, default=0.3, help="share of kills aimed at the command")
    parser.add_argument("--max-delay", type=float, default=1.5, help="longest wait after a claim is seen (s)")
    parser.add_argument("--seed", type=int, default=0, help="the driver's choices (which claim, when, whom)")
    parser.add_argument("--max-starts", type=int, default=40, help="starts of the command before giving up")
    parser.add_argument("--timeout-minutes", type=float, default=45.0)
    parser.add_argument("--work", default=None, help="the work folder (default: a new temporary folder)")
    args = parser.parse_args(argv)

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(name, "1")
    os.environ.setdefault("WANDB_MODE", "offline")
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="soak-"))
    work.mkdir(parents=True, exist_ok=True)

    def command(folder: str) -> list[str]:
        return [sys.executable, "-m", "textcause", "benchmark", "--config", str(Path(args.config).resolve()),
                "--out", str(work / folder), "--workers", str(args.workers), "--threads", str(args.threads)]  # fmt: skip

    sys.path.insert(0, str(ROOT))
    from textcause.grid.spec import load_grid

    cell_ids = [c.cell_id for c in load_grid(args.config).cells]
    print(f"{len(cell_ids)} cells of {args.config}; work folder {work}", flush=True)
    db, t0 = work / "soak" / "results.db", time.perf_counter()
    soak = Soak(command("soak"), db, work / "soak.log", args)
    soak.run(len(cell_ids))
    print(f"soak: {time.perf_counter() - t0:.0f} s, {soak.starts} starts of the command", flush=True)
    problems = list(soak.problems)

    before = read_ledger(db)
    again = subprocess.run(command("soak"), cwd=ROOT, capture_output=True, text=True)
    unchanged = read_ledger(db) == before
    print(f"the command once more: exit {again.returncode}, ledger {'unchanged' if unchanged else 'CHANGED'}")
    if again.returncode != 0 or not unchanged:
        problems.append(f"the command run once more exited {again.returncode} or changed the ledger")
    t1 = time.perf_counter()
    with open(work / "clean.log", "w", encoding="utf-8") as fh:
        clean_code = subprocess.run(command("clean"), cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT).returncode
    print(f"clean run: {time.perf_counter() - t1:.0f} s, exit {clean_code}", flush=True)
    if clean_code != 0:
        problems.append(f"the clean run exited {clean_code}; see {work / 'clean.log'}")

    final = read_ledger(db)
    killed = list(soak.killed.values())
    taken = takeovers(killed, final)
    problems += ledger_problems(final, cell_ids, killed)
    rows = compare_rows(_result_rows(work / "clean" / "results.db"), _result_rows(db))
    problems += rows.problems
    cells_taken = len({c.cell_id for c in taken})
    if cells_taken < args.min_takeovers:
        problems.append(f"{cells_taken} cells taken over, fewer than --min-takeovers {args.min_takeovers}")
    print(
        f"\nkills of workers holding cells: {soak.worker_kills} (and {soak.missed} that came after the cell finished)\n"
        f"kills of the runner: {soak.runner_kills} while its workers held cells (claims lost with it: "
        f"{sum(c.by == 'runner' for c in killed)}; and {soak.runner_missed} after the cell finished)\n"
        f"takeovers: {len(taken)} killed claims finished by another process, on {cells_taken} cells\n"
        f"cells: {len(cell_ids)} ({sum(r.status == 'ok' for r in final.values())} ok, "
        f"{sum(r.attempts > 1 for r in final.values())} with attempts > 1, most attempts "
        f"{max((r.attempts for r in final.values()), default=0)}); exit codes of the soaked command: {soak.exit_codes}\n"
        f"rows compared: {rows.compared}\nrows identical: {rows.identical}"
    )
    print("PASS" if not problems else "FAIL:\n  " + "\n  ".join(problems[:20]))
    return 0 if not problems else 1


if __name__ == "__main__":
    raise SystemExit(main())

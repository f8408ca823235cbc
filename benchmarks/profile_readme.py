"""Time every command a README section runs, cold and warm, and print the table of issue 46.

Cold is an empty cache root (``TEXTCAUSE_CACHE`` pointed at a fresh temporary folder, so every
corpus memo, feature and embedding cache is built again); warm is the same command rerun on the
cache the cold run filled, into a fresh output folder. Each row gives wall seconds, CPU seconds
(user + sys of the command and every process it waited for, from ``wait4``), the peak resident
memory of the largest process, and the 1-minute load average before and after. On a shared machine
the CPU seconds are the comparable figure; wall seconds grow with the load.

Usage (from the checkout root)::

    python benchmarks/profile_readme.py                      # every command, cold then warm
    python benchmarks/profile_readme.py --only cfr_blogs --warm
    python benchmarks/profile_readme.py --cold --skip-long   # advise and benchmark are timed warm only
    python benchmarks/profile_readme.py --profile prof/      # also write one cProfile file per run

Commands that depend on another's output (evaluate and predict on the fitted run, compare and
report on the benchmark's database) run it first, untimed, when it is missing from the work folder.
Three commands are capped so that a row takes minutes, not an hour: the gender experiment runs one
strength x one seed, and the fine-tunes stop after ``--steps`` optimiser steps (the README's full runs
take 12 fine-tunes, and 1,038 steps for SemEval); the table says so.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


@dataclass(frozen=True)
class Command:
    name: str
    argv: Callable[[Path, Path, int], list[str]]  # (work folder, out folder, steps) -> argv
    needs: str | None = None  # another command whose output this one reads
    long: bool = False  # over ~10 minutes cold on 2 shared cores
    note: str = ""


def _tm(*args: str) -> list[str]:
    return [PY, "-m", "textcause", *args]


def _new_users(work: Path) -> str:
    path = work / "new_users.jsonl"
    if not path.exists():
        src = Path(os.environ.get("TEXTCAUSE_DATA", ROOT.parent / "shared" / "data"))
        with gzip.open(src / "pan19-twitter-histories.jsonl.gz", "rt") as f:
            lines = [next(f) for _ in range(200)]
        path.write_text("".join(lines))
    return str(path)


def _gender_small(work: Path, steps: int) -> str:
    path = work / "selection_small.yaml"
    text = (ROOT / "configs" / "gender" / "selection.yaml").read_text()
    text = text.replace("strengths: [1.0, 0.67, 0.33, 0.0]", "strengths: [1.0]")
    text = text.replace("seeds: [0, 1, 2]", "seeds: [0]")
    text = text.replace("overrides: {}", f"overrides: {{trainer.max_steps: {steps}}}")
    path.write_text(text)
    return str(path)


def _fit_run(work: Path) -> str:
    return str(work / "fit" / "textcause" / "version_0")


def _gender_ckpt(work: Path) -> str:
    found = sorted((work / "finetune").glob("**/checkpoints/best-*.ckpt"))
    return str(found[0]) if found else "MISSING"


COMMANDS = [
    Command(
        "fit",
        lambda w, o, s: [
            PY,
            "train.py",
            "fit",
            "--config",
            "configs/model/lr_bigram_binary.yaml",
            "--trainer.default_root_dir",
            str(w / "fit"),
            "--trainer.enable_progress_bar",
            "false",
        ],
    ),
    Command("evaluate", lambda w, o, s: [PY, "evaluate.py", _fit_run(w)], needs="fit"),
    Command(
        "predict",
        lambda w, o, s: _tm("predict", _fit_run(w), "--corpus", _new_users(w), "--out", str(o / "p.csv")),
        needs="fit",
        note="200 Twitter users",
    ),
    Command(
        "benchmark_smoke",
        lambda w, o, s: _tm(
            "benchmark",
            "--config",
            "configs/benchmark/smoke.yaml",
            "--workers",
            "2",
            "--out",
            str(w / "bench" if o.name == "setup" else o),
        ),
        long=True,
    ),
    Command(
        "compare",
        lambda w, o, s: _tm("compare", "--db", str(w / "bench" / "results.db"), "lr_bigram_binary", "order_count"),
        needs="benchmark_smoke",
    ),
    Command(
        "report",
        lambda w, o, s: _tm("report", "--db", str(w / "bench" / "results.db"), "--out", str(o)),
        needs="benchmark_smoke",
    ),
    Command(
        "sweep_smoke", lambda w, o, s: _tm("sweep", "--config", "configs/sweeps/sherbert_smoke.yaml", "--out", str(o))
    ),
    Command(
        "observe",
        lambda w, o, s: _tm("observe", "--config", "configs/observational/twitter_gender.yaml", "--out", str(o)),
    ),
    Command(
        "advise_reddit",
        lambda w, o, s: _tm("advise", "--config", "configs/advise/reddit_drunk.yaml", "--out", str(o)),
        long=True,
    ),
    Command(
        "gender_finetune",
        lambda w, o, s: _tm(
            "gender",
            "finetune",
            "--config",
            "configs/gender/finetune_age.yaml",
            "--trainer.max_steps",
            str(s),
            "--trainer.default_root_dir",
            str(w / "finetune" if o.name == "setup" else o),
            "--trainer.enable_progress_bar",
            "false",
        ),
        note="capped at --steps",
    ),
    Command(
        "gender_probe",
        lambda w, o, s: _tm(
            "gender", "probe", "--model", _gender_ckpt(w), "--w", "years", "--out", str(o), "--no-progress"
        ),
        needs="gender_finetune",
    ),
    Command(
        "gender_experiment",
        lambda w, o, s: _tm("gender", "experiment", "--config", _gender_small(w, s), "--out", str(o)),
        note="1 strength x 1 seed, capped at --steps",
    ),
    Command(
        "semeval_finetune",
        lambda w, o, s: [
            PY,
            "train.py",
            "fit",
            "--config",
            "configs/counterfactual/subtask1_minilm.yaml",
            "--trainer.max_steps",
            str(s),
            "--trainer.default_root_dir",
            str(o),
            "--trainer.enable_progress_bar",
            "false",
        ],
        note="capped at --steps",
    ),
    Command("counterfactual_svm", lambda w, o, s: _tm("counterfactual", "baseline", "--model", "svm", "--out", str(o))),
    Command(
        "cfr_blogs", lambda w, o, s: _tm("cfr", "--config", "configs/cfr/blogs.yaml", "--out", str(o), "--no-progress")
    ),
    Command(
        "cfr_templates_label",
        lambda w, o, s: _tm("cfr", "--config", "configs/cfr/templates_label.yaml", "--out", str(o), "--no-progress"),
    ),
]
BY_NAME = {c.name: c for c in COMMANDS}


@dataclass
class Timing:
    wall: float
    cpu: float
    rss_mb: float
    load: tuple[float, float]
    rc: int


def run(argv: list[str], env: dict[str, str], log: Path, profile: Path | None = None) -> Timing:
    """Run ``argv`` under ``nice``; wall, CPU (user + sys, waited-for children included) and peak RSS."""
    if profile is not None and argv[0] == PY:
        argv = [PY, "-m", "cProfile", "-o", str(profile), *argv[1:]]
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(["nice", "-n", "10", *argv], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Timing(wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, (load0, os.getloadavg()[0]), proc.returncode)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", choices=sorted(BY_NAME), help="this command (repeatable)")
    phase = parser.add_mutually_exclusive_group()
    phase.add_argument("--cold", action="store_true", help="cold runs only")
    phase.add_argument("--warm", action="store_true", help="warm runs only (the cache is filled first, untimed)")
    parser.add_argument("--skip-long", action="store_true", help="time advise and benchmark warm only")
    parser.add_argument("--steps", type=int, default=20, help="optimiser steps of the capped fine-tunes")
    parser.add_argument("--work", type=Path, default=None, help="work folder (default: a temporary one)")
    parser.add_argument("--cache", type=Path, default=None, help="cache root (default: <work>/cache, emptied for cold)")
    parser.add_argument("--no-fill", action="store_true", help="warm only: trust --cache to be warm already")
    parser.add_argument("--profile", type=Path, default=None, help="write <dir>/<name>-<phase>.prof (cProfile)")
    args = parser.parse_args(argv)

    work = args.work or Path(tempfile.mkdtemp(prefix="textcause-profile-"))
    work.mkdir(parents=True, exist_ok=True)
    cache = args.cache or work / "cache"
    env = dict(
        os.environ,
        TEXTCAUSE_CACHE=str(cache),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        WANDB_MODE="offline",
        OMP_WAIT_POLICY="PASSIVE",
        PYTHONUNBUFFERED="1",
    )
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    names = args.only or [c.name for c in COMMANDS]
    phases = ["cold"] * (not args.warm) + ["warm"] * (not args.cold)
    rows = []
    print(f"work folder {work}, cache root {cache}, {os.cpu_count()} CPUs", flush=True)
    for name in names:
        cmd = BY_NAME[name]
        if cmd.needs and not (work / f"{cmd.needs}.done").exists():
            dep = BY_NAME[cmd.needs]
            t = run(dep.argv(work, work / "setup", args.steps), env, work / f"{dep.name}-setup.log")
            print(
                f"[{name}] first {dep.name} (setup, not in the table): wall {t.wall:.1f} s, CPU {t.cpu:.1f} s",
                flush=True,
            )
            (work / f"{dep.name}.done").touch()
        row = {"name": name, "note": cmd.note}
        for ph in phases:
            if ph == "cold" and cmd.long and args.skip_long:
                row["cold"] = None
                continue
            if ph == "cold":
                shutil.rmtree(cache, ignore_errors=True)
            elif "cold" not in row and not args.no_fill:
                run(cmd.argv(work, work / f"{name}-fill", args.steps), env, work / f"{name}-fill.log")
            out = work / f"{name}-{ph}"
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            prof = args.profile / f"{name}-{ph}.prof" if args.profile else None
            t = run(cmd.argv(work, out, args.steps), env, work / f"{name}-{ph}.log", prof)
            row[ph] = t
            status = "" if t.rc == 0 else f" FAILED rc={t.rc}, see {work / f'{name}-{ph}.log'}"
            print(
                f"[{name}] {ph}: wall {t.wall:.1f} s, CPU {t.cpu:.1f} s, peak RSS {t.rss_mb:.0f} MB, "
                f"load {t.load[0]:.1f}->{t.load[1]:.1f}{status}",
                flush=True,
            )
        rows.append(row)

    def cell(t: Timing | None) -> str:
        return "-" if t is None else f"{t.wall:.1f} / {t.cpu:.1f}" + ("" if t.rc == 0 else " (failed)")

    def peak(row: dict) -> str:
        ts = [t for t in (row.get("cold"), row.get("warm")) if t is not None]
        return f"{max(t.rss_mb for t in ts):.0f}" if ts else "-"

    def load(row: dict) -> str:
        ts = [t for t in (row.get("cold"), row.get("warm")) if t is not None]
        return ", ".join(f"{t.load[0]:.1f}" for t in ts)

    print("\n| command | cold wall / CPU s | warm wall / CPU s | peak RSS MB | load (1 min) | note |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['name']} | {cell(row.get('cold'))} | {cell(row.get('warm'))} | {peak(row)} | {load(row)} | {row['note']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

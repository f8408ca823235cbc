#!/usr/bin/env python
"""A whole ``train.py fit`` of logistic regression, and what its process start and end cost.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_startup.py [--rounds 3] [--config configs/model/lr_bigram_binary.yaml]

Each measurement is a fresh process, timed from outside (what a user waits for), run alternately
round after round, each in a temporary folder of its own so that runs do not share a
``runs/textcause/version_N`` (the features are warm: they come from the cache root):

- ``train.py``: ``train.py fit --config CONFIG`` as it is (:mod:`textcause.startup`: imports with
  the garbage collector paused and then frozen, a collection then a freeze at exit);
- ``train.py before``: the same command through the entry point as it was before
  (``friendly_errors(make_cli)`` after plain imports, Python's own exit), run with ``python -c``;
- ``import lightning`` alone, plainly and inside :func:`textcause.startup.imports` with
  :func:`textcause.startup.quick_exit`, and with ``os._exit(0)`` after it (no teardown at all:
  how much of a process's life its exit is).

One untimed ``train.py`` run comes first (it writes the bytecode of textcause's modules, and caches
the corpus and the features if they are not yet), and every command runs with Python's bytecode
writing on (PYTHONDONTWRITEBYTECODE removed from its environment), as a user's second run has it.

With ``--baseline-tree DIR`` (another checkout, e.g. a ``git archive`` snapshot of an earlier
commit), that tree's own ``train.py`` is one more command of every round (after an untimed
warm-up run of its own), so the two trees are timed alternately on the same machine state.

Prints the median and the best of each, the ratio, and whether the ``train.py`` runs of every
round saved the same weights (every tensor of ``last.ckpt`` equal) and the same ``metrics.csv``.
Issue 18's target: a whole ``train.py fit`` of LR under 5 s with warm features.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_BEFORE = (
    "import sys; sys.argv = ['train.py', *sys.argv[1:]]\n"
    "from textcause.cli.errors import friendly_errors\n"
    "from textcause.run.lightning_cli import make_cli\n"
    "sys.exit(friendly_errors(lambda: make_cli()))\n"
)
_IMPORTS = {
    "import lightning": "import lightning",
    "import lightning, textcause.startup": (
        "from textcause import startup\nstartup.quick_exit()\nwith startup.imports():\n    import lightning"
    ),
    "import lightning, os._exit": "import lightning, os; os._exit(0)",
}


#: What a user's Python does: write the bytecode of the modules it compiles (``__pycache__``), so
#: that the next process reads it instead of compiling textcause's sources again. A shell with
#: PYTHONDONTWRITEBYTECODE set (as this project's sandboxes have) would otherwise time the
#: compilation of every textcause module in every run (about 0.3 s of a ``train.py fit`` here).
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=_ENV)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited with {done.returncode}:\n{done.stderr[-2000:]}")
    return seconds


def _same_run(a: Path, b: Path) -> bool:
    import torch

    (run_a,), (run_b,) = (list((d / "runs" / "textcause").glob("version_*")) for d in (a, b))
    if (run_a / "metrics.csv").read_bytes() != (run_b / "metrics.csv").read_bytes():
        return False
    sa, sb = (torch.load(r / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"] for r in (run_a, run_b))
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--config", default="configs/model/lr_bigram_binary.yaml")
    parser.add_argument(
        "--baseline-tree",
        type=Path,
        default=None,
        help="another checkout (e.g. a `git archive` snapshot of an earlier commit): its train.py is timed too, alternately",
    )
    args = parser.parse_args(argv)
    config = str((ROOT / args.config).resolve())
    python = sys.executable
    commands = {
        "train.py": [python, str(ROOT / "train.py"), "fit", "--config", config],
        "train.py before": [python, "-c", _BEFORE, "fit", "--config", config],
        **{name: [python, "-c", code] for name, code in _IMPORTS.items()},
    }
    if args.baseline_tree is not None:
        tree = args.baseline_tree.resolve()
        if not (tree / "train.py").is_file():
            raise SystemExit(f"--baseline-tree {tree} has no train.py: give the root of a textcause checkout.")
        # its own train.py first on sys.path, so its own textcause package is the one imported
        commands["train.py (baseline tree)"] = [
            python,
            str(tree / "train.py"),
            "fit",
            "--config",
            str(tree / args.config),
        ]
    times: dict[str, list[float]] = {name: [] for name in commands}
    same = []
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        warm = Path(tmp) / "warm-up"
        warm.mkdir()
        seconds = _timed(commands["train.py"], warm)  # bytecode written, corpus and features cached
        print(f"warm-up (untimed): train.py: {seconds:.2f} s", flush=True)
        if args.baseline_tree is not None:  # the other tree's bytecode too
            (Path(tmp) / "warm-up-baseline").mkdir()
            seconds = _timed(commands["train.py (baseline tree)"], Path(tmp) / "warm-up-baseline")
            print(f"warm-up (untimed): train.py (baseline tree): {seconds:.2f} s", flush=True)
        for r in range(args.rounds):
            folders = {}
            for name, cmd in commands.items():
                folders[name] = Path(tmp) / f"{r}-{len(folders)}"
                folders[name].mkdir()
                times[name].append(_timed(cmd, folders[name]))
                print(f"round {r + 1}: {name}: {times[name][-1]:.2f} s", flush=True)
            same.append(_same_run(folders["train.py"], folders["train.py before"]))
            if args.baseline_tree is not None:
                same.append(_same_run(folders["train.py"], folders["train.py (baseline tree)"]))
    print(f"\n{args.rounds} rounds, alternately; each a fresh process timed from outside\n")
    print("| command | median s | best s |")
    print("|---|---|---|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts):.2f} | {min(ts):.2f} |")
    new, old = statistics.median(times["train.py"]), statistics.median(times["train.py before"])
    print(
        f"\ntrain.py fit: {old:.2f} s before -> {new:.2f} s ({old / new:.2f}x); target under 5 s: "
        f"{'met' if new < 5 else 'NOT met'}"
    )
    if args.baseline_tree is not None:
        base = statistics.median(times["train.py (baseline tree)"])
        print(f"train.py fit of {args.baseline_tree}: {base:.2f} s -> this tree's {new:.2f} s ({base / new:.2f}x)")
    print(f"same weights and metrics.csv in {sum(same)} of {len(same)} comparisons")
    return 0 if all(same) else 1


if __name__ == "__main__":
    raise SystemExit(main())

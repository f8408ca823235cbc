"""``textcause sweep``: run a wandb-format sweep offline on Optuna, resumable, shareable.

    textcause sweep --config configs/sweeps/sherbert_smoke.yaml                # every grid point, SQLite
    textcause sweep --config configs/sweeps/lr_penalty.yaml --trials 20        # 20 trials (rerun: resume)
    textcause sweep --config configs/sweeps/lr_penalty.yaml --trials 20 --storage postgresql://host/db
    textcause sweep --config configs/sweeps/sherbert_smoke.yaml --summary      # the best trial, its config

Trials go to <out>/trials/<number>/ (default out: runs/sweeps/<name>), each a train.py run folder
with a CSV log and an offline wandb run (WANDB_MODE=online to upload; never by default). The same
command on several machines with one --storage URL shares the sweep. The same YAML runs on a W&B
server with `wandb sweep` + `wandb agent`. See docs/sweeps.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from textcause.cli.parsing import CommandParser

__all__ = [
    "build_parser",
    "progress",
    "summary",
    "sweep_main",
]


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an int >= 1. Got {text!r} instead")
    return value


def build_parser() -> CommandParser:
    """The command's arguments (imports nothing heavy: ``--help`` stays fast)."""
    parser = CommandParser(prog="textcause sweep", description=__doc__)
    parser.add_argument("--config", required=True, help="a sweep YAML in wandb's format (configs/sweeps/*.yaml)")
    parser.add_argument(
        "--trials", type=_positive, default=None, help="trials the sweep holds (default: run_cap, or a grid's size)"
    )
    parser.add_argument(
        "--storage", default=None, help="a SQLAlchemy URL shared by the workers (default: sqlite:///<out>/sweep.db)"
    )
    parser.add_argument("--out", default=None, help="trial folders go to <out>/trials/ (default: runs/sweeps/<name>)")
    parser.add_argument("--summary", action="store_true", help="print the best trial and its config; run nothing")
    parser.add_argument("--seed", type=int, default=0, help="the samplers' seed (another seed is another sweep)")
    parser.add_argument("--heartbeat", type=_positive, default=None, help=argparse.SUPPRESS)
    return parser


def _short(params: dict[str, Any]) -> str:
    return " ".join(
        f"{k.rsplit('.', 1)[-1]}={v:.4g}" if isinstance(v, float) else f"{k.rsplit('.', 1)[-1]}={v}"
        for k, v in params.items()
    )


def progress(sweep: Any, n: int, echo: Callable[[str], None] = print) -> Callable[[Any, Any], None]:
    """A line per finished trial: its state, value, time and values, the best so far, the count."""
    from optuna.storages import RetryHeartbeatStaleTrialCallback
    from optuna.trial import TrialState

    from textcause.sweep.runner import best_trial, n_finished

    label = sweep.objective.label

    def line(study: Any, trial: Any) -> None:
        steps = trial.intermediate_values
        value = trial.value if trial.value is not None else (steps[max(steps)] if steps else None)
        shown = f"{label} {value:.4g}" if value is not None else f"{label} -"
        extra = ""
        retry = RetryHeartbeatStaleTrialCallback.retried_trial_number(trial)
        if retry is not None:
            extra += f" (retry of trial {retry})"
        if trial.state == TrialState.PRUNED and steps:
            extra += f" at epoch {max(steps)}"
        if trial.state == TrialState.FAIL:
            why = trial.user_attrs.get("error") or trial.user_attrs.get("refused") or "interrupted"
            extra += f": {why[:200]}"
        seconds = trial.user_attrs.get("seconds")
        took = f" ({seconds:.1f} s)" if seconds is not None else ""
        best = best_trial(study)
        best_text = f"best: trial {best.number} {label} {best.value:.4g}" if best else "best: none yet"
        echo(
            f"trial {trial.number} {trial.state.name.lower()}{extra}  {shown}{took}  {_short(trial.params)}  |  "
            f"{best_text}  |  {n_finished(study)}/{n} done"
        )

    return line


def command_line(sweep: Any, params: dict[str, Any]) -> list[str]:
    """The train.py options of a trial: its configs, the command's options, the constants and its values."""
    from textcause.paths import PROJECT_ROOT

    def shown(path: Path) -> str:
        try:
            return str(Path(path).resolve().relative_to(PROJECT_ROOT))
        except ValueError:
            return str(path)

    options = [f"--config {shown(p)}" for p in sweep.configs]
    return options + [f"--{k}={v}" for k, v in sweep.options(params).items()]


def summary(sweep: Any, study: Any, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Print the sweep's trials, the best one, its value and its config (the dotted options)."""
    from optuna.trial import TrialState

    from textcause.sweep.runner import best_trial, n_finished

    trials = [t for t in study.get_trials(deepcopy=False) if "surplus" not in t.user_attrs]
    states = {s: sum(t.state == s for t in trials) for s in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)}
    counts = ", ".join(f"{n} {s.name.lower().replace('fail', 'failed')}" for s, n in states.items())
    echo(
        f"sweep {sweep.name} ({sweep.method}, metric {sweep.objective.label}, {sweep.goal}): "
        f"{n_finished(study)} trials finished ({counts})"
    )
    if sweep.objective.oracle:
        echo(
            "ORACLE objective: it uses the truth (true ATE / propensities) that only a simulation has; a model "
            "selected on it is not a tuned model a real study could have chosen (docs/sweeps.md)."
        )
    for t in trials:
        value = f"{t.value:.4g}" if t.value is not None else "-"
        echo(f"  trial {t.number:>3}  {t.state.name.lower():<8}  {value:>9}  {_short(t.params)}")
    best = best_trial(study)
    if best is None:
        echo("best: no trial has completed yet.")
        return {"best": None}
    echo(f"best: trial {best.number}  {sweep.objective.label} = {best.value:.6g}  ({best.user_attrs.get('run_dir')})")
    options = command_line(sweep, best.params)
    echo("config:\n" + "\n".join(f"  {o}" for o in options))
    echo("train it again: python train.py fit " + " ".join(options))
    return {"best": best.number, "value": best.value, "params": dict(best.params), "options": options}


def sweep_main(argv: Sequence[str]) -> int:
    """The ``textcause sweep`` command; returns the exit code (1: some trials failed)."""
    args = build_parser().parse_args(list(argv))
    os.environ.setdefault("WANDB_SILENT", "true")
    from textcause.cli.errors import command

    return command(lambda: _sweep(args))


def _sweep(args: argparse.Namespace) -> int:
    from textcause.sweep.spec import load_sweep

    sweep = load_sweep(args.config)
    out = Path(args.out) if args.out else Path("runs") / "sweeps" / sweep.name
    from textcause.sweep import runner as engine

    heartbeat = args.heartbeat or engine.HEARTBEAT_INTERVAL
    url = args.storage or engine.default_storage(out)
    if args.summary:
        summary(sweep, engine.open_study(sweep, url, seed=args.seed, heartbeat=heartbeat, create=False))
        return 0
    n = sweep.n_trials(args.trials)
    print(
        f"sweep {sweep.name}: {sweep.method}, {n} trials, metric {sweep.objective.label} ({sweep.goal}); "
        f"trials in {out}/trials, study in {url}",
        flush=True,
    )
    done = engine.run_sweep(
        sweep,
        out,
        storage=args.storage,
        trials=args.trials,
        seed=args.seed,
        heartbeat=heartbeat,
        on_trial=progress(sweep, n, lambda s: print(s, flush=True)),
    )
    print(f"ran {len(done.ran)} trials in {done.seconds:.1f} s", flush=True)
    summary(sweep, done.study)
    from optuna.trial import TrialState

    failed = [
        t for t in done.study.get_trials(deepcopy=False) if t.state == TrialState.FAIL and "error" in t.user_attrs
    ]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(sweep_main(sys.argv[1:]))

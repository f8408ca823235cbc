"""Run a sweep offline on Optuna; each trial is a run of the one fit-and-evaluate path.

:func:`run_sweep` opens (or resumes) the sweep's Optuna study (SQLite ``<out>/sweep.db`` by
default, or a PostgreSQL URL shared by several machines) and runs trials until the study holds
exactly ``n`` finished ones: grid, random and bayes map to Optuna's ``GridSampler``,
``RandomSampler`` and ``TPESampler`` (``constant_liar``), trial ``k`` draws from a generator seeded
by ``(seed, k)``, and ``early_terminate: hyperband`` is Optuna's ``HyperbandPruner``. Every trial is
:func:`textcause.run.fit.fit_and_evaluate` in ``<out>/trials/<number>/`` (CSV log, best
checkpoint, offline wandb run, ``trial.log``), evaluated on the validation split only. A trial
beyond ``n`` ends as a FAIL marked ``surplus``; a dead worker's trial is retried with the same
values (:data:`MAX_RETRY` times); a trial whose run raises is a FAIL with its ``error`` and is not
rerun. How it runs: docs/sweeps.md.
"""

from __future__ import annotations

import gc
import io
import math
import os
import shutil
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np
import optuna
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import FrozenTrial, TrialState

from textcause import store
from textcause.run.fit import EvaluationSettings, RunSettings, captured, fit_and_evaluate
from textcause.store.db import database_url
from textcause.sweep.spec import Objective, Param, Sweep

__all__ = [
    "GRACE_FACTOR",
    "HEARTBEAT_INTERVAL",
    "MAX_RETRY",
    "POLL",
    "TPE_STARTUP_TRIALS",
    "Surplus",
    "SweepRandomSampler",
    "SweepRun",
    "SweepTPESampler",
    "TrialError",
    "UserMistake",
    "best_trial",
    "chain",
    "default_storage",
    "finished",
    "make_pruner",
    "make_sampler",
    "n_finished",
    "open_study",
    "run_sweep",
    "study_name",
    "suggest",
    "wandb_logger",
]

HEARTBEAT_INTERVAL = 10  # seconds between heartbeats of a running trial
GRACE_FACTOR = 6  # heartbeats missed before a trial's worker is presumed dead
MAX_RETRY = 2  # a trial whose worker died is queued again this many times
TPE_STARTUP_TRIALS = 5  # bayes: random trials before TPE models the results
POLL = 2.0  # seconds between looks at a sweep whose last trials run elsewhere
_ALIVE = (TrialState.RUNNING, TrialState.WAITING, TrialState.COMPLETE, TrialState.PRUNED)
_DONE = (TrialState.COMPLETE, TrialState.PRUNED)


class TrialError(Exception):
    """A trial's own run failed; it is recorded (FAIL, with its ``error``) and the sweep goes on."""


class Surplus(Exception):
    """The study already holds enough trials (or this grid point): this one is not run."""


class UserMistake(Exception):
    """A trial failed on an option the run refused: every trial would; the sweep stops."""


# ---------------------------------------------------------------------------------------- samplers
def _trial_seed(seed: int, number: int) -> int:
    """The seed of trial ``number``'s draws: a function of the sweep's seed and the number only."""
    return int(np.random.SeedSequence([seed, number]).generate_state(1)[0])


class _TrialSeeded:
    """Reseed the sampler's generators from ``(seed, trial number)`` before each trial."""

    sweep_seed: int = 0

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        for owner in (self, getattr(self, "_random_sampler", None)):
            rng = getattr(owner, "_rng", None)  # Optuna's LazyRandomState
            if rng is not None:
                rng.rng.seed(_trial_seed(self.sweep_seed, trial.number))
        super().before_trial(study, trial)  # type: ignore[misc]


class SweepRandomSampler(_TrialSeeded, optuna.samplers.RandomSampler):
    """RandomSampler whose trial ``k`` draws the same values on any worker, in any run."""


class SweepTPESampler(_TrialSeeded, optuna.samplers.TPESampler):
    """TPESampler whose trial ``k`` draws from a generator seeded by ``(seed, k)``."""


def make_sampler(sweep: Sweep, seed: int = 0) -> optuna.samplers.BaseSampler:
    """grid -> GridSampler, random -> RandomSampler, bayes -> TPESampler, all seeded."""
    if sweep.method == "grid":
        return optuna.samplers.GridSampler(sweep.search_space, seed=seed)
    if sweep.method == "random":
        sampler: Any = SweepRandomSampler(seed=seed)
    else:
        sampler = SweepTPESampler(seed=seed, n_startup_trials=TPE_STARTUP_TRIALS, constant_liar=True)
    sampler.sweep_seed = seed
    return sampler


def make_pruner(sweep: Sweep) -> optuna.pruners.BasePruner:
    """Hyperband for ``early_terminate``, else no pruning."""
    hb = sweep.hyperband
    if hb is None:
        return optuna.pruners.NopPruner()
    return optuna.pruners.HyperbandPruner(
        min_resource=hb.min_resource, max_resource=hb.max_resource, reduction_factor=hb.reduction_factor
    )


# ---------------------------------------------------------------------------------------- the study
def default_storage(out: str | Path) -> str:
    """``sqlite:///<out>/sweep.db`` with an absolute path."""
    return f"sqlite:///{os.path.abspath(os.fspath(out))}/sweep.db"


def open_study(
    sweep: Sweep, url: str, *, seed: int = 0, heartbeat: int = HEARTBEAT_INTERVAL, create: bool = True
) -> optuna.Study:
    """The sweep's study in the database at ``url`` (created when missing and ``create``).

    Raises:
        ValueError: ``url`` is not a database URL, cannot be reached, or (``create`` False) holds no such sweep.
    """
    import sqlalchemy as sa

    parsed = database_url(url, "sweep.db")
    shown = parsed.render_as_string(hide_password=True)
    sqlite = parsed.get_backend_name() == "sqlite"
    if sqlite and parsed.database and parsed.database != ":memory:":
        if not create and not Path(parsed.database).is_file():
            raise ValueError(f"No sweep database at {shown}: run the sweep first (without --summary).")
        os.makedirs(os.path.dirname(os.path.abspath(parsed.database)), exist_ok=True)
    try:
        lock = None if sqlite else sa.create_engine(url, pool_pre_ping=True)
        storage = store.optuna_storage(
            url, heartbeat_interval=heartbeat, grace_period=GRACE_FACTOR * heartbeat, max_retry=MAX_RETRY, lock=lock
        )
        if lock is not None:
            lock.dispose()
    except (sa.exc.OperationalError, sa.exc.NoSuchModuleError, ModuleNotFoundError) as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise ValueError(f"Cannot open the sweep database {shown}: {first}") from None
    sampler, pruner = make_sampler(sweep, seed), make_pruner(sweep)
    name = study_name(sweep, seed)
    if not create:
        try:
            return optuna.load_study(study_name=name, storage=storage, sampler=sampler, pruner=pruner)
        except KeyError:
            raise ValueError(
                f"No sweep '{sweep.name}' with this config in {shown}: run it first "
                "(a changed sweep or model config is a new sweep)."
            ) from None
    study = optuna.create_study(
        study_name=name, storage=storage, sampler=sampler, pruner=pruner, direction=sweep.goal, load_if_exists=True
    )
    about = dict(sweep=sweep.name, source=sweep.source, method=sweep.method, metric=sweep.objective.name)
    for attr, value in {**about, "oracle": sweep.objective.oracle, "seed": seed}.items():
        study.set_user_attr(attr, value)
    return study


def study_name(sweep: Sweep, seed: int) -> str:
    """The study of a sweep config and sampler seed."""
    return sweep.study_name if seed == 0 else f"{sweep.study_name}:seed{seed}"


# ---------------------------------------------------------------------------------------- counting
def chain(trial: FrozenTrial) -> int:
    """The number of the first trial of ``trial``'s chain (a trial and its retries)."""
    return int(trial.system_attrs.get("failed_trial", trial.number))


def _holds_slot(trial: FrozenTrial) -> bool:
    """Whether a trial takes one of the study's ``n``: alive or finished, or failed by its own error,
    or killed with no retry left. A trial killed with retries left gave its place to its retry."""
    if trial.state in _ALIVE:
        return True
    if trial.state != TrialState.FAIL or "surplus" in trial.user_attrs:
        return False
    return "error" in trial.user_attrs or len(RetryHeartbeatStaleTrialCallback.retry_history(trial)) >= MAX_RETRY


def finished(trial: FrozenTrial) -> bool:
    """Whether ``trial`` is over and counts toward the sweep: finished, or failed while it held a slot."""
    return trial.state in _DONE or (trial.state == TrialState.FAIL and _holds_slot(trial))


def _surplus_reason(trials: list[FrozenTrial], me: FrozenTrial, sweep: Sweep, n: int) -> Optional[str]:
    """Why ``me`` must not run (None: it may): ``n`` chains before it, or its grid point taken."""
    earlier = [t for t in trials if t.number < me.number and chain(t) != chain(me) and _holds_slot(t)]
    if len({chain(t) for t in earlier}) >= n:
        return f"the sweep already holds {n} trials"
    if sweep.method == "grid":
        for t in earlier:
            if t.params == me.params:
                return f"trial {t.number} holds this grid point"
    return None


# ---------------------------------------------------------------------------------------- a trial
def suggest(trial: optuna.Trial, param: Param) -> Any:
    """The trial's value of ``param`` (Optuna's ``suggest_*``)."""
    if param.kind == "categorical":
        return trial.suggest_categorical(param.name, list(param.choices))
    if param.kind == "int_uniform":
        return trial.suggest_int(param.name, int(param.low), int(param.high))
    return trial.suggest_float(
        param.name, param.low, param.high, log=param.kind == "log_uniform_values", step=param.step
    )


def wandb_logger(sweep: Sweep, number: int, run_dir: Path, params: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The trial's WandbLogger config: OFFLINE unless ``WANDB_MODE=online``; None when ``WANDB_MODE=disabled``."""
    mode = os.environ.get("WANDB_MODE", "offline")
    if mode == "disabled":
        return None
    mode = "online" if mode == "online" else "offline"
    config = {"sweep": sweep.name, "trial": number, "objective": sweep.objective.name, **params}
    return {
        "class_path": "lightning.pytorch.loggers.WandbLogger",
        "init_args": {
            "save_dir": str(run_dir),
            "project": sweep.project or "textcause",
            "name": f"{sweep.name}-trial-{number}",
            "offline": mode == "offline",
            "mode": mode,
            "log_model": False,
            "group": sweep.study_name,
            "job_type": "sweep-trial",
            "config": config,
            "settings": {"console": "off"},
        },
    }


def _run_trial(sweep: Sweep, trial: optuna.Trial, params: dict[str, Any], out: Path) -> float:
    """Fit and evaluate one trial in ``<out>/trials/<number>``; its objective value.

    Raises:
        optuna.TrialPruned: Hyperband stopped it.
        UserMistake: the run refused an option (every trial would).
        TrialError: the run failed otherwise (recorded, the sweep goes on).
    """
    run_dir = out / "trials" / str(trial.number)
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    for attr, value in (("run_dir", str(run_dir.resolve())), ("host", socket.gethostname()), ("pid", os.getpid())):
        trial.set_user_attr(attr, value)
    callbacks: tuple[Any, ...] = ()
    if sweep.hyperband is not None:
        from optuna_integration import PyTorchLightningPruningCallback

        callbacks = (PyTorchLightningPruningCallback(trial, monitor=sweep.objective.name),)
    logger = wandb_logger(sweep, trial.number, run_dir, params)
    evaluation = EvaluationSettings(n_boot=0, split="val")  # selection never sees the test split
    loggers = (logger,) if logger else ()
    settings = RunSettings(sweep.configs, sweep.options(params), run_dir, evaluation, True, callbacks, loggers)
    log, started = io.StringIO(), time.perf_counter()
    try:
        with captured(log, ignore=(r"The anonymous setting has no effect",)):
            result = fit_and_evaluate(settings)
        value = _objective_value(sweep.objective, result)
    except optuna.TrialPruned:
        raise
    except Exception as err:
        error = f"{type(err).__name__}: {err}"
        if isinstance(err, ValueError) and str(err).startswith("The run's options were rejected"):
            trial.set_user_attr("refused", error[:2000])  # holds no slot: the config must change
            raise UserMistake(str(err)) from None
        trial.set_user_attr("error", error[:2000])
        raise TrialError(error) from None
    finally:
        (run_dir / "trial.log").write_text(log.getvalue(), encoding="utf-8")
        trial.set_user_attr("seconds", round(time.perf_counter() - started, 3))
        runs = sorted(str(p.resolve()) for p in (run_dir / "wandb").glob("offline-run-*"))
        if runs:
            trial.set_user_attr("wandb_run", runs[-1])
        gc.collect()
    if result.best_score is not None:
        trial.set_user_attr(result.monitor or "best_score", result.best_score)
    trial.set_user_attr("checkpoint", str(result.checkpoint) if result.checkpoint else None)
    return value


def _objective_value(objective: Objective, result: Any) -> float:
    """The objective of a finished :class:`~textcause.run.fit.RunResult` (its rows are of the val split).

    Raises:
        ValueError: the quantity is undefined or not finite on this run (never a silent NaN).
    """
    row: Mapping[str, Any] = {}
    if objective.column is None:
        if result.monitor != objective.name or result.best_score is None:
            raise ValueError(
                f"The run's checkpoint monitored {result.monitor!r}, not {objective.name!r}: "
                f"keep the default ModelCheckpoint(monitor={objective.name}) to select on it."
            )
        value = result.best_score
    else:
        row = next((r for r in result.rows if r.get("estimator") == objective.estimator), {})
        value = row.get(objective.column)
        if value is None and objective.oracle:
            raise ValueError(
                f"The oracle metric {objective.name!r} needs the truth (true ATE and propensities), "
                "which only a simulated task has."
            )
    if value is None or not math.isfinite(float(value)):
        reason = row.get("error")
        raise ValueError(
            f"The metric {objective.name!r} is undefined on this trial's validation split"
            + (f" ({reason})." if reason else ".")
        )
    return abs(float(value)) if objective.absolute else float(value)


# ---------------------------------------------------------------------------------------- the loop
@dataclass
class SweepRun:
    """What one :func:`run_sweep` call did: the trials this process ran, and the study."""

    study: Any
    target: int
    ran: list[int] = field(default_factory=list)
    seconds: float = 0.0


def _target_reached(study: optuna.Study, sweep: Sweep) -> bool:
    if sweep.target is None:
        return False
    values = [t.value for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))]
    if not values:
        return False
    best = min(values) if sweep.goal == "minimize" else max(values)
    return best <= sweep.target if sweep.goal == "minimize" else best >= sweep.target


def run_sweep(
    sweep: Sweep,
    out: str | Path,
    *,
    storage: Optional[str] = None,
    trials: Optional[int] = None,
    seed: int = 0,
    heartbeat: int = HEARTBEAT_INTERVAL,
    on_trial: Optional[Callable[[optuna.Study, FrozenTrial], None]] = None,
    poll: float = POLL,
) -> SweepRun:
    """Run (or resume, or join) a sweep until its study holds ``n`` finished trials.

    Args:
        sweep: the parsed sweep config.
        out: trial folders go to ``<out>/trials/<number>``; the default database is ``<out>/sweep.db``.
        storage: any SQLAlchemy URL (PostgreSQL to share the sweep between machines).
        trials: ``n`` (default: ``run_cap``, else a grid's size).
        seed: the samplers' seed (part of the study's identity).
        heartbeat: seconds between a running trial's heartbeats (a dead worker is noticed after 6).
        on_trial: called with the study and each trial this process finished (progress lines).
        poll: seconds between looks while the last trials run elsewhere.

    Raises:
        ValueError: a bad storage URL, no trial count for a random/bayes sweep, or an option the run
            refused (the sweep stops: every trial would fail the same way).
    """
    out = Path(out)
    n = sweep.n_trials(trials)
    study = open_study(sweep, storage or default_storage(out), seed=seed, heartbeat=heartbeat)
    started = time.perf_counter()
    done = SweepRun(study, n)

    def objective(trial: optuna.Trial) -> float:
        params = {p.name: suggest(trial, p) for p in sweep.params}
        trials_now = study.get_trials(deepcopy=False)
        me = next(t for t in trials_now if t.number == trial.number)
        reason = _surplus_reason(trials_now, me, sweep, n)
        if reason is not None:
            trial.set_user_attr("surplus", reason)
            raise Surplus(reason)
        return _run_trial(sweep, trial, params, out)

    def report(study: optuna.Study, frozen: FrozenTrial) -> None:
        if "surplus" not in frozen.user_attrs:
            done.ran.append(frozen.number)
            if on_trial is not None:
                on_trial(study, frozen)

    while True:
        trials_now = study.get_trials(deepcopy=False)
        if len({chain(t) for t in trials_now if finished(t)}) >= n or _target_reached(study, sweep):
            break
        waiting = any(t.state == TrialState.WAITING for t in trials_now)
        if not waiting and len({chain(t) for t in trials_now if _holds_slot(t)}) >= n:
            optuna.storages.fail_stale_trials(study)  # a dead worker's trial is failed and queued again
            time.sleep(poll)
            continue
        try:
            study.optimize(objective, n_trials=1, catch=(TrialError, Surplus), callbacks=[report])
        except optuna.exceptions.UpdateFinishedTrialError:
            pass  # our trial was failed as stale while it ran (a long pause): its retry runs instead
        except UserMistake as err:
            raise ValueError(str(err)) from None
    done.seconds = time.perf_counter() - started
    return done


# ---------------------------------------------------------------------------------------- reporting
def best_trial(study: optuna.Study) -> Optional[FrozenTrial]:
    """The best COMPLETE trial (None: none yet)."""
    try:
        return study.best_trial
    except ValueError:
        return None


def n_finished(study: optuna.Study) -> int:
    """How many trials of the study are finished (a trial and its retries count once)."""
    return len({chain(t) for t in study.get_trials(deepcopy=False) if finished(t)})

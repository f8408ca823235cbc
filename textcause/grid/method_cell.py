"""Run one cell of a method (fit / predict or estimate) and turn what it returns into result rows.

:func:`run_method_cell` is what :func:`textcause.grid.worker.run_cell` calls for a cell whose
``method`` is set, and what :func:`textcause.evaluate` calls for each cell. It never raises for the
method's own error: a method that raises, or returns the wrong number of values, NaN, probabilities
outside [0, 1] or something that is not numbers, gives a failed cell whose ``error`` names the
method and the problem in one sentence.

Propensity methods are fitted on the training users and predict the evaluation split's users in
index order; their probabilities are clipped to [1e-6, 1 - 1e-6] and, like every built-in model's,
held in float32; the rows come from :func:`textcause.metrics.evaluation.evaluate_propensities` with the
bootstrap seeded by the cell's seed. Effect methods see every user the task keeps (training,
validation and test users together, in index order).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import io
import math
import shutil
import time
from numbers import Real
from pathlib import Path
from typing import Any

import numpy as np

from textcause import store
from textcause.grid.cell import Cell, CellOutcome, cell_meta, run_config_cell
from textcause.interrupts import interrupt_behind
from textcause.methods.adapters import ConfigPropensity, as_method, fresh_copy
from textcause.methods.inputs import TaskInputs, data_settings, task_settings
from textcause.methods.protocols import effect_estimator, method_kind, method_name, representation_options

__all__ = [
    "EPS",
    "LEVEL",
    "OWN_CI",
    "MethodError",
    "check_effect",
    "check_probabilities",
    "run_method_cell",
]

#: Probabilities are clipped to [EPS, 1 - EPS], as the built-in models clamp theirs.
EPS = 1e-6
OWN_CI = "the method's own interval"
LEVEL = 0.95


class MethodError(Exception):
    """The method raised or returned something unusable; the message names the method and the problem."""


def _call(name: str, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except Exception as err:
        raise MethodError(f"{name}.{what} raised {type(err).__name__}: {err}") from err


def check_probabilities(name: str, out: Any, n: int) -> np.ndarray:
    """``predict_proba``'s output as a 1-d float64 array of ``n`` probabilities.

    Accepts shape ``(n,)``, ``(n, 1)`` or ``(n, 2)`` (column 1: P(T=1), scikit-learn's layout).

    Raises:
        MethodError: wrong type, shape or length, NaN or infinite values, values outside [0, 1].
    """
    where = f"{name}.predict_proba"
    if out is None or isinstance(out, (str, bytes, dict)):
        raise MethodError(f"{where} returned {type(out).__name__}; expected an array of {n} probabilities.")
    try:
        arr = np.asarray(out, dtype=np.float64)
    except (TypeError, ValueError):
        raise MethodError(
            f"{where} returned a {type(out).__name__} that is not an array of numbers; expected {n} probabilities."
        ) from None
    if arr.ndim == 2 and arr.shape[1] in (1, 2):
        arr = arr[:, -1]
    if arr.ndim != 1:
        raise MethodError(f"{where} returned an array of shape {arr.shape}; expected ({n},) or ({n}, 2).")
    if len(arr) != n:
        raise MethodError(f"{where} returned {len(arr)} values for {n} test users.")
    bad = int((~np.isfinite(arr)).sum())
    if bad:
        raise MethodError(f"{where} returned {bad} NaN or infinite values (of {n}).")
    if arr.min() < 0.0 or arr.max() > 1.0:
        raise MethodError(
            f"{where} returned values outside [0, 1] (from {arr.min():.4g} to {arr.max():.4g}); "
            "it must return probabilities P(T=1)."
        )
    return arr


def _number(name: str, what: str, value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (Real, np.number))
        or (isinstance(value, np.ndarray) and value.ndim)
    ):
        raise MethodError(f"{name}.estimate returned {type(value).__name__} as its {what}; expected a number.")
    value = float(value)
    if not math.isfinite(value):
        raise MethodError(f"{name}.estimate returned {value} as its {what}; expected a finite number.")
    return value


def check_effect(name: str, out: Any) -> tuple[float, float | None, float | None]:
    """``estimate``'s output as ``(ate, ci_low, ci_high)`` (the interval may be ``(None, None)``).

    Raises:
        MethodError: not a number, a 3-tuple or an object with ``ate``; NaN; half an interval;
            an interval whose low end exceeds its high end.
    """
    if isinstance(out, np.ndarray) and out.ndim == 0:
        out = out.item()
    if isinstance(out, (tuple, list, np.ndarray)):
        if len(out) != 3:
            raise MethodError(f"{name}.estimate returned {len(out)} values; expected an ATE or (ate, ci_low, ci_high).")
        ate, lo, hi = out
    elif hasattr(out, "ate"):
        ate, lo, hi = out.ate, getattr(out, "ci_low", None), getattr(out, "ci_high", None)
    else:
        ate, lo, hi = out, None, None
    ate = _number(name, "ATE", ate)
    if (lo is None) != (hi is None):
        raise MethodError(f"{name}.estimate returned half an interval ({lo}, {hi}); give both ends or neither.")
    if lo is None:
        return ate, None, None
    lo, hi = _number(name, "ci_low", lo), _number(name, "ci_high", hi)
    if lo > hi:
        raise MethodError(
            f"{name}.estimate returned the interval [{lo:.4g}, {hi:.4g}], whose low end exceeds its high end."
        )
    return ate, lo, hi


def _accepts(fn: Any, keyword: str) -> bool:
    try:
        return keyword in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _settings(cell: Cell) -> Any:
    """The cell's data settings (no representation: the method asks for its own)."""
    return task_settings(cell.source, cell.task, cell.level, cell.seed, data_settings(cell.overrides))


# ---------------------------------------------------------------------------------------- propensity
def _propensity_rows(cell: Cell, method: Any, task: Any, name: str, timings: dict[str, float]) -> list[dict[str, Any]]:
    """Fit on the training users, predict the cell's split, and evaluate as ``evaluate.py`` does."""
    from textcause.metrics.evaluation import evaluate_propensities

    split = task.split
    evaluated = np.sort(split[cell.split])
    needed = np.concatenate([split.train, evaluated] + ([split.val] if _accepts(method.fit, "validation") else []))
    inputs = TaskInputs(
        _settings(cell), getattr(method, "representation", None), options=representation_options(method), needed=needed
    )
    t_int = task.treatment.astype(np.int64)
    started = time.perf_counter()
    kwargs = {"validation": (inputs.take(split.val), t_int[split.val])} if _accepts(method.fit, "validation") else {}
    _call(name, "fit", method.fit, inputs.take(split.train), t_int[split.train], **kwargs)
    timings["train"] = time.perf_counter() - started
    p = check_probabilities(
        name, _call(name, "predict_proba", method.predict_proba, inputs.take(evaluated)), len(evaluated)
    )
    # The built-in models hand float32 tensors to evaluate.py (batches and predictions are float32):
    # the same here, so that a method returning the true propensities reproduces the oracle's rows.
    p32 = np.clip(p.astype(np.float32), np.float32(EPS), np.float32(1.0 - EPS))
    as32 = lambda a: np.asarray(a[evaluated], dtype=np.float32)  # noqa: E731
    return evaluate_propensities(
        as32(task.treatment),
        as32(task.outcome),
        p32,
        true_propensity=as32(task.propensity),
        true_ate=task.true_ate,
        estimators=cell.estimators,
        n_boot=cell.n_boot,
        seed=cell.seed,
    )


# ---------------------------------------------------------------------------------------- effect
def _effect_bootstrap(
    cell: Cell, method: Any, name: str, X_of: Any, users: np.ndarray, t: np.ndarray, y: np.ndarray
) -> tuple[float, float]:
    from textcause.estimators import bootstrap_indices

    reps, failed = [], 0
    for chunk in bootstrap_indices(len(users), cell.effect_n_boot, cell.seed):
        for row in chunk:
            try:
                ate, _, _ = check_effect(
                    name, _call(name, "estimate", method.estimate, X_of(users[row]), t[row], y[row])
                )
            except MethodError:
                failed += 1
                continue
            reps.append(ate)
    if not reps:
        raise MethodError(
            f"{name}.estimate failed on all {cell.effect_n_boot} bootstrap resamples: no interval can be formed."
        )
    lo, hi = np.quantile(np.asarray(reps), [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return float(lo), float(hi)


def _effect_rows(cell: Cell, method: Any, task: Any, name: str, timings: dict[str, float]) -> list[dict[str, Any]]:
    """Run the effect method on every user the task keeps; rows ``unadjusted`` and the method's own."""
    from textcause import estimators as est
    from textcause.metrics.evaluation import CI_METHOD

    split = task.split
    users = np.unique(np.concatenate([split.train, split.val, split.test]))
    inputs = TaskInputs(
        _settings(cell), getattr(method, "representation", None), options=representation_options(method), needed=users
    )
    t = task.treatment[users].astype(np.int64)
    y = task.outcome[users].astype(np.float64)
    started = time.perf_counter()
    ate, lo, hi = check_effect(name, _call(name, "estimate", method.estimate, inputs.take(users), t.copy(), y.copy()))
    timings["train"] = time.perf_counter() - started
    ci_method = OWN_CI if lo is not None else None
    if lo is None and cell.effect_n_boot > 0:
        lo, hi = _effect_bootstrap(cell, method, name, inputs.take, users, t, y)
        ci_method = f"percentile bootstrap re-running the method ({cell.effect_n_boot} resamples of its users)"
    truth = float(task.true_ate)
    base = (
        est.bootstrap_ci("unadjusted", t, y, n_boot=cell.n_boot, seed=cell.seed)
        if cell.n_boot > 0
        else est.unadjusted(t, y)
    )
    rows = [
        {
            "estimator": "unadjusted",
            "ate": float(base.ate),
            "ci_low": base.ci_low,
            "ci_high": base.ci_high,
            "ci_method": CI_METHOD if base.ci_low is not None else None,
            "bias": float(base.ate) - truth,
            "n_used": int(base.n_used),
            "n_dropped": int(base.n_dropped),
        }
    ]
    rows.append(
        {
            "estimator": effect_estimator(method),
            "ate": ate,
            "ci_low": lo,
            "ci_high": hi,
            "ci_method": ci_method,
            "bias": ate - truth,
            "n_used": len(users),
            "n_dropped": 0,
        }
    )
    for row in rows:
        if row["ci_low"] is not None:
            row["covers_truth"] = bool(row["ci_low"] <= truth <= row["ci_high"])
    return rows


# ---------------------------------------------------------------------------------------- one cell
def _model_class(method: Any) -> str:
    inner = getattr(method, "estimator", None) if type(method).__name__ == "SklearnPropensity" else None
    return type(inner if inner is not None else method).__name__


def run_method_cell(
    cell: Cell, method: Any = None, out_dir: str | Path | None = None, *, version: str = "", attempt: int = 1
) -> CellOutcome:
    """Run a method's cell; never raises for the method's or the cell's own error.

    Args:
        cell: the cell (its ``method`` spec is imported when ``method`` is None).
        method: the method object (a fresh copy is fitted), or None. A :class:`ConfigPropensity` runs
            through :func:`textcause.grid.cell.run_config_cell` (the cell's overrides must hold its own).
        out_dir: when given, the method's printed output goes to ``<out_dir>/runs/<cell_id>/cell.log``.
        version: the code version recorded with the rows.
        attempt: the attempt number recorded with the rows.

    Returns:
        A :class:`~textcause.grid.cell.CellOutcome`: ``ok`` with one row per estimator, or
        ``failed`` with one row per planned estimator carrying the error.
    """
    if isinstance(method, ConfigPropensity) or (method is None and cell.method is None):
        if isinstance(method, ConfigPropensity):  # its own overrides are in the cell's (evaluate's plan_cells)
            cell = dataclasses.replace(cell, method=None, model_path=method.config)
        return run_config_cell(cell, out_dir or ".", version=version, attempt=attempt)
    run_dir = None if out_dir is None else Path(out_dir) / "runs" / cell.cell_id
    if run_dir is not None:
        shutil.rmtree(run_dir, ignore_errors=True)
        run_dir.mkdir(parents=True)
    started, t0 = store.utcnow(), time.perf_counter()
    timings: dict[str, float] = {}
    rows: list[dict[str, Any]] = []
    error = None
    kind, name, model_class, representation = "", cell.model, None, None
    log = io.StringIO()
    capture = contextlib.ExitStack()
    if run_dir is not None:
        capture.enter_context(contextlib.redirect_stdout(log))
        capture.enter_context(contextlib.redirect_stderr(log))
    try:
        with capture:
            method = as_method(cell.method) if method is None else method
            kind, name = method_kind(method), method_name(method)
            model_class, representation = _model_class(method), getattr(method, "representation", None)
            method = fresh_copy(method)
            from textcause.data.build import build_data

            task = build_data(_settings(cell)).task
            meta_task = {"true_ate": float(task.true_ate), "sample_ate": float(task.sample_ate)}
            fn = _effect_rows if kind == "effect" else _propensity_rows
            rows = [{**meta_task, **r} for r in fn(cell, method, task, name, timings)]
    except MethodError as err:
        error = str(err)
    except SystemExit as err:  # a method whose Lightning fit was stopped: exit(1) after the interrupt
        stop = interrupt_behind(err)
        if stop is None:
            raise
        raise stop from None
    except Exception as err:
        stop = interrupt_behind(err)  # a stop is not the method's failure: the rerun runs the cell
        if stop is not None:
            raise stop from None
        error = f"{type(err).__name__}: {err}"
    finally:
        if run_dir is not None:
            (run_dir / "cell.log").write_text(log.getvalue(), encoding="utf-8")
    seconds = time.perf_counter() - t0
    train_s = timings.get("train")
    meta = {
        **cell_meta(
            cell,
            version=version,
            attempt=attempt,
            started=started,
            train_s=train_s,
            eval_s=None if train_s is None else seconds - train_s,
        ),
        "split": "all" if kind == "effect" else cell.split,
        "run": None if run_dir is None else str(run_dir),
        "model_class": model_class,
        "representation": representation or "text",
    }
    if error is None:
        return CellOutcome("ok", [{**r, **meta, "status": "ok"} for r in rows], seconds=seconds)
    failed = [{**meta, "estimator": e, "status": "failed", "error": error} for e in cell.result_estimators]
    return CellOutcome("failed", failed, error=error, seconds=seconds)

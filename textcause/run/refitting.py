"""Refitting intervals of a run: the propensity model refit on bootstrap replicates of its training users.

:func:`add_refit_intervals` fills the ``refit_*`` columns (:mod:`textcause.metrics.schema`) of a run's
propensity-estimator rows with :func:`textcause.estimators.refit.refit_interval`, refitting the model
by its own recipe (:meth:`textcause.models.PropensityModel.refit`; the tuned LR's
:meth:`~textcause.models.tuned_lr.TunedLogisticRegression.refit` refits its chosen penalty and C)
once per replicate. It is asked for with ``EvaluationSettings.refit_reps > 0`` (``evaluate.py RUN
--refit-reps 100``, a grid's ``evaluation: {refit_reps: 100}``); a model that does not refit cheaply
(anything but the tuned LR and a model trained by full-batch L-BFGS on a feature matrix: networks,
SHERBERT, OrderCountNet, the joint models, an L-BFGS model trained in mini-batches) gets a warning that names it and empty columns, never an interval of
something else; so does an estimator whose replicates fail (its other rows keep theirs, and every
row keeps its test-sample interval). The refit repeats the Trainer's recipe as :func:`recipe` reads it
from the trainer: the epoch limit (each epoch one full-batch L-BFGS step) and the early-stopping
patience on the validation loss.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from textcause.estimators.refit import refit_interval
from textcause.estimators.registry import PROPENSITY_ESTIMATORS
from textcause.progress import progress_bar

__all__ = [
    "add_refit_intervals",
    "recipe",
    "refit_unavailable",
]


def recipe(trainer: Any) -> tuple[int | None, int | None]:
    """``(max_steps, patience)`` of a trainer's full-batch L-BFGS fit: its epoch limit (each epoch one step;
    ``max_steps`` when it is the tighter limit; None when neither limits the fit) and the patience of
    an early stopping on ``val_loss`` (None without one)."""
    limits = [
        int(v) for v in (getattr(trainer, "max_epochs", None), getattr(trainer, "max_steps", None)) if v and v > 0
    ]
    patience = None
    for callback in getattr(trainer, "callbacks", None) or []:
        if type(callback).__name__ == "EarlyStopping" and getattr(callback, "monitor", None) == "val_loss":
            patience = int(callback.patience)
    return (min(limits) if limits else None), patience


def refit_unavailable(model: Any, data: Any, world_size: int = 1, max_steps: int | None = 1) -> str | None:
    """Why ``model`` on ``data`` gets no refitting interval, or None when it can be refit."""
    name = type(getattr(model, "net", model)).__name__
    if not getattr(model, "refittable", False):
        return (
            f"{name} ({type(model).__name__}) is not refit for a refitting interval: only a PropensityModel "
            "trained by full-batch L-BFGS (the linear n-gram and topic models) or the tuned LR refits cheaply "
            "enough, once per replicate"
        )
    if getattr(data.features, "vectors", None) is not None:
        return f"{name} reads post embeddings: only a feature-matrix model is refit for a refitting interval"
    n_train = len(data.task.split["train"])
    batch_size = getattr(getattr(data, "hparams", None), "batch_size", n_train)
    if batch_size < n_train:
        return (
            f"{name} was trained by L-BFGS in mini-batches of {batch_size} of {n_train} training users: "
            "a refit is full-batch, another recipe, so no refitting interval is computed"
        )
    if world_size > 1:
        return f"{name} was evaluated on {world_size} processes: refitting intervals are computed in one process only"
    if max_steps is None:
        return f"{name}'s trainer sets no epoch or step limit: a refit would not know when the fit stops"
    return None


def add_refit_intervals(
    rows: list[dict[str, Any]],
    pred: dict[str, np.ndarray],
    model: Any,
    data: Any,
    *,
    n_reps: int,
    kind: str,
    max_steps: int | None,
    seed: int,
    patience: int | None = None,
    world_size: int = 1,
) -> list[dict[str, Any]]:
    """``rows`` with refitting intervals on the rows of the propensity estimators (in place, returned).

    Args:
        rows: the run's result rows (:func:`textcause.run.evaluation.evaluate_predictions`).
        pred: the evaluated users' predictions (``index``, ``t``, ``y``, ``propensity``).
        model: the trained model; data: its data module.
        n_reps: replicates (0: nothing is done).
        kind: ``basic`` or ``percentile`` (:mod:`textcause.estimators.refit`).
        max_steps: the fit's epochs (each one full-batch L-BFGS step), as the Trainer ran them
            (:func:`recipe`; None: no limit, no interval).
        seed: the resampling and re-initialisation seed.
        patience: the early stopping's patience on the validation loss (None: none).
        world_size: processes the run was evaluated on.
    """
    if n_reps <= 0:
        return rows
    reason = refit_unavailable(model, data, world_size, max_steps)
    if reason is not None:
        warnings.warn(reason + "; its rows have no refitting interval.", stacklevel=2)
        return rows
    wanted = [r["estimator"] for r in rows if r.get("estimator") in PROPENSITY_ESTIMATORS and r.get("error") is None]
    if not wanted:
        return rows
    from textcause.data.batches import FeatureCollate

    task = data.task
    collate = FeatureCollate(data.features, task.treatment, task.outcome, task.propensity)
    train_idx = np.array(task.split["train"], dtype=np.int64)  # copies: the memoised build's arrays are read-only
    val = collate(np.array(task.split["val"], dtype=np.int64))
    predict = collate(np.array(pred["index"], dtype=np.int64))

    def fit_predict(train_rows: np.ndarray) -> np.ndarray:
        p = model.refit(collate(train_idx[train_rows]), val, predict, max_steps=max_steps, patience=patience, seed=seed)
        return p.numpy().astype(np.float64)

    intervals: dict[str, Any] = {}
    with progress_bar(total=n_reps, desc="refitting interval", unit="refit") as bar:
        try:
            intervals = refit_interval(
                fit_predict,
                len(train_idx),
                pred["t"],
                pred["y"],
                pred["propensity"],
                wanted,
                n_reps=n_reps,
                kind=kind,
                seed=seed,
                progress=lambda done: bar.update(done - bar.n),
            )
        except ValueError as err:  # no estimator had two usable replicates: every row keeps its test-sample interval
            warnings.warn(f"{err} Its rows have no refitting interval.", stacklevel=2)
    true_ate = task.true_ate
    for row in rows:
        interval = intervals.get(row.get("estimator"))
        if interval is None:
            continue
        row.update(
            refit_ci_low=interval.low,
            refit_ci_high=interval.high,
            refit_ci_method=interval.method,
            refit_reps=n_reps - interval.n_failed,
        )
        if true_ate is not None:
            row["refit_covers_truth"] = bool(interval.low <= true_ate <= interval.high)
    return rows

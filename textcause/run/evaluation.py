"""How a trained model is evaluated: settings, predictions, result rows, the files and logs they go to.

:func:`evaluate_model` is the one evaluation of a trained model: the evaluation split's propensities
predicted from a checkpoint (gathered over DDP ranks), turned into result rows by
:func:`textcause.metrics.evaluation.evaluate_propensities` (estimates, bootstrap intervals, bias,
propensity metrics). :func:`~textcause.run.fit.fit_and_evaluate`, :func:`~textcause.run.fit.evaluate_run`
(``evaluate.py``) and ``train.py test`` all go through it. :func:`write_results` writes the rows
(``results.json``, ``results.csv``) and :func:`log_results` sends them to the run's loggers (the CSV
log, an offline wandb run); the run's model card (:mod:`textcause.run.model_card`) and propensity
overlap figure (:mod:`textcause.run.figure`) are written after them.
"""

from __future__ import annotations

import csv
import io
import json
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from textcause.corpus.types import SPLITS
from textcause.estimators.refit import REFIT_KINDS
from textcause.estimators.registry import DEFAULT_ESTIMATORS, OUTCOME_ESTIMATORS, PROPENSITY_ESTIMATORS
from textcause.io import atomic_write_json, atomic_write_text, refuse_pickled_code
from textcause.metrics.schema import RESULT_COLUMNS, migrate_row
from textcause.validation import check_int, check_options, check_subset

__all__ = [
    "LOGGED_COLUMNS",
    "LOGGED_METRICS",
    "EvaluationSettings",
    "RunResult",
    "append_csv",
    "append_csv_metrics",
    "evaluate_model",
    "evaluate_predictions",
    "find_checkpoint",
    "log_results",
    "model_name",
    "predict_propensities",
    "predict_untrained",
    "result_metrics",
    "tuned_label",
    "write_results",
]

#: The numeric columns of a result row that :func:`log_results` logs, per estimator.
LOGGED_COLUMNS = (
    "ate",
    "ci_low",
    "ci_high",
    "influence_ci_low",
    "influence_ci_high",
    "refit_ci_low",
    "refit_ci_high",
    "bias",
    "n_used",
    "n_dropped",
)
#: The propensity metrics of a result row (the same on every row of a run), logged once.
LOGGED_METRICS = ("treatment_accuracy", "ece", "brier", "iptw_weight_mse", "spearman", "rank_agreement")


@dataclass(frozen=True)
class EvaluationSettings:
    """How a trained run is evaluated.

    Attributes:
        n_boot: bootstrap replicates of each interval (0: no interval).
        split: the users evaluated (``train``, ``val`` or ``test``).
        estimators: propensity estimators (``unadjusted`` is always reported first), and the doubly
            robust ``aipw`` / ``tmle``, run for a model that gives outcome predictions and skipped
            with a warning for one that does not.
        seed: the bootstrap's seed (None: the run's seed).
        refit_reps: replicates of the refitting interval (0, the default: none), for models that
            refit cheaply (:mod:`textcause.run.refitting`).
        refit_kind: ``basic`` (default) or ``percentile`` (:mod:`textcause.estimators.refit`).
    """

    n_boot: int = 1000
    split: str = "test"
    estimators: tuple[str, ...] = DEFAULT_ESTIMATORS
    seed: Optional[int] = None
    refit_reps: int = 0
    refit_kind: str = "basic"

    def __post_init__(self) -> None:
        owner = "EvaluationSettings"
        check_int(self.n_boot, "n_boot", owner, low=0)
        check_options(self.split, "split", owner, SPLITS)
        object.__setattr__(
            self,
            "estimators",
            check_subset(list(self.estimators), "estimators", owner, PROPENSITY_ESTIMATORS + OUTCOME_ESTIMATORS),
        )
        if self.seed is not None:
            check_int(self.seed, "seed", owner, low=0)
        check_int(self.refit_reps, "refit_reps", owner, low=0)
        check_options(self.refit_kind, "refit_kind", owner, REFIT_KINDS)
        if self.refit_reps == 1:
            raise ValueError(
                "EvaluationSettings' refit_reps must be 0 (no refitting interval) or at least 2. Got 1 instead."
            )


@dataclass
class RunResult:
    """What a run produced.

    Attributes:
        rows: one result row per estimator (the columns of :data:`textcause.metrics.schema.RESULT_COLUMNS`).
        meta: the run's identity (model, corpus, task, level, seed, representation, split, truth).
        checkpoint: the checkpoint evaluated (None: a baseline with nothing to learn).
        log_dir: the run's log folder (``config.yaml``, ``metrics.csv``, ``results.json``).
        predictions: per evaluated unit, sorted by index: ``index``, ``t``, ``y``, ``propensity``, ``p_true``.
        representation: the data module's representation info (kind, vocabulary size, ...).
        train_seconds, eval_seconds: wall time of training and of evaluation.
        monitor, best_score: the checkpoint callback's monitored metric and its best value (the
            best ``val_loss`` of the run by default; None when evaluating a finished run).
        via_trainer: False for a model with nothing to train evaluated without the Trainer
            (:func:`predict_untrained`): no Trainer left reference cycles behind for ``gc.collect()``.
    """

    rows: list[dict[str, Any]]
    meta: dict[str, Any]
    checkpoint: Optional[Path]
    log_dir: Optional[Path]
    predictions: dict[str, np.ndarray]
    representation: dict[str, Any] = field(default_factory=dict)
    train_seconds: Optional[float] = None
    eval_seconds: Optional[float] = None
    monitor: Optional[str] = None
    best_score: Optional[float] = None
    via_trainer: bool = True


# ---------------------------------------------------------------------------------------- evaluation
def find_checkpoint(log_dir: Path) -> Optional[Path]:
    """The best checkpoint of a run (``best-*.ckpt``), else its newest checkpoint, else None."""
    ckpts = sorted((Path(log_dir) / "checkpoints").glob("*.ckpt"), key=lambda p: p.stat().st_mtime)
    best = [p for p in ckpts if p.name.startswith("best")]
    return (best or ckpts or [None])[-1]


def predict_propensities(trainer: Any, model: Any, data: Any, ckpt: Optional[Path]) -> dict[str, np.ndarray]:
    """Run ``trainer.predict`` and return the concatenated outputs sorted by unit index.

    Under DDP every rank predicts a share of the units: the outputs of all ranks are gathered
    (:class:`~textcause.callbacks.PredictionGather`, for every launcher: ``ddp``, ``torchrun``,
    SLURM, ``ddp_fork`` / ``ddp_spawn``) and each unit is kept once, so the evaluation sees the
    whole split, as in one process.
    """
    if trainer.world_size > 1 or _forks(trainer):
        return _predict_gathered(trainer, model, data, ckpt)
    with refuse_pickled_code(ckpt):
        outputs = trainer.predict(model, datamodule=data, ckpt_path=str(ckpt) if ckpt else None, weights_only=True)
    return _by_index(outputs)


def _by_index(outputs: Sequence[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Per-batch prediction outputs concatenated and sorted by unit index."""
    keys = outputs[0].keys()
    merged = {k: np.concatenate([o[k].detach().cpu().numpy().reshape(-1) for o in outputs]) for k in keys}
    order = np.argsort(merged["index"], kind="stable")
    return {k: v[order] for k, v in merged.items()}


class _DataOnly:
    """What a model with nothing to train reads of its trainer when it starts predicting: the data module."""

    sanity_checking = False

    def __init__(self, datamodule: Any) -> None:
        self.datamodule = datamodule


def predict_untrained(model: Any, data: Any) -> dict[str, np.ndarray]:
    """:func:`predict_propensities` of a model with nothing to train (a baseline, no checkpoint), without a Trainer.

    The model predicts the data module's predict split batch by batch as ``trainer.predict`` has it
    do (evaluation mode, inference mode, ``on_predict_start`` first: the unadjusted baseline reads
    its training share of treated units from the data module there), so the outputs are the
    Trainer's, value for value.
    """
    import torch

    data.setup("predict")
    model.trainer = _DataOnly(data)
    try:
        model.eval()
        model.on_predict_start()
        with torch.inference_mode():
            outputs = [model.predict_step(batch, i) for i, batch in enumerate(data.predict_dataloader())]
    finally:
        model.trainer = None
    return _by_index(outputs)


def _forks(trainer: Any) -> bool:
    """Whether ``trainer`` runs its loops in child processes (``ddp_fork`` / ``ddp_spawn``, even on one device)."""
    from lightning.pytorch.strategies.launchers.multiprocessing import _MultiProcessingLauncher

    return isinstance(getattr(trainer.strategy, "launcher", None), _MultiProcessingLauncher)


def _predict_gathered(trainer: Any, model: Any, data: Any, ckpt: Optional[Path]) -> dict[str, np.ndarray]:
    import tempfile

    from textcause.callbacks.predictions import PredictionGather

    with tempfile.TemporaryDirectory(prefix="textcause-predict-") as tmp:
        gather = PredictionGather(Path(tmp))
        # Predicting logs nothing; under fork / spawn the ranks would open the loggers afresh (a new
        # wandb run, a CSV log started over): they are set aside meanwhile.
        loggers, trainer.loggers = trainer.loggers, []
        trainer.callbacks.append(gather)
        try:  # fork / spawn launchers return no predictions: the ranks' outputs come back through the folder
            with refuse_pickled_code(ckpt):
                trainer.predict(
                    model,
                    datamodule=data,
                    ckpt_path=str(ckpt) if ckpt else None,
                    return_predictions=False,
                    weights_only=True,
                )
        finally:
            trainer.callbacks.remove(gather)
            trainer.loggers = loggers
        merged = gather.load()
    _, first = np.unique(merged["index"], return_index=True)  # sorted by index, each unit once
    return {k: v[first] for k, v in merged.items()}


def model_name(model: Any) -> str:
    """The class of a model's network (``LogisticRegression``), else of the model (``OracleModel``)."""
    net = getattr(model, "net", None)
    return type(net if net is not None else model).__name__


def _check_checkpoint(model: Any, ckpt: Optional[Path], where: str) -> None:
    if ckpt is None and getattr(model, "requires_training", True):
        raise FileNotFoundError(
            f"No checkpoint in '{where}': {type(model).__name__} must be trained before it is evaluated "
            "(an untrained network's numbers would be meaningless); run train.py fit, or pass --ckpt."
        )


def evaluate_model(
    trainer: Any, model: Any, data: Any, ckpt: Optional[Path], evaluation: EvaluationSettings, run_label: str
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, np.ndarray]]:
    """Predict ``data``'s evaluation split with ``ckpt`` and evaluate: (rows, meta, predictions).

    ``evaluate.py``, a run of :func:`~textcause.run.fit.fit_and_evaluate` and ``train.py test`` all
    evaluate through here, so their estimates and intervals agree by construction.
    """
    pred = predict_propensities(trainer, model, data, ckpt)
    rows, meta = evaluate_predictions(pred, model, data, evaluation, run_label)
    if evaluation.refit_reps:
        from textcause.run.refitting import add_refit_intervals, recipe

        seed = data.hparams.seed if evaluation.seed is None else evaluation.seed
        max_steps, patience = recipe(trainer)
        rows = add_refit_intervals(
            rows,
            pred,
            model,
            data,
            n_reps=evaluation.refit_reps,
            kind=evaluation.refit_kind,
            max_steps=max_steps,
            patience=patience,
            seed=seed,
            world_size=int(trainer.world_size),
        )
    return rows, meta, pred


def evaluate_predictions(
    pred: dict[str, np.ndarray], model: Any, data: Any, evaluation: EvaluationSettings, run_label: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Result rows (one per estimator, with bootstrap intervals) and the run's identity of predictions.

    The doubly robust ``aipw`` / ``tmle`` get the model's outcome predictions (``mu0``, ``mu1`` of
    ``pred``) and the task's outcome kind (:func:`textcause.data.build.outcome_kind`); a model without
    outcome predictions skips them with a warning that names the model.
    """
    from textcause.data.build import outcome_kind
    from textcause.metrics.evaluation import evaluate_propensities

    task = data.task
    hp = data.hparams
    # Observational data (textcause observe) have no true propensities or ATE: no truth-based columns.
    p_true = pred["p_true"] if np.isfinite(pred["p_true"]).all() else None
    seed = hp.seed if evaluation.seed is None else evaluation.seed
    estimators = evaluation.estimators
    has_mu = "mu0" in pred and "mu1" in pred
    wanted_dr = [e for e in estimators if e in OUTCOME_ESTIMATORS]
    if wanted_dr and not has_mu:
        warnings.warn(
            f"{model_name(model)} gives no outcome predictions (its predict_outcomes returns None), so "
            f"{' and '.join(wanted_dr)} were skipped for it: only a model with an outcome model (mu0, mu1) "
            "gets doubly robust rows.",
            stacklevel=2,
        )
        estimators = tuple(e for e in estimators if e not in OUTCOME_ESTIMATORS)
    dr_inputs: dict[str, Any] = {}
    if wanted_dr and has_mu:
        dr_inputs = {"mu0": pred["mu0"], "mu1": pred["mu1"], "outcome": outcome_kind(task)}
    rows = evaluate_propensities(
        pred["t"],
        pred["y"],
        pred["propensity"],
        true_propensity=p_true,
        true_ate=task.true_ate,
        estimators=estimators,
        n_boot=evaluation.n_boot,
        seed=seed,
        **dr_inputs,
    )
    meta = {
        "run": run_label,
        "model": model_name(model),
        "corpus": hp.corpus,
        "task": hp.task,
        "level": hp.level,
        "seed": hp.seed,
        "representation": hp.representation,
        "split": evaluation.split,
        "true_ate": task.true_ate,
        "sample_ate": task.sample_ate,
    }
    chosen = _model_choice(model)
    if chosen is not None:  # a model that chose its own hyperparameters on validation records them
        meta["tuned"] = chosen
    return [{**meta, **r} for r in rows], meta


def _model_choice(model: Any) -> Optional[str]:
    """What ``model`` chose on validation itself (``chosen_hyperparameters()``) as the ``tuned`` column's JSON.

    None for a model that chooses nothing.
    """
    choose = getattr(model, "chosen_hyperparameters", None)
    chosen = choose() if callable(choose) else None
    return tuned_label(chosen) if chosen else None


def tuned_label(params: Any) -> str:
    """The ``tuned`` column of a row: the chosen values as compact JSON, keys sorted."""
    return json.dumps(dict(params), sort_keys=True, separators=(",", ":"))


def append_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Append rows to a CSV of :data:`RESULT_COLUMNS` atomically (old content + new rows, renamed).

    A file written with other columns (before columns were added to the schema or renamed) is rewritten
    under the current header first, its rows keeping their values (the new columns empty, the renamed
    ones under their new names: :func:`textcause.metrics.schema.migrate_row`).
    """
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    columns = list(RESULT_COLUMNS)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore")
    if old and next(csv.reader(io.StringIO(old)), columns) != columns:
        writer.writeheader()
        writer.writerows(migrate_row(r) for r in csv.DictReader(io.StringIO(old)))
        old = ""
    elif not old:
        writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, old + buf.getvalue())


def write_results(result: RunResult, log_dir: Path, csv_dir: Path, evaluation: EvaluationSettings) -> list[Path]:
    """``results.json`` (rows and provenance) in ``log_dir``; the rows appended to ``csv_dir/results.csv``."""
    meta = {
        **result.meta,
        "checkpoint": str(result.checkpoint) if result.checkpoint else None,
        "n_boot": evaluation.n_boot,
        "refit_reps": evaluation.refit_reps,
        "refit_kind": evaluation.refit_kind,
        "seconds": round(result.eval_seconds or 0.0, 3),
    }
    json_path = atomic_write_json(Path(log_dir) / "results.json", {"meta": meta, "rows": result.rows})
    csv_path = Path(csv_dir) / "results.csv"
    append_csv(csv_path, result.rows)
    return [json_path, csv_path]


def result_metrics(rows: Sequence[dict[str, Any]], prefix: str = "eval") -> dict[str, float]:
    """The numbers of result rows as flat metrics: ``<prefix>/<estimator>/ate``, ``.../ci_low``, ...
    and ``<prefix>/treatment_accuracy`` ...; missing and non-finite values are left out."""
    out: dict[str, float] = {}

    def put(name: str, value: Any) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[name] = float(value)

    for row in rows:
        for col in LOGGED_COLUMNS:
            put(f"{prefix}/{row['estimator']}/{col}", row.get(col))
    if rows:
        for col in LOGGED_METRICS:
            put(f"{prefix}/{col}", rows[0].get(col))
        put(f"{prefix}/true_ate", rows[0].get("true_ate"))
    return out


def append_csv_metrics(path: Path, metrics: dict[str, Any], *, step: Optional[int] = None) -> Path:
    """Append one row to a CSV log's ``metrics.csv``, keeping every row and column already there (atomically).

    Not through the ``CSVLogger``: a logger whose writer is first opened after training (the process
    that launched a DDP run, or ``evaluate.py``) deletes the ``metrics.csv`` it finds, which would
    throw away the training log. The columns are the union, sorted as Lightning sorts them.
    """
    rows: list[dict[str, Any]] = []
    keys: set[str] = set()
    if path.is_file():
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            rows = list(reader)
            keys = set(reader.fieldnames or ())
    row = {**metrics, "step": step if step is not None else len(rows)}
    fields = sorted(keys | set(row))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields)
    writer.writeheader()
    writer.writerows(rows + [row])
    return atomic_write_text(path, out.getvalue())


def log_results(loggers: Sequence[Any], rows: Sequence[dict[str, Any]], *, step: Optional[int] = None) -> None:
    """Send an evaluation's rows to the run's loggers (the CSV log's ``metrics.csv``, a wandb run's
    history and summary): :func:`result_metrics`, and for wandb also the rows as a table. No text is logged."""
    metrics = result_metrics(rows)
    if not metrics:
        return
    for logger in loggers:
        if type(logger).__name__ == "CSVLogger" and getattr(logger, "log_dir", None):
            append_csv_metrics(Path(logger.log_dir) / "metrics.csv", metrics, step=step)
            continue
        logger.log_metrics(metrics, step=step)
        experiment = getattr(logger, "_experiment", None) if type(logger).__name__ == "WandbLogger" else None
        if experiment is not None:
            import wandb

            columns = ["estimator", *LOGGED_COLUMNS, "split"]
            table = wandb.Table(columns=columns, data=[[r.get(c) for c in columns] for r in rows])
            experiment.log({"eval/results": table})
            experiment.summary.update(metrics)
        logger.save()

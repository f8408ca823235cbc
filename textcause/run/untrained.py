"""A model with nothing to train, evaluated on the one path without the LightningCLI and the Trainer.

A model with nothing to train (the oracle, the unadjusted baseline: ``requires_training = False``)
whose run needs nothing of the Trainer (no extra callbacks or loggers, one CPU process, full
precision, the default data module) is evaluated without the Trainer (:func:`untrained_config` says
whether a run qualifies; :func:`evaluate_untrained` runs it): the data module and the model are
built from the resolved config, the model predicts the evaluation split itself
(:func:`~textcause.run.evaluation.predict_untrained`) and the rows come from the same
:func:`~textcause.run.evaluation.evaluate_predictions`, identical to the Trainer's. Its run folder
has ``config.yaml`` (the resolved config, which ``evaluate.py`` reads), ``results.json``,
``metrics.csv`` (the evaluation's numbers), the model card and the ``results.csv`` rows; no
checkpoint (there is nothing to save) and no training log. It saves about a second a grid cell.
``TEXTCAUSE_FULL_PATH=1`` sends every run through the Trainer.
"""

from __future__ import annotations

import copy
import functools
import inspect
import os
import time
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from textcause.io import atomic_write_text
from textcause.run.evaluation import (
    RunResult,
    append_csv_metrics,
    evaluate_predictions,
    predict_untrained,
    result_metrics,
    write_results,
)
from textcause.run.figure import write_run_figure
from textcause.run.model_card import write_run_card
from textcause.run.settings import RunSettings, csv_logger, default_config, merge, to_yaml

__all__ = [
    "FULL_PATH_ENV",
    "evaluate_untrained",
    "untrained_config",
]

#: Set to 1 to send every run through the LightningCLI and the Trainer (benchmarks, checks).
FULL_PATH_ENV = "TEXTCAUSE_FULL_PATH"
#: Trainer options a model with nothing to train may carry and still skip the Trainer, with the
#: values allowed (None: any value). Anything else (more devices, another precision, a time or
#: batch limit, extra callbacks) takes the Trainer's path.
_TRAINER_OPTIONS: dict[str, Optional[tuple[Any, ...]]] = {
    "accelerator": ("cpu",),
    "devices": (1, "1"),
    "num_nodes": (None, 1),
    "strategy": (None, "auto"),
    "precision": (None, 32, "32", "32-true"),
    "max_epochs": None,
    "min_epochs": None,
    "enable_progress_bar": None,
    "enable_model_summary": None,
    "enable_checkpointing": None,
    "log_every_n_steps": None,
    "num_sanity_val_steps": None,
    "check_val_every_n_epoch": None,
    "deterministic": None,
    "benchmark": None,
    "default_root_dir": None,
    "logger": None,
    "callbacks": None,
}
_DATA_CLASSES = ("textcause.data.CausalTextDataModule", "textcause.data.datamodule.CausalTextDataModule")


def untrained_config(settings: RunSettings, config: Mapping[str, Any]) -> Optional[dict[str, Any]]:
    """The resolved config of a run that needs no Trainer, else None (the run takes the Trainer's path).

    A run needs no Trainer when its model is a baseline with nothing to learn
    (:class:`~textcause.models.OracleModel`, :class:`~textcause.models.UnadjustedModel`), it has a
    run folder and no extra callbacks or loggers, its data module is the default one, and its trainer
    options are the defaults' or harmless ones (:data:`_TRAINER_OPTIONS`). Options the LightningCLI
    would reject or convert (an unknown key, a value of another type) also take the Trainer's path,
    so their errors are the CLI's.

    Args:
        settings: the run.
        config: its config dict (:func:`~textcause.run.settings.run_config`).

    Returns:
        ``{"seed_everything", "trainer", "model", "data"}`` as the CLI would resolve them (the data
        module's ``init_args`` complete, without the linked ``seed``), or None.
    """
    if os.environ.get(FULL_PATH_ENV, "").strip() not in ("", "0") or settings.run_dir is None:
        return None
    if settings.callbacks or settings.loggers:
        return None
    merged = merge(default_config(), config)
    if not set(merged) <= {"seed_everything", "trainer", "model", "data"}:
        return None
    seed = merged.get("seed_everything", 0)
    if not _fits(seed, int) or seed < 0:
        return None
    model, data = merged.get("model"), merged.get("data")
    if not isinstance(model, dict) or not set(model) <= {"class_path", "init_args"}:
        return None
    cls = _untrained_class(model.get("class_path"))
    model_args = _init_args(cls, model.get("init_args") or {}) if cls is not None else None
    data_args = _data_args(data)
    trainer = merged.get("trainer") or {}
    if model_args is None or data_args is None or not _harmless_trainer(trainer, settings.run_dir):
        return None
    return {
        "seed_everything": seed,
        "trainer": trainer,
        "model": {"class_path": model["class_path"], "init_args": model_args},
        "data": {"class_path": _DATA_CLASSES[0], "init_args": data_args},
    }


def evaluate_untrained(settings: RunSettings, config: dict[str, Any], started: float) -> RunResult:
    """:func:`~textcause.run.fit.fit_and_evaluate` of a model with nothing to train, without the Trainer (:func:`untrained_config`)."""
    import lightning as L

    from textcause.data import CausalTextDataModule

    run_dir, seed = Path(str(settings.run_dir)), config["seed_everything"]  # untrained_config: a run_dir, an int seed
    L.seed_everything(seed, workers=True, verbose=False)  # as the CLI does
    log_dir = run_dir / "fit" / "version_0"  # the CSV logger's folder (csv_logger)
    log_dir.mkdir(parents=True, exist_ok=True)
    header = "# The resolved config of a model with nothing to train, evaluated without the Trainer.\n"
    atomic_write_text(log_dir / "config.yaml", header + to_yaml(config))
    data = CausalTextDataModule(**config["data"]["init_args"], seed=seed)  # the CLI's seed link
    model = _untrained_class(config["model"]["class_path"])(**config["model"]["init_args"])
    pred = predict_untrained(model, data)
    train_s = time.perf_counter() - started
    rows, meta = evaluate_predictions(pred, model, data, settings.evaluation, str(log_dir))
    result = RunResult(
        rows,
        meta,
        None,
        log_dir,
        pred,
        dict(data.representation_info),
        train_s,
        time.perf_counter() - started - train_s,
    )
    result.via_trainer = False
    result.monitor = _checkpoint_monitor(config["trainer"])
    write_results(result, log_dir, run_dir, settings.evaluation)
    metrics = result_metrics(rows)
    if metrics:  # a CSV logger opened afresh starts its metrics.csv over; so does this run
        (log_dir / "metrics.csv").unlink(missing_ok=True)
        append_csv_metrics(log_dir / "metrics.csv", metrics, step=0)
    figure = write_run_figure(result) if settings.writes_figure else None
    write_run_card(result, data, settings.evaluation, figure=figure)
    return result


def _untrained_class(class_path: Any) -> Optional[type]:
    """The baseline class a ``class_path`` names, if it is one with nothing to train; else None."""
    if not isinstance(class_path, str) or not class_path.startswith("textcause.models."):
        return None
    from textcause.models.baselines import OracleModel, UnadjustedModel
    from textcause.run.class_paths import class_from_path

    cls = class_from_path(class_path)
    return cls if cls in (OracleModel, UnadjustedModel) and not cls.requires_training else None


def _data_args(data: Any) -> Optional[dict[str, Any]]:
    """The data module's complete ``init_args`` (its defaults filled in), or None for another data module."""
    if not isinstance(data, dict):
        return None
    args = dict(data)
    if "class_path" in data:
        if data["class_path"] not in _DATA_CLASSES or not set(data) <= {"class_path", "init_args"}:
            return None
        args = dict(data.get("init_args") or {})
    from textcause.data import CausalTextDataModule

    if "seed" in args:  # a link target: the CLI refuses it
        return None
    out = _init_args(CausalTextDataModule, args)
    if out is not None:
        out.pop("seed", None)
    return out


@functools.cache
def _signature(cls: type) -> tuple[dict[str, Any], dict[str, Any]]:
    """The type hints and the defaults of ``cls.__init__``'s arguments."""
    hints = typing.get_type_hints(cls.__init__)
    params = inspect.signature(cls.__init__).parameters
    defaults = {n: p.default for n, p in params.items() if n != "self" and p.default is not inspect.Parameter.empty}
    return {n: hints.get(n, Any) for n in params if n != "self"}, defaults


def _init_args(cls: type, given: Mapping[str, Any]) -> Optional[dict[str, Any]]:
    """``cls``'s arguments with its defaults filled in, or None when one is unknown or not of its type."""
    if not isinstance(given, Mapping):
        return None
    hints, defaults = _signature(cls)
    if not set(given) <= set(hints) or not all(_fits(v, hints[k]) for k, v in given.items()):
        return None
    if not set(hints) <= set(defaults) | set(given) | {"seed"}:  # a required argument left out
        return None
    return {**copy.deepcopy(defaults), **copy.deepcopy(dict(given))}


def _fits(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of type ``hint`` as it stands (no conversion the CLI might make)."""
    origin = typing.get_origin(hint)
    if origin is typing.Union:
        return any(_fits(value, arg) for arg in typing.get_args(hint))
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint in (int, float, str):
        return type(value) is hint
    if origin is dict or hint is dict:
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    return False


def _harmless_trainer(trainer: Mapping[str, Any], run_dir: Path) -> bool:
    """Whether trainer options leave the evaluation of a model with nothing to train as it is without a Trainer."""
    if not isinstance(trainer, Mapping) or not set(trainer) <= set(_TRAINER_OPTIONS):
        return False
    for key, allowed in _TRAINER_OPTIONS.items():
        if allowed is not None and trainer.get(key) not in allowed:
            return False
    epochs = trainer.get("max_epochs")
    if epochs is not None and not (_fits(epochs, int) and epochs >= 1):
        return False
    defaults = (default_config().get("trainer") or {}).get("callbacks")
    return trainer.get("logger") == csv_logger(run_dir) and trainer.get("callbacks") == defaults


def _checkpoint_monitor(trainer: Mapping[str, Any]) -> Optional[str]:
    """The metric the config's ``ModelCheckpoint`` monitors (the Trainer's ``checkpoint_callback.monitor``)."""
    for cb in trainer.get("callbacks") or []:
        if isinstance(cb, Mapping) and str(cb.get("class_path", "")).endswith("ModelCheckpoint"):
            return (cb.get("init_args") or {}).get("monitor")
    return None

"""The one fit-and-evaluate path: typed settings in, result rows out.

Every caller reaches training and evaluation through these functions: ``train.py`` is the
LightningCLI face of the same config semantics; ``evaluate.py`` calls :func:`evaluate_run`; a
benchmark cell, an observational study's model, a :class:`~textcause.methods.ConfigPropensity` and
the sweeps call :func:`fit_and_evaluate` with a :class:`RunSettings`. Nobody builds argv strings.

A run is configured as ``train.py`` would be: the default configs (trainer defaults, Twitter data
defaults), then the model config file(s), then dotted overrides (``{"data.level": 3}``). The
config dict goes to the LightningCLI (:func:`textcause.runs.lightning_cli.make_cli`), which
instantiates the data module, the model (sized by a ``link_arguments`` link) and the trainer. The
test split's propensities are predicted from the best checkpoint and turned into rows by
:func:`textcause.metrics.evaluation.evaluate_propensities`, the function the metrics callback also
calls, so a callback's numbers, ``evaluate.py``'s and a cell's agree by construction.

A model with nothing to train (the oracle, the unadjusted baseline: ``requires_training = False``)
whose run needs nothing of the Trainer (no extra callbacks or loggers, one CPU process, full
precision, the default data module) is evaluated on the same path without the LightningCLI and the
Trainer (:func:`untrained_config`): the data module and the model are built from the resolved config,
the model predicts the evaluation split itself (:func:`~textcause.runs.evaluation.predict_untrained`)
and the rows come from the same :func:`~textcause.runs.evaluation.evaluate_predictions`, identical
to the Trainer's. Its run folder has ``config.yaml`` (the resolved config, which ``evaluate.py``
reads), ``results.json``, ``metrics.csv`` (the evaluation's numbers), the model card and the
``results.csv`` rows; no checkpoint (there is nothing to save) and no training log. It saves about a
second a grid cell. ``TEXTCAUSE_FULL_PATH=1`` sends every run through the Trainer.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import io
import logging
import os
import time
import typing
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from textcause.io import atomic_write_text
from textcause.runs.evaluation import (
    EvaluationSettings,
    RunResult,
    _check_checkpoint,
    append_csv,
    append_csv_metrics,
    evaluate_model,
    evaluate_predictions,
    find_checkpoint,
    log_results,
    model_name,
    predict_propensities,
    predict_untrained,
    result_metrics,
    write_results,
)
from textcause.runs.model_card import write_run_card
from textcause.runs.run_figure import write_run_figure

__all__ = [  # the evaluation side lives in textcause.runs.evaluation; its names stay importable from here
    "EvaluationSettings",
    "RunResult",
    "RunSettings",
    "append_csv",
    "evaluate_model",
    "evaluate_predictions",
    "evaluate_run",
    "find_checkpoint",
    "fit_and_evaluate",
    "instantiate",
    "model_name",
    "predict_propensities",
    "run_config",
    "untrained_config",
    "write_results",
]

_LIGHTNING_LOGGERS = ("lightning.pytorch", "lightning.fabric")


@dataclass(frozen=True)
class RunSettings:
    """One training run and its evaluation.

    Attributes:
        configs: the run's config files after the defaults (a model config, optionally more such as
            ``configs/trainer/wandb.yaml``), merged in order.
        overrides: dotted ``train.py`` options applied last (``{"data.level": 3, "trainer.max_epochs": 2}``).
        run_dir: the run's folder: its logs (``<run_dir>/fit/version_0``), checkpoints and
            ``results.csv`` go there. None: the trainer config's own logger and root.
        evaluation: how the trained model is evaluated.
        quiet: no progress bar and no model summary (batch runs).
        callbacks: callback objects added to the trainer's (after the config's), e.g. a sweep's
            pruning callback.
        loggers: logger configs (``class_path`` / ``init_args``) beside the run's CSV logger (needs
            ``run_dir``); a ``WandbLogger`` among them is finished when the run ends, so the next run
            of the process gets a run of its own.
        figure: draw the propensity overlap figure (``propensity_overlap.png`` in the log folder,
            handed to the loggers: :mod:`textcause.runs.run_figure`). None: unless ``quiet``, so
            grid cells, sweep trials and tuning candidates do not pay for it.
    """

    configs: tuple[Path, ...]
    overrides: Mapping[str, Any] = field(default_factory=dict)
    run_dir: Optional[Path] = None
    evaluation: EvaluationSettings = field(default_factory=EvaluationSettings)
    quiet: bool = False
    callbacks: tuple[Any, ...] = ()
    loggers: tuple[Mapping[str, Any], ...] = ()
    figure: Optional[bool] = None

    def __post_init__(self) -> None:
        configs = (self.configs,) if isinstance(self.configs, (str, Path)) else tuple(self.configs)
        if not configs:
            raise ValueError("The 'configs' parameter of RunSettings must name at least one config file.")
        for path in configs:
            if not Path(path).is_file():
                raise FileNotFoundError(f"No model config at '{path}': give a YAML file such as configs/oracle.yaml.")
        object.__setattr__(self, "configs", tuple(Path(p) for p in configs))
        if self.run_dir is not None:
            object.__setattr__(self, "run_dir", Path(self.run_dir))
        object.__setattr__(self, "overrides", {str(k).lstrip("-"): v for k, v in dict(self.overrides).items()})
        object.__setattr__(self, "callbacks", tuple(self.callbacks))
        object.__setattr__(self, "loggers", tuple(dict(lg) for lg in self.loggers))
        if self.loggers and self.run_dir is None:
            raise ValueError("The 'loggers' parameter of RunSettings needs a 'run_dir' for their files.")

    @property
    def writes_figure(self) -> bool:
        """Whether the run draws its propensity overlap figure (``figure``, else not ``quiet``)."""
        return not self.quiet if self.figure is None else bool(self.figure)


# ---------------------------------------------------------------------------------------- config
def nest(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted options as a nested dict: ``{"data.level": 3}`` -> ``{"data": {"level": 3}}``."""
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        parts = key.split(".")
        cur = out
        for part in parts[:-1]:
            nxt = cur.get(part)
            if not isinstance(nxt, dict):
                nxt = cur[part] = {}
            cur = nxt
        cur[parts[-1]] = copy.deepcopy(value)
    return out


def merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` merged into a copy of ``base``: mappings key by key, anything else replaced."""
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def read_config(path: Path) -> dict[str, Any]:
    """A YAML config file as a dict (one sentence naming the file when it is not a YAML mapping)."""
    try:
        value = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise ValueError(f"The config '{path}' is not valid YAML: {err}") from None
    if not isinstance(value, dict):
        raise ValueError(f"The config '{path}' must be a YAML mapping of options. Got {type(value).__name__} instead.")
    return value


def csv_logger(run_dir: Path) -> dict[str, Any]:
    """The logger config of a batch run: a CSV log in ``<run_dir>/fit/version_0``."""
    return {
        "class_path": "lightning.pytorch.loggers.CSVLogger",
        "init_args": {"save_dir": str(run_dir), "name": "fit", "version": 0},
    }


def run_config(settings: RunSettings) -> dict[str, Any]:
    """The config dict of a run (on top of the default configs, which the CLI adds itself)."""
    config: dict[str, Any] = {}
    for path in settings.configs:
        config = merge(config, read_config(path))
    config = merge(config, nest(settings.overrides))
    extra: dict[str, Any] = {"data.predict_split": settings.evaluation.split}
    if settings.quiet:
        extra.update({"trainer.enable_progress_bar": False, "trainer.enable_model_summary": False})
    if settings.run_dir is not None:
        logger = [csv_logger(settings.run_dir), *settings.loggers] if settings.loggers else csv_logger(settings.run_dir)
        extra.update({"trainer.default_root_dir": str(settings.run_dir), "trainer.logger": logger})
    return merge(config, nest(extra))


def instantiate(config: Mapping[str, Any], **kwargs: Any) -> Any:
    """The LightningCLI (``run=False``) that instantiated ``config``'s data module, model and trainer.

    Raises:
        ValueError: an option the CLI rejects (unknown key, wrong type), in one sentence.
    """
    from jsonargparse import ArgumentError

    from textcause.runs.lightning_cli import make_cli

    parser_kwargs = {"exit_on_error": False, **kwargs.pop("parser_kwargs", {})}
    try:
        return make_cli(dict(config), run=False, parser_kwargs=parser_kwargs, **kwargs)
    except ArgumentError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"The run's options were rejected: {first}") from None


# ---------------------------------------------------------------------------------------- the path
def fit_and_evaluate(settings: RunSettings) -> RunResult:
    """Train a model as ``train.py fit`` would, then evaluate its best checkpoint as ``evaluate.py`` would.

    Writes ``results.json`` into the run's log folder and appends its rows to ``results.csv`` in
    ``settings.run_dir`` (or the log folder).

    Raises:
        ValueError: an option the CLI rejects, or bad data settings.
        FileNotFoundError: a missing config or corpus.
    """
    started = time.perf_counter()
    config = run_config(settings)
    untrained = untrained_config(settings, config)
    if untrained is not None:
        return _evaluate_untrained(settings, untrained, started)
    extra = {"trainer_defaults": {"callbacks": list(settings.callbacks)}} if settings.callbacks else {}
    cli = instantiate(config, **extra)
    trainer, model, data = cli.trainer, cli.model, cli.datamodule
    ok = False
    try:
        trainer.fit(model, datamodule=data)
        train_s = time.perf_counter() - started
        checkpoint = trainer.checkpoint_callback
        best = getattr(checkpoint, "best_model_path", "") or None
        log_dir = Path(trainer.log_dir) if trainer.log_dir else None
        ckpt = Path(best) if best else None
        _check_checkpoint(model, ckpt, str(log_dir))
        rows, meta, pred = evaluate_model(trainer, model, data, ckpt, settings.evaluation, str(log_dir))
        result = RunResult(
            rows,
            meta,
            ckpt,
            log_dir,
            pred,
            dict(data.representation_info),
            train_s,
            time.perf_counter() - started - train_s,
        )
        score = getattr(checkpoint, "best_model_score", None)
        result.monitor = getattr(checkpoint, "monitor", None)
        result.best_score = float(score) if score is not None else None
        if log_dir is not None and trainer.is_global_zero:  # under DDP every rank holds the rows; one writes them
            write_results(result, log_dir, settings.run_dir or log_dir, settings.evaluation)
            log_results(trainer.loggers, rows, step=trainer.global_step)
            figure = (
                write_run_figure(result, trainer.loggers, step=trainer.global_step) if settings.writes_figure else None
            )
            write_run_card(result, data, settings.evaluation, figure=figure)
        ok = True
        return result
    finally:
        if settings.loggers:
            finish_wandb(trainer, ok=ok)


# ---------------------------------------------------------------------------------------- nothing to train
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
        config: its config dict (:func:`run_config`).

    Returns:
        ``{"seed_everything", "trainer", "model", "data"}`` as the CLI would resolve them (the data
        module's ``init_args`` complete, without the linked ``seed``), or None.
    """
    if os.environ.get(FULL_PATH_ENV, "").strip() not in ("", "0") or settings.run_dir is None:
        return None
    if settings.callbacks or settings.loggers:
        return None
    merged = merge(_defaults(), config)
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


def _evaluate_untrained(settings: RunSettings, config: dict[str, Any], started: float) -> RunResult:
    """:func:`fit_and_evaluate` of a model with nothing to train, without the Trainer (:func:`untrained_config`)."""
    import lightning as L

    from textcause.data import CausalTextDataModule

    run_dir, seed = Path(str(settings.run_dir)), config["seed_everything"]  # untrained_config: a run_dir, an int seed
    L.seed_everything(seed, workers=True, verbose=False)  # as the CLI does
    log_dir = run_dir / "fit" / "version_0"  # the CSV logger's folder (csv_logger)
    log_dir.mkdir(parents=True, exist_ok=True)
    header = "# The resolved config of a model with nothing to train, evaluated without the Trainer.\n"
    atomic_write_text(log_dir / "config.yaml", header + _yaml(config))
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
    from textcause.runs.lightning_cli import class_from_path

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
    defaults = (_defaults().get("trainer") or {}).get("callbacks")
    return trainer.get("logger") == csv_logger(run_dir) and trainer.get("callbacks") == defaults


def _checkpoint_monitor(trainer: Mapping[str, Any]) -> Optional[str]:
    """The metric the config's ``ModelCheckpoint`` monitors (the Trainer's ``checkpoint_callback.monitor``)."""
    for cb in trainer.get("callbacks") or []:
        if isinstance(cb, Mapping) and str(cb.get("class_path", "")).endswith("ModelCheckpoint"):
            return (cb.get("init_args") or {}).get("monitor")
    return None


def _defaults() -> dict[str, Any]:
    """The default config files merged, as the CLI reads them first (read once per process and file version;
    callers get the cached dict: :func:`merge` copies it)."""
    from textcause.paths import default_configs

    return _read_defaults(tuple((str(p), p.stat().st_mtime_ns) for p in default_configs()))


@functools.lru_cache(maxsize=4)
def _read_defaults(files: tuple[tuple[str, int], ...]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for path, _ in files:
        merged = merge(merged, read_config(Path(path)))
    return merged


def _yaml(config: Mapping[str, Any]) -> str:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(dict(config), Dumper=dumper, sort_keys=False, default_flow_style=False)


def finish_wandb(trainer: Any, *, ok: bool = True) -> None:
    """Finish the wandb runs of ``trainer``'s loggers (Lightning never calls ``wandb.finish()``)."""
    from lightning.pytorch.loggers import WandbLogger

    for logger in trainer.loggers:
        run = getattr(logger, "_experiment", None) if isinstance(logger, WandbLogger) else None
        if run is not None:
            run.finish(exit_code=0 if ok else 1)


def evaluate_run(
    run_dir: str | Path,
    evaluation: EvaluationSettings = EvaluationSettings(),
    *,
    ckpt: str | Path | None = None,
    csv_dir: str | Path | None = None,
    allow_modules: Sequence[str] = (),
    figure: bool = True,
) -> RunResult:
    """Evaluate a finished run folder (``config.yaml`` and ``checkpoints/``): ``evaluate.py``.

    Args:
        run_dir: the run's log folder, as written by ``train.py fit``.
        evaluation: how to evaluate.
        ckpt: the checkpoint (default: the run's best).
        csv_dir: where ``results.csv`` is appended (default: the run folder).
        allow_modules: packages beyond textcause, lightning, torch and torchmetrics whose classes
            the run's config may name (``evaluate.py --allow-module``).
        figure: draw ``propensity_overlap.png`` into the run folder (:mod:`textcause.runs.run_figure`).

    Raises:
        FileNotFoundError: no ``config.yaml``, a named checkpoint that does not exist, or no
            checkpoint for a model that must be trained.
        ValueError: the config names a class outside the allowed packages (nothing it names is
            imported) or of the wrong kind (see :func:`textcause.runs.lightning_cli.check_class_paths`).
    """
    run_dir = Path(run_dir)
    config_path = run_dir / "config.yaml"
    if not config_path.is_file():
        raise FileNotFoundError(f"No config.yaml in '{run_dir}': give the folder of a run made by train.py.")
    checkpoint = Path(ckpt) if ckpt else find_checkpoint(run_dir)
    if ckpt and not checkpoint.is_file():
        raise FileNotFoundError(f"No checkpoint at '{checkpoint}'.")
    saved = read_config(config_path)
    for key in ("ckpt_path", "weights_only"):  # fit-only keys, not options of a bare (run=False) CLI
        saved.pop(key, None)
    config = merge(
        saved,
        nest(
            {
                "data.predict_split": evaluation.split,
                "trainer.logger": False,
                "trainer.devices": 1,  # evaluation is one process, whatever trained the run (DDP, nodes)
                "trainer.num_nodes": 1,
                "trainer.strategy": "auto",
                "trainer.callbacks": [],
                "trainer.enable_progress_bar": False,
            }
        ),
    )
    from textcause.runs.lightning_cli import check_class_paths

    check_class_paths(config, str(config_path), allow=allow_modules)  # before anything it names is imported
    started = time.perf_counter()
    cli = instantiate(config, save_config_callback=None)
    _check_checkpoint(cli.model, checkpoint, str(run_dir))
    rows, meta, pred = evaluate_model(cli.trainer, cli.model, cli.datamodule, checkpoint, evaluation, str(run_dir))
    result = RunResult(
        rows,
        meta,
        checkpoint,
        run_dir,
        pred,
        dict(cli.datamodule.representation_info),
        None,
        time.perf_counter() - started,
    )
    write_results(result, run_dir, Path(csv_dir) if csv_dir else run_dir, evaluation)
    write_run_card(result, cli.datamodule, evaluation, figure=write_run_figure(result) if figure else None)
    return result


@contextlib.contextmanager
def captured(log: io.StringIO, *, ignore: Sequence[str] = ()) -> Iterator[None]:
    """Send a batch run's output to ``log``: stdout, stderr, Lightning's info lines (warnings stay in the log).

    Args:
        log: where the output goes.
        ignore: warning message patterns to drop altogether.
    """
    loggers = [logging.getLogger(n) for n in _LIGHTNING_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.WARNING)
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log), warnings.catch_warnings():
            for pattern in ignore:
                warnings.filterwarnings("ignore", message=pattern)
            yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def error_line(log: str) -> str:
    """The most telling line of a failed run's output (the last ``error:`` line, else the last line)."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    flagged = [ln for ln in lines if "error:" in ln.lower()]
    return (flagged or lines or ["(no output)"])[-1][:500]

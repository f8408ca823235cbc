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
"""

from __future__ import annotations

import contextlib
import copy
import io
import logging
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from textcause.runs.evaluation import (
    EvaluationSettings,
    RunResult,
    _check_checkpoint,
    append_csv,
    evaluate_model,
    evaluate_predictions,
    find_checkpoint,
    log_results,
    model_name,
    predict_propensities,
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
    extra = {"trainer_defaults": {"callbacks": list(settings.callbacks)}} if settings.callbacks else {}
    cli = instantiate(run_config(settings), **extra)
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

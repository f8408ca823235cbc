"""The one fit-and-evaluate path: typed settings in, result rows out.

Every caller reaches training and evaluation through these functions: ``train.py`` is the
LightningCLI face of the same config semantics; ``evaluate.py`` calls :func:`evaluate_run`; a
benchmark cell, an observational study's model, a :class:`~textcause.methods.ConfigPropensity` and
the sweeps call :func:`fit_and_evaluate` with a :class:`RunSettings`. Nobody builds argv strings.

A run is configured as ``train.py`` would be: the default configs (trainer defaults, Twitter data
defaults), then the model config file(s), then dotted overrides (``{"data.level": 3}``). The
config dict goes to the LightningCLI (:func:`textcause.run.lightning_cli.make_cli`), which
instantiates the data module, the model (sized by a ``link_arguments`` link) and the trainer. The
test split's propensities are predicted from the best checkpoint and turned into rows by
:func:`textcause.metrics.evaluation.evaluate_propensities`, the function the metrics callback also
calls, so a callback's numbers, ``evaluate.py``'s and a cell's agree by construction.

A model with nothing to train (the oracle, the unadjusted baseline) whose run needs nothing of the
Trainer is evaluated on the same path without the LightningCLI and the Trainer
(:mod:`textcause.run.untrained`); the run's settings and config dict are
:mod:`textcause.run.settings`. Their names stay importable from here.
"""

from __future__ import annotations

import contextlib
import io
import logging
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from textcause.run.evaluation import (
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
from textcause.run.figure import write_run_figure
from textcause.run.model_card import write_run_card
from textcause.run.settings import RunSettings, csv_logger, merge, nest, read_config, run_config
from textcause.run.untrained import FULL_PATH_ENV, evaluate_untrained, untrained_config

__all__ = [  # the evaluation side, the settings and the no-Trainer path live beside; their names stay importable
    "FULL_PATH_ENV",
    "EvaluationSettings",
    "RunResult",
    "RunSettings",
    "append_csv",
    "evaluate_model",
    "evaluate_predictions",
    "evaluate_run",
    "find_checkpoint",
    "fit_and_evaluate",
    "captured",
    "error_line",
    "instantiate",
    "csv_logger",
    "merge",
    "model_name",
    "nest",
    "predict_propensities",
    "read_config",
    "run_config",
    "untrained_config",
    "write_results",
]

_LIGHTNING_LOGGERS = ("lightning.pytorch", "lightning.fabric")


def instantiate(config: Mapping[str, Any], **kwargs: Any) -> Any:
    """The LightningCLI (``run=False``) that instantiated ``config``'s data module, model and trainer.

    Raises:
        ValueError: an option the CLI rejects (unknown key, wrong type), in one sentence.
    """
    from jsonargparse import ArgumentError

    from textcause.run.lightning_cli import make_cli

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
        return evaluate_untrained(settings, untrained, started)
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
            _finish_wandb(trainer, ok=ok)


def _finish_wandb(trainer: Any, *, ok: bool = True) -> None:
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
        figure: draw ``propensity_overlap.png`` into the run folder (:mod:`textcause.run.figure`).

    Raises:
        FileNotFoundError: no ``config.yaml``, a named checkpoint that does not exist, or no
            checkpoint for a model that must be trained.
        ValueError: the config names a class outside the allowed packages (nothing it names is
            imported) or of the wrong kind (see :func:`textcause.run.class_paths.check_class_paths`).
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
    from textcause.run.class_paths import check_class_paths

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

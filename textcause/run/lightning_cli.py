"""The LightningCLI behind ``train.py``, ``textcause train`` and every internal run.

``python train.py fit --config configs/model/lr_bigram_binary.yaml`` trains a propensity model on a
semi-synthetic task; the trainer and corpus defaults come from ``configs/trainer/default.yaml`` and
``configs/data/twitter.yaml`` (found through :func:`textcause.paths.default_configs`: a missing
default is an error) and any value can be overridden on the command line (``--data.level 3``,
``--trainer.max_epochs 5``, or wandb's ``--data.level=3`` style). ``--print_config`` prints the
resolved config. Internal callers (:mod:`textcause.run.fit`) pass a config dict instead of argv.

The data module is :class:`~textcause.data.CausalTextDataModule` unless a config names another
one by ``class_path`` (``data: {class_path: textcause.gender.GenderDataModule, init_args: {...}}``);
a plain ``data: {corpus: ..., ...}`` mapping stays the init arguments of the causal data module.

A saved run's config (``evaluate.py``) is checked by :func:`textcause.run.class_paths.check_class_paths` before
anything it names is imported: every ``class_path`` must lie under its ``ALLOWED_PACKAGES`` (or a package the
user allows explicitly) and resolve to a subclass of what its place expects (a ``LightningModule``
for ``model``, a ``LightningDataModule`` for ``data``, an ``nn.Module`` for ``model...net``).
A rejected option prints one line (:class:`OneLineParser`: the key, what was expected, what was
given); the full usage only with ``--help``.
"""

from __future__ import annotations

import inspect
import logging
import os
import re
import sys
import warnings
from typing import Any, NoReturn

import lightning as L
from lightning.fabric.utilities.cloud_io import get_filesystem
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI, SaveConfigCallback

from textcause.data import CausalTextDataModule
from textcause.io import load_yaml
from textcause.paths import default_configs
from textcause.run.class_paths import class_from_path
from textcause.run.dotted import dotted_get
from textcause.run.resume import (
    check_checkpoint_fits,
    in_run_folder,
    keep_metrics,
    resume_in_place,
    run_folder,
    run_settings,
)
from textcause.validation import option_error_sentence

__all__ = [
    "DEFAULT_DATA",
    "NET_INPUT_DIM",
    "SUBCOMMANDS",
    "OneLineParser",
    "SaveAndLogConfig",
    "TextCauseCLI",
    "make_cli",
    "refuse_duplicate_yaml_keys",
]

NET_INPUT_DIM = "model.init_args.net.init_args.input_dim"
#: The data module of a config whose ``data`` has no ``class_path``.
DEFAULT_DATA = f"{CausalTextDataModule.__module__}.{CausalTextDataModule.__qualname__}"
_SUBCLASS_KEYS = ("class_path", "init_args", "dict_kwargs", "__path__")


class OneLineParser(LightningArgumentParser):
    """The CLI's parser: a rejected option is one ``error:`` line (exit 2), not a 70-line usage dump.

    With ``exit_on_error=False`` (internal callers) it raises ``argparse.ArgumentError`` as before;
    ``--help`` prints the full usage; ``JSONARGPARSE_DEBUG`` keeps jsonargparse's own behaviour.
    """

    def error(self, message: str, ex: Exception | None = None) -> NoReturn:
        if not self.exit_on_error or os.environ.get("JSONARGPARSE_DEBUG"):
            super().error(message, ex)
        self._logger.error(message)
        prog = self.prog.replace(" [options]", "")
        line = _with_suggestion(option_error_sentence(message), message)
        hint = "run with --help for the options."
        line = line.replace(hint, f"see {prog} --help.") if hint in line else f"{line} (all options: {prog} --help)"
        line = line.replace("? see ", "? See ")
        sys.stderr.write(f"error: {line}\n")
        self.exit(2)


def _with_suggestion(line: str, message: str) -> str:
    """``line`` for an option a class does not take, with its closest argument ("did you mean --model.lr?")."""
    import difflib

    rejected = re.search(r"Option '([^']+)' is not accepted", message)
    owner = re.search(r"Problem with given class_path '([^']+)'", message)
    key = re.search(r'Parser key "([^"]+)"', message)
    cls = class_from_path(owner.group(1)) if rejected and owner and key else None
    if cls is None:
        return line
    names = [n for n in inspect.signature(cls.__init__).parameters if n not in ("self", "args", "kwargs")]
    close = difflib.get_close_matches(rejected.group(1), names, n=1, cutoff=0.6)
    if not close:
        return line
    return line.replace(": run with --help", f": did you mean --{key.group(1)}.{close[0]}? run with --help", 1)


class SaveAndLogConfig(SaveConfigCallback):
    """Lightning's ``SaveConfigCallback`` for ``fit`` only, which also logs the resolved config.

    ``config.yaml`` is written into the log folder of a fit (as LightningCLI does), and the whole
    resolved config (seed, trainer, callbacks, model, data) goes to every logger as ``config``: the
    CSV log's ``hparams.yaml``, an offline wandb run's config. ``test``, ``validate`` and
    ``predict`` write no config (they would leave a stray ``config.yaml`` in a new run folder).
    """

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        """Lightning's ``SaveConfigCallback.setup`` for ``fit``, but the config is written without a second
        validation: it was validated when parsed, and the text is the same (tested); 19 -> 7 ms a run."""
        if stage != "fit" or self.already_saved:
            return
        if self.save_to_log_dir:
            log_dir = trainer.log_dir  # this broadcasts the directory
            if log_dir is None:  # Lightning asserts it; a user should read what to change
                raise ValueError(
                    "The trainer has no log folder to write config.yaml into: give it a logger or a "
                    "default_root_dir, or set save_config_kwargs={'save_to_log_dir': False}."
                )
            config_path = os.path.join(log_dir, self.config_filename)
            fs = get_filesystem(log_dir)
            if not self.overwrite:
                exists = fs.isfile(config_path) if trainer.is_global_zero else False
                if trainer.strategy.broadcast(exists):
                    raise RuntimeError(
                        f"{type(self).__name__} expected {config_path} to NOT exist. Aborting to avoid overwriting"
                        " results of a previous run. You can delete the previous config file,"
                        " set `LightningCLI(save_config_callback=None)` to disable config saving,"
                        ' or set `LightningCLI(save_config_kwargs={"overwrite": True})` to overwrite the config file.'
                    )
            if trainer.is_global_zero:
                fs.makedirs(log_dir, exist_ok=True)
                self._save(config_path, fs)
        if trainer.is_global_zero:
            self.save_config(trainer, pl_module, stage)
            self.already_saved = True
        self.already_saved = trainer.strategy.broadcast(self.already_saved)

    def _save(self, config_path: str, fs: Any) -> None:
        """Write ``config.yaml``; on a local disk atomically (a full disk leaves no empty or partial file)."""
        kwargs = {"skip_none": False, "multifile": self.multifile, "skip_validation": True}
        if type(fs).__name__ != "LocalFileSystem" or self.multifile:
            self.parser.save(self.config, config_path, overwrite=self.overwrite, **kwargs)
            return
        from textcause.io import atomic_path

        with atomic_path(config_path, suffix=".yaml") as tmp:
            self.parser.save(self.config, str(tmp), overwrite=True, **kwargs)

    def save_config(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        # validated when parsed: checking it again only costs (20 -> 6 ms a run, the same text)
        config = self.parser.dump(self.config, skip_none=False, format="json", skip_validation=True)
        import json

        resolved = {k: v for k, v in json.loads(config).items() if k not in ("config", "__path__")}
        for logger in trainer.loggers:
            logger.log_hyperparams({"config": resolved})


class TextCauseCLI(LightningCLI):
    """LightningCLI with textcause's links and defaults.

    * ``data`` is any ``LightningDataModule`` chosen by ``class_path`` (it must take a ``seed``);
      without one it is :class:`~textcause.data.CausalTextDataModule` (:data:`DEFAULT_DATA`).
    * ``seed_everything`` is linked to ``data.seed``: one seed per run draws the task and seeds training.
    * The model component's ``input_dim`` is linked to the data module's feature width when it is
      instantiated (``link_arguments(..., apply_on="instantiate")``), for models whose ``net`` takes
      an ``input_dim`` that the config leaves empty (baselines such as the oracle have no net).
    * LightningCLI's automatic ``--optimizer`` / ``--lr_scheduler`` are off: a model's optimizer is
      part of the model (``model.init_args.optimizer``), so nothing can silently replace it.
    * ``--trainer.default_root_dir DIR`` moves the run's outputs: loggers at a root the config files
      give (``runs``) follow it (:mod:`textcause.run.root_dir`).
    * ``fit --ckpt_path last`` resumes the latest run of the same logger that has a ``last.ckpt``,
      in that run's own folder (:func:`resume_in_place`).
    * ``test``, ``validate`` and ``predict`` of a run's checkpoint work in that run's folder
      (:func:`run_folder`): ``test`` logs into ``RUN/test/`` and reports the estimates with the
      intervals of ``evaluate.py`` (the same evaluation, :func:`textcause.run.evaluation.evaluate_model`;
      ``--evaluation.n_boot`` and the other :class:`~textcause.run.evaluation.EvaluationSettings`),
      ``predict`` writes ``RUN/predictions-<split>.csv`` through a
      :class:`~textcause.callbacks.UserPredictionWriter` and logs nothing. None of them writes a
      ``config.yaml`` or opens an empty ``version_N`` folder (:class:`SaveAndLogConfig`).
    * Checkpoints on local disk are written in 1 MiB writes
      (:class:`~textcause.callbacks.checkpoint_io.ChunkedCheckpointIO`: the same files, several
      times faster on the project's VM), unless the config names its own ``CheckpointIO`` plugin.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("save_config_callback", SaveAndLogConfig)
        refuse_duplicate_yaml_keys()
        self._run_dir: Any = None
        self._resume: Any = None  # (checkpoint, run folder or None) of a fit --ckpt_path
        super().__init__(*args, **kwargs)

    def _parse_ckpt_path(self) -> None:
        """LightningCLI's, except for ``fit``: there the config given is the model fitted, never replaced by
        the hyperparameters of the ``--ckpt_path`` checkpoint (which silently turned a resume of another
        model's run into a fit of that model); the checkpoint must fit it (:meth:`before_fit`)."""
        if self.config.get("subcommand") == "fit":
            return
        super()._parse_ckpt_path()

    def _prepare_subcommand_parser(self, klass: type, subcommand: str, **kwargs: Any) -> LightningArgumentParser:
        parser = super()._prepare_subcommand_parser(klass, subcommand, **kwargs)
        parser.set_defaults(weights_only=True)  # a --ckpt_path is read as plain values and tensors, never as code
        if subcommand == "test":
            from textcause.run.evaluation import EvaluationSettings

            parser.add_class_arguments(EvaluationSettings, "evaluation", fail_untyped=False)
        return parser

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.set_defaults({"data": {"class_path": DEFAULT_DATA}})
        parser.link_arguments("seed_everything", "data.init_args.seed", compute_fn=_seed_to_int)

    def _dump_config(self) -> None:
        """LightningCLI's dump of the config (what the model and data module record as hyperparameters
        for ``load_from_checkpoint``), without a second validation and read back with libyaml's loader:
        the same mapping (tested), 24 -> 8 ms a run."""
        if hasattr(self, "config_dump"):
            return
        text = self.parser.dump(
            self.config, skip_link_targets=False, skip_none=False, format="yaml", skip_validation=True
        )
        self.config_dump = load_yaml(text)
        if "subcommand" in self.config:
            self.config_dump = self.config_dump[self.config.subcommand]

    def parse_arguments(self, parser: LightningArgumentParser, args: Any) -> None:
        if isinstance(args, dict):
            args = _init_args_under_class_path(args)
        super().parse_arguments(parser, args)

    def before_instantiate_classes(self) -> None:
        cfg = self.config[self.subcommand] if self.subcommand else self.config
        _follow_default_root_dir(cfg, self.subcommand)  # before `last` is looked for under the logger
        if self.subcommand == "fit" and cfg.get("ckpt_path"):
            text = self._parser("fit").dump(cfg, skip_none=False, format="yaml", skip_validation=True)
            self._resume = resume_in_place(cfg, run_settings(load_yaml(text)))
        if self.subcommand in ("test", "validate", "predict"):
            self._run_dir = run_folder(cfg)
            in_run_folder(cfg, self.subcommand, self._run_dir)
        net = dotted_get(cfg, "model.init_args.net")
        if net is None or not _accepts(net, "input_dim") or net.init_args.get("input_dim") not in (None, 0):
            return
        # Sized when the data module is instantiated (its build is memoised, so nothing is built twice).
        self._parser(self.subcommand).link_arguments(
            "data", NET_INPUT_DIM, compute_fn=_input_dim, apply_on="instantiate"
        )

    def instantiate_classes(self) -> None:
        """LightningCLI's, except that an error raised inside a link's ``compute_fn`` (the data module
        sizing the model: a missing corpus, bad data settings) is raised as itself. jsonargparse wraps it
        in "Call to compute_fn of link ... with args (...) failed: ...", whose args are the data module's
        printout, around the one sentence that names the problem."""
        try:
            super().instantiate_classes()
        except ValueError as err:
            cause = err.__cause__
            wrapped = str(err).startswith(("Call to compute_fn of link", "Does not validate against any of"))
            if isinstance(cause, ValueError) and wrapped:  # a class's own check, in jsonargparse's dump
                raise self._as_typed(cause) from None  # its own traceback is kept
            if isinstance(cause, OSError) and wrapped:  # a missing corpus file: the reader's own sentence
                raise cause from None
            raise self._as_typed(err) from None

    def _run_subcommand(self, subcommand: str) -> None:
        try:
            super()._run_subcommand(subcommand)
        except ValueError as err:
            raise self._as_typed(err) from None

    def _as_typed(self, err: ValueError) -> ValueError:
        """``err`` with the data module's and model's parameters named as options (``--data.text_col``,
        not ``text_col=``: :func:`textcause.validation.as_typed_options`); ``err`` itself if none is named."""
        from textcause.validation import as_typed_options

        cfg = (self.config.get(self.subcommand) if self.subcommand else self.config) or {}
        text = str(err)
        for group in ("data", "model"):
            cls = class_from_path(getattr(cfg.get(group), "class_path", None) if cfg.get(group) else None)
            if cls is not None:
                names = set(inspect.signature(cls.__init__).parameters) - {"self", "args", "kwargs"}
                text = as_typed_options(text, names, f"--{group}.")
        if text == str(err):
            return err
        typed = ValueError(text)
        typed.__traceback__ = err.__traceback__
        return typed

    def instantiate_trainer(self, **kwargs: Any) -> L.Trainer:
        from textcause.callbacks.checkpoint_io import use_chunked_checkpoints

        trainer = super().instantiate_trainer(**kwargs)
        use_chunked_checkpoints(trainer)  # local checkpoints in 1 MiB writes, byte for byte Lightning's
        if self.subcommand == "predict":
            from lightning.pytorch.callbacks import BasePredictionWriter

            from textcause.callbacks import UserPredictionWriter

            if not any(isinstance(cb, BasePredictionWriter) for cb in trainer.callbacks):
                folder = self._run_dir if self._run_dir is not None else trainer.default_root_dir
                trainer.callbacks.append(UserPredictionWriter(str(folder)))
        return trainer

    def before_fit(self) -> None:
        """Check a ``--ckpt_path`` checkpoint against the model before anything is written; then keep
        the resumed run's ``metrics.csv`` aside (:mod:`textcause.run.resume`)."""
        if self._resume is None:
            return
        path, run = self._resume
        check_checkpoint_fits(self.model, path)
        if run is not None:
            keep_metrics(run)

    def before_test(self) -> None:
        from textcause.run.evaluation import _check_checkpoint

        ckpt = self.config_init["test"].get("ckpt_path")
        _check_checkpoint(self.model, ckpt, str(self._run_dir or "the run"))

    def after_test(self) -> None:
        """Evaluate the test split as ``evaluate.py`` does (estimates with bootstrap intervals), print the
        table, write ``results.json`` into the test log folder, log the numbers, draw the propensity overlap
        figure (``propensity_overlap.png`` beside the model card, copied into the test log folder, logged
        to wandb), and update the model card."""
        from pathlib import Path

        from textcause.metrics.evaluation import format_table
        from textcause.run.evaluation import RunResult, evaluate_model, log_results, write_results
        from textcause.run.figure import write_run_figure
        from textcause.run.model_card import write_run_card

        trainer, data = self.trainer, self.datamodule
        if not hasattr(data, "task"):  # another family's data module: its test metrics are all there is
            return
        cfg = self.config_init["test"]
        evaluation = cfg.get("evaluation")
        ckpt = Path(cfg["ckpt_path"]) if cfg.get("ckpt_path") else None
        label = str(self._run_dir or trainer.log_dir)
        rows, meta, pred = evaluate_model(trainer, self.model, data, ckpt, evaluation, label)
        if not trainer.is_global_zero:
            return
        result = RunResult(rows, meta, ckpt, Path(label), pred, dict(data.representation_info))
        log_dir = Path(trainer.log_dir) if trainer.log_dir else Path(label)
        write_results(result, log_dir, log_dir, evaluation)
        log_results(trainer.loggers, rows, step=trainer.global_step)
        figure = write_run_figure(result, trainer.loggers, step=trainer.global_step)
        if self._run_dir is not None:
            write_run_card(result, data, evaluation, figure=figure)
        print(format_table(rows, title=f"{meta['model']} ({meta['representation']}) on the test split of {label}"))
        print(f"wrote {log_dir / 'results.json'}")


def refuse_duplicate_yaml_keys() -> None:
    """Make jsonargparse refuse a YAML config (``--config``) that gives one key twice.

    Its loader, like ``yaml.safe_load``, silently keeps the last value; wrapped, a duplicate key
    raises :func:`textcause.io.check_unique_keys`'s error (a ``yaml.YAMLError`` jsonargparse reports
    as a config it could not load). Everything else is parsed by jsonargparse's own loader. Idempotent.
    """
    import jsonargparse
    from jsonargparse import _loaders_dumpers as loaders_dumpers  # its current loader: no public getter

    from textcause.io import check_unique_keys

    current = loaders_dumpers.loaders.get("yaml")
    if current is None or getattr(current, "textcause_unique_keys", False):
        return

    def load(stream: str) -> Any:
        if isinstance(stream, str):
            check_unique_keys(stream)
        return current(stream)

    load.textcause_unique_keys = True  # type: ignore[attr-defined]
    jsonargparse.set_loader("yaml", load, loaders_dumpers.loader_exceptions.get("yaml", ()))


def _init_args_under_class_path(config: dict[str, Any]) -> dict[str, Any]:
    """A config dict whose ``data`` options given beside a ``class_path`` are moved into its ``init_args``.

    Internal callers merge dotted options (``data.predict_split``) into a saved config, whose
    ``data`` is ``{class_path, init_args}``: jsonargparse refuses such a mixed mapping.
    """
    out = dict(config)
    data = out.get("data")
    if isinstance(data, dict) and "class_path" in data:
        extra = {k: v for k, v in data.items() if k not in _SUBCLASS_KEYS}
        if extra:
            kept = {k: v for k, v in data.items() if k in _SUBCLASS_KEYS}
            out["data"] = {**kept, "init_args": {**dict(data.get("init_args") or {}), **extra}}
    for sub in SUBCOMMANDS:
        if isinstance(out.get(sub), dict):
            out[sub] = _init_args_under_class_path(out[sub])
    return out


def _follow_default_root_dir(cfg: Any, subcommand: str | None) -> None:
    """Loggers at a root the config files give follow ``trainer.default_root_dir`` (:mod:`textcause.run.root_dir`)."""
    from textcause.run.root_dir import config_roots, follow_root

    files = [*default_configs(), *(cfg.get("config") or [])]
    follow_root(cfg.get("trainer"), config_roots(files, subcommand))


def _input_dim(data: CausalTextDataModule) -> int:
    return data.input_dim


def _accepts(net: Any, arg: str) -> bool:
    """Whether the class named by a ``class_path`` namespace takes ``arg`` in its ``__init__``."""
    cls = class_from_path(getattr(net, "class_path", None))
    return cls is not None and arg in inspect.signature(cls.__init__).parameters


def _seed_to_int(seed: Any) -> int:
    if seed is True or seed is None or seed is False:
        return 0
    return int(seed)


def _quiet_lightning() -> None:
    """Hide Lightning's advertising tips and warnings that say nothing about the user's run."""
    for message in (
        r"LightningCLI's args parameter",
        r".*isinstance\(treespec, LeafSpec\)",
        r"Be aware that when using `ckpt_path`",
        r"The number of training batches .* is smaller than the logging interval",
        r".*does not have many workers which may be a bottleneck",
        r"Sparse invariant checks are implicitly disabled",
        r"Precision bf16-mixed is not supported by the model summary",
    ):
        warnings.filterwarnings("ignore", message=message)
    logging.getLogger("lightning.pytorch.utilities.rank_zero").addFilter(
        lambda record: "Tip:" not in record.getMessage()
    )


SUBCOMMANDS = ("fit", "validate", "test", "predict")


def make_cli(args: Any = None, *, run: bool = True, **kwargs: Any) -> TextCauseCLI:
    """Build the CLI.

    Args:
        args: ``None`` reads ``sys.argv``; a list of command-line strings; or a config dict (with
            ``run=True``, ``{"fit": {...}}``), as internal callers pass it.
        run: run the subcommand (``fit``, ``validate``, ``test``, ``predict``); ``False`` only
            instantiates the model, data module and trainer.
        **kwargs: more :class:`~lightning.pytorch.cli.LightningCLI` arguments.

    Raises:
        FileNotFoundError: a default config file is missing (a broken install).
        SystemExit: code 2 after one ``error: ...`` line for an option the parser rejects
            (:class:`OneLineParser`), or ``argparse.ArgumentError`` with ``exit_on_error=False``.
    """
    _quiet_lightning()
    defaults = [str(p) for p in default_configs()]
    parser_kwargs = kwargs.pop("parser_kwargs", {})
    if run:
        parser_kwargs = {sub: {"default_config_files": defaults, **parser_kwargs} for sub in SUBCOMMANDS}
    else:
        parser_kwargs = {"default_config_files": defaults, **parser_kwargs}
    kwargs.setdefault("save_config_kwargs", {"overwrite": True})
    kwargs.setdefault("parser_class", OneLineParser)
    return TextCauseCLI(
        L.LightningModule,
        L.LightningDataModule,
        subclass_mode_model=True,
        subclass_mode_data=True,
        seed_everything_default=0,
        parser_kwargs=parser_kwargs,
        args=args,
        run=run,
        auto_configure_optimizers=False,
        **kwargs,
    )

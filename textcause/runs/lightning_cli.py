"""The LightningCLI behind ``train.py``, ``textcause train`` and every internal run.

``python train.py fit --config configs/lr_bigram_binary.yaml`` trains a propensity model on a
semi-synthetic task; the trainer and corpus defaults come from ``configs/trainer/default.yaml`` and
``configs/data/twitter.yaml`` (found through :func:`textcause.paths.default_configs`: a missing
default is an error) and any value can be overridden on the command line (``--data.level 3``,
``--trainer.max_epochs 5``, or wandb's ``--data.level=3`` style). ``--print_config`` prints the
resolved config. Internal callers (:mod:`textcause.runs.fit`) pass a config dict instead of argv.

The data module is :class:`~textcause.data.CausalTextDataModule` unless a config names another
one by ``class_path`` (``data: {class_path: textcause.gender.GenderDataModule, init_args: {...}}``);
a plain ``data: {corpus: ..., ...}`` mapping stays the init arguments of the causal data module.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import warnings
from typing import Any

import lightning as L
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI

from textcause.data import CausalTextDataModule
from textcause.paths import default_configs

NET_INPUT_DIM = "model.init_args.net.init_args.input_dim"
#: The data module of a config whose ``data`` has no ``class_path``.
DEFAULT_DATA = f"{CausalTextDataModule.__module__}.{CausalTextDataModule.__qualname__}"
_SUBCLASS_KEYS = ("class_path", "init_args", "dict_kwargs", "__path__")


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
    """

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.set_defaults({"data": {"class_path": DEFAULT_DATA}})
        parser.link_arguments("seed_everything", "data.init_args.seed", compute_fn=_seed_to_int)

    def parse_arguments(self, parser: LightningArgumentParser, args: Any) -> None:
        if isinstance(args, dict):
            args = _init_args_under_class_path(args)
        super().parse_arguments(parser, args)

    def before_instantiate_classes(self) -> None:
        cfg = self.config[self.subcommand] if self.subcommand else self.config
        net = _get(cfg, "model.init_args.net")
        if net is None or not _accepts(net, "input_dim") or net.init_args.get("input_dim") not in (None, 0):
            return
        # Sized when the data module is instantiated (its build is memoised, so nothing is built twice).
        self._parser(self.subcommand).link_arguments(
            "data", NET_INPUT_DIM, compute_fn=_input_dim, apply_on="instantiate"
        )


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


def _input_dim(data: CausalTextDataModule) -> int:
    return data.input_dim


def _accepts(net: Any, arg: str) -> bool:
    """Whether the class named by a ``class_path`` namespace takes ``arg`` in its ``__init__``."""
    class_path = getattr(net, "class_path", None)
    if not class_path:
        return False
    module, _, name = class_path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return False
    return arg in inspect.signature(cls.__init__).parameters


def _seed_to_int(seed: Any) -> int:
    if seed is True or seed is None or seed is False:
        return 0
    return int(seed)


def _get(ns: Any, dotted: str) -> Any:
    cur = ns
    for part in dotted.split("."):
        if cur is None:
            return None
        try:
            cur = cur[part] if part in cur else None
        except TypeError:
            return None
    return cur


def quiet_lightning() -> None:
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
    """
    quiet_lightning()
    defaults = [str(p) for p in default_configs()]
    parser_kwargs = kwargs.pop("parser_kwargs", {})
    if run:
        parser_kwargs = {sub: {"default_config_files": defaults, **parser_kwargs} for sub in SUBCOMMANDS}
    else:
        parser_kwargs = {"default_config_files": defaults, **parser_kwargs}
    kwargs.setdefault("save_config_kwargs", {"overwrite": True})
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

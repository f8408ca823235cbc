"""The LightningCLI shared by ``train.py`` and ``evaluate.py``.

``python train.py fit --config configs/lr_bigram_binary.yaml`` trains a propensity model on a
semi-synthetic task; the trainer and corpus defaults come from ``configs/trainer/default.yaml`` and
``configs/data/twitter.yaml`` and any value can be overridden on the command line
(``--data.level 3``, ``--trainer.max_epochs 5``). ``--print_config`` prints the resolved config.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import warnings
import sys
from pathlib import Path
from typing import Any, Callable

import lightning as L
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI

from textcause.data import CausalTextDataModule

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = PROJECT_ROOT / "configs"
DEFAULT_CONFIGS = [CONFIG_DIR / "trainer" / "default.yaml", CONFIG_DIR / "data" / "twitter.yaml"]


class TextCauseCLI(LightningCLI):
    """LightningCLI with textcause's links and defaults.

    * ``seed_everything`` is linked to ``data.seed``: one seed per run draws the task and seeds training.
    * The model component's ``input_dim`` is taken from the data module's feature width, for models
      that have a ``net`` with an ``input_dim`` (baselines such as the oracle have none).
    """

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.link_arguments("seed_everything", "data.seed", compute_fn=_seed_to_int)

    def before_instantiate_classes(self) -> None:
        cfg = self.config[self.subcommand] if self.subcommand else self.config
        net = _get(cfg, "model.init_args.net")
        if net is None or not _accepts(net, "input_dim"):
            return
        if net.init_args.get("input_dim") in (None, 0):
            # Sizing the network needs the fitted representation; the data module memoises its build,
            # so the instance created next by the CLI reuses it.
            data = CausalTextDataModule(**{k: v for k, v in dict(cfg.data).items() if not k.startswith("__")})
            net.init_args.input_dim = data.input_dim


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


def make_cli(args: list[str] | None = None, *, run: bool = True, **kwargs: Any) -> TextCauseCLI:
    """Build the CLI (``args=None`` reads ``sys.argv``)."""
    quiet_lightning()
    defaults = [str(p) for p in DEFAULT_CONFIGS if p.exists()]
    parser_kwargs = kwargs.pop("parser_kwargs", {})
    if run:
        parser_kwargs = {sub: {"default_config_files": defaults, **parser_kwargs} for sub in ("fit", "validate", "test", "predict")}
    else:
        parser_kwargs = {"default_config_files": defaults, **parser_kwargs}
    return TextCauseCLI(
        L.LightningModule,
        CausalTextDataModule,
        subclass_mode_model=True,
        seed_everything_default=0,
        parser_kwargs=parser_kwargs,
        args=args,
        run=run,
        save_config_kwargs={"overwrite": True},
        **kwargs,
    )


def friendly_errors(fn: Callable[[], Any]) -> int:
    """Run ``fn``; a user's mistake (bad path, unknown task, ...) prints one sentence, not a traceback."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("WANDB_MODE", "offline")
    try:
        fn()
    except (ValueError, FileNotFoundError) as err:
        if os.environ.get("TEXTCAUSE_DEBUG"):
            raise
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0

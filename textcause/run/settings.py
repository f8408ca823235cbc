"""A run's settings and its config dict: what :func:`textcause.run.fit.fit_and_evaluate` is given.

:class:`RunSettings` (config files, dotted overrides, a run folder, the evaluation) and the config
dict of a run as ``train.py`` would read it (:func:`run_config`: the model config files, then the
overrides, on top of the default configs that the LightningCLI adds itself, :func:`default_config`).
Both the Trainer's path (:mod:`textcause.run.fit`) and the path of a model with nothing to train
(:mod:`textcause.run.untrained`) start here.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from textcause.io import load_yaml
from textcause.paths import resolve_config_path
from textcause.run.evaluation import EvaluationSettings

__all__ = [
    "RunSettings",
    "csv_logger",
    "default_config",
    "merge",
    "nest",
    "read_config",
    "run_config",
    "to_yaml",
]


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
            handed to the loggers: :mod:`textcause.run.figure`). None: unless ``quiet``, so
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
        configs = tuple(resolve_config_path(p) for p in configs)  # a model config's old place: its new one
        for path in configs:
            if not Path(path).is_file():
                raise FileNotFoundError(
                    f"No model config at '{path}': give a YAML file such as configs/model/oracle.yaml."
                )
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
        value = load_yaml(Path(path).read_text(encoding="utf-8")) or {}
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


def default_config() -> dict[str, Any]:
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


def to_yaml(config: Mapping[str, Any]) -> str:
    """``config`` as block-style YAML, keys in their order."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(dict(config), Dumper=dumper, sort_keys=False, default_flow_style=False)

"""A benchmark grid's model entries (a model config or an importable method) and their cells' config hashes.

A cell's ``config_hash`` covers what its rows depend on: for a model config, the YAML text, the
default configs, the overrides and the evaluation settings (:func:`model_config_hash`); for a
method, the method's fingerprint of code and parameters instead of the file
(:func:`method_config_hash`). A finished cell computed under another configuration is noticed.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textcause.grid.tuning import Search
from textcause.io import content_key
from textcause.observational.spec import model_names
from textcause.paths import default_configs, model_config_path
from textcause.specs import SpecFile

__all__ = [
    "CONFIG_HASH_VERSION",
    "KIND",
    "METHOD_CELL_HASH_VERSION",
    "ModelEntry",
    "is_method_spec",
    "method_config_hash",
    "method_entries",
    "method_entry",
    "model_config_hash",
    "models_of",
    "read_text",
    "refits_cheaply",
]

KIND = "Benchmark config"
CONFIG_HASH_VERSION = "textcause-benchmark-cell/v1"
METHOD_CELL_HASH_VERSION = "textcause-method-cell/v1"


@dataclass(frozen=True)
class ModelEntry:
    """One entry of a grid's models: a model config, or an importable method.

    Attributes:
        name: the model column of its rows.
        path: the model config file (a method: the file defining it, for reference).
        method: a method's ``"package.module:Name"`` spec (None: a model config).
        kind: ``config``, ``propensity`` or ``effect``.
        estimator: an effect method's estimator label.
        fingerprint: a method's content key of code and parameters.
        overrides: the entry's own train.py options (a ``ConfigPropensity``'s).
    """

    name: str
    path: Path
    method: str | None = None
    kind: str = "config"
    estimator: str = ""
    fingerprint: str = ""
    overrides: tuple[tuple[str, Any], ...] = ()


def is_method_spec(text: str) -> bool:
    """Whether a ``models`` entry names an importable method (``package.module:Name``)."""
    return ":" in text and not text.endswith((".yaml", ".yml"))


def method_entry(spec: str, source: str, name: str | None = None) -> ModelEntry:
    """Import a method spec and describe it as a :class:`ModelEntry` (a config method becomes a config entry)."""
    from textcause.methods.adapters import ConfigPropensity, as_method, describe_method

    try:
        obj = as_method(spec)
        info = describe_method(obj)
    except (ValueError, FileNotFoundError) as err:
        raise SpecFile(KIND, source).fail(f"method {spec!r}: {err}") from None
    name = name or info.name
    if isinstance(obj, ConfigPropensity):
        return ModelEntry(name, obj.config, overrides=tuple(obj.overrides.items()))
    return ModelEntry(
        name,
        info.source_file or Path(spec),
        method=spec,
        kind=info.kind,
        estimator=info.estimator,
        fingerprint=info.fingerprint,
    )


def models_of(value: Any, source: str) -> list[ModelEntry]:
    """The entries of a grid's ``models`` key: model config names or paths, and method specs."""
    out = []
    for m in model_names(value) or ():
        if is_method_spec(m):
            out.append(method_entry(m, source))
        else:
            path = model_config_path(m)
            out.append(ModelEntry(path.stem, path))
    return out


def method_entries(value: Any, source: str) -> list[ModelEntry]:
    """The entries of a grid's ``methods`` key: one spec, a list, or a mapping ``{name: spec}``."""
    if isinstance(value, Mapping):
        return [method_entry(v, source, name=k) for k, v in value.items()]
    return [method_entry(m, source) for m in ([value] if isinstance(value, str) else value or ())]


def model_config_hash(
    path: Path,
    corpus_source: str,
    overrides: Mapping[str, Any],
    n_boot: int,
    split: str,
    estimators: Any,
    *,
    defaults_text: list[str] | None = None,
    search: Search = (),
    refit_reps: int = 0,
) -> str:
    """The config hash of a model config cell: the YAML text, the default configs and every setting
    (and its search space and refitting replicates, when it has them: a cell without is what it
    always was)."""
    defaults_text = [read_text(p) for p in default_configs()] if defaults_text is None else defaults_text
    parts: list[Any] = [
        CONFIG_HASH_VERSION,
        read_text(path),
        defaults_text,
        corpus_source,
        sorted(overrides.items()),
        n_boot,
        split,
        list(estimators),
    ]
    if search:
        parts.append(["tune", [[k, list(v)] for k, v in search]])
    if refit_reps:
        parts.append(["refit_reps", refit_reps])
    return content_key(*parts)


def refits_cheaply(path: Path, overrides: Mapping[str, Any]) -> bool:
    """Whether a model config's model gets a refitting interval (:mod:`textcause.run.refitting`): a
    ``PropensityModel`` trained by L-BFGS, or a textcause class that always refits (``refittable = True``
    on the class: the tuned LR, :class:`textcause.models.tuned_lr.TunedLogisticRegression`, which refits its
    chosen penalty through scikit-learn). Only their cells take ``refit_reps`` (and a new config hash);
    every other cell of a grid with ``refit_reps`` stays the cell it was."""
    import yaml

    try:
        config = yaml.safe_load(read_text(path)) or {}
    except yaml.YAMLError:
        return False
    model = config.get("model") if isinstance(config, dict) else None
    if not isinstance(model, dict):
        return False
    init = model.get("init_args") if isinstance(model.get("init_args"), dict) else {}
    optimizer = overrides.get("model.init_args.optimizer", init.get("optimizer", "adam"))
    class_path = str(model.get("class_path", ""))
    if class_path.rsplit(".", 1)[-1] == "PropensityModel":
        return str(optimizer) == "lbfgs"
    return _always_refits(class_path)


@functools.cache
def _always_refits(class_path: str) -> bool:
    """Whether the textcause class at ``class_path`` has ``refittable = True`` as a plain class attribute
    (its own or a base's; not a property that depends on how an instance trains).

    A short name (``TunedLogisticRegression``, as LightningCLI accepts it) is looked up in
    ``textcause.models``. Classes outside textcause are not imported here (planning a grid runs no
    other package's code) and get no ``refit_reps``; neither does a class whose module fails to import
    (the cell then fails with the import error when it runs, as it would without refitting).
    """
    from textcause.run.class_paths import class_from_path

    if "." not in class_path:
        class_path = f"textcause.models.{class_path}"
    if not class_path.startswith("textcause."):
        return False
    try:
        cls = class_from_path(class_path)
    except Exception:  # a module that fails to import (SyntaxError, RuntimeError, ...): plan no refits
        return False
    return cls is not None and inspect.getattr_static(cls, "refittable", None) is True


def method_config_hash(
    fingerprint: str,
    corpus_source: str,
    overrides: Mapping[str, Any],
    n_boot: int,
    split: str,
    estimators: Any,
    effect_n_boot: int,
) -> str:
    """The config hash of a method cell: the method's fingerprint and every setting but the coordinates."""
    return content_key(
        METHOD_CELL_HASH_VERSION,
        fingerprint,
        corpus_source,
        sorted(overrides.items()),
        n_boot,
        split,
        list(estimators),
        effect_n_boot,
    )


def read_text(path: Path) -> str:
    """The text of ``path``, or ``""`` when it does not exist (a hash of a missing file is still a hash)."""
    return path.read_text(encoding="utf-8") if path.exists() else ""

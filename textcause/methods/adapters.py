"""Adapters that turn common objects into textcause methods, and :func:`as_method` that picks one.

* :class:`SklearnPropensity`: any scikit-learn classifier or ``Pipeline`` (text -> T) as a propensity method.
* :class:`ConfigPropensity`: a textcause model config (``configs/model/lr_bigram_binary.yaml``), run through
  the real ``train.py`` fit and ``evaluate.py`` path exactly as a benchmark cell.
* :class:`FunctionEffect`: a plain function ``f(texts, t, y) -> float | (ate, ci_low, ci_high)`` as an effect method.
* :func:`as_method`: an instance, a class, a callable, a ``"package.module:Name"`` string or a config path.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textcause.io import content_key
from textcause.methods.protocols import (
    EFFECT_ESTIMATOR,
    effect_estimator,
    method_kind,
    method_name,
    method_representation,
    representation_options,
)

__all__ = [
    "ConfigPropensity",
    "FunctionEffect",
    "MethodInfo",
    "SklearnPropensity",
    "as_method",
    "describe_method",
    "fresh_copy",
    "load_object",
]

_METHOD_HASH_VERSION = "textcause-method/v1"
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
#: Top-level packages whose estimators :func:`as_method` wraps in :class:`SklearnPropensity`.
_SKLEARN_LIKE = ("sklearn", "imblearn", "lightgbm", "xgboost", "catboost")


def _config_dir() -> Path:
    from textcause.paths import model_config_dir

    return model_config_dir()


class SklearnPropensity:
    """A scikit-learn classifier (or ``Pipeline``) as a propensity method.

    By default each user's posts are joined with ``"\\n"`` into one document, so a ``Pipeline`` of a
    text vectorizer and a classifier works as it is; with a ``representation`` the estimator gets that
    representation instead (e.g. the CSR matrix of ``bigram_binary``). The estimator is cloned at
    every ``fit``; P(T=1) is the ``predict_proba`` column of class 1.

    Args:
        estimator: a classifier with ``fit`` and ``predict_proba`` (not fitted; it is cloned).
        name: the name in result tables (default ``sklearn_<final estimator class>``).
        representation: None (raw text, joined) or a representation name (see ``REPRESENTATIONS``).
        join: the separator placed between a user's posts, or a function (list of posts -> str).
        representation_options: see :mod:`textcause.methods.protocols`.

    Raises:
        ValueError: if ``estimator`` has no ``fit`` or ``predict_proba``.
    """

    def __init__(
        self,
        estimator: Any,
        *,
        name: str | None = None,
        representation: str | None = None,
        join: str | Callable[[list[str]], str] = "\n",
        representation_options: dict[str, Any] | None = None,
    ) -> None:
        if not callable(getattr(estimator, "fit", None)) or not callable(getattr(estimator, "predict_proba", None)):
            raise ValueError(
                f"The 'estimator' of SklearnPropensity must have fit and predict_proba (a probabilistic classifier). "
                f"Got {type(estimator).__name__} instead; wrap a classifier without probabilities in "
                "sklearn.calibration.CalibratedClassifierCV."
            )
        if not (isinstance(join, str) or callable(join)):
            raise ValueError(
                f"The 'join' parameter of SklearnPropensity must be a str or a callable. Got {join!r} instead."
            )
        self.estimator = estimator
        final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
        self.name = name or f"sklearn_{type(final).__name__}"
        self.representation = representation
        self.join = join
        self.representation_options = dict(representation_options or {})
        method_name(self)
        method_representation(self)

    def __repr__(self) -> str:
        return f"SklearnPropensity({self.estimator!r}, name={self.name!r}, representation={self.representation!r})"

    def _inputs(self, X: Any) -> Any:
        if self.representation is not None:
            return X
        join = self.join if callable(self.join) else self.join.join
        return [join(list(posts)) for posts in X]

    def fit(self, X: Any, t: Any) -> SklearnPropensity:
        """Clone the estimator and fit it on the training users (documents or the representation)."""
        try:
            from sklearn.base import clone

            fresh = clone(self.estimator)
        except Exception:
            fresh = copy.deepcopy(self.estimator)
        self.estimator_ = fresh.fit(self._inputs(X), t) or fresh
        return self

    def predict_proba(self, X: Any) -> Any:
        """The fitted estimator's probability of class 1 for each user."""
        fitted = getattr(self, "estimator_", None)
        if fitted is None:
            raise ValueError("This SklearnPropensity is not fitted yet: call fit first.")
        proba = fitted.predict_proba(self._inputs(X))
        classes = list(getattr(fitted, "classes_", [0, 1]))
        if getattr(proba, "ndim", 0) == 2 and 1 in classes and proba.shape[1] == len(classes):
            return proba[:, classes.index(1)]
        if getattr(proba, "ndim", 0) == 2 and proba.shape[1] == 1:
            raise ValueError(
                f"The classifier saw a single treatment class ({[int(c) for c in classes]}) in training: "
                "no P(T=1) to predict."
            )
        return proba

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The adapter's parameters (scikit-learn's convention)."""
        return {
            "estimator": self.estimator,
            "name": self.name,
            "representation": self.representation,
            "join": self.join,
            "representation_options": self.representation_options,
        }


class FunctionEffect:
    """A plain function ``f(X, t, y)`` as an effect method.

    Args:
        fn: returns a float ATE, a tuple ``(ate, ci_low, ci_high)`` or an :class:`EffectResult`.
        name: the name in result tables (default the function's name).
        representation: what ``X`` is (None: raw text, a list of post strings per user).
        estimator: the ``estimator`` label of its rows (default ``"effect"``).
        representation_options: see :mod:`textcause.methods.protocols`.

    Raises:
        ValueError: if ``fn`` is not callable, or a name or label is malformed.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        representation: str | None = None,
        estimator: str = EFFECT_ESTIMATOR,
        representation_options: dict[str, Any] | None = None,
    ) -> None:
        if not callable(fn):
            raise ValueError(f"The 'fn' parameter of FunctionEffect must be callable. Got {type(fn).__name__} instead.")
        self.fn = fn
        default = getattr(fn, "__name__", type(fn).__name__)
        self.name = name or ("lambda" if default == "<lambda>" else default)
        self.representation = representation
        self.estimator = estimator
        self.representation_options = dict(representation_options or {})
        method_name(self)
        method_representation(self)
        effect_estimator(self)

    def __repr__(self) -> str:
        return f"FunctionEffect({getattr(self.fn, '__qualname__', self.fn)!r}, name={self.name!r})"

    def estimate(self, X: Any, t: Any, y: Any) -> Any:
        """``fn(X, t, y)``."""
        return self.fn(X, t, y)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {
            "fn": _source(self.fn),
            "name": self.name,
            "representation": self.representation,
            "estimator": self.estimator,
            "representation_options": self.representation_options,
        }


class ConfigPropensity:
    """A textcause model config as a propensity method, fitted and evaluated as a benchmark cell.

    Not a :class:`~textcause.methods.protocols.PropensityMethod` (it has no ``fit``): each cell runs
    ``train.py fit --config <config>`` and ``evaluate.py`` in-process through
    :func:`textcause.grid.worker.run_cell`, so its rows equal the benchmark's.

    Args:
        config: a model config name (``lr_bigram_binary``: ``configs/model/lr_bigram_binary.yaml``) or a YAML path.
        name: the name in result tables (default the file's stem).
        overrides: ``train.py`` options for every cell, e.g. ``{"trainer.max_epochs": 2}``.

    Raises:
        FileNotFoundError: if the config file does not exist.
        ValueError: if ``overrides`` is not a mapping of option names.
    """

    def __init__(
        self, config: str | os.PathLike, *, name: str | None = None, overrides: Mapping[str, Any] | None = None
    ) -> None:
        text = os.fspath(config)
        if text.endswith((".yaml", ".yml")) or os.sep in text:
            from textcause.paths import resolve_config_path

            path = resolve_config_path(text)
        else:
            path = _config_dir() / f"{text}.yaml"
        if not path.is_file():
            raise FileNotFoundError(
                f"No model config at '{path}': give a YAML file such as configs/model/lr_bigram_binary.yaml."
            )
        if overrides is not None and (
            not isinstance(overrides, Mapping) or not all(isinstance(k, str) and k for k in overrides)
        ):
            raise ValueError(
                f"The 'overrides' of ConfigPropensity must map train.py options to values. Got {overrides!r} instead."
            )
        self.config = path.resolve()
        self.name = name or path.stem
        self.overrides = {k.lstrip("-"): v for k, v in (overrides or {}).items()}
        method_name(self)

    def __repr__(self) -> str:
        return f"ConfigPropensity({str(self.config)!r}, name={self.name!r})"


# ---------------------------------------------------------------------------------------- coercion
def load_object(spec: str) -> Any:
    """Import ``"package.module:Name"`` (or ``"path/to/file.py:Name"``; ``Name`` may be dotted).

    The working directory is put on ``sys.path`` first, as ``python -m`` does.

    Raises:
        ValueError: if ``spec`` is malformed or cannot be imported (the import error is named).
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"A method spec must look like 'package.module:Name'. Got {spec!r} instead.")
    try:
        if module_name.endswith(".py"):
            module = _module_from_file(Path(module_name))
        else:
            if os.getcwd() not in sys.path and "" not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(module_name)
        obj: Any = module
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as err:
        raise ValueError(f"Cannot import the method {spec!r}: {type(err).__name__}: {err}") from err
    return obj


def _module_from_file(path: Path) -> Any:
    if not path.is_file():
        raise FileNotFoundError(f"no file '{path}'")
    name = f"_textcause_method_{path.stem}_{content_key(str(path.resolve()))[:8]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up while it executes
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _is_sklearn_like(obj: Any) -> bool:
    root = type(obj).__module__.split(".")[0]
    return root in _SKLEARN_LIKE and method_kind(obj) == "propensity" and not hasattr(obj, "representation")


def as_method(obj: Any) -> Any:
    """Coerce ``obj`` into a method textcause can evaluate.

    Accepts a propensity or effect method instance (returned as is), a scikit-learn classifier or
    ``Pipeline`` (wrapped in :class:`SklearnPropensity`), a :class:`ConfigPropensity`, a class
    (instantiated with no arguments), a plain function (wrapped in :class:`FunctionEffect`), a
    ``"package.module:Name"`` / ``"file.py:Name"`` string, or a model config name or YAML path.

    Raises:
        ValueError: if ``obj`` is none of these (or a class cannot be created without arguments).
        FileNotFoundError: for a config path that does not exist.
    """
    if isinstance(obj, ConfigPropensity):
        return obj
    if isinstance(obj, (str, os.PathLike)):
        text = os.fspath(obj)
        if ":" in text and not text.endswith((".yaml", ".yml")):
            return as_method(load_object(text))
        if text.endswith((".yaml", ".yml")) or (_config_dir() / f"{text}.yaml").is_file():
            return ConfigPropensity(text)
        raise ValueError(f"{text!r} is neither a 'package.module:Name' method nor a model config name or YAML path.")
    if inspect.isclass(obj):
        try:
            instance = obj()
        except TypeError as err:
            raise ValueError(
                f"Cannot create the method {obj.__name__}() without arguments ({err}): pass an instance."
            ) from err
        return as_method(instance)
    if _is_sklearn_like(obj):
        return SklearnPropensity(obj)
    if method_kind(obj):
        method_name(obj)
        method_representation(obj)
        representation_options(obj)
        if method_kind(obj) == "effect":
            effect_estimator(obj)
        return obj
    if callable(obj):
        return FunctionEffect(obj)
    raise ValueError(
        "A method must have fit and predict_proba (a propensity method) or estimate (an effect method), or be a "
        "class, a function, a 'package.module:Name' string or a model config path. "
        f"Got {type(obj).__name__} instead."
    )


def fresh_copy(method: Any) -> Any:
    """A deep copy of ``method`` (each cell fits its own), or ``method`` itself if it cannot be copied."""
    try:
        return copy.deepcopy(method)
    except Exception:
        return method


# ---------------------------------------------------------------------------------------- identity
@dataclass(frozen=True)
class MethodInfo:
    """What the grid and the runner need to know about a method.

    Attributes:
        name: its name in tables and cell ids.
        kind: ``propensity``, ``effect`` or ``config``.
        representation: the representation it requests (None: raw text; configs: None).
        estimator: an effect method's estimator label ("" otherwise).
        fingerprint: a content key of its code and parameters (part of a cell's config hash).
        source_file: the file defining it, when known.
    """

    name: str
    kind: str
    representation: str | None
    estimator: str
    fingerprint: str
    source_file: Path | None = None


def _source(obj: Any) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return getattr(obj, "__qualname__", type(obj).__qualname__)


def _class_source(cls: type) -> str:
    """The source of ``cls`` and of its base classes defined in the same module.

    A thin subclass (``class CrossFitAIPW(CrossFitEffect)``) then changes its fingerprint when the
    shared base changes; a class whose bases live elsewhere (scikit-learn's) keeps the fingerprint
    of its own source alone.
    """
    bases = [c for c in cls.__mro__[1:] if c.__module__ == cls.__module__]
    return "".join(_source(c) for c in (cls, *bases))


def _describe(value: Any, depth: int = 0) -> Any:
    """A stable description of a parameter value: estimators by their own parameters (scikit-learn's
    reprs elide long parameter lists), containers item by item, anything else by its repr."""
    if depth > 20:
        return "..."
    getter = getattr(value, "get_params", None)
    if callable(getter) and not inspect.isclass(value):
        try:
            params = getter(deep=False)
        except TypeError:
            params = getter()
        return [type(value).__qualname__, sorted((str(k), _describe(v, depth + 1)) for k, v in dict(params).items())]
    if isinstance(value, (list, tuple)):
        return [_describe(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return sorted((str(k), _describe(v, depth + 1)) for k, v in value.items())
    if inspect.isroutine(value):
        return _source(value)
    return _ADDRESS.sub("", repr(value))


def _params(method: Any) -> Any:
    getter = getattr(method, "get_params", None)
    try:
        params = getter() if callable(getter) else vars(method)
    except Exception:
        params = {}
    return _describe(dict(params))


def describe_method(method: Any) -> MethodInfo:
    """The :class:`MethodInfo` of a method already coerced by :func:`as_method`."""
    if isinstance(method, ConfigPropensity):
        return MethodInfo(method.name, "config", None, "", "", method.config)
    kind = method_kind(method)
    cls = type(method)
    try:
        source_file = Path(inspect.getsourcefile(cls) or "")
    except TypeError:
        source_file = None
    fingerprint = content_key(
        _METHOD_HASH_VERSION,
        f"{cls.__module__}.{cls.__qualname__}",
        _class_source(cls),
        _params(method),
        method_representation(method),
        representation_options(method),
    )
    return MethodInfo(
        method_name(method),
        kind,
        method_representation(method),
        effect_estimator(method) if kind == "effect" else "",
        fingerprint,
        source_file,
    )

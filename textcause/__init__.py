"""textcause: causal inference with text, on semi-synthetic tasks built from real user histories.

Data flows one way: corpus -> simulation / observational -> features -> data -> models ->
estimators / metrics -> runs -> analysis -> reports -> cli (see docs/architecture.md). Importing the top-level package is cheap: it does not import torch or Lightning.

Evaluate your own method (see docs/methods.md):

    >>> import textcause
    >>> table = textcause.evaluate(my_method, tasks={"linguistic_complexity": [1]}, seeds=[0])  # doctest: +SKIP

:func:`evaluate` (from :mod:`textcause.grid.methods`), the protocols :class:`PropensityMethod` and
:class:`EffectMethod`, :class:`EffectResult`, the adapters :class:`SklearnPropensity`,
:class:`ConfigPropensity`, :class:`FunctionEffect` and :func:`as_method` (from
:mod:`textcause.methods`) are loaded on first use.
"""

from typing import Any

from textcause.version import __version__

_METHODS = (
    "evaluate",
    "PropensityMethod",
    "EffectMethod",
    "EffectResult",
    "SklearnPropensity",
    "ConfigPropensity",
    "FunctionEffect",
    "as_method",
)

__all__ = ["__version__", *_METHODS]


def __getattr__(name: str) -> Any:
    if name == "evaluate":
        from textcause.grid.methods import evaluate

        return evaluate
    if name in _METHODS:
        import textcause.methods as methods

        return getattr(methods, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

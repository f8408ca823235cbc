"""Evaluate any method: the protocols a method follows, adapters, and :func:`evaluate`.

* :class:`PropensityMethod` (``fit(X, t)``, ``predict_proba(X)``) and :class:`EffectMethod`
  (``estimate(X, t, y)``), with :class:`EffectResult`: :mod:`textcause.methods.protocols`.
* :class:`SklearnPropensity`, :class:`ConfigPropensity`, :class:`FunctionEffect` and
  :func:`as_method`: :mod:`textcause.methods.adapters`.
* :func:`evaluate`: :mod:`textcause.methods.api`; one cell: :mod:`textcause.methods.run`; the inputs
  of each representation: :mod:`textcause.methods.inputs`.

Importing this package is cheap (no torch, Lightning, pandas or scikit-learn).
"""

from typing import Any

from textcause.methods.adapters import ConfigPropensity, FunctionEffect, SklearnPropensity, as_method
from textcause.methods.protocols import REPRESENTATIONS, EffectMethod, EffectResult, PropensityMethod

__all__ = [
    "REPRESENTATIONS",
    "ConfigPropensity",
    "EffectMethod",
    "EffectResult",
    "FunctionEffect",
    "PropensityMethod",
    "SklearnPropensity",
    "as_method",
    "evaluate",
]


def __getattr__(name: str) -> Any:
    if name == "evaluate":
        from textcause.methods.api import evaluate

        return evaluate
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

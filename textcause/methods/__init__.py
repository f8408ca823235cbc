"""Evaluate any method: the protocols a method follows, adapters, and :func:`evaluate`.

* :class:`PropensityMethod` (``fit(X, t)``, ``predict_proba(X)``) and :class:`EffectMethod`
  (``estimate(X, t, y)``), with :class:`EffectResult`: :mod:`textcause.methods.protocols`.
* :class:`SklearnPropensity`, :class:`ConfigPropensity`, :class:`FunctionEffect` and
  :func:`as_method`: :mod:`textcause.methods.adapters`.
* the inputs of each representation: :mod:`textcause.methods.inputs`.
* ready-made effect methods, cross-fitted AIPW and TMLE on n-grams (double machine learning):
  :class:`CrossFitAIPW`, :class:`CrossFitTMLE`, :class:`CrossFitEffect` in :mod:`textcause.methods.crossfit`.

:func:`textcause.evaluate` (in :mod:`textcause.grid.methods`) runs a method over task levels and
seeds; one cell: :mod:`textcause.grid.method_cell`.

Importing this package is cheap (no torch, Lightning, pandas or scikit-learn).
"""

from textcause.methods.adapters import ConfigPropensity, FunctionEffect, SklearnPropensity, as_method
from textcause.methods.crossfit import CrossFitAIPW, CrossFitEffect, CrossFitTMLE
from textcause.methods.protocols import REPRESENTATIONS, EffectMethod, EffectResult, PropensityMethod

__all__ = [
    "REPRESENTATIONS",
    "ConfigPropensity",
    "CrossFitAIPW",
    "CrossFitEffect",
    "CrossFitTMLE",
    "EffectMethod",
    "EffectResult",
    "FunctionEffect",
    "PropensityMethod",
    "SklearnPropensity",
    "as_method",
]

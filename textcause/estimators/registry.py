"""The estimators by name: configs, the bootstrap and the evaluation pick one with a string.

This module owns what every caller shares: :data:`ESTIMATORS` (name -> function),
:data:`DEFAULT_ESTIMATORS` (what a propensity model is evaluated with; ``unadjusted`` is always
reported beside them), the default keyword arguments of each (:data:`ESTIMATOR_DEFAULTS`) and the
display labels (:data:`ESTIMATOR_LABELS`, in display order).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textcause.estimators.matching import matching
from textcause.estimators.stratification import stratified
from textcause.estimators.tmle import tmle
from textcause.estimators.types import Estimate
from textcause.estimators.weighting import aipw, ipw, unadjusted

__all__ = [
    "EstimatorFn",
    "ESTIMATORS",
    "PROPENSITY_ESTIMATORS",
    "OUTCOME_ESTIMATORS",
    "DEFAULT_ESTIMATORS",
    "ESTIMATOR_DEFAULTS",
    "ESTIMATOR_LABELS",
    "adjusted_estimators",
    "estimator_kwargs",
    "get_estimator",
]

EstimatorFn = Callable[..., Estimate]

ESTIMATORS: dict[str, EstimatorFn] = {
    "unadjusted": unadjusted,
    "ipw": ipw,
    "stratified": stratified,
    "matching": matching,
    "aipw": aipw,
    "tmle": tmle,
}

#: The estimators that use a propensity and need nothing else.
PROPENSITY_ESTIMATORS = ("ipw", "stratified", "matching")
#: The doubly robust estimators: they also need outcome predictions ``mu0, mu1`` (called as
#: ``fn(t, y, propensity, mu0, mu1)``), so they are never defaults: a caller runs them only for a
#: model that supplies outcome predictions.
OUTCOME_ESTIMATORS = ("aipw", "tmle")
#: What a propensity model is evaluated with by default (``unadjusted`` is always added first).
DEFAULT_ESTIMATORS = PROPENSITY_ESTIMATORS

#: Keyword arguments each estimator is run with unless a caller says otherwise.
ESTIMATOR_DEFAULTS: dict[str, dict[str, Any]] = {
    "stratified": {"n_strata": 10},
    "matching": {"caliper": 0.2},
    # The benchmark's tasks say their outcome kind (binary unless `outcome: normal`); a caller passes
    # it (`outcome="continuous"`) rather than leaving TMLE to guess it from the values.
    "tmle": {"outcome": "binary"},
}

#: Display labels, in display order (the paper calls IPW "IPTW").
ESTIMATOR_LABELS = {
    "unadjusted": "Unadjusted",
    "ipw": "IPTW",
    "stratified": "Stratified",
    "matching": "Matching",
    "aipw": "AIPW",
    "tmle": "TMLE",
}


def adjusted_estimators() -> tuple[str, ...]:
    """Every registered estimator except ``unadjusted``, in display order.

    The order of :data:`ESTIMATOR_LABELS`, then any registered estimator without a label in the
    order of :data:`ESTIMATORS`; read at call time, so a newly registered estimator is included.

    Example:
        >>> adjusted_estimators()
        ('ipw', 'stratified', 'matching', 'aipw', 'tmle')
    """
    ordered = [e for e in ESTIMATOR_LABELS if e in ESTIMATORS] + [e for e in ESTIMATORS if e not in ESTIMATOR_LABELS]
    return tuple(e for e in ordered if e != "unadjusted")


def estimator_kwargs(name: str, **overrides: Any) -> dict[str, Any]:
    """The keyword arguments of estimator ``name``: its defaults, updated by the ``overrides`` it takes.

    An override the estimator does not take (``n_strata`` for ``ipw``) is ignored, so callers can
    pass one set of settings for every estimator.

    Examples:
        >>> from textcause.estimators import estimator_kwargs
        >>> estimator_kwargs("stratified", n_strata=5, caliper=0.1)
        {'n_strata': 5}
        >>> estimator_kwargs("ipw", n_strata=5)
        {}
    """
    defaults = ESTIMATOR_DEFAULTS.get(name, {})
    return {**defaults, **{k: v for k, v in overrides.items() if k in defaults}}


def get_estimator(estimator: str | EstimatorFn, owner: str = "get_estimator") -> EstimatorFn:
    """Return ``estimator`` itself if callable, else the registered estimator of that name.

    Raises:
        ValueError: an unknown name (the message lists the known ones).

    Examples:
        >>> from textcause.estimators import get_estimator
        >>> get_estimator("ipw").__name__
        'ipw'
        >>> get_estimator("ols")
        Traceback (most recent call last):
            ...
        ValueError: The 'estimator' parameter of get_estimator must be a callable or a str among ['aipw', 'ipw', 'matching', 'stratified', 'tmle', 'unadjusted']. Got 'ols' instead.
    """
    if callable(estimator):
        return estimator
    if isinstance(estimator, str) and estimator in ESTIMATORS:
        return ESTIMATORS[estimator]
    raise ValueError(
        f"The 'estimator' parameter of {owner} must be a callable or a str among "
        f"{sorted(ESTIMATORS)}. Got {estimator!r} instead."
    )

"""The estimators by name, so configs and the bootstrap can pick one with a string."""

from __future__ import annotations

from typing import Any, Callable

from textcause.estimators.matching import matching
from textcause.estimators.stratification import stratified
from textcause.estimators.types import Estimate
from textcause.estimators.weighting import aipw, ipw, unadjusted

EstimatorFn = Callable[..., Estimate]

ESTIMATORS: dict[str, EstimatorFn] = {
    "unadjusted": unadjusted,
    "ipw": ipw,
    "stratified": stratified,
    "matching": matching,
    "aipw": aipw,
}


def get_estimator(estimator: Any, owner: str = "get_estimator") -> EstimatorFn:
    """Return ``estimator`` itself if callable, else the registered estimator of that name.

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    if callable(estimator):
        return estimator
    if isinstance(estimator, str) and estimator in ESTIMATORS:
        return ESTIMATORS[estimator]
    raise ValueError(
        f"The 'estimator' parameter of {owner} must be a callable or a str among "
        f"{sorted(ESTIMATORS)}. Got {estimator!r} instead."
    )

"""The result type of every ATE estimator."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Estimate:
    """An average treatment effect estimate, ATE = E[Y(1)] - E[Y(0)].

    Attributes:
        ate: the estimate.
        method: the estimator's name (``ipw``, ``stratified``, ...).
        n_used: units that entered the estimate.
        n_dropped: units left out (empty strata, matches outside the caliper, ...).
        ci_low, ci_high: an interval when one was computed (e.g. by ``bootstrap_ci``), else None.
        n_clipped: units whose propensity was clipped (only when asked for, with ``clip=``).
        details: estimator-specific diagnostics (strata sizes, clipped weights, ...).
    """

    ate: float
    method: str
    n_used: int
    n_dropped: int = 0
    ci_low: float | None = None
    ci_high: float | None = None
    n_clipped: int = 0
    details: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

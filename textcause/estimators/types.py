"""The result type of every ATE estimator."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CI_INFLUENCE",
    "CI_BOOTSTRAP",
    "Estimate",
]

#: How an interval was formed (``Estimate.details['ci_method']``): the efficient influence curve's
#: sample variance and a normal approximation (``aipw``, ``tmle``) ...
CI_INFLUENCE = "influence function (normal approximation)"
#: ... or the percentile bootstrap (:func:`textcause.estimators.bootstrap_ci`, which keeps an
#: estimator's own influence-function interval in ``details['influence_ci_low']`` / ``['influence_ci_high']``).
CI_BOOTSTRAP = "percentile bootstrap"


@dataclass(frozen=True, repr=False)
class Estimate:
    """An average treatment effect estimate, ATE = E[Y(1)] - E[Y(0)].

    Attributes:
        ate: the estimate.
        method: the estimator's name (``ipw``, ``stratified``, ...).
        n_used: units that entered the estimate.
        n_dropped: units left out (empty strata, matches outside the caliper, ...).
        ci_low, ci_high: an interval when one was computed (e.g. by ``bootstrap_ci``), else None;
            ``details['ci_method']`` says how (:data:`CI_INFLUENCE` or :data:`CI_BOOTSTRAP`).
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

    def __repr__(self) -> str:
        """One line: the estimate, its interval, the units used and dropped; never the replicates."""
        parts = [f"{self.method}: ATE {self.ate:+.4f}"]
        if self.ci_low is not None and self.ci_high is not None:
            parts[0] += f" [{self.ci_low:+.4f}, {self.ci_high:+.4f}]"
        parts.append(f"n_used={self.n_used}")
        if self.n_dropped:
            parts.append(f"n_dropped={self.n_dropped}")
        if self.n_clipped:
            parts.append(f"n_clipped={self.n_clipped}")
        boot = self.details.get("bootstrap")
        if isinstance(boot, dict):
            parts.append(f"bootstrap {boot.get('n_boot')} replicates, se {boot.get('se', float('nan')):.4f}")
        return f"Estimate({', '.join(parts)})"

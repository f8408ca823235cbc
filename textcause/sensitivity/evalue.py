"""E-values (VanderWeele & Ding 2017) for a risk ratio, and the risk ratio of a binary outcome.

"Sensitivity Analysis in Observational Research: Introducing the E-Value" (Annals of Internal
Medicine 167(4), 2017). The E-value of a risk ratio ``RR >= 1`` is ``RR + sqrt(RR (RR - 1))`` (of
``1 / RR`` below 1): the minimum strength of association, on the risk-ratio scale, that an
unobserved confounder would need with both the treatment and the outcome, above the measured
covariates, to explain the observed risk ratio away. The E-value of the interval is that of the
limit closer to 1, and 1 when the interval already contains 1. With ``true`` other than 1 the
E-values move the estimate to ``true`` instead (the R package EValue's "non-null" E-value).

The standard conversions for a binary outcome: an odds ratio is a risk ratio when the outcome is rare
(below 15%), else ``RR ~ sqrt(OR)`` (VanderWeele 2017); an ATE on a binary outcome becomes a risk
ratio through the two arms' adjusted means (:func:`risk_ratio`). DoWhy's ``EValueSensitivityAnalyzer``
(MIT licence) is the reference of ``tests/sensitivity``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from textcause.sensitivity._inputs import binary_outcome, unit_arrays
from textcause.validation import check_real

__all__ = ["EValue", "RiskRatio", "e_value", "odds_ratio_to_risk_ratio", "risk_ratio"]


@dataclass(frozen=True)
class EValue:
    """The E-values of a risk ratio and its interval.

    Attributes:
        rr: the risk ratio.
        low, high: its interval (None when not given).
        true: the risk ratio to move the estimate to (1: no effect).
        point: the E-value of ``rr``.
        ci: the E-value of the interval's limit closer to ``true`` (1 when the interval contains
            ``true``), None without an interval.
    """

    rr: float
    low: float | None
    high: float | None
    true: float
    point: float
    ci: float | None

    def sentence(self) -> str:
        """One sentence: how strong an unobserved confounder would need to be to overturn the conclusion.

        >>> "by a risk ratio of at least 7.26 each" in e_value(3.9, 1.8, 8.7).sentence()
        True
        """
        to = "explain away" if self.true == 1 else f"move to {self.true:g}"
        text = (
            f"An unobserved confounder would need to be associated with both the treatment and the outcome by a "
            f"risk ratio of at least {self.point:.2f} each, above the measured covariates, to {to} the observed "
            f"risk ratio of {self.rr:.2f} and overturn the conclusion"
        )
        if self.ci is None:
            return text + "."
        if self.ci == 1:
            return (
                text
                + f" (its interval already contains {self.true:g}, so no confounding is needed to make it inconclusive)."
            )
        return text + f" ({self.ci:.2f} to move its interval to include {self.true:g})."


def _threshold(x: float, true: float) -> float:
    """The E-value of one risk ratio ``x`` against ``true`` (DoWhy's ``_threshold``, the EValue package's)."""
    if x <= 1:
        x, true = 1 / x, 1 / true
    if true <= x:
        return (x + math.sqrt(x * (x - true))) / true
    ratio = true / x
    return ratio + math.sqrt(ratio * (ratio - 1))


def e_value(rr: float, low: float | None = None, high: float | None = None, *, true: float = 1.0) -> EValue:
    """The E-value of a risk ratio and of its confidence interval.

    Args:
        rr: the risk ratio, > 0.
        low: the interval's lower limit (None for none), > 0, with ``low <= rr``.
        high: the interval's upper limit (None for none), > 0, with ``rr <= high``.
        true: the risk ratio to move the estimate to, > 0 (1: explain the effect away).

    Returns:
        :class:`EValue`.

    Raises:
        ValueError: a ratio that is not a finite positive float, or an interval that does not contain ``rr``.

    >>> e = e_value(3.9, 1.8, 8.7)
    >>> round(e.point, 2), round(e.ci, 2)
    (7.26, 3.0)
    """
    owner = "e_value"
    rr = check_real(rr, "rr", owner, low=0.0, low_open=True)
    true = check_real(true, "true", owner, low=0.0, low_open=True)
    low = None if low is None else check_real(low, "low", owner, low=0.0, low_open=True)
    high = None if high is None else check_real(high, "high", owner, low=0.0, low_open=True)
    if (low is not None and low > rr) or (high is not None and high < rr):
        raise ValueError(f"The interval of {owner} must contain the risk ratio: got rr={rr!r} and [{low!r}, {high!r}].")
    point = _threshold(rr, true)
    if low is None and high is None:
        return EValue(rr, low, high, true, point, None)
    # the limit on the side of ``true``; an interval that reaches ``true`` needs no confounding (E-value 1)
    if rr >= true:
        ci = None if low is None else (1.0 if low <= true else _threshold(low, true))
    else:
        ci = None if high is None else (1.0 if high >= true else _threshold(high, true))
    return EValue(rr, low, high, true, point, ci)


def odds_ratio_to_risk_ratio(odds_ratio: float, *, rare: bool) -> float:
    """The risk ratio an odds ratio stands for: itself for a rare outcome (below 15%), else ``sqrt(OR)``.

    Raises:
        ValueError: an odds ratio that is not a finite positive float, or ``rare`` not a bool.

    >>> odds_ratio_to_risk_ratio(4.0, rare=False)
    2.0
    """
    odds_ratio = check_real(odds_ratio, "odds_ratio", "odds_ratio_to_risk_ratio", low=0.0, low_open=True)
    if not isinstance(rare, bool):
        raise ValueError(f"The 'rare' parameter of odds_ratio_to_risk_ratio must be a bool. Got {rare!r} instead.")
    return odds_ratio if rare else math.sqrt(odds_ratio)


@dataclass(frozen=True)
class RiskRatio:
    """The adjusted risk ratio ``E[Y(1)] / E[Y(0)]`` of a binary outcome, with its interval.

    Attributes:
        rr, low, high: the ratio and its normal-approximation interval (on the log scale).
        mean_treated, mean_control: the AIPW means ``E[Y(1)]`` and ``E[Y(0)]``.
        level: the interval's coverage.
    """

    rr: float
    low: float
    high: float
    mean_treated: float
    mean_control: float
    level: float


def risk_ratio(t: Any, y: Any, propensity: Any, mu0: Any, mu1: Any, *, level: float = 0.95) -> RiskRatio:
    """The adjusted risk ratio of a binary outcome from the AIPW means of the two arms.

    ``E[Y(1)] = mean(mu1 + T (Y - mu1) / p)`` and ``E[Y(0)] = mean(mu0 + (1 - T)(Y - mu0) / (1 - p))``
    (the two halves of :func:`textcause.estimators.aipw`); the interval is
    ``exp(log RR +/- z se)`` with ``se`` from the influence function of ``log RR`` (the delta method).
    With ``mu`` the arms' means and ``p`` the treated share this is the unadjusted ratio, with the
    classical (Katz) standard error of ``log RR``.

    Args:
        t: binary treatment (0/1), both classes present.
        y: binary outcome (0/1); anything else is refused.
        propensity: fitted ``P(T=1 | X)``, strictly inside (0, 1).
        mu0: fitted ``E[Y | T=0, X]`` per unit.
        mu1: fitted ``E[Y | T=1, X]`` per unit.
        level: the interval's coverage, in (0, 1).

    Returns:
        :class:`RiskRatio`; pass ``rr``, ``low``, ``high`` to :func:`e_value`.

    Raises:
        ValueError: invalid or misaligned inputs, a non-binary outcome, ``level`` outside (0, 1), or an
            arm whose adjusted mean is not positive (no risk ratio exists).

    >>> r = risk_ratio([1, 1, 0, 0], [1, 0, 0, 1], [0.5] * 4, [0.5] * 4, [0.5] * 4)
    >>> r.rr
    1.0
    """
    owner = "risk_ratio"
    level = check_real(level, "level", owner, low=0.0, high=1.0, low_open=True, high_open=True)
    t, y, p, mu0, mu1 = unit_arrays(owner, t, ("y", y), ("propensity", propensity), ("mu0", mu0), ("mu1", mu1))
    binary_outcome(y, owner)
    psi1 = mu1 + t * (y - mu1) / p
    psi0 = mu0 + (1 - t) * (y - mu0) / (1.0 - p)
    m1, m0 = float(psi1.mean()), float(psi0.mean())
    if m1 <= 0 or m0 <= 0:
        raise ValueError(
            f"The adjusted mean outcome of an arm is not positive in {owner} (treated {m1:.4g}, untreated {m0:.4g}), "
            "so no risk ratio exists: check the outcome model and the propensities."
        )
    influence = (psi1 - m1) / m1 - (psi0 - m0) / m0
    se = float(influence.std(ddof=1) / math.sqrt(influence.size)) if influence.size > 1 else 0.0
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    log_rr = math.log(m1) - math.log(m0)
    return RiskRatio(math.exp(log_rr), math.exp(log_rr - z * se), math.exp(log_rr + z * se), m1, m0, level)

"""The robustness value of Cinelli & Hazlett (2020) for an OLS coefficient.

"Making Sense of Sensitivity: Extending Omitted Variable Bias" (JRSS B 82(1), 2020). For the
treatment's coefficient in ``y ~ t + X`` with t-statistic ``t_stat`` on ``dof`` residual degrees of
freedom, with ``f_q = q |t_stat| / sqrt(dof)``:

- the partial R^2 of the treatment with the outcome is ``t_stat^2 / (t_stat^2 + dof)``;
- ``RV_q = (sqrt(f_q^4 + 4 f_q^2) - f_q^2) / 2``: a confounder explaining ``RV_q`` of the residual
  variance of both treatment and outcome reduces the estimate by ``100 q`` percent;
- ``RV_{q,alpha}``: the same with ``f_q`` replaced by ``f_q - f_crit``, ``f_crit = |t_{alpha/2, dof-1}| /
  sqrt(dof - 1)`` (0 when ``f_q <= f_crit``, and ``(f_q^2 - f_crit^2) / (1 + f_q^2)`` when
  ``f_q > 1 / f_crit``): enough confounding to make the adjusted estimate not significant at ``alpha``.

These are the formulas of sensemakr (``sensitivity_statistics.py`` of PySensemakr, MIT licence);
``tests/sensitivity`` checks them against it to 1e-6 and against the paper's Darfur numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from textcause.sensitivity._inputs import covariate_numbers, unit_arrays
from textcause.validation import check_int, check_real

__all__ = ["OLSCoefficient", "RobustnessValue", "ols_coefficient", "partial_r2", "robustness_value"]


@dataclass(frozen=True)
class OLSCoefficient:
    """The treatment's coefficient in the OLS regression ``y ~ 1 + t + X``.

    Attributes:
        estimate: the coefficient.
        se: its classical (homoskedastic) standard error.
        t_statistic: ``estimate / se``.
        dof: residual degrees of freedom, ``n - rank([1, t, X])``.
    """

    estimate: float
    se: float
    t_statistic: float
    dof: int


@dataclass(frozen=True)
class RobustnessValue:
    """Robustness values of one coefficient.

    Attributes:
        t_statistic: the coefficient's t-statistic.
        dof: its residual degrees of freedom.
        q: the fraction of the estimate the confounder would remove (1: all of it).
        alpha: the significance level of ``rv_qa``.
        rv_q: ``RV_q``, in [0, 1).
        rv_qa: ``RV_{q,alpha}``, in [0, 1).
        partial_r2: the partial R^2 of the treatment with the outcome.
    """

    t_statistic: float
    dof: int
    q: float
    alpha: float
    rv_q: float
    rv_qa: float
    partial_r2: float

    def sentence(self) -> str:
        """One sentence: how strong an unobserved confounder would need to be to overturn the conclusion.

        >>> "explain at least 13.9% of the residual variance" in robustness_value(4.18445, 783).sentence()
        True
        """
        what = "bring the estimate to 0" if self.q == 1 else f"reduce the estimate by {100 * self.q:g}%"
        level = f"{100 * (1 - self.alpha):g}%"
        if self.rv_qa > 0:
            ci = f" ({100 * self.rv_qa:.1f}% to make it not significant at the {level} level)"
        else:
            ci = f" (the estimate is already not significant at the {level} level)"
        return (
            f"An unobserved confounder would need to explain at least {100 * self.rv_q:.1f}% of the residual "
            f"variance of both the treatment and the outcome to {what} and overturn the conclusion{ci}."
        )


def _check_t_dof(t_statistic: Any, dof: Any, owner: str) -> tuple[float, int]:
    return check_real(t_statistic, "t_statistic", owner), check_int(dof, "dof", owner, low=2)


def partial_r2(t_statistic: float, dof: int) -> float:
    """The partial R^2 of a coefficient with the outcome, ``t^2 / (t^2 + dof)``.

    Raises:
        ValueError: ``t_statistic`` not finite or ``dof`` not an int >= 2.

    >>> round(partial_r2(4.18445, 783), 5)
    0.02187
    """
    t_stat, dof = _check_t_dof(t_statistic, dof, "partial_r2")
    return t_stat**2 / (t_stat**2 + dof)


def robustness_value(t_statistic: float, dof: int, *, q: float = 1.0, alpha: float = 0.05) -> RobustnessValue:
    """``RV_q`` and ``RV_{q,alpha}`` of a coefficient from its t-statistic and degrees of freedom.

    Args:
        t_statistic: the coefficient's t-statistic (its sign does not matter).
        dof: the regression's residual degrees of freedom, an int >= 2.
        q: the fraction of the estimate to remove, > 0 (1: bring it to 0).
        alpha: the significance level of ``RV_{q,alpha}``, in (0, 1].

    Returns:
        :class:`RobustnessValue`.

    Raises:
        ValueError: ``t_statistic`` not finite, ``dof`` not an int >= 2, ``q <= 0`` or ``alpha`` outside (0, 1].

    >>> rv = robustness_value(4.18445, 783)
    >>> round(rv.rv_q, 3), round(rv.rv_qa, 3)
    (0.139, 0.076)
    """
    owner = "robustness_value"
    t_stat, dof = _check_t_dof(t_statistic, dof, owner)
    q = check_real(q, "q", owner, low=0.0, low_open=True)
    alpha = check_real(alpha, "alpha", owner, low=0.0, high=1.0, low_open=True)
    fq = q * abs(t_stat) / math.sqrt(dof)
    f_crit = abs(float(stats.t.ppf(alpha / 2, dof - 1))) / math.sqrt(dof - 1)
    fqa = fq - f_crit
    if fqa <= 0:
        rv_qa = 0.0
    elif f_crit > 0 and fq > 1 / f_crit:  # the constraint R^2_{D~Z|X} <= 1 does not bind
        rv_qa = (fq**2 - f_crit**2) / (1 + fq**2)
    else:
        rv_qa = _rv(fqa)
    return RobustnessValue(t_stat, dof, q, alpha, _rv(fq), rv_qa, t_stat**2 / (t_stat**2 + dof))


def _rv(f: float) -> float:
    """``(sqrt(f^4 + 4 f^2) - f^2) / 2``, written as ``2 / (1 + sqrt(1 + 4 / f^2))`` where that is exact
    for large ``f`` (no cancellation); 0 at ``f = 0``."""
    if f == 0:
        return 0.0
    return 2.0 / (1.0 + math.sqrt(1.0 + 4.0 / f**2))


def ols_coefficient(t: Any, y: Any, X: Any = None) -> OLSCoefficient:
    """The OLS coefficient of a binary treatment in ``y ~ 1 + t + X``, with its t-statistic.

    Computed by partialling out (Frisch-Waugh-Lovell): ``t`` and ``y`` are residualised on
    ``[1, X]`` by least squares, so a rank-deficient ``X`` is fine and costs only degrees of freedom.

    Args:
        t: binary treatment (0/1), both classes present.
        y: outcomes.
        X: covariates, an ``(n, p)`` array of finite numbers, or None for none.

    Returns:
        :class:`OLSCoefficient`; feed ``t_statistic`` and ``dof`` to :func:`robustness_value`.

    Raises:
        ValueError: invalid or misaligned inputs, a non-finite or non-2-D ``X``, a treatment that
            ``X`` explains exactly, or fewer than 2 residual degrees of freedom.

    >>> fit = ols_coefficient([0, 1, 0, 1, 0, 1], [0.1, 1.2, -0.1, 0.9, 0.0, 1.0])
    >>> round(fit.estimate, 4), fit.dof
    (1.0333, 4)
    """
    owner = "ols_coefficient"
    t, y = unit_arrays(owner, t, ("y", y))
    n = t.size
    design = np.ones((n, 1))
    if X is not None:
        x = covariate_numbers(X, owner)
        x = x.reshape(-1, 1) if x.ndim == 1 else x
        if x.ndim != 2 or x.shape[0] != n:
            raise ValueError(
                f"The 'X' parameter of {owner} must be an array with {n} rows (one per unit). Got shape {x.shape} instead."
            )
        if not np.isfinite(x).all():
            raise ValueError(
                f"The 'X' parameter of {owner} must hold finite numbers. Got NaN or infinite values instead."
            )
        design = np.column_stack([design, x])
    ty = np.column_stack([t, y]).astype(np.float64)
    coef, _, rank, _ = np.linalg.lstsq(design, ty, rcond=None)
    resid = ty - design @ coef
    rt, ry = resid[:, 0], resid[:, 1]
    stt = float(rt @ rt)
    if stt <= 1e-12 * n:
        raise ValueError(
            f"The covariates 'X' of {owner} explain the treatment exactly, so its coefficient is not identified."
        )
    dof = n - int(rank) - 1
    if dof < 2:
        raise ValueError(
            f"The regression of {owner} has {dof} residual degrees of freedom: it needs at least 2, so give it more units than covariates."
        )
    beta = float(rt @ ry) / stt
    e = ry - beta * rt
    se = math.sqrt(float(e @ e) / dof / stt)
    if se == 0:
        raise ValueError(
            f"The regression of {owner} fits the outcome 'y' exactly, so the coefficient has no standard error."
        )
    return OLSCoefficient(beta, se, beta / se, dof)

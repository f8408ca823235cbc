"""Austen plots (Veitch & Zaveri 2020): how strong an unobserved confounder must be to induce a bias.

"Sense and Sensitivity Analysis: Simple Post-Hoc Analysis of Bias Due to Unobserved Confounding"
(NeurIPS 2020) was made for adjustment by text: it needs only the fitted propensity ``g(x)``, the
outcome model ``Q(t, x)`` at each unit's observed treatment, the treatment and the outcome, and no
refitting for the curve itself. An unobserved ``U`` acts through ``g~ = P(T=1 | x, U)``, drawn from
``Beta(g (1/alpha - 1), (1 - g)(1/alpha - 1))``, and shifts the outcome by ``delta (g~ - g)``. For a
target ``bias`` of the ATE each ``alpha`` (the confounder's influence on treatment) fixes

    delta = bias (1/alpha - 1) / mean(1/g + 1/(1 - g))
    R^2   = delta^2 mean(psi1(a + T) + psi1(b + 1 - T)) / mean((Y - Q)^2),
            a = g (1/alpha - 1), b = (1 - g)(1/alpha - 1), psi1 the trigamma function,

the partial R^2 of ``U`` with the outcome that induces exactly that bias. The observed covariates'
own benchmark points come from fits that leave a covariate group out (``g_j``, ``Q_j``):
``alpha_j = max(0, 1 - mean(g (1 - g)) / mean(g_j (1 - g_j)))`` and
``R^2_j = max(0, (mse(Y, Q_j) - mse(Y, Q)) / mse(Y, Q_j))``. With ``target='att'`` the curve uses the
treated units only and the benchmark points all units, as the authors' code does (their appendix A).

These are the formulas of the authors' package (``austen_plots/math_helpers.py``,
github.com/anishazaveri/austen_plots, MIT licence), reimplemented with numpy and scipy;
``tests/sensitivity`` checks them against that package to 1e-6.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import polygamma

from textcause.sensitivity._inputs import unit_arrays
from textcause.validation import as_1d_float, check_options, check_real, check_that

__all__ = ["AUSTEN_ALPHAS", "DEFAULT_ALPHAS", "AustenCurve", "Benchmark", "austen_curve", "benchmark_point"]

#: The authors' grid of influences on treatment: ``np.arange(0.0001, 1, 0.0005)`` (2,000 values).
AUSTEN_ALPHAS = np.arange(0.0001, 1, 0.0005)
#: The default grid: every tenth point of the authors' (200 values, steps of 0.005). Each alpha costs
#: two trigamma evaluations per unit, the bulk of the work; pass ``alphas=AUSTEN_ALPHAS`` for theirs.
DEFAULT_ALPHAS = AUSTEN_ALPHAS[::10]
#: Units x alphas evaluated at once (about 16 MB of float64 per temporary).
_CHUNK = 2_000_000


@dataclass(frozen=True)
class Benchmark:
    """An observed covariate group's own strength, on the axes of the Austen plot.

    Attributes:
        name: the group's name (the caller's key).
        alpha: its influence on treatment (0 when leaving it out changes nothing).
        r2: its partial R^2 with the outcome (0 when leaving it out does not worsen the fit).
    """

    name: str
    alpha: float
    r2: float


@dataclass(frozen=True)
class AustenCurve:
    """The pairs (influence on treatment, partial R^2 with outcome) that induce one bias.

    Attributes:
        bias: the target bias of the estimate (the curve depends on its magnitude only).
        target: ``'ate'`` or ``'att'``.
        alpha: the influences on treatment, increasing, strictly inside (0, 1).
        r2: the partial R^2 with the outcome that induces ``bias`` at each ``alpha``, decreasing; values
            above 1 mean no confounder of that ``alpha`` can induce the bias (kept, not clipped).
        delta: the outcome shift ``delta`` at each ``alpha``.
        benchmarks: the observed covariate groups' points, in the caller's order.
    """

    bias: float
    target: str
    alpha: np.ndarray = field(repr=False)
    r2: np.ndarray = field(repr=False)
    delta: np.ndarray = field(repr=False)
    benchmarks: tuple[Benchmark, ...] = ()

    def r2_needed(self, alpha: float) -> float:
        """The partial R^2 with the outcome needed at influence ``alpha`` (linear between grid points;
        ``inf`` below the grid)."""
        alpha = check_real(alpha, "alpha", "AustenCurve.r2_needed", low=0.0, high=1.0)
        if alpha < self.alpha[0]:
            return float("inf")
        return float(np.interp(alpha, self.alpha, self.r2))

    def balanced(self) -> float | None:
        """Where the curve crosses the diagonal: the strength ``s`` with ``alpha = R^2 = s`` (the
        analogue of the robustness value), or None when the curve stays above the diagonal."""
        gap = self.r2 - self.alpha
        below = np.flatnonzero(gap <= 0)
        if below.size == 0:
            return None
        i = int(below[0])
        if i == 0:
            return float(self.alpha[0])
        # linear interpolation of the sign change of r2 - alpha between grid points i - 1 and i
        w = gap[i - 1] / (gap[i - 1] - gap[i])
        return float(self.alpha[i - 1] + w * (self.alpha[i] - self.alpha[i - 1]))

    def beyond(self) -> tuple[Benchmark, ...]:
        """The benchmark points on or above the curve: a confounder as strong as such a group would
        induce at least ``bias``."""
        return tuple(b for b in self.benchmarks if b.alpha > 0 and b.r2 >= self.r2_needed(b.alpha))

    def sentence(self) -> str:
        """One sentence: how strong an unobserved confounder would need to be to overturn the conclusion.

        >>> curve = AustenCurve(2.0, "ate", np.array([0.1, 0.3, 0.5]), np.array([0.9, 0.3, 0.1]), np.zeros(3))
        >>> "a partial R² with the outcome of at least 0.30 each" in curve.sentence()
        True
        """
        s = self.balanced()
        if s is None:
            need = (
                f"An unobserved confounder would need a partial R² with the outcome above "
                f"{float(self.r2[-1]):.2f} even at an influence on treatment of {float(self.alpha[-1]):.2f}"
            )
        else:
            need = (
                f"An unobserved confounder would need an influence on treatment (alpha) and a partial R² with "
                f"the outcome of at least {s:.2f} each (or another pair on the Austen curve)"
            )
        need += f" to induce a bias of {abs(self.bias):g} and overturn the conclusion"
        if not self.benchmarks:
            return need + "."
        strong = self.beyond()
        if strong:
            names = ", ".join(f"'{b.name}'" for b in strong)
            many = len(strong) > 1
            return (
                need
                + f"; the observed covariate group{'s' if many else ''} {names} reach{'' if many else 'es'} that strength."
            )
        top = max(self.benchmarks, key=lambda b: b.r2 / self.r2_needed(b.alpha) if b.alpha > 0 else 0.0)
        return (
            need + f"; the strongest observed covariate group, '{top.name}' (alpha {top.alpha:.2f}, "
            f"R² {top.r2:.2f}), falls short of it."
        )


def benchmark_point(name: str, y: Any, propensity: Any, q: Any, propensity_without: Any, q_without: Any) -> Benchmark:
    """The Austen-plot point of one observed covariate group, from a refit that leaves it out.

    Args:
        name: the group's name.
        y: outcomes of every unit.
        propensity: the full model's ``g(x)``, strictly inside (0, 1).
        q: the full model's ``Q(t, x)`` at each unit's observed treatment.
        propensity_without: ``g`` refit without the group, strictly inside (0, 1).
        q_without: ``Q`` refit without the group, at the observed treatment.

    Returns:
        ``Benchmark(name, alpha, r2)`` with ``alpha = max(0, 1 - mean(g(1-g)) / mean(g_j(1-g_j)))`` and
        ``r2 = max(0, (mse(y, q_without) - mse(y, q)) / mse(y, q_without))``.

    Raises:
        ValueError: invalid or misaligned arrays, or a refit outcome model that fits ``y`` exactly.

    >>> b = benchmark_point("age", [1.0, 0.0], [0.5, 0.5], [0.8, 0.2], [0.4, 0.6], [0.6, 0.4])
    >>> round(b.alpha, 4), round(b.r2, 4)
    (0.0, 0.75)
    """
    owner = "benchmark_point"
    y, g, q, g_j, q_j = unit_arrays(
        owner,
        None,
        ("y", y),
        ("propensity", propensity),
        ("q", q),
        ("propensity_without", propensity_without),
        ("q_without", q_without),
    )
    mse_j = float(np.mean((y - q_j) ** 2))
    check_that(mse_j > 0, mse_j, "q_without", owner, f"a fit that leaves an error on '{name}' (its mse is 0)")
    alpha = max(1.0 - float(np.mean(g * (1 - g))) / float(np.mean(g_j * (1 - g_j))), 0.0)
    r2 = max((mse_j - float(np.mean((y - q) ** 2))) / mse_j, 0.0)
    return Benchmark(str(name), alpha, r2)


def austen_curve(
    t: Any,
    y: Any,
    propensity: Any,
    q: Any,
    bias: float,
    *,
    benchmarks: Mapping[str, tuple[Any, Any]] | None = None,
    alphas: Any = None,
    target: str = "ate",
) -> AustenCurve:
    """The Austen curve for a target ``bias``, with the observed covariate groups' benchmark points.

    Args:
        t: binary treatment (0/1), both classes present.
        y: outcomes (binary or continuous).
        propensity: fitted ``g(x) = P(T=1 | x)``, strictly inside (0, 1).
        q: fitted ``Q(t, x)`` at each unit's observed treatment (``where(t, mu1, mu0)``).
        bias: the bias to test for, nonzero (e.g. the estimate itself: the bias that would bring it to 0).
        benchmarks: ``{group name: (propensity_without, q_without)}``, fits that leave that group of
            covariates out (the caller decides the groups); None for no benchmark points.
        alphas: the influences on treatment to evaluate, strictly inside (0, 1); default
            :data:`DEFAULT_ALPHAS` (every tenth point of the authors' grid :data:`AUSTEN_ALPHAS`).
        target: ``'ate'`` (all units) or ``'att'`` (the curve from the treated units).

    Returns:
        :class:`AustenCurve`.

    Raises:
        ValueError: invalid or misaligned arrays, ``bias`` zero or not finite, ``alphas`` outside (0, 1),
            an unknown ``target``, an outcome model that fits ``y`` exactly, or a benchmark that is not a
            pair of arrays.

    >>> rng = np.random.default_rng(0)
    >>> g = rng.uniform(0.2, 0.8, 500); t = rng.binomial(1, g); y = t + rng.normal(size=500)
    >>> curve = austen_curve(t, y, g, t.astype(float), bias=0.5, alphas=[0.1, 0.5])
    >>> bool(curve.r2[0] > curve.r2[1])
    True
    """
    owner = "austen_curve"
    target = check_options(target, "target", owner, ("ate", "att"))
    bias = check_real(bias, "bias", owner)
    check_that(bias != 0, bias, "bias", owner, "a nonzero float (the bias to test for)")
    t, y, g, q = unit_arrays(owner, t, ("y", y), ("propensity", propensity), ("q", q))
    grid = DEFAULT_ALPHAS if alphas is None else as_1d_float(alphas, "alphas")
    check_that(bool(np.all((grid > 0) & (grid < 1))), alphas, "alphas", owner, "values strictly inside (0, 1)")
    points = []
    for name, fits in (benchmarks or {}).items():
        check_that(
            isinstance(fits, (tuple, list)) and len(fits) == 2,
            type(fits).__name__,
            f"benchmarks['{name}']",
            owner,
            "a pair (propensity_without, q_without)",
        )
        points.append(benchmark_point(name, y, g, q, fits[0], fits[1]))
    keep = t == 1 if target == "att" else slice(None)
    tc, yc, gc, qc = t[keep], y[keep], g[keep], q[keep]
    mse = float(np.mean((yc - qc) ** 2))
    check_that(mse > 0, mse, "q", owner, "an outcome model that leaves an error (its mse is 0)")
    delta = bias * (1.0 / grid - 1.0) / float(np.mean(1.0 / gc + 1.0 / (1.0 - gc)))
    r2 = np.empty_like(grid)
    step = max(1, _CHUNK // max(tc.size, 1))  # alphas per block: memory stays O(_CHUNK) for large samples
    for start in range(0, grid.size, step):
        scale = (1.0 / grid[start : start + step] - 1.0)[:, None]
        trigamma = polygamma(1, gc * scale + tc) + polygamma(1, (1.0 - gc) * scale + (1 - tc))
        r2[start : start + step] = delta[start : start + step] ** 2 * trigamma.mean(axis=1) / mse
    return AustenCurve(bias, target, grid.copy(), r2, delta, tuple(points))

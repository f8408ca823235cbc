"""Targeted maximum likelihood estimation (TMLE) of the ATE, with its influence-function interval.

TMLE starts from outcome-model predictions ``mu0 = E[Y | T=0, X]``, ``mu1 = E[Y | T=1, X]`` and
updates them once along the *clever covariate* ``H(T, X) = T / g(X) - (1 - T) / (1 - g(X))`` (``g``
the propensity), so that they solve the efficient influence curve's score equation; the ATE is the
plug-in mean of the updated predictions (van der Laan & Rubin 2006; Gruber & van der Laan 2010).

The update (the *fluctuation*) is a logistic regression of Y on H with offset ``logit(Q)`` and no
intercept, ``logit Q*_a(X) = logit Q_a(X) + eps * H(a, X)``, so the updated predictions stay inside
the outcome's range. ``outcome="binary"`` uses Y in [0, 1] as it is; ``outcome="continuous"`` is
Gruber & van der Laan's bounded approach: Y and the predictions are mapped to [0, 1] by Y's observed
range ``[a, b]``, fluctuated on the quasi-binomial likelihood, and the effect mapped back (times
``b - a``); unlike a linear fluctuation it cannot leave the outcome's range when propensities are small.

Before the logit the scaled predictions are truncated to ``[bound, 1 - bound]`` (``details['n_bounded']``
counts the changed ones). The fluctuation is solved by Newton's method with step halving on the convex
quasi-binomial negative log-likelihood, in numpy (a test checks it against statsmodels' ``GLM`` with a
binomial family and an offset).
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any

import numpy as np

from textcause.estimators._common import BLOCK, blocks, dot, effect, finite, prepare, require_propensity
from textcause.estimators.types import CI_INFLUENCE, Estimate
from textcause.estimators.weighting import check_clip, clipped_propensity, sum_squares
from textcause.validation import check_options, check_real

__all__ = [
    "OUTCOMES",
    "FLUCTUATIONS",
    "DEFAULT_BOUND",
    "MAX_ITER",
    "tmle",
]

#: The outcome kinds :func:`tmle` takes (``auto``: binary when Y and the predictions lie in [0, 1]
#: and Y takes only the values 0 and 1, else continuous).
OUTCOMES = ("auto", "binary", "continuous")
#: ``ate``: one fluctuation parameter on ``H = T/g - (1-T)/(1-g)``; ``arms``: one per arm, on
#: ``H1 = T/g`` and ``H0 = (1-T)/(1-g)`` (each arm's mean is targeted separately).
FLUCTUATIONS = ("ate", "arms")
#: The default truncation of the scaled outcome predictions, ``[bound, 1 - bound]``.
DEFAULT_BOUND = 0.005
#: Newton iterations of the fluctuation before it is declared not converged.
MAX_ITER = 100


def _expit(x: np.ndarray) -> np.ndarray:
    """The logistic function, without overflow at any finite ``x``: ``e = exp(-|x|)`` never overflows,
    and ``1 / (1 + e)`` (``x >= 0``) or ``e / (1 + e)`` (``x < 0``) is within a rounding of exact."""
    e = np.exp(-np.abs(x))
    p: np.ndarray = np.where(x >= 0.0, 1.0, e) / (1.0 + e)
    return p


def _logit(q: np.ndarray) -> np.ndarray:
    """``log(q / (1 - q))`` for ``q`` strictly inside (0, 1)."""
    z: np.ndarray = np.log(q / (1.0 - q))
    return z


def _evaluate(
    y: np.ndarray, offset: np.ndarray, h: np.ndarray, hh: np.ndarray, eps: float
) -> tuple[float, float, float]:
    """At ``lp = offset + eps * h``: the quasi-binomial negative log-likelihood of ``y`` in [0, 1], the
    score ``sum h (y - q)`` and the information ``sum h^2 q (1 - q)`` (``q = expit(lp)``), in one pass.

    With ``e = exp(-|lp|)`` (never overflowing) each unit's loss is ``log(1 + e) + max(lp, 0) - y lp``
    (``y log(1 + exp(-lp)) + (1 - y) log(1 + exp(lp))`` rewritten), ``q = 1 / (1 + e)`` or
    ``e / (1 + e)`` by the sign of ``lp``, and ``q (1 - q) = e / (1 + e)^2``. Blocks of :data:`BLOCK`
    units keep the temporaries in cache.
    """
    loss = score = info = 0.0
    for lo in blocks(y.size):
        hi = lo + BLOCK
        yb, hb = y[lo:hi], h[lo:hi]
        lp = offset[lo:hi] + eps * hb
        e = np.exp(-np.abs(lp))
        d = 1.0 + e
        loss += float(np.log(d).sum() + np.maximum(lp, 0.0).sum()) - dot(yb, lp)
        q = np.where(lp >= 0.0, 1.0, e) / d
        score += dot(hb, yb - q)
        e /= d
        e /= d
        info += dot(hh[lo:hi], e)
    return loss, score, info


def _fluctuate(y: np.ndarray, offset: np.ndarray, h: np.ndarray, owner: str = "tmle") -> tuple[float, int]:
    """The maximum-likelihood ``eps`` of ``logit q = offset + eps * h`` (no intercept), and its iterations.

    ``y`` lies in [0, 1] (quasi-binomial when fractional), ``offset`` is finite and ``h`` has no zero.
    The log-likelihood is concave in ``eps``; its maximum is finite unless the outcomes are at their
    bounds on both sides of ``h`` (every unit with ``h > 0`` at 1 and every unit with ``h < 0`` at 0,
    or the reverse), when ``eps`` runs to infinity. Newton's method with step halving: a step is
    taken while the loss does not increase (beyond rounding); each candidate costs one pass
    (:func:`_evaluate`), which also gives the next Newton step.

    Raises:
        ValueError: no finite maximum (those separated outcomes), or Newton's method not converging.
    """
    pos = h > 0
    up = bool(np.all(y[pos] >= 1.0) and np.all(y[~pos] <= 0.0))
    down = bool(np.all(y[pos] <= 0.0) and np.all(y[~pos] >= 1.0))
    if up or down:
        raise ValueError(
            f"The targeting step of {owner} has no finite solution: the outcomes sit at the bounds of their "
            "range on opposite sides of the clever covariate (every treated unit at one bound and every "
            "untreated unit at the other, or with fluctuation='arms' every unit of an arm at the same bound), "
            "so the fluctuation runs to infinity; use more units, or an estimator without a targeting step (aipw)."
        )
    h_max = float(np.max(np.abs(h)))
    hh = h * h
    eps = 0.0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        loss, score, info = _evaluate(y, offset, h, hh, eps)
        for it in range(1, MAX_ITER + 1):
            if not (np.isfinite(score) and np.isfinite(info) and info > 0.0):
                break
            step = score / info
            shrink = 1.0
            while True:  # step halving: the loss must not increase (beyond rounding)
                cand = eps + shrink * step
                new, new_score, new_info = _evaluate(y, offset, h, hh, cand)
                if (np.isfinite(new) and new <= loss + 1e-12 * (1.0 + abs(loss))) or shrink < 1e-12:
                    break
                shrink *= 0.5
            if not np.isfinite(new):
                break
            eps, loss, score, info = cand, new, new_score, new_info
            if abs(shrink * step) * h_max < 1e-10:
                return float(eps), it
    raise ValueError(
        f"The targeting step of {owner} did not converge in {MAX_ITER} Newton iterations (the clever "
        "covariate is too extreme for float64): clip the propensities, e.g. clip=0.01."
    )


def tmle(
    t: Any,
    y: Any,
    propensity: Any,
    mu0: Any,
    mu1: Any,
    *,
    outcome: str = "auto",
    fluctuation: str = "ate",
    level: float = 0.95,
    clip: float | None = None,
    bound: float = DEFAULT_BOUND,
) -> Estimate:
    """Targeted maximum likelihood estimate of ATE = E[Y(1)] - E[Y(0)], with its influence-function interval.

    ``ATE = mean(Q*_1(X) - Q*_0(X))`` after the targeting step described in the module docstring.
    The efficient influence curve at the updated fit is ``D_i = H_i (Y_i - Q*_{T_i}(X_i)) + Q*_1(X_i)
    - Q*_0(X_i) - ATE``; ``se = std(D, ddof=1) / sqrt(n)`` and the interval is the normal approximation
    ``ATE +/- z_{(1+level)/2} * se`` (``details['ci_method']``). Like AIPW it is consistent when either
    the propensity or the outcome model is right, and efficient when both are; unlike AIPW its
    estimate is a mean of predictions, so it stays inside the outcome's range.

    Args:
        t: binary treatment (0/1 or bool), both classes present.
        y: outcomes: 0/1 (or proportions in [0, 1]) for ``outcome="binary"``, any finite values for
            ``"continuous"``.
        propensity: estimated P(T=1 | X), strictly inside (0, 1) and giving no unit a weight above
            :data:`~textcause.validation.MAX_WEIGHT` (inside [0, 1] when ``clip`` is given).
        mu0: predicted E[Y | T=0, X] per unit (in [0, 1] for a binary outcome).
        mu1: predicted E[Y | T=1, X] per unit.
        outcome: ``binary``, ``continuous``, or ``auto`` (binary when Y takes only 0 and 1 and both
            predictions lie in [0, 1]).
        fluctuation: ``ate`` (one parameter on ``H``) or ``arms`` (one per arm, on ``T/g`` and
            ``(1-T)/(1-g)``; it also targets each arm's mean).
        level: coverage of the normal-approximation interval, in (0, 1).
        clip: if given, propensities are trimmed to ``[clip, 1 - clip]`` first (``MIN_CLIP <= clip <=
            0.5``), as in :func:`~textcause.estimators.ipw`; the changed units are ``n_clipped``.
        bound: the scaled predictions are truncated to ``[bound, 1 - bound]`` before the logit, in
            [1e-12, 0.1].

    Returns:
        ``Estimate`` (method ``tmle``) with ``ci_low``/``ci_high``; details: ``mean_treated``,
        ``mean_control`` (the targeted E[Y(1)], E[Y(0)]), ``se``, ``level``, ``ci_method``,
        ``influence_ci_low``/``influence_ci_high`` (the same interval, kept when a bootstrap replaces
        ``ci_low``/``ci_high``), ``epsilon`` (a tuple), ``iterations``, ``outcome``, ``fluctuation``,
        ``y_low``/``y_high`` (the outcome range used), ``n_bounded``, ``n_clipped``, ``clip``.

    Raises:
        ValueError: invalid inputs or parameters, a binary outcome or prediction outside [0, 1], a
            constant continuous outcome, weights beyond ``MAX_WEIGHT`` without ``clip``, or a
            targeting step without a finite solution.

    Examples:
        >>> from textcause.estimators import tmle
        >>> t = [0, 1, 0, 1, 0, 1, 0, 1]
        >>> y = [0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
        >>> p = [0.2, 0.3, 0.4, 0.5, 0.5, 0.6, 0.7, 0.8]
        >>> mu0, mu1 = [0.3] * 8, [0.9] * 8
        >>> tmle(t, y, p, mu0, mu1)
        Estimate(tmle: ATE +0.7567 [+0.2930, +1.2205], n_used=8)
    """
    owner = "tmle"
    outcome = check_options(outcome, "outcome", owner, OUTCOMES)
    fluctuation = check_options(fluctuation, "fluctuation", owner, FLUCTUATIONS)
    level = check_real(level, "level", owner, low=0.0, high=1.0, low_open=True, high_open=True)
    bound = check_real(bound, "bound", owner, low=1e-12, high=0.1)
    require_propensity(propensity, owner)
    n_clipped = 0
    if clip is None:
        t, y, g, mu0, mu1 = prepare(t, y, propensity, ("mu0", mu0), ("mu1", mu1), owner=owner, weights=True)
    else:
        clip = check_clip(clip, owner)
        t, y, mu0, mu1 = prepare(
            t, y, None, ("mu0", mu0), ("mu1", mu1), owner=owner, paired_with=(("propensity", propensity),)
        )
        g, n_clipped = clipped_propensity(t, propensity, clip)
    kind = _outcome_kind(outcome, y, mu0, mu1, owner)
    if kind == "binary":
        low, high = 0.0, 1.0
    else:
        low, high = float(y.min()), float(y.max())
        if not high > low:
            raise ValueError(
                f"The outcome 'y' of {owner} is constant ({low!r} for every unit): a continuous outcome "
                "needs at least two distinct values to be mapped to [0, 1] (a constant outcome has no effect)."
            )
    scale = high - low
    if kind == "binary":  # (x - 0) / 1 is x, and y already lies in [0, 1]: no pass needed
        ys, s0, s1 = y, mu0, mu1
    else:
        with np.errstate(over="ignore"):  # a prediction far outside a narrow range maps to +-inf, then to a bound
            ys = np.clip((y - low) / scale, 0.0, 1.0)  # in [0, 1] up to rounding
            s0, s1 = (mu0 - low) / scale, (mu1 - low) / scale
    q0, q1 = np.clip(s0, bound, 1.0 - bound), np.clip(s1, bound, 1.0 - bound)
    n_bounded = int(np.count_nonzero(q0 != s0) + np.count_nonzero(q1 != s1))
    lq0, lq1 = _logit(q0), _logit(q1)
    treated = t == 1
    w1 = 1.0 / g  # H(1, X)
    w0 = 1.0 / (1.0 - g)  # -H(0, X)
    h = np.where(treated, w1, -w0)
    offset = np.where(treated, lq1, lq0)
    if fluctuation == "ate":
        eps, iterations = _fluctuate(ys, offset, h, owner)
        epsilon: tuple[float, ...] = (eps,)
        d1, d0 = eps, -eps
    else:
        e1, it1 = _fluctuate(ys[treated], offset[treated], w1[treated], owner)
        e0, it0 = _fluctuate(ys[~treated], offset[~treated], w0[~treated], owner)
        epsilon, iterations = (e1, e0), it1 + it0
        d1, d0 = e1, e0
    # the targeted predictions Q*_1 = expit(lq1 + d1 w1), Q*_0 = expit(lq0 + d0 w0), block by block: their
    # sums, and the influence curve up to its constant, D_i + ATE = H_i (Y_i - Q*_{T_i}) + Q*_1 - Q*_0
    n = int(t.size)
    eic = np.empty(n)
    sum1 = sum0 = 0.0
    for start in blocks(n):
        b = slice(start, start + BLOCK)
        q1s, q0s = _expit(lq1[b] + d1 * w1[b]), _expit(lq0[b] + d0 * w0[b])
        sum1 += float(q1s.sum())
        sum0 += float(q0s.sum())
        eic[b] = h[b] * (ys[b] - np.where(treated[b], q1s, q0s)) + (q1s - q0s)
    m1, m0 = sum1 / n, sum0 / n
    ate_scaled = float(effect(m1, m0))
    se = scale * float(np.sqrt(sum_squares(eic, float(eic.mean())) / (n - 1))) / float(np.sqrt(n)) if n > 1 else 0.0
    ate = scale * ate_scaled
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    lo, hi = ate - z * se, ate + z * se
    return finite(
        Estimate(
            ate=ate,
            method="tmle",
            n_used=n,
            ci_low=lo,
            ci_high=hi,
            n_clipped=n_clipped,
            details={
                "mean_treated": low + scale * m1,
                "mean_control": low + scale * m0,
                "se": se,
                "level": level,
                "ci_method": CI_INFLUENCE,
                "influence_ci_low": lo,
                "influence_ci_high": hi,
                "epsilon": epsilon,
                "iterations": iterations,
                "outcome": kind,
                "fluctuation": fluctuation,
                "y_low": low,
                "y_high": high,
                "n_bounded": n_bounded,
                "n_clipped": n_clipped,
                "clip": clip,
            },
        )
    )


def _outcome_kind(outcome: str, y: np.ndarray, mu0: np.ndarray, mu1: np.ndarray, owner: str) -> str:
    """``binary`` or ``continuous``: ``outcome`` itself, checked, or decided from the data for ``auto``."""
    in_unit = [
        (name, arr)
        for name, arr in (("y", y), ("mu0", mu0), ("mu1", mu1))
        if arr.size and (arr.min() < 0.0 or arr.max() > 1.0)
    ]
    if outcome == "auto":
        zero_one = bool(np.all((y == 0.0) | (y == 1.0)))
        return "binary" if zero_one and not in_unit else "continuous"
    if outcome == "binary" and in_unit:
        name, arr = in_unit[0]
        i = int(np.flatnonzero((arr < 0.0) | (arr > 1.0))[0])
        raise ValueError(
            f"The '{name}' values of {owner} must lie in [0, 1] for a binary outcome. Got {float(arr[i])!r} at "
            f"index {i}: pass outcome='continuous' for other outcomes."
        )
    return outcome

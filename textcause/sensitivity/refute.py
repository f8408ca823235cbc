"""Refuters of an effect estimate, in the spirit of DoWhy's: placebo treatment, random common cause, subsample.

Each takes an ``estimate(t, y, X, rng) -> (point, low, high)`` callable, so any model and estimator
fit: the callable refits whatever it needs on the arrays it is given (the refuters never look
inside). Each refutation reruns it on altered data and compares the result with what a sound
method must give:

- :func:`placebo_treatment`: ``t`` randomly permuted, so its true effect is 0; the new interval
  should contain 0 (DoWhy's ``placebo_treatment_refuter`` with ``placebo_type='permute'``);
- :func:`random_common_cause`: a standard-normal covariate appended to ``X``, which changes
  nothing causal; the new interval should contain the original estimate (DoWhy's
  ``random_common_cause``);
- :func:`subsample`: random subsets of the units (the treated and untreated drawn separately, so
  each keeps both arms); their intervals should contain the full-data estimate (DoWhy's
  ``data_subset_refuter``).

With ``n_draws > 1`` the draws' points, lower and upper limits are averaged and the one rule is
applied to the averages: a refutation passes when ``expected`` lies in ``[new_low, new_high]``. A
sound method still fails a single placebo draw with probability ``1 - level`` of its interval;
more draws make that rarer. Every draw's randomness comes from ``seed`` alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from textcause.sensitivity._inputs import covariate_numbers
from textcause.validation import as_bounded_float, check_consistent_length, check_int, check_real, check_treatment

__all__ = ["EstimateFn", "Refutation", "placebo_treatment", "random_common_cause", "refute", "subsample"]

#: ``estimate(t, y, X, rng) -> (point, low, high)``: refit and estimate on the given arrays (``X`` may
#: be None, a 2-D numpy array or a scipy sparse matrix), drawing any randomness from ``rng``.
EstimateFn = Callable[[np.ndarray, np.ndarray, Any, np.random.Generator], tuple[float, float, float]]


@dataclass(frozen=True)
class Refutation:
    """The outcome of one refuter.

    Attributes:
        refuter: ``'placebo_treatment'``, ``'random_common_cause'`` or ``'subsample'``.
        new_estimate: the estimate on the altered data (the mean over draws).
        new_low, new_high: its interval (the means of the draws' limits).
        expected: what a sound method gives: 0 for the placebo, the original estimate otherwise.
        passed: whether ``expected`` lies in ``[new_low, new_high]``.
        reason: one plain sentence saying what was done, what came out and what it means.
        draws: each draw's ``(point, low, high)``.
        seed: the seed every draw came from.
    """

    refuter: str
    new_estimate: float
    new_low: float
    new_high: float
    expected: float
    passed: bool
    reason: str
    draws: tuple[tuple[float, float, float], ...]
    seed: int


def _inputs(owner: str, estimate: Any, t: Any, y: Any, X: Any) -> tuple[np.ndarray, np.ndarray, Any]:
    if not callable(estimate):
        raise ValueError(
            f"The 'estimate' parameter of {owner} must be a callable estimate(t, y, X, rng) -> (point, low, high). "
            f"Got {type(estimate).__name__} instead."
        )
    t = check_treatment(t, "t")
    y = as_bounded_float(y, "y", owner)
    check_consistent_length(t, y)
    if X is None:
        return t, y, None
    if hasattr(X, "tocsr"):  # a scipy sparse matrix (n-gram counts): kept sparse
        x = X.tocsr().astype(np.float64)
    else:
        x = covariate_numbers(X, owner)
        if x.ndim != 2:
            raise ValueError(
                f"The 'X' parameter of {owner} must be a 2-D array (units x covariates). Got shape {x.shape} instead."
            )
    if x.shape[0] != t.size:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: [{t.size}, {x.shape[0]}]")
    return t, y, x


def _call(
    owner: str, estimate: EstimateFn, t: np.ndarray, y: np.ndarray, x: Any, rng: np.random.Generator
) -> tuple[float, float, float]:
    """Run ``estimate`` and check that it returned a finite ``(point, low, high)`` with ``low <= point <= high``."""
    out = estimate(t, y, x, rng)
    try:
        point, low, high = (float(v) for v in out)
    except (TypeError, ValueError):
        raise ValueError(
            f"The estimate callable given to {owner} must return (point, low, high). Got {out!r} instead."
        ) from None
    if not all(math.isfinite(v) for v in (point, low, high)) or not low <= point <= high:
        raise ValueError(
            f"The estimate callable given to {owner} must return finite (point, low, high) with low <= point <= high. "
            f"Got {(point, low, high)!r} instead."
        )
    return point, low, high


def _generators(seed: Any, owner: str, n: int) -> list[np.random.Generator]:
    seed = check_int(seed, "seed", owner, low=0)
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n)]


_Draw = tuple[float, float, float]


def _summary(
    owner: str, draws: list[_Draw], expected: float, seed: int
) -> tuple[str, float, float, float, float, bool, tuple[_Draw, ...], int]:
    point, low, high = (float(np.mean(col)) for col in zip(*draws))
    return owner, point, low, high, expected, bool(low <= expected <= high), tuple(draws), seed


def _span(n: int, point: float, low: float, high: float) -> str:
    over = f"the mean of {n} draws, " if n > 1 else ""
    return f"{over}{point:+.4g} [{low:+.4g}, {high:+.4g}]"


def placebo_treatment(
    estimate: EstimateFn, t: Any, y: Any, X: Any = None, *, n_draws: int = 1, seed: int = 0
) -> Refutation:
    """Refit with a permuted treatment, whose true effect is 0: the interval should contain 0.

    Args:
        estimate: ``estimate(t, y, X, rng) -> (point, low, high)``.
        t: binary treatment (0/1), both classes present.
        y: outcomes.
        X: covariates passed through unchanged (None, a 2-D array or a scipy sparse matrix).
        n_draws: permutations to average, >= 1.
        seed: the seed of every permutation and of the ``rng`` each call receives, >= 0.

    Returns:
        :class:`Refutation` with ``expected = 0``.

    Raises:
        ValueError: invalid inputs, or an ``estimate`` that does not return finite ``(point, low, high)``.

    >>> diff = lambda t, y, X, rng: (y[t == 1].mean() - y[t == 0].mean(),) * 3
    >>> placebo_treatment(diff, [0, 1] * 50, [0.0, 1.0] * 50).passed
    False
    """
    owner = "placebo_treatment"
    t, y, x = _inputs(owner, estimate, t, y, X)
    n_draws = check_int(n_draws, "n_draws", owner, low=1)
    draws = []
    for rng in _generators(seed, owner, n_draws):
        draws.append(_call(owner, estimate, rng.permutation(t), y, x, rng))
    name, point, low, high, expected, passed, kept, seed = _summary(owner, draws, 0.0, seed)
    said = (
        f"The placebo treatment (t randomly permuted, so its true effect is 0) gets {_span(n_draws, point, low, high)}"
    )
    reason = (
        said + ", an interval that contains 0, as it should."
        if passed
        else said + ": the interval excludes 0, so the method finds an effect of a treatment that has none "
        "and its estimate of the real treatment is suspect."
    )
    return Refutation(name, point, low, high, expected, passed, reason, kept, seed)


def _original(
    owner: str, estimate: EstimateFn, t: np.ndarray, y: np.ndarray, x: Any, original: Any, seed: int
) -> float:
    if original is not None:
        return check_real(original, "original", owner)
    return _call(owner, estimate, t, y, x, np.random.default_rng(check_int(seed, "seed", owner, low=0)))[0]


def random_common_cause(
    estimate: EstimateFn,
    t: Any,
    y: Any,
    X: Any = None,
    *,
    original: float | None = None,
    n_draws: int = 1,
    seed: int = 0,
) -> Refutation:
    """Refit with a standard-normal covariate appended to ``X``: the interval should contain the original estimate.

    Args:
        estimate: ``estimate(t, y, X, rng) -> (point, low, high)``.
        t: binary treatment (0/1), both classes present.
        y: outcomes.
        X: covariates (None, a 2-D array or a scipy sparse matrix); the random column is appended
            (as the only column when None).
        original: the estimate on the data as given; None computes it with ``default_rng(seed)``.
        n_draws: random covariates to average over, >= 1.
        seed: the seed of every random covariate and of the ``rng`` each call receives, >= 0.

    Returns:
        :class:`Refutation` with ``expected`` the original estimate.

    Raises:
        ValueError: invalid inputs, or an ``estimate`` that does not return finite ``(point, low, high)``.

    >>> ignore_x = lambda t, y, X, rng: (0.9, 0.8, 1.0)
    >>> random_common_cause(ignore_x, [0, 1] * 5, [0.0, 1.0] * 5).passed
    True
    """
    owner = "random_common_cause"
    t, y, x = _inputs(owner, estimate, t, y, X)
    n_draws = check_int(n_draws, "n_draws", owner, low=1)
    before = _original(owner, estimate, t, y, x, original, seed)
    draws = []
    for rng in _generators(seed, owner, n_draws):
        noise = rng.standard_normal((t.size, 1))
        if x is None:
            widened: Any = noise
        elif hasattr(x, "tocsr"):
            widened = sparse.hstack([x, sparse.csr_matrix(noise)], format="csr")
        else:
            widened = np.hstack([x, noise])
        draws.append(_call(owner, estimate, t, y, widened, rng))
    name, point, low, high, expected, passed, kept, seed = _summary(owner, draws, before, seed)
    said = (
        f"Adding a random common cause (a pure-noise covariate) moves the estimate from {before:+.4g} to "
        f"{_span(n_draws, point, low, high)}"
    )
    reason = (
        said + ", an interval that still contains the original estimate, as it should."
        if passed
        else said
        + ": the interval excludes the original estimate, so the method is unstable to an irrelevant covariate."
    )
    return Refutation(name, point, low, high, expected, passed, reason, kept, seed)


def subsample(
    estimate: EstimateFn,
    t: Any,
    y: Any,
    X: Any = None,
    *,
    original: float | None = None,
    fraction: float = 0.8,
    n_draws: int = 5,
    seed: int = 0,
) -> Refutation:
    """Refit on random subsets of the units: their intervals should contain the full-data estimate.

    Args:
        estimate: ``estimate(t, y, X, rng) -> (point, low, high)``.
        t: binary treatment (0/1), both classes present.
        y: outcomes.
        X: covariates (None, a 2-D array or a scipy sparse matrix), subset with the units.
        original: the estimate on all units; None computes it with ``default_rng(seed)``.
        fraction: the share of each arm kept, in (0, 1).
        n_draws: subsets to average over, >= 1.
        seed: the seed of every subset and of the ``rng`` each call receives, >= 0.

    Returns:
        :class:`Refutation` with ``expected`` the full-data estimate.

    Raises:
        ValueError: invalid inputs, a subset that would leave an arm empty, or an ``estimate`` that
            does not return finite ``(point, low, high)``.

    >>> mean_y = lambda t, y, X, rng: (y.mean(), y.mean() - 1, y.mean() + 1)
    >>> subsample(mean_y, [0, 1] * 10, [0.0, 1.0] * 10, n_draws=2).passed
    True
    """
    owner = "subsample"
    t, y, x = _inputs(owner, estimate, t, y, X)
    fraction = check_real(fraction, "fraction", owner, low=0.0, high=1.0, low_open=True, high_open=True)
    n_draws = check_int(n_draws, "n_draws", owner, low=1)
    arms = [np.flatnonzero(t == 1), np.flatnonzero(t == 0)]
    sizes = [int(round(fraction * a.size)) for a in arms]
    if min(sizes) < 1:
        raise ValueError(
            f"The 'fraction' parameter of {owner} keeps {min(sizes)} units of an arm ({fraction!r} of "
            f"{min(a.size for a in arms)}): raise it so that each subset keeps both arms."
        )
    before = _original(owner, estimate, t, y, x, original, seed)
    draws = []
    for rng in _generators(seed, owner, n_draws):
        keep = np.sort(np.concatenate([rng.choice(a, size=k, replace=False) for a, k in zip(arms, sizes)]))
        draws.append(_call(owner, estimate, t[keep], y[keep], None if x is None else x[keep], rng))
    name, point, low, high, expected, passed, kept, seed = _summary(owner, draws, before, seed)
    said = f"Refitting on random subsets of {100 * fraction:g}% of the units gives {_span(n_draws, point, low, high)}"
    reason = (
        said + f", an interval that contains the full-data estimate {before:+.4g}, as it should."
        if passed
        else said
        + f": the interval excludes the full-data estimate {before:+.4g}, so the estimate rests on a few units."
    )
    return Refutation(name, point, low, high, expected, passed, reason, kept, seed)


def refute(estimate: EstimateFn, t: Any, y: Any, X: Any = None, *, seed: int = 0) -> tuple[Refutation, ...]:
    """All three refuters with their defaults, the original estimate computed once.

    Returns:
        ``(placebo_treatment, random_common_cause, subsample)`` refutations.

    Raises:
        ValueError: as the three refuters.

    >>> const = lambda t, y, X, rng: (0.0, -1.0, 1.0)
    >>> all(r.passed for r in refute(const, [0, 1] * 5, [0.0, 1.0] * 5))
    True
    """
    t, y, x = _inputs("refute", estimate, t, y, X)
    before = _original("refute", estimate, t, y, x, None, seed)
    return (
        placebo_treatment(estimate, t, y, x, seed=seed),
        random_common_cause(estimate, t, y, x, original=before, seed=seed),
        subsample(estimate, t, y, x, original=before, seed=seed),
    )

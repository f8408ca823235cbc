"""The controlled selection-bias experiment's sampler: S ~ Bernoulli(f(W, G)) over authors.

Each author has a gender G (female / male) and a value W, drawn at random per author from an
ordered list of ``n_w`` values (:func:`draw_w`), so W and G are independent before selection. An
author is kept with probability

    f(W, G) = 1/2 + strength * x(W) * g,    x(W) = index(W) / (n_w - 1) - 1/2 in [-1/2, 1/2],

with g = +1 for a female author and -1 for a male one, and ``strength`` in [0, 1]: 0 keeps every
author with probability 1/2 (W and G stay independent in the sample), 1 keeps only women at the
last value of W and only men at the first. About half the authors are kept at every strength.
Selection is a collider of W and G: in the sample,

    P(female | W, S=1) = p (1/2 + s x) / (p (1/2 + s x) + (1 - p) (1/2 - s x)),

with p the share of women before selection; for p = 1/2 this is 1/2 + s x, a line whose slope is
``100 * s / (n_w - 1)`` percentage points per step of W's index (:func:`expected_association`).

:func:`association` measures the W-G association of any sample of 0/1 indicators (authors, or the
gender labels of masked words) the way the probes' curves are measured: the share of female at
each value of W in percent, its least-squares line against W's index (``scipy.stats.linregress``)
and Pearson's r of those shares, plus the unit-level Pearson correlation. Everything here is a
pure function of its inputs; randomness comes from the ``numpy.random.Generator`` passed in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from scipy import stats

from textcause.validation import check_int, check_real


@dataclasses.dataclass(frozen=True)
class Association:
    """The W-G association of a sample (the share of female at each value of W, and its line).

    Attributes:
        share: the share of female (percent) at each value of W, by W index (NaN: no unit there).
        count: the units at each value of W.
        slope: the least-squares slope of ``share`` against W's index (percentage points per step).
        intercept: its intercept (percent at index 0).
        r: Pearson's r of ``share`` against W's index (the probes' r).
        corr: the unit-level Pearson correlation of the female indicator with W's index.
    """

    share: np.ndarray
    count: np.ndarray
    slope: float
    intercept: float
    r: float
    corr: float


@dataclasses.dataclass(frozen=True)
class Selection:
    """A selected sample of authors and its true W-G association.

    Attributes:
        authors: the selected authors' ids.
        w_index: their W index.
        female: whether each is a woman.
        strength: the selection strength.
        probability: the selection probability f(W, G) of every author (selected or not).
        association: the selected sample's W-G association (:func:`association`).
    """

    authors: np.ndarray
    w_index: np.ndarray
    female: np.ndarray
    strength: float
    probability: np.ndarray
    association: Association

    def __len__(self) -> int:
        return len(self.authors)


def _w_position(w_index: np.ndarray, n_w: int, owner: str) -> np.ndarray:
    n_w = check_int(n_w, "n_w", owner, low=2)
    w = np.asarray(w_index)
    if w.ndim != 1 or not np.issubdtype(w.dtype, np.integer) or (w.size and (w.min() < 0 or w.max() >= n_w)):
        raise ValueError(f"The 'w_index' parameter of {owner} must hold integer indices in [0, {n_w - 1}].")
    return w / (n_w - 1) - 0.5


def _female(female: Sequence[bool] | np.ndarray, n: int, owner: str) -> np.ndarray:
    f = np.asarray(female)
    if f.shape != (n,):
        raise ValueError(f"Found input variables with inconsistent numbers of samples: [{n}, {f.size}] ({owner}).")
    if f.dtype != bool:
        if not np.isin(f, (0, 1)).all():
            raise ValueError(f"The 'female' parameter of {owner} must hold booleans or 0/1.")
        f = f.astype(bool)
    return f


def draw_w(n_authors: int, n_w: int, rng: np.random.Generator) -> np.ndarray:
    """A W index per author, uniform over ``n_w`` values and independent of everything else."""
    check_int(n_authors, "n_authors", "draw_w", low=0)
    check_int(n_w, "n_w", "draw_w", low=2)
    return rng.integers(0, n_w, size=n_authors)


def selection_probability(w_index: np.ndarray, female: np.ndarray, n_w: int, strength: float) -> np.ndarray:
    """f(W, G) of each author: ``1/2 + strength * x(W) * (+1 female, -1 male)`` (module docstring)."""
    owner = "selection_probability"
    strength = check_real(strength, "strength", owner, low=0.0, high=1.0)
    x = _w_position(w_index, n_w, owner)
    g = np.where(_female(female, x.size, owner), 1.0, -1.0)
    return np.clip(0.5 + strength * x * g, 0.0, 1.0)


def association(w_index: np.ndarray, female: np.ndarray, n_w: int) -> Association:
    """The W-G association of a sample: the female share per W, its slope against W's index, r.

    Args:
        w_index: each unit's W index (0 to ``n_w - 1``).
        female: each unit's female indicator (booleans or 0/1).
        n_w: the number of values of W.

    Raises:
        ValueError: bad indices, inconsistent lengths, or fewer than two values of W with a unit.
    """
    owner = "association"
    w = np.asarray(w_index)
    _w_position(w, n_w, owner)
    f = _female(female, w.size, owner).astype(np.float64)
    count = np.bincount(w, minlength=n_w).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = 100 * np.bincount(w, weights=f, minlength=n_w) / count
    seen = count > 0
    if seen.sum() < 2:
        raise ValueError(f"The sample has units at {int(seen.sum())} values of W: an association needs two.")
    x = np.arange(n_w, dtype=np.float64)[seen]
    fit = stats.linregress(x, share[seen])
    constant = np.ptp(share[seen]) == 0 or f.min() == f.max() or np.unique(w).size < 2
    corr = 0.0 if constant else float(stats.pearsonr(w.astype(np.float64), f).statistic)
    r = 0.0 if np.ptp(share[seen]) == 0 else float(fit.rvalue)
    return Association(share=share, count=count, slope=float(fit.slope), intercept=float(fit.intercept), r=r, corr=corr)


def expected_association(strength: float, n_w: int, p_female: float = 0.5) -> tuple[np.ndarray, float]:
    """The closed form of the module docstring: P(female | W, S=1) in percent per W index, and its slope.

    The slope is the least-squares slope of those percentages against W's index (exactly
    ``100 * strength / (n_w - 1)`` when ``p_female`` is 1/2).
    """
    owner = "expected_association"
    strength = check_real(strength, "strength", owner, low=0.0, high=1.0)
    n_w = check_int(n_w, "n_w", owner, low=2)
    p = check_real(p_female, "p_female", owner, low=0.0, high=1.0, low_open=True, high_open=True)
    x = np.arange(n_w) / (n_w - 1) - 0.5
    fem, male = p * (0.5 + strength * x), (1 - p) * (0.5 - strength * x)
    share = 100 * fem / (fem + male)
    return share, float(stats.linregress(np.arange(n_w), share).slope)


def select_authors(
    authors: Sequence[str] | np.ndarray,
    female: Sequence[bool] | np.ndarray,
    w_index: Sequence[int] | np.ndarray,
    n_w: int,
    strength: float,
    rng: np.random.Generator,
) -> Selection:
    """Keep each author with probability f(W, G) (one uniform draw per author from ``rng``).

    The same ``rng`` state gives the same uniforms at every strength, so the samples of one seed
    are nested: an author kept at a weaker selection in the direction of its gender is kept at a
    stronger one too (common random numbers across strengths).

    Args:
        authors: the authors' ids.
        female: whether each author is a woman.
        w_index: each author's W index (e.g. from :func:`draw_w`).
        n_w: the number of values of W.
        strength: the selection strength in [0, 1] (0: no selection bias).
        rng: the generator of the selection draws.

    Raises:
        ValueError: inconsistent lengths, bad indices, a strength outside [0, 1], or a selected
            sample with units at fewer than two values of W.
    """
    ids = np.asarray(authors, dtype=object)
    w = np.asarray(w_index)
    if w.shape != ids.shape or ids.ndim != 1:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: [{ids.size}, {w.size}].")
    fem = _female(female, ids.size, "select_authors")
    prob = selection_probability(w, fem, n_w, strength)
    keep = rng.random(ids.size) < prob
    return Selection(
        authors=ids[keep],
        w_index=w[keep],
        female=fem[keep],
        strength=float(strength),
        probability=prob,
        association=association(w[keep], fem[keep], n_w),
    )

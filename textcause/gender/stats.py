"""Slope and Pearson r of the female and male curves against W (table 2), with bootstrap intervals.

A curve is one W list, one gender and one scoring variant: the mean probability at each value of W
(in percent, as figure 2's y-axis), against the index of W in its list (the paper's x) or against
W's value where W is numeric (years). The line and r come from ``scipy.stats.linregress`` on the
per-W means, the points figure 2 draws. The intervals are percentile bootstrap intervals over
probes, seeded: each replicate resamples, with replacement, the probes of every value of W
(``unit="probe"``: the dots' own noise), or the sentence skeletons (template, tense, life stage)
shared by all values of W (``unit="frame"``: the whole curve of a skeleton moves together), then
refits the line. The female and male curves of a W list use the same resamples.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
from scipy.stats import linregress

from textcause.gender.scoring import score_column, variant_name
from textcause.gender.words import GENDERS
from textcause.validation import check_int, check_options, check_real

X_KINDS = ("index", "value")
UNITS = ("probe", "frame")


def fit_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    """``(slope, intercept, r, p_value)`` of the least-squares line of ``y`` on ``x`` (``linregress``).

    Raises:
        ValueError: fewer than two distinct x values.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or np.unique(x).size < 2:
        raise ValueError(f"A line needs at least two distinct x values with one y each. Got {np.unique(x).size}.")
    res = linregress(x, y)
    return float(res.slope), float(res.intercept), float(res.rvalue), float(res.pvalue)


@dataclasses.dataclass(frozen=True)
class Curve:
    """One curve of figure 2 and its row of table 2.

    Attributes:
        w_category: the W category (``date``, ``place``, ``subreddit``, ...).
        w_list: the W list's name.
        gender: ``female`` or ``male``.
        variant: the scoring variant.
        x_kind: ``index`` (position in the W list) or ``value`` (W itself, numeric lists only).
        labels: the values of W, in order.
        x: the x of each value of W.
        y: the mean probability (percent) over the probes of each value of W.
        n_probes: the probes the means are over.
        slope: the fitted slope (percentage points per unit of x).
        intercept: the fitted intercept.
        r: Pearson's r of the means against x.
        p_value: linregress's two-sided p-value of the slope.
        slope_ci: the bootstrap interval of the slope.
        r_ci: the bootstrap interval of r.
        level: the intervals' level.
        unit: what the bootstrap resampled (``probe`` or ``frame``).
        boot_slopes: the slope of each replicate.
        boot_intercepts: the intercept of each replicate.
    """

    w_category: str
    w_list: str
    gender: str
    variant: str
    x_kind: str
    labels: tuple[str, ...]
    x: np.ndarray
    y: np.ndarray
    n_probes: int
    slope: float
    intercept: float
    r: float
    p_value: float
    slope_ci: tuple[float, float]
    r_ci: tuple[float, float]
    level: float
    unit: str
    boot_slopes: np.ndarray
    boot_intercepts: np.ndarray

    def band(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The pointwise bootstrap band of the fitted line at ``x`` (figure 2's shaded region)."""
        lines = self.boot_intercepts[:, None] + self.boot_slopes[:, None] * np.asarray(x, dtype=np.float64)[None, :]
        a = 100 * (1 - self.level) / 2
        return np.percentile(lines, a, axis=0), np.percentile(lines, 100 - a, axis=0)


def _percentile(values: np.ndarray, level: float) -> tuple[float, float]:
    a = 100 * (1 - level) / 2
    lo, hi = np.percentile(values, [a, 100 - a])
    return float(lo), float(hi)


def _boot_means(matrix: np.ndarray, n_boot: int, seed: int, unit: str) -> np.ndarray:
    """``(n_boot, n_w)`` resampled means of a ``(n_w, n_frames)`` matrix of percents (NaN: no probe)."""
    rng = np.random.default_rng(seed)
    n_w, n_f = matrix.shape
    if unit == "frame":
        idx = rng.integers(0, n_f, size=(n_boot, n_f))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a value of W with no probe left in a replicate
            return np.nanmean(matrix[:, idx], axis=2).T
    out = np.empty((n_boot, n_w))
    for i in range(n_w):
        row = matrix[i][np.isfinite(matrix[i])]
        out[:, i] = row[rng.integers(0, row.size, size=(n_boot, row.size))].mean(axis=1)
    return out


def _matrix(rows: pd.DataFrame, column: str) -> tuple[np.ndarray, pd.DataFrame]:
    """Percent scores as a (value of W) x (skeleton) matrix, and one row per value of W."""
    frames = rows[["template_index", "tense", "life_stage"]].astype(str).agg("|".join, axis=1)
    pivot = rows.assign(_frame=frames, _y=100 * rows[column]).pivot_table(
        index="w_index", columns="_frame", values="_y", aggfunc="mean", dropna=False
    )
    per_w = rows.groupby("w_index", sort=True).agg(w_value=("w_value", "first"), w_number=("w_number", "first"))
    return pivot.reindex(per_w.index).to_numpy(dtype=np.float64), per_w


def curve_stats(
    scores: pd.DataFrame,
    gender: str,
    variant: str = "top5",
    *,
    x_kind: str = "index",
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    unit: str = "probe",
) -> Curve:
    """The curve of one W list (``scores`` holds one) for one gender and variant, with its intervals.

    Args:
        scores: the frame of :func:`textcause.gender.scoring.score_probes` for one W list.
        gender: ``female`` or ``male``.
        variant: the scoring variant.
        x_kind: ``index`` (the paper's x) or ``value`` (numeric W only).
        n_boot: bootstrap replicates.
        seed: the bootstrap's seed (the same seed gives the same intervals).
        level: the intervals' level.
        unit: ``probe`` (resample the probes of each value of W) or ``frame`` (resample skeletons).

    Raises:
        ValueError: bad parameters, several W lists, fewer than two values of W with a finite score,
            or ``x_kind="value"`` for a W that is not numeric.
    """
    check_options(gender, "gender", "curve_stats", GENDERS)
    check_options(x_kind, "x_kind", "curve_stats", X_KINDS)
    check_options(unit, "unit", "curve_stats", UNITS)
    n_boot = check_int(n_boot, "n_boot", "curve_stats", low=1)
    level = check_real(level, "level", "curve_stats", low=0, high=1, low_open=True, high_open=True)
    variant = variant_name(variant)
    if scores["w_list"].nunique() != 1:
        raise ValueError(f"curve_stats needs the scores of one W list. Got {sorted(scores['w_list'].unique())}.")
    column = score_column(gender, variant)
    finite = np.isfinite(scores[column].to_numpy(dtype=np.float64))
    rows = scores[finite]
    if not finite.all():
        warnings.warn(
            f"{int((~finite).sum())} of {finite.size} probes have no {variant} score "
            f"(no gendered token among the top predictions) and are left out of the {gender} curve.",
            UserWarning,
            stacklevel=2,
        )
    matrix, per_w = _matrix(rows, column)
    if len(per_w) < 2:
        raise ValueError(f"The {gender} {variant} curve has {len(per_w)} values of W with a score: a slope needs two.")
    if x_kind == "value":
        if per_w["w_number"].isna().any():
            raise ValueError(f"The W list {scores['w_list'].iloc[0]!r} is not numeric: use x_kind='index'.")
        x = per_w["w_number"].to_numpy(dtype=np.float64)
    else:
        x = per_w.index.to_numpy(dtype=np.float64)
    y = np.nanmean(matrix, axis=1)
    slope, intercept, r, p = fit_line(x, y)
    boot = _boot_means(matrix, n_boot, seed, unit)
    boot = boot[np.isfinite(boot).all(axis=1)]
    if not len(boot):
        raise ValueError("Every bootstrap replicate lost a value of W: use unit='probe' or more probes.")
    fits = np.array([fit_line(x, b)[:3] for b in boot]).reshape(-1, 3)
    return Curve(
        w_category=str(scores["w_category"].iloc[0]),
        w_list=str(scores["w_list"].iloc[0]),
        gender=gender,
        variant=variant,
        x_kind=x_kind,
        labels=tuple(map(str, per_w["w_value"])),
        x=x,
        y=y,
        n_probes=len(rows),
        slope=slope,
        intercept=intercept,
        r=r,
        p_value=p,
        slope_ci=_percentile(fits[:, 0], level),
        r_ci=_percentile(fits[:, 2], level),
        level=level,
        unit=unit,
        boot_slopes=fits[:, 0],
        boot_intercepts=fits[:, 1],
    )


def probe_stats(
    scores: pd.DataFrame,
    variant: str = "top5",
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    unit: str = "probe",
) -> list[Curve]:
    """Every curve of the scores: each W list x x kind (``value`` too where W is numeric) x gender."""
    out = []
    for _, rows in scores.groupby("w_list", sort=False):
        kinds = ("index", "value") if rows["w_number"].notna().all() else ("index",)
        for x_kind in kinds:
            for gender in GENDERS:
                out.append(
                    curve_stats(rows, gender, variant, x_kind=x_kind, n_boot=n_boot, seed=seed, level=level, unit=unit)
                )
    return out

"""Slope and Pearson r of the female and male curves against W (table 2), with their intervals.

A curve is one W list, one gender and one scoring variant: the mean probability at each value of W
(in percent, as figure 2's y-axis), against the index of W in its list (the paper's x) or against
W's value where W is numeric (years). The line and r come from ``scipy.stats.linregress`` on the
per-W means, the points figure 2 draws.

The intervals are those of that least-squares fit, the paper's "95% confidence interval for a 1st
degree linear fit": the slope's is ``slope +- t(n_W - 2) * stderr`` (``linregress``'s standard
error, from the points' scatter around the line), figure 2's band is the confidence band of the
fitted line, ``yhat(x) +- t(n_W - 2) * s * sqrt(1/n_W + (x - mean x)^2 / Sxx)``, with the same
residual scatter ``s`` and the same t quantile, and r's is Fisher's z interval
(``scipy.stats.pearsonr(...).confidence_interval``). They need three values of W (four for a finite
r interval); with two they are NaN. The scatter of the per-W means around the line holds the
probes' noise in each mean and any departure of the points from the line, so these intervals
cover the slope at their nominal rate when the points scatter.

Beside them, a percentile bootstrap over probes is kept under its own name (``boot_slope_ci``,
``boot_r_ci``; ``n_boot=0``: none): each replicate resamples, with replacement, the probes of every
value of W (``unit="probe"``) or the sentence skeletons shared by all values of W (``unit="frame"``),
then refits the line. It measures only the noise of the probes within each mean, not the scatter of
the means around the line, so it is too narrow whenever the points scatter: it is not figure 2's band.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pandas as pd
from scipy.stats import linregress, pearsonr
from scipy.stats import t as student_t

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


def _xy(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    fit_line(x, y)  # the same checks
    return x, y


def slope_interval(x: np.ndarray, y: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The confidence interval of the least-squares slope of ``y`` on ``x``: ``slope +- t * stderr``.

    ``t`` is Student's quantile with ``n - 2`` degrees of freedom and ``stderr`` is
    ``linregress``'s, from the scatter of the points around the line. NaN bounds for two points.

    >>> lo, hi = slope_interval([0, 1, 2, 3], [0.1, 0.9, 2.2, 2.9])
    >>> bool(lo < 1 < hi)
    True

    Raises:
        ValueError: fewer than two distinct x values, or a level outside (0, 1).
    """
    x, y = _xy(x, y)
    level = check_real(level, "level", "slope_interval", low=0, high=1, low_open=True, high_open=True)
    if x.size < 3:
        return math.nan, math.nan
    res = linregress(x, y)
    half = float(student_t.ppf(0.5 + level / 2, x.size - 2)) * float(res.stderr)
    return float(res.slope) - half, float(res.slope) + half


def fit_band(x: np.ndarray, y: np.ndarray, at: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The confidence band of the least-squares line of ``y`` on ``x`` at the points ``at``.

    ``yhat(a) +- t(n - 2) * s * sqrt(1/n + (a - mean x)^2 / Sxx)``, ``s`` the residual standard
    deviation (``n - 2`` degrees of freedom): the interval of the fitted mean at each ``a``, with the
    same ``s`` and ``t`` as :func:`slope_interval` (statsmodels' ``OLS(...).get_prediction().conf_int()``).
    NaN for two points.

    Raises:
        ValueError: fewer than two distinct x values, or a level outside (0, 1).
    """
    x, y = _xy(x, y)
    level = check_real(level, "level", "fit_band", low=0, high=1, low_open=True, high_open=True)
    a = np.asarray(at, dtype=np.float64)
    n = x.size
    slope, intercept, _, _ = fit_line(x, y)
    yhat = intercept + slope * a
    if n < 3:
        return np.full_like(yhat, np.nan), np.full_like(yhat, np.nan)
    s = math.sqrt(float(np.sum((y - (intercept + slope * x)) ** 2)) / (n - 2))
    sxx = float(np.sum((x - x.mean()) ** 2))
    half = float(student_t.ppf(0.5 + level / 2, n - 2)) * s * np.sqrt(1 / n + (a - x.mean()) ** 2 / sxx)
    return yhat - half, yhat + half


def r_interval(x: np.ndarray, y: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Fisher's z interval of Pearson's r (``scipy.stats.pearsonr(x, y).confidence_interval``).

    NaN bounds for fewer than three points or an undefined r (a flat curve).

    Raises:
        ValueError: fewer than two distinct x values, or a level outside (0, 1).
    """
    x, y = _xy(x, y)
    level = check_real(level, "level", "r_interval", low=0, high=1, low_open=True, high_open=True)
    if x.size < 3 or np.ptp(y) == 0:
        return math.nan, math.nan
    ci = pearsonr(x, y).confidence_interval(confidence_level=level)
    return float(ci.low), float(ci.high)


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
        slope_ci: the confidence interval of the fitted slope (:func:`slope_interval`: t with
            ``n_W - 2`` degrees of freedom; the table's interval, the same fit as :meth:`band`).
        r_ci: Fisher's z interval of r (:func:`r_interval`).
        level: the intervals' level.
        unit: what the probe bootstrap resampled (``probe`` or ``frame``).
        n_boot: the probe bootstrap's replicates (0: none).
        boot_slope_ci: the probe bootstrap's percentile interval of the slope: the probes' noise
            only, not the points' scatter around the line (NaN when ``n_boot`` is 0).
        boot_r_ci: the probe bootstrap's percentile interval of r (the same caveat).
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
    n_boot: int
    boot_slope_ci: tuple[float, float]
    boot_r_ci: tuple[float, float]

    def band(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Figure 2's shaded region at ``x``: the confidence band of the fitted line (:func:`fit_band`)."""
        return fit_band(self.x, self.y, x, self.level)


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

    ``slope_ci`` and the band are those of the least-squares fit through the per-W means (see the
    module); the probe bootstrap is kept apart as ``boot_slope_ci``.

    Args:
        scores: the frame of :func:`textcause.gender.scoring.score_probes` for one W list.
        gender: ``female`` or ``male``.
        variant: the scoring variant.
        x_kind: ``index`` (the paper's x) or ``value`` (numeric W only).
        n_boot: replicates of the probe bootstrap (0: none; it does not change ``slope_ci``).
        seed: the bootstrap's seed (the same seed gives the same bootstrap intervals).
        level: the intervals' level.
        unit: what the probe bootstrap resamples: ``probe`` (the probes of each value of W) or
            ``frame`` (sentence skeletons).

    Raises:
        ValueError: bad parameters, several W lists, fewer than two values of W with a finite score,
            or ``x_kind="value"`` for a W that is not numeric.
    """
    check_options(gender, "gender", "curve_stats", GENDERS)
    check_options(x_kind, "x_kind", "curve_stats", X_KINDS)
    check_options(unit, "unit", "curve_stats", UNITS)
    n_boot = check_int(n_boot, "n_boot", "curve_stats", low=0)
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
    boot_slope_ci = boot_r_ci = (math.nan, math.nan)
    if n_boot:
        boot = _boot_means(matrix, n_boot, seed, unit)
        boot = boot[np.isfinite(boot).all(axis=1)]
        if not len(boot):
            raise ValueError("Every bootstrap replicate lost a value of W: use unit='probe' or more probes.")
        fits = np.array([fit_line(x, b)[:3] for b in boot]).reshape(-1, 3)
        boot_slope_ci, boot_r_ci = _percentile(fits[:, 0], level), _percentile(fits[:, 2], level)
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
        slope_ci=slope_interval(x, y, level),
        r_ci=r_interval(x, y, level),
        level=level,
        unit=unit,
        n_boot=n_boot,
        boot_slope_ci=boot_slope_ci,
        boot_r_ci=boot_r_ci,
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

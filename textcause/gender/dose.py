"""The selection experiment's dose-response: per strength, the measured slope over seeds against the truth.

Input: one row per (probe set, strength, seed) with the fine-tuned model's female slope and r
(percentage points per step of W's index, as table 2) and the sample's true associations:
``unit_slope`` (G of the selected units against W), ``label_slope`` (the training masks' labels
against W: what the model was trained on) and ``expected_slope`` (the closed form of
:func:`textcause.gender.selection.expected_association`). :func:`dose_response` gives, per probe
set and strength, the mean over seeds with a t interval (``scipy.stats.t``, n - 1 degrees of
freedom; r's clipped to [-1, 1]); :func:`trend` fits the measured slopes of every seed against the strength and against
the label association (``scipy.stats.linregress``), and :func:`verdicts` says in plain sentences
whether the slope grows with the strength, whether strength 0's interval covers 0, and how the
model's slope compares with the sample's true association. It says only what the units support:
no verdict (GROWS, COVERS 0) where a strength has a single seed (the seed-to-seed spread of a
fine-tune is then unmeasured), no rank correlation from fewer than three strengths, and no ratio
to the labels' slope where that slope's interval over seeds reaches 0 or does not exist; each
time it says why instead. Pure functions of a DataFrame.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
from scipy import stats

from textcause.validation import check_real

#: The fewest strengths a Spearman rho is reported from.
MIN_RANK_STRENGTHS = 3
#: The fewest seeds at every strength for a verdict (an interval over seeds needs two).
MIN_VERDICT_SEEDS = 2
UNIT_COLUMNS = ("probe", "strength", "seed", "slope", "r", "unit_slope", "label_slope", "expected_slope")


def mean_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float, float]:
    """``(mean, sd, lo, hi)``: the mean of ``values`` and its t interval (NaN bounds for one value)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not v.size:
        return (math.nan,) * 4
    mean = float(v.mean())
    if v.size < 2:
        return mean, math.nan, math.nan, math.nan
    sd = float(v.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, v.size - 1)) * sd / math.sqrt(v.size)
    return mean, sd, mean - half, mean + half


def _check(units: pd.DataFrame) -> None:
    missing = [c for c in UNIT_COLUMNS if c not in units.columns]
    if missing:
        raise ValueError(f"The experiment's unit rows lack the columns {missing}.")
    if units.empty:
        raise ValueError("There are no finished units to aggregate: run the experiment first.")


def dose_response(units: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """One row per probe set and strength: seeds, measured slope and r (mean, t interval), the truth.

    Raises:
        ValueError: missing columns or no rows.
    """
    _check(units)
    level = check_real(level, "level", "dose_response", low=0, high=1, low_open=True, high_open=True)
    rows = []
    groups = [
        (probe, strength, units[(units["probe"] == probe) & (units["strength"] == strength)])
        for probe in dict.fromkeys(units["probe"])
        for strength in sorted(units.loc[units["probe"] == probe, "strength"].unique())
    ]
    for probe, strength, g in groups:
        slope, sd, lo, hi = mean_interval(g["slope"], level)
        r, _, r_lo, r_hi = mean_interval(g["r"], level)
        label, _, label_lo, label_hi = mean_interval(g["label_slope"], level)
        rows.append(
            {
                "probe": probe,
                "strength": float(strength),
                "n_seeds": int(g["seed"].nunique()),
                "expected_slope": float(g["expected_slope"].mean()),
                "unit_slope": float(g["unit_slope"].mean()),
                "label_slope": label,
                "label_slope_lo": label_lo,
                "label_slope_hi": label_hi,
                "slope": slope,
                "slope_sd": sd,
                "slope_lo": lo,
                "slope_hi": hi,
                "r": r,
                "r_lo": max(r_lo, -1.0) if math.isfinite(r_lo) else r_lo,
                "r_hi": min(r_hi, 1.0) if math.isfinite(r_hi) else r_hi,
                "covers_zero": bool(lo <= 0 <= hi) if math.isfinite(lo) else None,
                # a ratio only where the labels' association is clearly not 0 (else it is noise over noise)
                "ratio_to_label": slope / label if math.isfinite(label_lo) and label_lo > 0 else math.nan,
            }
        )
    return pd.DataFrame(rows)


@dataclasses.dataclass(frozen=True)
class Trend:
    """How one probe set's measured slopes move with the strength and with the true association.

    Attributes:
        probe: the probe set.
        n_units: the (strength, seed) units fitted.
        per_strength: the slope's change per unit of strength (a line through every unit).
        per_strength_ci: its confidence interval (t, n - 2 degrees of freedom).
        p_value: linregress's two-sided p-value of ``per_strength``.
        spearman: Spearman's rho of the mean slopes against the strengths (NaN for fewer than
            :data:`MIN_RANK_STRENGTHS` strengths: two points always rank-correlate at +-1).
        monotone: whether the mean slopes rise with every step of strength.
        n_strengths: the strengths with units.
        min_seeds: the fewest seeds of any strength.
        on_label: the measured slope per point of the label association (a line through the units).
        on_label_ci: its interval.
        level: the intervals' level.
    """

    probe: str
    n_units: int
    per_strength: float
    per_strength_ci: tuple[float, float]
    p_value: float
    spearman: float
    monotone: bool
    on_label: float
    on_label_ci: tuple[float, float]
    level: float
    n_strengths: int = 0
    min_seeds: int = 0


def _line(x: np.ndarray, y: np.ndarray, level: float) -> tuple[float, tuple[float, float], float]:
    if np.unique(x).size < 2:
        return math.nan, (math.nan, math.nan), math.nan
    fit = stats.linregress(x, y)
    if x.size < 3:
        return float(fit.slope), (math.nan, math.nan), math.nan
    half = float(stats.t.ppf(0.5 + level / 2, x.size - 2)) * float(fit.stderr)
    return float(fit.slope), (float(fit.slope) - half, float(fit.slope) + half), float(fit.pvalue)


def trend(units: pd.DataFrame, probe: str, level: float = 0.95) -> Trend:
    """The measured slopes of ``probe`` against the strength and against the label association.

    Raises:
        ValueError: missing columns, no rows, or no row of ``probe``.
    """
    _check(units)
    rows = units[units["probe"] == probe]
    if rows.empty:
        raise ValueError(f"There are no units of the probe set {probe!r}.")
    x, y = rows["strength"].to_numpy(np.float64), rows["slope"].to_numpy(np.float64)
    per, per_ci, p = _line(x, y, level)
    on, on_ci, _ = _line(rows["label_slope"].to_numpy(np.float64), y, level)
    means = rows.groupby("strength")["slope"].mean().sort_index()
    rho = (
        float(stats.spearmanr(means.index, means.to_numpy()).statistic)
        if len(means) >= MIN_RANK_STRENGTHS
        else math.nan
    )
    return Trend(
        probe=probe,
        n_units=len(rows),
        per_strength=per,
        per_strength_ci=per_ci,
        p_value=p,
        spearman=rho,
        monotone=bool(len(means) > 1 and np.all(np.diff(means.to_numpy()) > 0)),
        on_label=on,
        on_label_ci=on_ci,
        level=level,
        n_strengths=len(means),
        min_seeds=int(rows.groupby("strength")["seed"].nunique().min()),
    )


def _f(x: float, digits: int = 3) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def _p(p: float) -> str:
    """A p-value as a reader takes it: "< 0.0001" rather than "0.0000" below the last digit shown."""
    if p is None or not math.isfinite(p):
        return "-"
    return "< 0.0001" if p < 0.0001 else f"{p:.4f}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _order(t: Trend, rows: pd.DataFrame) -> str:
    """What the mean slopes do across the strengths, in words a reader can check against the table."""
    if t.n_strengths < 2:
        return "there is one strength, so nothing to order"
    if t.n_strengths < MIN_RANK_STRENGTHS:
        lo, hi = rows.iloc[0], rows.iloc[-1]
        word = "higher" if hi["slope"] > lo["slope"] else "not higher"
        return (
            f"the mean slope at strength {hi['strength']:g} is {word} than at {lo['strength']:g} "
            f"({_f(hi['slope'])} against {_f(lo['slope'])}; {t.n_strengths} strengths are too few for a rank correlation)"
        )
    return (
        f"the mean slopes are {'monotone in' if t.monotone else 'not monotone in'} the strength "
        f"(Spearman rho {_f(t.spearman, 2)} over {t.n_strengths} strengths)"
    )


def _ratio(top: pd.Series) -> str:
    label = _f(top["label_slope"])
    if math.isfinite(top["ratio_to_label"]):
        return f"{_f(top['ratio_to_label'], 2)} times the training labels' true W-G slope {label}"
    if not math.isfinite(top["label_slope_lo"]):
        why = f"with {int(top['n_seeds'])} seed the labels' slope has no interval over seeds"
    else:
        why = (
            f"the labels' slope's interval over seeds ({_f(top['label_slope_lo'])} to {_f(top['label_slope_hi'])}) "
            "reaches 0, so a ratio would be noise over noise"
        )
    return f"against the training labels' true W-G slope {label} (no ratio: {why})"


def verdicts(table: pd.DataFrame, trends: list[Trend]) -> list[str]:
    """Plain sentences: does the slope grow with the strength, does strength 0 cover 0, model vs truth.

    A verdict (GROWS / does NOT clearly grow, COVERS 0 / does NOT cover 0) needs
    :data:`MIN_VERDICT_SEEDS` seeds at every strength; with fewer the sentence gives the fitted
    numbers and says that the seeds support no verdict.
    """
    out = []
    pct = round(100 * trends[0].level) if trends else 95
    for t in trends:
        rows = table[table["probe"] == t.probe].sort_values("strength")
        line = (
            f"{_f(t.per_strength)} points per unit of strength ({pct}% CI {_f(t.per_strength_ci[0])} to "
            f"{_f(t.per_strength_ci[1])}, p {_p(t.p_value)}, over {t.n_units} fine-tunes)"
        )
        if t.min_seeds < MIN_VERDICT_SEEDS:
            out.append(
                f"Probe set '{t.probe}': NO VERDICT on growth: a line through the fine-tunes rises {line}, but with "
                f"{t.min_seeds} seed at a strength the spread between fine-tunes of the same strength is unmeasured; "
                f"run at least {MIN_VERDICT_SEEDS} seeds per strength. {_capital(_order(t, rows))}."
            )
        else:
            grows = t.per_strength_ci[0] > 0
            out.append(
                f"Probe set '{t.probe}': the measured slope "
                + ("GROWS" if grows else "does NOT clearly grow")
                + f" with the strength: {line}; {_order(t, rows)}."
            )
        zero = rows[rows["strength"] == 0]
        if not zero.empty:
            z = zero.iloc[0]
            covers = z["covers_zero"]
            if covers is None or int(z["n_seeds"]) < MIN_VERDICT_SEEDS:
                out.append(
                    f"Probe set '{t.probe}': at strength 0 the slope is {_f(z['slope'])} from {int(z['n_seeds'])} "
                    "seed: there is no interval over seeds, so no verdict on whether it covers 0."
                )
            else:
                word = "COVERS 0" if covers else "does NOT cover 0"
                out.append(
                    f"Probe set '{t.probe}': at strength 0 the slope is {_f(z['slope'])} with {pct}% interval over "
                    f"{int(z['n_seeds'])} seeds {_f(z['slope_lo'])} to {_f(z['slope_hi'])}: it {word}."
                )
        top = rows.iloc[-1]
        out.append(
            f"Probe set '{t.probe}': at the largest strength ({top['strength']:g}) the model's slope "
            f"is {_f(top['slope'])} points per W step, {_ratio(top)} (the selected units' own slope is "
            f"{_f(top['unit_slope'])}); across every fine-tune the model's slope rises {_f(t.on_label, 2)} points "
            f"per point of the labels' slope ({pct}% CI {_f(t.on_label_ci[0], 2)} to {_f(t.on_label_ci[1], 2)})."
        )
    return out

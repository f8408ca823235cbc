"""Table 2's slope and r against scipy.stats.linregress; the seeded bootstrap intervals; the table."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from scipy.stats import linregress

from textcause.gender.probes import load_w_list, make_probes
from textcause.gender.stats import curve_stats, fit_line, probe_stats
from textcause.gender.table import stats_table, table_markdown


def made_up_scores(values, slope=0.004, noise=0.01, seed=0, name="custom"):
    """Scores of real probes with a made-up curve: female = 0.1 + slope * index + noise, male = 0.6 - female."""
    rng = np.random.default_rng(seed)
    probes = make_probes(load_w_list(values, name=name))
    frame = pd.DataFrame([dataclasses.asdict(p) for p in probes])
    female = 0.1 + slope * frame["w_index"].to_numpy() + rng.normal(0, noise, len(frame))
    for v in ("top5", "softmax", "top5_renormalised", "softmax_renormalised"):
        frame[f"female_{v}"] = female
        frame[f"male_{v}"] = 0.6 - female
    return frame


YEARS = [str(y) for y in range(1900, 2000, 10)]


def test_slope_and_r_are_linregress_on_the_per_w_means():
    scores = made_up_scores(YEARS)
    means = 100 * scores.groupby("w_index")["female_top5"].mean().to_numpy()
    ref = linregress(np.arange(len(YEARS)), means)
    c = curve_stats(scores, "female", "top5", n_boot=200)
    assert (c.slope, c.intercept, c.r, c.p_value) == pytest.approx((ref.slope, ref.intercept, ref.rvalue, ref.pvalue))
    assert c.slope == pytest.approx(0.4, abs=0.05)  # 0.004 a step, in percentage points
    np.testing.assert_allclose(c.y, means)
    assert c.labels == tuple(YEARS) and c.n_probes == 360
    male = curve_stats(scores, "male", "top5", n_boot=200)
    assert male.slope == pytest.approx(-c.slope) and male.r == pytest.approx(-c.r)


def test_against_the_value_of_w():
    scores = made_up_scores(YEARS)
    by_index = curve_stats(scores, "female", n_boot=100)
    by_value = curve_stats(scores, "female", x_kind="value", n_boot=100)
    means = 100 * scores.groupby("w_index")["female_top5"].mean().to_numpy()
    ref = linregress(np.arange(1900, 2000, 10, dtype=float), means)
    assert by_value.slope == pytest.approx(ref.slope) and by_value.r == pytest.approx(ref.rvalue)
    assert by_value.slope == pytest.approx(by_index.slope / 10) and by_value.r == pytest.approx(by_index.r)
    with pytest.raises(ValueError, match="is not numeric: use x_kind='index'"):
        curve_stats(made_up_scores(["a", "b", "c"]), "female", x_kind="value")


def test_fit_line_is_linregress():
    x, y = np.arange(6.0), np.array([1.0, 1.4, 2.1, 2.2, 3.3, 3.2])
    ref = linregress(x, y)
    assert fit_line(x, y) == pytest.approx((ref.slope, ref.intercept, ref.rvalue, ref.pvalue))
    with pytest.raises(ValueError, match="at least two distinct x values"):
        fit_line(np.ones(3), np.arange(3.0))


@pytest.mark.parametrize("unit", ["probe", "frame"])
def test_the_bootstrap_interval_covers_the_estimate_and_is_seeded(unit):
    scores = made_up_scores(YEARS, noise=0.03)
    a = curve_stats(scores, "female", n_boot=300, seed=7, unit=unit)
    b = curve_stats(scores, "female", n_boot=300, seed=7, unit=unit)
    c = curve_stats(scores, "female", n_boot=300, seed=8, unit=unit)
    assert a.slope_ci[0] < a.slope < a.slope_ci[1]
    assert a.r_ci[0] <= a.r <= a.r_ci[1]
    assert a.slope_ci == b.slope_ci and a.r_ci == b.r_ci
    assert a.slope_ci != c.slope_ci
    lo, hi = a.band(a.x)
    fitted = a.intercept + a.slope * a.x
    assert np.all(lo <= fitted + 1e-9) and np.all(fitted <= hi + 1e-9)


def test_a_flat_curve_gives_an_interval_around_zero():
    c = curve_stats(made_up_scores(YEARS, slope=0.0), "female", n_boot=300)
    assert c.slope_ci[0] < 0 < c.slope_ci[1]


def test_probes_without_a_score_are_left_out_with_a_warning():
    scores = made_up_scores(YEARS)
    scores.loc[:9, "female_top5_renormalised"] = np.nan
    with pytest.warns(UserWarning, match="10 of 360 probes have no top5_renormalised score"):
        c = curve_stats(scores, "female", "top5_renormalised", n_boot=50)
    assert c.n_probes == 350


def test_probe_stats_and_table_2():
    scores = pd.concat(
        [made_up_scores(YEARS, name="decades"), made_up_scores(["x", "y", "z"], name="letters")], ignore_index=True
    )
    curves = probe_stats(scores, "softmax", n_boot=50)
    assert [(c.w_list, c.x_kind, c.gender) for c in curves] == [
        ("decades", "index", "female"),
        ("decades", "index", "male"),
        ("decades", "value", "female"),
        ("decades", "value", "male"),
        ("letters", "index", "female"),
        ("letters", "index", "male"),
    ]
    table = stats_table(curves, model="made-up")
    assert len(table) == 3
    assert {"female_slope", "female_slope_low", "female_slope_high", "female_r", "male_slope", "male_r_high"} <= set(
        table.columns
    )
    md = table_markdown(table, notes=["a note"])
    assert md.startswith(
        "| W category | W list | x | Model | Variant | Female slope | Female Pearson's r | "
        "Male slope | Male Pearson's r |"
    )
    row = md.splitlines()[2]
    assert row.startswith("| date | decades | index of W | made-up | softmax | ")
    c = curves[0]
    assert f"{c.slope:.3g} [{c.slope_ci[0]:.3g}, {c.slope_ci[1]:.3g}]" in row
    assert "- a note" in md and "95% percentile bootstrap" in md


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"gender": "other"}, "'gender' parameter of curve_stats must be one of"),
        ({"n_boot": 0}, "'n_boot' parameter of curve_stats must be an int >= 1"),
        ({"level": 1.0}, "'level' parameter of curve_stats must be a float > 0 and < 1"),
        ({"unit": "user"}, "'unit' parameter of curve_stats must be one of"),
    ],
)
def test_bad_parameters(kwargs, match):
    args = {"gender": "female", **kwargs}
    with pytest.raises(ValueError, match=match):
        curve_stats(made_up_scores(YEARS), args.pop("gender"), **args)

"""Table 2's slope and r against scipy.stats.linregress; the fit's intervals and band against
statsmodels and by coverage on simulated lines; the seeded probe bootstrap; the table."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy.stats import linregress

from textcause.gender.probes import load_w_list, make_probes
from textcause.gender.stats import curve_stats, fit_band, fit_line, probe_stats, r_interval, slope_interval
from textcause.gender.table import stats_table, table_markdown


def made_up_scores(values, slope=0.004, noise=0.01, seed=0, name="custom", scatter=0.0):
    """Scores of real probes with a made-up curve: female = 0.1 + slope * index + a per-W offset
    (sd ``scatter``: the points' scatter around the line) + probe noise, male = 0.6 - female."""
    rng = np.random.default_rng(seed)
    probes = make_probes(load_w_list(values, name=name))
    frame = pd.DataFrame([dataclasses.asdict(p) for p in probes])
    offset = rng.normal(0, scatter, len(values))[frame["w_index"].to_numpy()] if scatter else 0.0
    female = 0.1 + slope * frame["w_index"].to_numpy() + offset + rng.normal(0, noise, len(frame))
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


def test_the_slope_interval_and_band_are_the_ols_fit_of_statsmodels():
    x, y = np.arange(7.0), np.array([1.0, 1.9, 2.1, 3.6, 3.5, 5.2, 5.0])
    ols = sm.OLS(y, sm.add_constant(x)).fit()
    assert slope_interval(x, y, 0.9) == pytest.approx(tuple(ols.conf_int(alpha=0.1)[1]))
    at = np.array([-1.0, 0.0, 2.5, 8.0])
    lo, hi = fit_band(x, y, at, 0.95)
    ref = ols.get_prediction(sm.add_constant(at, has_constant="add")).conf_int(alpha=0.05)
    np.testing.assert_allclose(np.column_stack([lo, hi]), ref, rtol=1e-10)
    assert r_interval(x, y) == pytest.approx(tuple(__import__("scipy").stats.pearsonr(x, y).confidence_interval()))
    two = slope_interval([0.0, 1.0], [1.0, 2.0])
    assert np.isnan(two).all() and np.isnan(fit_band([0.0, 1.0], [1.0, 2.0], at)[0]).all()
    with pytest.raises(ValueError, match="'level' parameter of slope_interval must be a float > 0 and < 1"):
        slope_interval(x, y, 95)


def test_the_slope_interval_covers_a_known_slope_at_its_nominal_rate():
    """A line with a known slope and normal scatter, 800 seeds: the fit's 95% interval covers ~95%."""
    x = np.arange(8.0)
    hits = []
    for seed in range(800):
        y = 2.0 + 0.5 * x + np.random.default_rng(seed).normal(0, 1.0, x.size)
        lo, hi = slope_interval(x, y)
        hits.append(lo <= 0.5 <= hi)
    assert 0.93 <= np.mean(hits) <= 0.97


def test_the_curve_interval_is_the_fit_of_its_points_and_the_band_its_band():
    """The issue's case: per-W points scattered well beyond their probes' noise."""
    c = curve_stats(made_up_scores(YEARS, noise=0.005, scatter=0.01), "female", n_boot=200)
    assert c.slope_ci == slope_interval(c.x, c.y) and c.r_ci == r_interval(c.x, c.y)
    ref = linregress(c.x, c.y)
    assert c.slope_ci[0] < ref.slope - 1.5 * ref.stderr and c.slope_ci[1] > ref.slope + 1.5 * ref.stderr
    boot = c.boot_slope_ci[1] - c.boot_slope_ci[0]
    assert boot < 0.5 * (c.slope_ci[1] - c.slope_ci[0])  # probe noise only: too narrow, kept under its own name
    lo, hi = c.band(c.x)
    np.testing.assert_allclose(np.column_stack([lo, hi]), np.column_stack(fit_band(c.x, c.y, c.x)))
    assert np.mean((c.y < lo) | (c.y > hi)) > 0.2  # a band of the line, not a band of the dots


@pytest.mark.slow
def test_the_curve_interval_covers_the_slope_when_the_points_scatter():
    """Through curve_stats, 400 seeds of probes whose per-W means scatter around a line of slope
    0.4 points a step: the fit's interval covers at ~95%, the probe bootstrap far less."""
    fit, boot = [], []
    for seed in range(400):
        scores = made_up_scores(["1", "2", "3", "4", "5", "6"], noise=0.02, scatter=0.01, seed=seed)
        c = curve_stats(scores, "female", n_boot=100 if seed < 80 else 0, seed=seed)
        fit.append(c.slope_ci[0] <= 0.4 <= c.slope_ci[1])
        if seed < 80:
            boot.append(c.boot_slope_ci[0] <= 0.4 <= c.boot_slope_ci[1])
    assert 0.92 <= np.mean(fit) <= 0.98
    assert np.mean(boot) < 0.8


@pytest.mark.parametrize("unit", ["probe", "frame"])
def test_the_probe_bootstrap_is_seeded_and_optional(unit):
    scores = made_up_scores(YEARS, noise=0.03)
    a = curve_stats(scores, "female", n_boot=300, seed=7, unit=unit)
    b = curve_stats(scores, "female", n_boot=300, seed=7, unit=unit)
    c = curve_stats(scores, "female", n_boot=300, seed=8, unit=unit)
    assert a.boot_slope_ci[0] < a.slope < a.boot_slope_ci[1]
    assert a.boot_r_ci[0] <= a.r <= a.boot_r_ci[1]
    assert a.boot_slope_ci == b.boot_slope_ci and a.boot_r_ci == b.boot_r_ci
    assert a.boot_slope_ci != c.boot_slope_ci and a.slope_ci == c.slope_ci  # the fit's interval has no seed
    none = curve_stats(scores, "female", n_boot=0, unit=unit)
    assert np.isnan(none.boot_slope_ci).all() and none.slope_ci == a.slope_ci


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
    assert "- a note" in md and "95% confidence intervals of that least-squares fit" in md
    assert f"{c.slope_ci[0]:.3g}" in row and {"female_slope_boot_low", "male_r_boot_high"} <= set(table.columns)
    two = stats_table(probe_stats(made_up_scores(["x", "y"], name="pair"), n_boot=0))
    assert "[no interval]" in table_markdown(two) and "With 2 values of W a line has no interval" in table_markdown(two)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"gender": "other"}, "'gender' parameter of curve_stats must be one of"),
        ({"n_boot": -1}, "'n_boot' parameter of curve_stats must be an int >= 0"),
        ({"level": 1.0}, "'level' parameter of curve_stats must be a float > 0 and < 1"),
        ({"unit": "user"}, "'unit' parameter of curve_stats must be one of"),
    ],
)
def test_bad_parameters(kwargs, match):
    args = {"gender": "female", **kwargs}
    with pytest.raises(ValueError, match=match):
        curve_stats(made_up_scores(YEARS), args.pop("gender"), **args)

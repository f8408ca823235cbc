"""Austen curves: hand-checked properties, the benchmark points, the figure, the sentence and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import polygamma

from textcause.sensitivity import DEFAULT_ALPHAS, AustenCurve, Benchmark, austen_curve, austen_figure, benchmark_point
from textcause.sensitivity.figure import plotted_r2


def data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.uniform(0.1, 0.9, n)
    t = rng.binomial(1, g)
    y = 1.0 * t + rng.normal(size=n)
    q = t + 0.1 * rng.normal(size=n)
    return t, y, g, q


def test_one_point_by_hand():
    """The formula of the paper at one alpha, written out for three units."""
    t, y, g, q = np.array([1, 0, 1]), np.array([2.0, 0.5, 1.0]), np.array([0.3, 0.5, 0.8]), np.array([1.5, 0.0, 1.2])
    a = 0.2
    delta = 0.7 * (1 / a - 1) / np.mean(1 / g + 1 / (1 - g))
    k = 1 / a - 1
    r2 = delta**2 * np.mean(polygamma(1, g * k + t) + polygamma(1, (1 - g) * k + 1 - t)) / np.mean((y - q) ** 2)
    curve = austen_curve(t, y, g, q, 0.7, alphas=[a])
    assert curve.delta[0] == pytest.approx(delta, rel=1e-12) and curve.r2[0] == pytest.approx(r2, rel=1e-12)


def test_the_curve_falls_with_alpha_and_grows_with_the_bias():
    t, y, g, q = data()
    small, large = austen_curve(t, y, g, q, 0.2), austen_curve(t, y, g, q, 0.4)
    assert np.array_equal(small.alpha, DEFAULT_ALPHAS) and small.alpha.size == 200
    assert np.all(np.diff(small.r2) < 0)
    assert np.allclose(large.r2, 4 * small.r2)  # R^2 is quadratic in the bias
    assert np.allclose(austen_curve(t, y, g, q, -0.2).r2, small.r2)  # and depends on its magnitude only


def test_balanced_point_lies_on_the_curve_and_the_diagonal():
    t, y, g, q = data()
    curve = austen_curve(t, y, g, q, 0.3)
    s = curve.balanced()
    assert 0 < s < 1 and curve.r2_needed(s) == pytest.approx(s, abs=1e-3)
    assert curve.r2_needed(0.0) == float("inf")


def test_benchmark_point_by_hand():
    y, g, q = np.array([1.0, 0.0, 2.0]), np.array([0.2, 0.5, 0.7]), np.array([0.9, 0.2, 1.8])
    g_j, q_j = np.array([0.4, 0.5, 0.5]), np.array([0.5, 0.5, 1.0])
    b = benchmark_point("grp", y, g, q, g_j, q_j)
    mse, mse_j = np.mean((y - q) ** 2), np.mean((y - q_j) ** 2)
    assert b == Benchmark("grp", 1 - np.mean(g * (1 - g)) / np.mean(g_j * (1 - g_j)), (mse_j - mse) / mse_j)
    # a refit that fits better, or a propensity that moves away from 1/2, is clipped at 0 as the authors do
    assert benchmark_point("x", y, g, q, g, q) == Benchmark("x", 0.0, 0.0)


def test_sentence_names_the_benchmarks_beyond_the_curve():
    curve = AustenCurve(1.0, "ate", np.array([0.1, 0.3, 0.5]), np.array([0.9, 0.3, 0.1]), np.zeros(3))
    strong = AustenCurve(**{**curve.__dict__, "benchmarks": (Benchmark("age", 0.5, 0.2), Benchmark("sex", 0.1, 0.1))})
    assert strong.beyond() == (Benchmark("age", 0.5, 0.2),)
    assert strong.sentence().endswith("; the observed covariate group 'age' reaches that strength.")
    weak = AustenCurve(**{**curve.__dict__, "benchmarks": (Benchmark("sex", 0.1, 0.1), Benchmark("age", 0.3, 0.2))})
    assert weak.sentence().endswith(
        "the strongest observed covariate group, 'age' (alpha 0.30, R² 0.20), falls short of it."
    )
    assert "of at least 0.30 each" in curve.sentence()
    never = AustenCurve(1.0, "ate", np.array([0.1, 0.5]), np.array([5.0, 2.0]), np.zeros(2))
    assert never.balanced() is None
    assert never.sentence().startswith("An unobserved confounder would need a partial R² with the outcome above 2.00")


def test_figure_draws_the_curve_as_the_authors_do(tmp_path):
    t, y, g, q = data()
    curve = austen_curve(t, y, g, q, 0.3, benchmarks={"half": (np.clip(g + 0.05, 0.05, 0.95), q + 0.3)})
    fig = austen_figure(curve, tmp_path / "austen.png")
    assert (tmp_path / "austen.png").stat().st_size > 5000
    ax = fig.axes[0]
    line = ax.lines[0].get_ydata()
    assert np.nanmax(line) == 1.0 and np.isnan(line).sum() == int((curve.r2 > 1).sum()) - 1
    assert ax.get_title() == "Bias = 0.3" and [t.get_text() for t in ax.get_legend().get_texts()] == ["half"]
    assert np.array_equal(plotted_r2(np.array([0.5, 0.2])), [0.5, 0.2])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"bias": 0.0}, "must be a nonzero float"),
        ({"bias": float("inf")}, "'bias' parameter of austen_curve"),
        ({"target": "atc"}, r"must be one of \['ate', 'att'\]"),
        ({"alphas": [0.0, 0.5]}, "strictly inside"),
        ({"propensity": np.r_[1.0, np.full(299, 0.5)]}, "propensity"),
        ({"q": np.zeros(299)}, "inconsistent numbers of samples"),
        ({"t": np.ones(300)}, "only one class"),
        ({"y": np.r_[np.nan, np.zeros(299)]}, "'y'"),
        ({"benchmarks": {"age": np.zeros(300)}}, r"benchmarks\['age'\]"),
        ({"benchmarks": {"age": (np.full(300, 0.5), np.zeros(10))}}, "inconsistent numbers of samples"),
    ],
)
def test_bad_input_is_one_sentence(kwargs, match):
    t, y, g, q = data()
    args = {"t": t, "y": y, "propensity": g, "q": q, "bias": 0.3, **kwargs}
    with pytest.raises(ValueError, match=match):
        austen_curve(**args)


def test_an_exact_outcome_model_is_refused():
    t, y, g, _ = data()
    with pytest.raises(ValueError, match="an outcome model that leaves an error"):
        austen_curve(t, y, g, y, 0.3)
    with pytest.raises(ValueError, match="a fit that leaves an error"):
        benchmark_point("age", y, g, y + 1, g, y)
    with pytest.raises(ValueError, match="must be an AustenCurve"):
        austen_figure("curve")

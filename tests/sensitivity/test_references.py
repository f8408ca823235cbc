"""textcause.sensitivity against the field's packages (a fixture) and the papers' published numbers.

``reference_sensitivity.json`` was written by ``benchmarks/reference_sensitivity.py`` in a separate
environment with PySensemakr 0.0.8, DoWhy 0.14 and austen-plots 0.1.0 (its ``versions`` key says which);
every comparison here is to 1e-6 on the same arrays.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from textcause.sensitivity import (
    AUSTEN_ALPHAS,
    austen_curve,
    e_value,
    odds_ratio_to_risk_ratio,
    ols_coefficient,
    partial_r2,
    robustness_value,
)
from textcause.sensitivity.figure import plotted_r2

FIXTURE = json.loads((Path(__file__).parent / "reference_sensitivity.json").read_text(encoding="utf-8"))
TOL = 1e-6


def close(a, b, tol=TOL):
    """Equal to ``tol``, relative for values above 1 (an Austen curve reaches about 25 at its first alpha)."""
    return abs(a - b) <= tol * max(1.0, abs(b))


# ---- robustness value (PySensemakr) ----------------------------------------------------------------


def test_darfur_robustness_values_equal_sensemakrs():
    d = FIXTURE["robustness"]["darfur"]
    rv = robustness_value(d["t_statistic"], d["dof"], q=1, alpha=0.05)
    assert close(rv.rv_q, d["rv_q1"])
    assert close(rv.rv_qa, d["rv_q1_a05"])
    assert close(rv.partial_r2, d["partial_r2"])
    assert close(partial_r2(d["t_statistic"], d["dof"]), d["partial_r2"])
    assert close(robustness_value(d["t_statistic"], d["dof"], q=0.5, alpha=0.05).rv_qa, d["rv_q05_a05"])


@pytest.mark.parametrize("case", FIXTURE["robustness"]["cases"], ids=lambda c: f"t{c['t_statistic']}-dof{c['dof']}")
def test_each_branch_of_the_robustness_value_equals_sensemakrs(case):
    """The binding branch, the non-binding one (f_q > 1/f_crit), f_q below f_crit (0), q != 1, alpha = 1."""
    rv = robustness_value(case["t_statistic"], case["dof"], q=case["q"], alpha=case["alpha"])
    assert close(rv.rv_qa, case["rv"])
    assert close(rv.partial_r2, case["partial_r2"])


def test_the_darfur_regression_gives_sensemakrs_t_statistic_and_dof():
    """ols_coefficient on the stored Darfur arrays (village as 485 dummies) equals statsmodels' fit in sensemakr."""
    a, d = FIXTURE["robustness"]["arrays"], FIXTURE["robustness"]["darfur"]
    village = np.asarray(a["village"])
    dummies = (village[:, None] == np.arange(1, village.max() + 1)[None, :]).astype(float)
    X = np.column_stack([np.asarray(v, dtype=float) for v in a["covariates"].values()] + [dummies])
    fit = ols_coefficient(a["directlyharmed"], a["peacefactor"], X)
    assert fit.dof == d["dof"] == 783
    assert close(fit.estimate, d["estimate"]) and close(fit.se, d["se"]) and close(fit.t_statistic, d["t_statistic"])


def test_darfur_numbers_as_published():
    """Cinelli & Hazlett (2020), section 6 and sensemakr's Darfur example: estimate 0.097 (se 0.023),
    t = 4.18, partial R^2 2.19%, RV_q=1 13.9%, RV_q=1,alpha=0.05 7.6%."""
    d = FIXTURE["robustness"]["darfur"]
    rv = robustness_value(d["t_statistic"], d["dof"])
    assert (round(d["estimate"], 3), round(d["se"], 3), round(d["t_statistic"], 2)) == (0.097, 0.023, 4.18)
    assert (round(100 * rv.partial_r2, 2), round(100 * rv.rv_q, 1), round(100 * rv.rv_qa, 1)) == (2.19, 13.9, 7.6)
    assert robustness_value(4.18445, 783).sentence() == (
        "An unobserved confounder would need to explain at least 13.9% of the residual variance of both the treatment "
        "and the outcome to bring the estimate to 0 and overturn the conclusion (7.6% to make it not significant at "
        "the 95% level)."
    )


# ---- E-value (DoWhy) -------------------------------------------------------------------------------


def _ours(case):
    if case["kind"] == "rr":
        return e_value(case["est"], case["lo"], case["hi"], true=case["true"])
    convert = [None if v is None else odds_ratio_to_risk_ratio(v, rare=case["rare"]) for v in (case["lo"], case["hi"])]
    return e_value(odds_ratio_to_risk_ratio(case["est"], rare=case["rare"]), *convert)


@pytest.mark.parametrize("case", FIXTURE["evalue"], ids=lambda c: f"{c['kind']}{c['est']}-{c['lo']}-{c['hi']}")
def test_e_values_equal_dowhys(case):
    ours = _ours(case)
    assert close(ours.rr, case["converted_estimate"])
    assert close(ours.point, case["evalue_estimate"])
    ci = case["evalue_lower_ci"] if case["evalue_lower_ci"] is not None else case["evalue_upper_ci"]
    assert (ours.ci is None) == (ci is None)
    if ci is not None:
        assert close(ours.ci, ci)


def test_e_value_as_published():
    """VanderWeele & Ding (2017): breastfeeding and respiratory infection, RR 3.9 (1.8 to 8.7): E-values 7.26 and 3.0."""
    e = e_value(3.9, 1.8, 8.7)
    assert (round(e.point, 2), round(e.ci, 2)) == (7.26, 3.0)
    assert e.sentence() == (
        "An unobserved confounder would need to be associated with both the treatment and the outcome by a risk ratio "
        "of at least 7.26 each, above the measured covariates, to explain away the observed risk ratio of 3.90 and "
        "overturn the conclusion (3.00 to move its interval to include 1)."
    )


# ---- Austen curve (austen-plots) -------------------------------------------------------------------


@pytest.fixture(scope="module")
def austen_inputs():
    a = FIXTURE["austen"]
    benchmarks = {name: (b["g"], b["Q"]) for name, b in a["benchmarks"].items()}
    return a, benchmarks


@pytest.mark.parametrize("target", ["ate", "att"])
def test_austen_curve_equals_austen_plots(austen_inputs, target):
    a, benchmarks = austen_inputs
    arrays, ref = a["arrays"], a[target]
    curve = austen_curve(
        arrays["t"],
        arrays["y"],
        arrays["g"],
        arrays["Q"],
        a["bias"],
        benchmarks=benchmarks,
        target=target,
        alphas=AUSTEN_ALPHAS,
    )
    index = np.asarray(ref["index"])
    assert np.allclose(curve.alpha[index], ref["alpha"], rtol=0, atol=1e-12)
    set_to_one = set(ref["set_to_one"])
    assert len(set_to_one) == 1  # the authors' plot code sets the smallest value above 1 to 1
    for i, expected in zip(ref["index"], ref["Rsq"]):
        if i in set_to_one:
            assert curve.r2[i] > 1 and plotted_r2(curve.r2)[i] == 1.0
        else:
            assert close(curve.r2[i], expected), (i, curve.r2[i], expected)
    for b in curve.benchmarks:
        assert close(b.alpha, ref["variables"][b.name]["ahat"])
        assert close(b.r2, ref["variables"][b.name]["Rsqhat"])
    assert [b.name for b in curve.benchmarks] == list(benchmarks)


def test_the_default_grid_is_every_tenth_point_of_the_authors(austen_inputs):
    a, _ = austen_inputs
    arrays, ref = a["arrays"], a["ate"]
    curve = austen_curve(arrays["t"], arrays["y"], arrays["g"], arrays["Q"], a["bias"])
    on_grid = [k for k, i in enumerate(ref["index"]) if i % 10 == 0]
    assert curve.alpha.size == 200 and np.allclose(curve.alpha, np.asarray(ref["alpha"])[on_grid], rtol=0, atol=1e-12)
    assert all(close(curve.r2[ref["index"][k] // 10], ref["Rsq"][k]) for k in on_grid)


def test_the_att_curve_differs_from_the_ate_curve(austen_inputs):
    """The fixture would not catch an ATT that silently computed the ATE."""
    a, _ = austen_inputs
    assert a["ate"]["Rsq"][5] != pytest.approx(a["att"]["Rsq"][5], rel=1e-3)

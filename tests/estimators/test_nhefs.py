"""IPW, AIPW and TMLE on the NHEFS data: the published values and independent reimplementations.

The data are the National Health and Nutrition Examination Survey I Epidemiologic Follow-up Study
(NHEFS) extract of Hernán MA, Robins JM. Causal Inference: What If. Chapman & Hall/CRC, 2020
(chapters 12-13), as bundled (a Stata file inside the package, read offline) by the PyPI package
``causaldata`` (MIT licence; the data are the CDC's). The question is the effect of quitting smoking
between 1971 and 1982 (``qsmk``) on the weight gain over those years in kg (``wt82_71``), in the
1,566 individuals whose 1982 weight is known (403 quitters, 1,163 non-quitters).

Published values (What If, 2020), both the ATE E[Y(1)] - E[Y(0)] in kg:

- chapter 12 (section 12.2): the nonstabilised IP weights from the logistic propensity
  model below range from 1.05 to 16.7 with mean 2.00, and the IP-weighted (Hajek) estimate is
  3.4 kg (95% CI 2.4 to 4.5, robust standard errors).
- chapter 13 (section 13.3): the standardised (parametric g-formula) estimate from
  the linear outcome model below is 3.5 kg (95% CI 2.6 to 4.5, bootstrap). The book averages the
  predictions over all 1,629 individuals (with censoring set to none); this test averages them over
  the 1,566 uncensored ones, as AIPW and TMLE do, which also gives 3.5 (3.517 here, 3.519 over 1,629).

The book gives no AIPW or TMLE value, so those are checked against independent code written here:
the AIPW estimate and its influence-function interval in plain numpy, and a TMLE whose fluctuation is
fitted by statsmodels' GLM (binomial family, logit link, offset), as Gruber & van der Laan (2010) and
the R package ``tmle`` do for a bounded continuous outcome. zepid 0.9.1 has an independent TMLE but
does not run with pandas 3 (it writes into read-only arrays and indexes a Series by position), nor
import without ``pkg_resources``, so it is not used.
"""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from textcause.estimators import aipw, ipw, tmle

nhefs_data = pytest.importorskip("causaldata.nhefs", reason="the NHEFS data come from the causaldata package")

#: The book's sample: 1,629 in the extract, 1,566 with a 1982 weight, 403 of them quitters.
N_ALL, N_UNCENSORED, N_QUITTERS = 1629, 1566, 403
#: The textcause estimates must agree with the independent code to rounding: both solve the same
#: equations, so any difference is floating point (seen: about 1e-14 kg); the tolerance is in kg.
ATOL = 1e-8
#: The bound on the scaled outcome predictions, the same in textcause and the reference (none is hit:
#: every prediction lies well inside the observed range of wt82_71, -41.3 to 48.5 kg).
BOUND = 0.005


def covariates(df) -> np.ndarray:
    """The book's confounders (section 12.2): sex, race, age, age², education (5 levels), smokeintensity,
    its square, smokeyrs, its square, exercise (3 levels), active (3 levels), wt71 and its square,
    with an intercept; categorical variables as indicators with the first level as reference."""
    columns = [np.ones(len(df))]
    for name in ("sex", "race"):
        columns.append(df[name].astype(float).to_numpy())
    for name in ("age", "smokeintensity", "smokeyrs", "wt71"):
        x = df[name].to_numpy(dtype=float)
        columns += [x, x**2]
    for name in ("education", "exercise", "active"):
        codes = df[name].cat.codes.to_numpy()
        columns += [(codes == level).astype(float) for level in range(1, len(df[name].cat.categories))]
    return np.column_stack(columns)


@pytest.fixture(scope="module")
def nhefs() -> dict[str, np.ndarray]:
    """Treatment, outcome, the confounder design and smokeintensity of the 1,566 uncensored individuals."""
    df = nhefs_data.load_pandas().data
    assert len(df) == N_ALL
    df = df[df["wt82"].notna()].reset_index(drop=True)
    return {
        "t": df["qsmk"].to_numpy(dtype=np.int64),
        "y": df["wt82_71"].to_numpy(dtype=float),
        "x": covariates(df),
        "smokeintensity": df["smokeintensity"].to_numpy(dtype=float),
    }


def outcome_design(x: np.ndarray, t: np.ndarray, smokeintensity: np.ndarray) -> np.ndarray:
    """The book's standardisation model (section 13.3): the confounders, qsmk and qsmk x smokeintensity."""
    return np.column_stack([x, t, t * smokeintensity])


@pytest.fixture(scope="module")
def nuisances(nhefs) -> dict[str, np.ndarray]:
    """Unpenalised maximum-likelihood fits (statsmodels): the logistic propensity and the linear
    outcome model, with its predictions under qsmk = 0 and qsmk = 1 for every individual."""
    t, y, x, si = nhefs["t"], nhefs["y"], nhefs["x"], nhefs["smokeintensity"]
    g = sm.Logit(t, x).fit(disp=0).predict(x)
    fit = sm.OLS(y, outcome_design(x, t, si)).fit()
    mu0 = fit.predict(outcome_design(x, np.zeros_like(t), si))
    mu1 = fit.predict(outcome_design(x, np.ones_like(t), si))
    return {"g": g, "mu0": mu0, "mu1": mu1}


def reference_aipw(t, y, g, mu0, mu1) -> tuple[float, float, float]:
    """AIPW and its 95% influence-function interval, from the textbook formula."""
    scores = mu1 - mu0 + t * (y - mu1) / g - (1 - t) * (y - mu0) / (1 - g)
    ate = scores.mean()
    se = np.sqrt(np.sum((scores - ate) ** 2) / (len(y) - 1) / len(y))
    z = 1.959963984540054  # the 0.975 quantile of the standard normal
    return ate, ate - z * se, ate + z * se


def reference_tmle(t, y, g, mu0, mu1, fluctuation: str) -> tuple[float, float, float]:
    """TMLE for a bounded continuous outcome with the fluctuation fitted by statsmodels' GLM.

    Y is mapped to [0, 1] by its observed range, the predictions likewise (then truncated to
    ``[BOUND, 1 - BOUND]``); ``ate``: one parameter on H = T/g - (1-T)/(1-g); ``arms``: the two
    columns T/g and -(1-T)/(1-g), as the R package tmle fits it. Returns the ATE (kg) and its 95%
    influence-curve interval.
    """
    low, high = y.min(), y.max()
    ys = (y - low) / (high - low)
    q0 = np.clip((mu0 - low) / (high - low), BOUND, 1 - BOUND)
    q1 = np.clip((mu1 - low) / (high - low), BOUND, 1 - BOUND)
    h1, h0 = t / g, -(1 - t) / (1 - g)  # the clever covariate's two parts (each zero in the other arm)
    columns = (h1 + h0)[:, None] if fluctuation == "ate" else np.column_stack([h1, h0])
    offset = np.log(np.where(t == 1, q1, q0) / (1 - np.where(t == 1, q1, q0)))
    eps = sm.GLM(ys, columns, family=sm.families.Binomial(), offset=offset).fit(tol=1e-12).params
    e1, e0 = (eps[0], eps[0]) if fluctuation == "ate" else (eps[0], eps[1])
    q1s = 1 / (1 + np.exp(-(np.log(q1 / (1 - q1)) + e1 / g)))
    q0s = 1 / (1 + np.exp(-(np.log(q0 / (1 - q0)) - e0 / (1 - g))))
    psi = np.mean(q1s - q0s)
    ic = (h1 + h0) * (ys - np.where(t == 1, q1s, q0s)) + q1s - q0s - psi
    se = np.std(ic, ddof=1) / np.sqrt(len(y))
    z = 1.959963984540054
    return (high - low) * psi, (high - low) * (psi - z * se), (high - low) * (psi + z * se)


def test_sample_is_the_books(nhefs):
    assert nhefs["t"].size == N_UNCENSORED
    assert int(nhefs["t"].sum()) == N_QUITTERS
    assert nhefs["x"].shape == (N_UNCENSORED, 19)  # an intercept and 18 confounder columns


def test_ip_weights_match_the_book(nhefs, nuisances):
    # What If, section 12.2: the weights range from 1.05 to 16.7 and their mean is 2.00.
    t, g = nhefs["t"], nuisances["g"]
    w = np.where(t == 1, 1 / g, 1 / (1 - g))
    assert (round(w.min(), 2), round(w.max(), 1), round(w.mean(), 2)) == (1.05, 16.7, 2.00)


def test_ipw_matches_the_book(nhefs, nuisances):
    # What If, section 12.2: 3.4 kg (95% CI 2.4 to 4.5), the weighted regression of Y on qsmk with
    # robust (sandwich) standard errors, whose qsmk coefficient is the Hajek estimate.
    t, y, g = nhefs["t"], nhefs["y"], nuisances["g"]
    est = ipw(t, y, g)
    w = np.where(t == 1, 1 / g, 1 / (1 - g))
    msm = sm.WLS(y, sm.add_constant(t.astype(float)), weights=w).fit(cov_type="HC0")
    assert est.ate == pytest.approx(msm.params[1], abs=ATOL)
    assert round(est.ate, 1) == 3.4
    assert tuple(np.round(msm.conf_int()[1], 1)) == (2.4, 4.5)


def test_standardisation_matches_the_book(nhefs, nuisances):
    # What If, section 13.3: 3.5 kg (95% CI 2.6 to 4.5).
    ate = float(np.mean(nuisances["mu1"] - nuisances["mu0"]))
    assert round(ate, 1) == 3.5


def test_aipw_matches_the_formula(nhefs, nuisances):
    t, y = nhefs["t"], nhefs["y"]
    g, mu0, mu1 = nuisances["g"], nuisances["mu0"], nuisances["mu1"]
    est = aipw(t, y, g, mu0, mu1)
    ref = reference_aipw(t, y, g, mu0, mu1)
    assert (est.ate, est.ci_low, est.ci_high) == pytest.approx(ref, abs=ATOL)
    assert np.isfinite([est.ci_low, est.ci_high]).all() and est.ci_low < est.ate < est.ci_high
    # Doubly robust, with both nuisances the book's: beside the book's two estimates (3.4 and 3.5).
    assert round(est.ate, 1) == 3.5


@pytest.mark.parametrize("fluctuation", ["ate", "arms"])
def test_tmle_matches_statsmodels(nhefs, nuisances, fluctuation):
    t, y = nhefs["t"], nhefs["y"]
    g, mu0, mu1 = nuisances["g"], nuisances["mu0"], nuisances["mu1"]
    est = tmle(t, y, g, mu0, mu1, outcome="continuous", fluctuation=fluctuation, bound=BOUND)
    ref = reference_tmle(t, y, g, mu0, mu1, fluctuation)
    assert (est.ate, est.ci_low, est.ci_high) == pytest.approx(ref, abs=ATOL)
    assert est.details["n_bounded"] == 0
    assert np.isfinite([est.ci_low, est.ci_high]).all() and est.ci_low < est.ate < est.ci_high
    # TMLE and AIPW are asymptotically equivalent; with these nuisances they differ by 0.0006 kg.
    assert est.ate == pytest.approx(aipw(t, y, g, mu0, mu1).ate, abs=0.01)
    assert round(est.ate, 1) == 3.5

"""TMLE, cross-fitted AIPW / TMLE and the influence-function intervals: known truth over many seeds,
double robustness, an independent statsmodels reimplementation, invariances, errors."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.linear_model import LinearRegression, LogisticRegression

from textcause.estimators import (
    CI_BOOTSTRAP,
    CI_INFLUENCE,
    DEFAULT_ESTIMATORS,
    ESTIMATOR_LABELS,
    ESTIMATORS,
    OUTCOME_ESTIMATORS,
    aipw,
    bootstrap_ci,
    crossfit_predictions,
    ipw,
    tmle,
)
from textcause.estimators.tmle import _fluctuate, _logit

N_SEEDS, N = 200, 2000
# Tolerances of the many-seed checks. One estimate's sd is about 0.022 (binary) and 0.057
# (continuous), so the mean over 200 seeds has sd 0.0016 / 0.004: the bias tolerances are about five
# of those. Coverage of a 95% interval over 200 seeds has binomial sd 0.015: [0.90, 0.99] is 3 sd.
BIAS_TOL = {"binary": 0.008, "continuous": 0.02}
COVERAGE = (0.90, 0.99)
# What the misspecified estimators must miss by (their bias is ~0.14 / ~0.95 on these DGPs).
MISS = {"binary": 0.05, "continuous": 0.3}


def expit(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def outcome_means(x: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """E[Y | T=0, X], E[Y | T=1, X]: logistic in X (binary), linear with a heterogeneous effect (continuous)."""
    lin = 1.2 * x[:, 0] + 0.5 * x[:, 1]
    if kind == "binary":
        return expit(lin - 0.5), expit(lin + 0.5)
    return lin, lin + 2.0 + 0.5 * x[:, 0]


def simulate(seed: int, kind: str, n: int = N) -> dict[str, np.ndarray]:
    """Confounded data: x1 raises both P(T=1) and Y, so the difference in means is biased upwards."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    g = expit(1.0 * x[:, 0] - 0.5 * x[:, 1])
    t = (rng.random(n) < g).astype(np.int64)
    mu0, mu1 = outcome_means(x, kind)
    mean = np.where(t == 1, mu1, mu0)
    y = (rng.random(n) < mean).astype(np.float64) if kind == "binary" else mean + rng.normal(size=n)
    return {"x": x, "t": t, "y": y, "g": g, "mu0": mu0, "mu1": mu1}


def true_ate(kind: str) -> float:
    """The population ATE: 2.0 exactly (continuous), Monte Carlo over 2e6 draws of X (binary, sd < 1e-4)."""
    if kind == "continuous":
        return 2.0
    mu0, mu1 = outcome_means(np.random.default_rng(12345).normal(size=(2_000_000, 2)), kind)
    return float(np.mean(mu1 - mu0))


@pytest.fixture(scope="module", params=["binary", "continuous"])
def many_seeds(request) -> dict:
    """Per seed: TMLE with the true nuisances, cross-fitted AIPW and TMLE (correct logistic / linear
    learners, 2 folds), and the estimators with one nuisance wrong, all minus the true ATE."""
    kind = request.param
    ate = true_ate(kind)
    out: dict[str, list] = {}

    def add(name: str, est) -> None:
        out.setdefault(name, []).append(est.ate - ate)
        if est.ci_low is not None:
            out.setdefault(f"{name}_covers", []).append(est.ci_low <= ate <= est.ci_high)

    learner = LogisticRegression() if kind == "binary" else LinearRegression()
    for seed in range(N_SEEDS):
        d = simulate(seed, kind)
        t, y, g, mu0, mu1 = d["t"], d["y"], d["g"], d["mu0"], d["mu1"]
        add("tmle", tmle(t, y, g, mu0, mu1))
        add("tmle_arms", tmle(t, y, g, mu0, mu1, fluctuation="arms"))
        add("aipw", aipw(t, y, g, mu0, mu1))
        pred = crossfit_predictions(d["x"], t, y, LogisticRegression(), learner, n_folds=2, seed=seed)
        add("aipw_crossfit", aipw(t, y, pred.propensity, pred.mu0, pred.mu1))
        add("tmle_crossfit", tmle(t, y, pred.propensity, pred.mu0, pred.mu1, outcome=kind))
        # double robustness: a wrong propensity (the treated share for everyone) with the right outcome
        # model, and the right propensity with a wrong outcome model (each arm's mean for everyone)
        flat = np.full(t.size, t.mean())
        arm0, arm1 = np.full(t.size, y[t == 0].mean()), np.full(t.size, y[t == 1].mean())
        add("ipw_wrong_g", ipw(t, y, flat))
        out.setdefault("outcome_only_wrong_q", []).append(float(np.mean(arm1 - arm0)) - ate)
        for name, fn in (("tmle", tmle), ("aipw", aipw)):
            add(f"{name}_wrong_g", fn(t, y, flat, mu0, mu1))
            add(f"{name}_wrong_q", fn(t, y, g, arm0, arm1))
    return {"kind": kind, **{k: np.asarray(v, dtype=np.float64) for k, v in out.items()}}


# --- known truth over many seeds ---------------------------------------------------------


@pytest.mark.parametrize("name", ["tmle", "tmle_arms", "aipw", "aipw_crossfit", "tmle_crossfit"])
def test_bias_over_many_seeds(many_seeds, name):
    bias = many_seeds[name].mean()
    assert abs(bias) < BIAS_TOL[many_seeds["kind"]], (name, bias)


@pytest.mark.parametrize("name", ["tmle", "aipw", "aipw_crossfit", "tmle_crossfit"])
def test_influence_interval_coverage_near_95(many_seeds, name):
    coverage = many_seeds[f"{name}_covers"].mean()
    assert COVERAGE[0] <= coverage <= COVERAGE[1], (name, coverage)


@pytest.mark.parametrize("name", ["tmle", "aipw"])
def test_double_robustness(many_seeds, name):
    kind = many_seeds["kind"]
    # one nuisance wrong, the other right: still unbiased ...
    assert abs(many_seeds[f"{name}_wrong_g"].mean()) < BIAS_TOL[kind]
    assert abs(many_seeds[f"{name}_wrong_q"].mean()) < BIAS_TOL[kind]
    # ... while the estimators that rely on the wrong one alone are not
    assert many_seeds["ipw_wrong_g"].mean() > MISS[kind]
    assert many_seeds["outcome_only_wrong_q"].mean() > MISS[kind]


def test_crossfit_double_robustness_with_wrong_learners():
    """Cross-fitted, a constant learner in place of one nuisance model leaves the estimate near the truth."""
    ate = true_ate("binary")
    d = simulate(7, "binary", n=20_000)
    wrong_g = crossfit_predictions(d["x"], d["t"], d["y"], DummyClassifier(), LogisticRegression(), seed=0)
    wrong_q = crossfit_predictions(d["x"], d["t"], d["y"], LogisticRegression(), DummyClassifier(), seed=0)
    for pred in (wrong_g, wrong_q):
        for fn in (aipw, tmle):
            est = fn(d["t"], d["y"], pred.propensity, pred.mu0, pred.mu1)
            assert abs(est.ate - ate) < 0.03, (fn.__name__, est.ate, ate)
    assert ipw(d["t"], d["y"], wrong_g.propensity).ate - ate > MISS["binary"]
    assert np.mean(wrong_q.mu1 - wrong_q.mu0) - ate > MISS["binary"]
    cont = simulate(7, "continuous", n=20_000)
    pred = crossfit_predictions(cont["x"], cont["t"], cont["y"], LogisticRegression(), DummyRegressor(), seed=0)
    assert abs(tmle(cont["t"], cont["y"], pred.propensity, pred.mu0, pred.mu1).ate - 2.0) < 0.1


# --- the sign, invariances ---------------------------------------------------------------


@pytest.mark.parametrize("kind", ["binary", "continuous"])
def test_sign_of_a_known_positive_effect(kind):
    d = simulate(0, kind, n=5000)
    est = tmle(d["t"], d["y"], d["g"], d["mu0"], d["mu1"])
    assert est.ate > 0 and est.ci_low > 0
    assert est.details["mean_treated"] > est.details["mean_control"]
    assert est.ate == pytest.approx(est.details["mean_treated"] - est.details["mean_control"], abs=1e-12)
    # relabelling the arms reverses the effect exactly
    flipped = tmle(1 - d["t"], d["y"], 1 - d["g"], d["mu1"], d["mu0"])
    assert flipped.ate == pytest.approx(-est.ate, abs=1e-9)


def test_continuous_tmle_is_affine_equivariant():
    d = simulate(3, "continuous", n=1000)
    est = tmle(d["t"], d["y"], d["g"], d["mu0"], d["mu1"])
    moved = tmle(d["t"], 10.0 + 3.0 * d["y"], d["g"], 10.0 + 3.0 * d["mu0"], 10.0 + 3.0 * d["mu1"])
    assert moved.ate == pytest.approx(3.0 * est.ate, rel=1e-9)
    assert moved.details["se"] == pytest.approx(3.0 * est.details["se"], rel=1e-9)


def test_outcome_auto_and_bounds():
    d = simulate(1, "binary", n=500)
    assert tmle(d["t"], d["y"], d["g"], d["mu0"], d["mu1"]).details["outcome"] == "binary"
    c = simulate(1, "continuous", n=500)
    est = tmle(c["t"], c["y"], c["g"], c["mu0"], c["mu1"])
    assert est.details["outcome"] == "continuous"
    assert (est.details["y_low"], est.details["y_high"]) == (c["y"].min(), c["y"].max())
    # predictions outside the observed range are truncated into it (and counted)
    assert est.details["n_bounded"] >= np.count_nonzero((c["mu1"] > c["y"].max()) | (c["mu1"] < c["y"].min()))
    # the targeted arm means are means of bounded predictions: inside the outcome's range
    assert c["y"].min() <= est.details["mean_control"] <= est.details["mean_treated"] <= c["y"].max()


# --- an independent reference: statsmodels ---------------------------------------------


def reference_tmle(t, y, g, mu0, mu1, low=0.0, high=1.0, bound=0.005):
    """TMLE written from Gruber & van der Laan (2010) with statsmodels' GLM for the fluctuation."""
    scale = high - low
    ys = (y - low) / scale
    q0 = np.clip((mu0 - low) / scale, bound, 1 - bound)
    q1 = np.clip((mu1 - low) / scale, bound, 1 - bound)
    qa = np.where(t == 1, q1, q0)
    h = t / g - (1 - t) / (1 - g)
    off = np.log(qa / (1 - qa))
    with np.errstate(all="ignore"):
        fit = sm.GLM(ys, h[:, None], family=sm.families.Binomial(), offset=off).fit(tol=1e-13, maxiter=200)
    eps = float(fit.params[0])
    q1s = expit(np.log(q1 / (1 - q1)) + eps / g)
    q0s = expit(np.log(q0 / (1 - q0)) - eps / (1 - g))
    psi = np.mean(q1s - q0s)
    eic = h * (ys - np.where(t == 1, q1s, q0s)) + q1s - q0s - psi
    return scale * psi, scale * eic.std(ddof=1) / np.sqrt(t.size), eps


@pytest.mark.parametrize("kind", ["binary", "continuous"])
def test_tmle_matches_a_statsmodels_reimplementation(kind):
    d = simulate(11, kind, n=800)
    t, y, g = d["t"], d["y"], d["g"]
    mu0, mu1 = 0.6 * d["mu0"] + 0.3, 0.6 * d["mu1"]  # a wrong outcome model: the targeting step moves it
    est = tmle(t, y, g, mu0, mu1, outcome=kind)
    low, high = (0.0, 1.0) if kind == "binary" else (y.min(), y.max())
    ate, se, eps = reference_tmle(t, y, g, mu0, mu1, low, high)
    assert abs(eps) > 1e-2
    assert est.details["epsilon"][0] == pytest.approx(eps, rel=1e-7, abs=1e-10)
    assert est.ate == pytest.approx(ate, rel=1e-7, abs=1e-10)
    assert est.details["se"] == pytest.approx(se, rel=1e-7)
    assert est.ci_high - est.ate == pytest.approx(1.959963984540054 * se, rel=1e-7)


def test_fluctuation_matches_statsmodels_glm():
    rng = np.random.default_rng(5)
    n = 300
    g = rng.uniform(0.05, 0.95, n)
    t = (rng.random(n) < g).astype(np.int64)
    h = np.where(t == 1, 1 / g, -1 / (1 - g))
    offset = _logit(rng.uniform(0.1, 0.9, n))
    for y in ((rng.random(n) < 0.4).astype(np.float64), rng.uniform(0, 1, n)):  # binary and fractional
        eps, iterations = _fluctuate(y, offset, h)
        with np.errstate(all="ignore"):
            ref = sm.GLM(y, h[:, None], family=sm.families.Binomial(), offset=offset).fit(tol=1e-13)
        assert eps == pytest.approx(float(ref.params[0]), rel=1e-8, abs=1e-12)
        assert 1 <= iterations < 20


def test_tmle_on_a_hand_sized_data_set():
    """Five units, worked through step by step with statsmodels; and eps = 0 gives the plug-in."""
    t = np.array([1, 0, 1, 0, 1])
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    g = np.array([0.6, 0.3, 0.8, 0.5, 0.4])
    mu0 = np.array([0.2, 0.1, 0.4, 0.9, 0.5])
    mu1 = np.array([0.9, 0.5, 0.6, 0.7, 0.4])
    ate, se, _ = reference_tmle(t, y, g, mu0, mu1)
    est = tmle(t, y, g, mu0, mu1, level=0.9)
    assert est.ate == pytest.approx(ate, abs=1e-9)
    assert est.details["se"] == pytest.approx(se, abs=1e-9)
    assert est.n_used == 5 and est.details["iterations"] >= 1
    # by hand: the updated fit solves the efficient score equation sum_i H_i (Y_i - Q*_i) = 0
    (eps,) = est.details["epsilon"]
    h = t / g - (1 - t) / (1 - g)
    q_star = expit(_logit(np.where(t == 1, mu1, mu0)) + eps * h)
    assert np.dot(h, y - q_star) == pytest.approx(0.0, abs=1e-10)
    assert est.ate == pytest.approx(
        np.mean(expit(_logit(mu1) + eps / g) - expit(_logit(mu0) - eps / (1 - g))), abs=1e-12
    )
    # outcomes equal to the predictions: the score is zero at eps = 0, so nothing is updated
    plug = tmle(t, np.where(t == 1, mu1, mu0), g, mu0, mu1, outcome="binary")
    assert plug.details["epsilon"][0] == pytest.approx(0.0, abs=1e-12)
    assert plug.ate == pytest.approx(np.mean(mu1 - mu0), abs=1e-12)


def test_arms_fluctuation_solves_each_arms_score():
    d = simulate(2, "binary", n=1000)
    t, y, g = d["t"], d["y"], d["g"]
    mu0, mu1 = np.full(t.size, 0.3), np.full(t.size, 0.6)
    est = tmle(t, y, g, mu0, mu1, fluctuation="arms")
    e1, e0 = est.details["epsilon"]
    q1s = expit(_logit(mu1) + e1 / g)
    q0s = expit(_logit(mu0) + e0 / (1 - g))
    assert np.dot(t / g, y - q1s) == pytest.approx(0.0, abs=1e-8)
    assert np.dot((1 - t) / (1 - g), y - q0s) == pytest.approx(0.0, abs=1e-8)
    assert est.ate == pytest.approx(np.mean(q1s - q0s), abs=1e-12)


# --- intervals: labelled, beside the bootstrap --------------------------------------------


def test_influence_intervals_are_labelled_and_kept_beside_the_bootstrap():
    d = simulate(4, "binary", n=400)
    args = (d["t"], d["y"], d["g"], d["mu0"], d["mu1"])
    for name in ("aipw", "tmle"):
        point = ESTIMATORS[name](*args)
        assert point.details["ci_method"] == CI_INFLUENCE
        assert (point.details["influence_ci_low"], point.details["influence_ci_high"]) == (point.ci_low, point.ci_high)
        boot = bootstrap_ci(name, *args, n_boot=30, seed=0)
        assert boot.details["ci_method"] == CI_BOOTSTRAP and boot.details["bootstrap"]["n_boot"] == 30
        assert boot.details["influence_ci_low"] == point.ci_low and boot.ate == point.ate
        assert boot.ci_low < point.ate < boot.ci_high
    assert ipw(d["t"], d["y"], d["g"]).details.get("ci_method") is None
    assert bootstrap_ci("ipw", d["t"], d["y"], d["g"], n_boot=10).details["ci_method"] == CI_BOOTSTRAP


def test_registry_holds_tmle_but_not_as_a_default():
    assert ESTIMATORS["tmle"] is tmle and ESTIMATOR_LABELS["tmle"] == "TMLE"
    assert set(OUTCOME_ESTIMATORS) == {"aipw", "tmle"}
    assert not set(OUTCOME_ESTIMATORS) & set(DEFAULT_ESTIMATORS)


def test_tmle_is_deterministic():
    d = simulate(9, "continuous", n=300)
    a = tmle(d["t"], d["y"], d["g"], d["mu0"], d["mu1"])
    b = tmle(d["t"], d["y"], d["g"], d["mu0"], d["mu1"])
    assert a == b and a.details["epsilon"] == b.details["epsilon"]


def test_tmle_does_not_mutate_its_inputs():
    d = simulate(9, "binary", n=300)
    copies = {k: v.copy() for k, v in d.items()}
    tmle(d["t"], d["y"], d["g"], d["mu0"], d["mu1"], clip=0.05)
    assert all(np.array_equal(d[k], copies[k]) for k in d)


# --- errors ---------------------------------------------------------------------------


T6 = np.array([1, 0, 1, 0, 1, 0])
Y6 = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.0])
P6 = np.full(6, 0.5)
M6 = np.full(6, 0.4)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"outcome": "normal"}, r"The 'outcome' parameter of tmle must be one of \['auto', 'binary', 'continuous'\]"),
        ({"fluctuation": "both"}, r"The 'fluctuation' parameter of tmle must be one of \['ate', 'arms'\]"),
        ({"level": 1.0}, r"The 'level' parameter of tmle must be a float > 0\.0 and < 1\.0\. Got 1\.0 instead"),
        ({"bound": 0.2}, r"The 'bound' parameter of tmle must be a float >= 1e-12 and <= 0\.1\. Got 0\.2"),
        ({"clip": 0.0}, r"The 'clip' parameter of tmle must be a float >= 1e-08 and <= 0\.5\. Got 0\.0"),
    ],
)
def test_tmle_parameter_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tmle(T6, Y6, P6, M6, M6, **kwargs)


def test_tmle_input_errors():
    with pytest.raises(ValueError, match=r"The 'propensity' parameter of tmle must be an array of estimated"):
        tmle(T6, Y6, None, M6, M6)
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples: \[6, 6, 6, 5, 6\]"):
        tmle(T6, Y6, P6, M6[:-1], M6)
    with pytest.raises(ValueError, match=r"The treatment 't' has only one class"):
        tmle(np.ones(6), Y6, P6, M6, M6)
    with pytest.raises(ValueError, match=r"'mu1' contains NaN"):
        tmle(T6, Y6, P6, M6, np.r_[M6[:-1], np.nan])
    with pytest.raises(ValueError, match=r"The 'propensity' values must lie strictly between 0 and 1"):
        tmle(T6, Y6, np.r_[P6[:-1], 1.0], M6, M6)
    with pytest.raises(ValueError, match=r"weight above 1e\+08 .* tmle\(\.\.\., clip=0\.01\)"):
        tmle(T6, Y6, np.r_[1e-9, P6[1:]], M6, M6)
    assert tmle(T6, Y6, np.r_[1e-9, P6[1:]], M6, M6, clip=0.01).n_clipped == 1


def test_tmle_outcome_errors():
    with pytest.raises(
        ValueError, match=r"The 'y' values of tmle must lie in \[0, 1\] for a binary outcome\. Got 2\.0"
    ):
        tmle(T6, np.r_[Y6[:-1], 2.0], P6, M6, M6, outcome="binary")
    with pytest.raises(ValueError, match=r"The 'mu0' values of tmle must lie in \[0, 1\] for a binary outcome"):
        tmle(T6, Y6, P6, M6 - 1.0, M6, outcome="binary")
    with pytest.raises(ValueError, match=r"The outcome 'y' of tmle is constant \(3\.0 for every unit\)"):
        tmle(T6, np.full(6, 3.0), P6, M6, M6)
    # the treated all at 1, the untreated all at 0: the fluctuation runs to infinity
    with pytest.raises(ValueError, match=r"The targeting step of tmle has no finite solution"):
        tmle(T6, T6.astype(float), P6, M6, M6)
    with pytest.raises(ValueError, match=r"The targeting step of tmle has no finite solution"):
        tmle(T6, np.array([1.0, 0.0, 1.0, 1.0, 1.0, 0.0]), P6, M6, M6, fluctuation="arms")
    # the same treated outcomes with one fluctuation parameter are fine
    assert np.isfinite(tmle(T6, np.array([1.0, 0.0, 1.0, 1.0, 1.0, 0.0]), P6, M6, M6).ate)

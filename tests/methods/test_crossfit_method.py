"""textcause.methods.crossfit: cross-fitted AIPW and TMLE as effect methods, against a known effect on
simulated sparse data, through textcause.evaluate and a benchmark grid's method cells, and their errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import textcause
from textcause.estimators.crossfit import crossfit, crossfit_predictions
from textcause.grid.spec import grid_from_dict
from textcause.grid.worker import run_cell
from textcause.methods import CrossFitAIPW, CrossFitEffect, CrossFitTMLE, EffectResult
from textcause.methods.adapters import as_method, describe_method, load_object
from textcause.methods.crossfit import C_GRID, CV_FOLDS, DEFAULT_C, cross_validated_C
from textcause.methods.protocols import RESERVED_ESTIMATORS, EffectMethod

#: Tolerance on |estimate - true ATE| for one simulated data set of N units (the AIPW standard error
#: there is about 0.025; the naive difference is off by about 0.15).
TOL = 0.06
N, P = 2000, 300


def _expit(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def simulate(seed: int, *, outcome: str = "binary") -> tuple[sp.csr_matrix, np.ndarray, np.ndarray, float]:
    """Sparse binary 'n-gram' features; features 0-2 confound (raise both P(T=1) and Y), the rest are noise.

    Returns ``(X, t, y, true_ate)`` with the ATE conditional on the drawn X (the mean of the
    per-unit effects), positive: 0.2-ish for the binary outcome, exactly 0.5 for the normal one.
    """
    rng = np.random.default_rng(seed)
    dense = (rng.random((N, P)) < 0.08).astype(np.float32)
    dense[:, :3] = rng.random((N, 3)) < 0.4
    conf = dense[:, 0] + dense[:, 1] + dense[:, 2]
    t = (rng.random(N) < _expit(-1.5 + 1.5 * conf)).astype(np.int64)
    if outcome == "binary":
        base = -1.5 + 1.2 * conf
        p1, p0 = _expit(base + 1.0), _expit(base)
        y = (rng.random(N) < np.where(t == 1, p1, p0)).astype(np.float64)
        truth = float(np.mean(p1 - p0))
    else:
        y = 1.0 + 0.5 * t + 1.0 * conf + rng.normal(0.0, 1.0, N)
        truth = 0.5
    return sp.csr_matrix(dense), t, y, truth


@pytest.mark.parametrize("cls", [CrossFitAIPW, CrossFitTMLE])
def test_recovers_a_known_positive_effect(cls):
    X, t, y, truth = simulate(0)
    naive = y[t == 1].mean() - y[t == 0].mean()
    assert naive - truth > 2 * TOL  # the data are confounded: the naive difference is biased upwards
    method = cls()
    result = method.estimate(X, t, y)
    assert isinstance(result, EffectResult) and isinstance(method, EffectMethod)
    assert truth > 0.15 and abs(result.ate - truth) < TOL  # a reversed sign (about -truth) fails
    assert result.ci_low < truth < result.ci_high and result.ci_low < result.ate < result.ci_high
    est = method.crossfit_estimate(X, t, y)
    assert est.ate == result.ate and est.details["crossfit"] == {"n_folds": 5, "seed": 0, "outcome": "binary"}


def test_bias_and_coverage_over_seeds():
    """Over 20 simulated data sets: |mean bias| below 0.035 and coverage of the 95% interval at least 0.8.

    Measured: AIPW +0.001 (se 0.008), coverage 1.00; TMLE +0.024 (se 0.007), coverage 0.95. TMLE's small
    finite-sample bias comes from the shrunken (C = 0.1) nuisances and shrinks with n: +0.005 at N = 6000.

    Pinned to C = 0.1 (the former default): the ``C="auto"`` default chooses C = 0.03 for the propensity
    and outcome models here (the best 3-fold log-loss; 0.1 is a near tie), whose stronger shrinkage of the
    three confounders leaves AIPW +0.058 (coverage 0.25) and TMLE +0.049 (coverage 0.45) on these seeds.
    """
    for cls in (CrossFitAIPW, CrossFitTMLE):
        bias, covered = [], []
        for seed in range(20):
            X, t, y, truth = simulate(100 + seed)
            r = cls(C=0.1).estimate(X, t, y)
            bias.append(r.ate - truth)
            covered.append(r.ci_low <= truth <= r.ci_high)
        assert abs(np.mean(bias)) < 0.035, (cls.__name__, np.mean(bias))
        assert np.mean(covered) >= 0.8, (cls.__name__, np.mean(covered))


@pytest.mark.parametrize("cls", [CrossFitAIPW, CrossFitTMLE])
def test_continuous_outcome_uses_a_linear_outcome_model(cls):
    """A normal outcome (true ATE 0.5; naive difference about 1.4) over 10 data sets: |mean bias| below 0.1
    and coverage at least 0.8 (measured: AIPW -0.04, TMLE -0.02, both covering 10 of 10; se of one estimate
    about 0.07, as the 300 features make the per-arm ridge predictions noisy).

    Pinned to C = 0.1 (the former default): with ``C="auto"`` RidgeCV picks C = 0.01-0.03 (alpha 33-100) per
    arm and the propensity C = 0.03, and AIPW's mean bias is +0.127 here."""
    method = cls(C=0.1)
    bias, covered = [], []
    for seed in range(200, 210):
        X, t, y, truth = simulate(seed, outcome="normal")
        assert method.outcome_kind(y) == "continuous"
        est = method.crossfit_estimate(X, t, y)
        assert est.details["crossfit"]["outcome"] == "continuous"
        bias.append(est.ate - truth)
        covered.append(est.ci_low <= truth <= est.ci_high)
    assert abs(np.mean(bias)) < 0.1 and np.mean(covered) >= 0.8, (bias, covered)
    assert method.outcome_kind(np.array([0.0, 1.0, 1.0])) == "binary"
    assert cls(outcome="continuous").outcome_kind(np.array([0.0, 1.0])) == "continuous"
    with pytest.raises(ValueError, match="must be 0/1 for outcome='binary'"):
        cls(outcome="binary").estimate(X, t, y)


def test_defaults_names_labels_and_determinism():
    aipw, tmle = CrossFitAIPW(), CrossFitTMLE()
    assert (aipw.name, aipw.estimator) == ("crossfit_aipw_lr_bigram_binary", "dml_aipw")
    assert (tmle.name, tmle.estimator) == ("crossfit_tmle_lr_bigram_binary", "dml_tmle")
    assert aipw.estimator not in RESERVED_ESTIMATORS and tmle.estimator not in RESERVED_ESTIMATORS
    assert (
        aipw.C == DEFAULT_C == "auto"
        and aipw.n_folds == 5
        and aipw.clip == 0.01
        and aipw.representation == "bigram_binary"
    )
    custom = CrossFitEffect("tmle", C=1.0, representation="unigram_binary", name="mine")
    assert (custom.name, custom.estimator, custom.get_params()["C"]) == ("mine", "dml_tmle", 1.0)
    assert CrossFitEffect("aipw", representation="lda").name == "crossfit_aipw_lr_lda"
    # the benchmark loads them by name (a class created without arguments)
    loaded = as_method(load_object("textcause.methods.crossfit:CrossFitTMLE"))
    info = describe_method(loaded)
    assert (info.kind, info.estimator, info.representation) == ("effect", "dml_tmle", "bigram_binary")
    assert describe_method(CrossFitTMLE(C=1.0)).fingerprint != info.fingerprint  # parameters enter the hash
    X, t, y, _ = simulate(2)
    first, again = CrossFitAIPW().estimate(X, t, y), CrossFitAIPW().estimate(X, t, y)
    assert first == again
    assert CrossFitAIPW(seed=1).estimate(X, t, y).ate != first.ate  # other folds
    assert (X - simulate(2)[0]).nnz == 0 and np.array_equal(t, simulate(2)[1])  # inputs untouched


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"C": 0}, r"The 'C' parameter of CrossFitAIPW must be 'auto' or a float > 0.0. Got 0 instead."),
        ({"C": "1"}, r"The 'C' parameter of CrossFitAIPW must be 'auto' or a float > 0.0. Got '1' instead."),
        ({"C": "Auto"}, r"The 'C' parameter of CrossFitAIPW must be 'auto' or a float > 0.0. Got 'Auto' instead."),
        ({"C": None}, r"The 'C' parameter of CrossFitAIPW must be 'auto' or a float > 0.0. Got None instead."),
        ({"C": float("nan")}, r"The 'C' parameter of CrossFitAIPW must be 'auto' or a float > 0.0. Got nan"),
        ({"C": True}, r"The 'C' parameter of CrossFitAIPW must be 'auto' or a float > 0.0. Got True instead."),
        ({"n_folds": 1}, r"The 'n_folds' parameter of CrossFitAIPW must be an int >= 2. Got 1 instead."),
        ({"seed": -1}, r"The 'seed' parameter of CrossFitAIPW must be an int >= 0. Got -1 instead."),
        ({"clip": 0.6}, r"The 'clip' parameter of CrossFitAIPW must be a float >= .* and <= 0.5. Got 0.6 instead."),
        ({"level": 1.0}, r"The 'level' parameter of CrossFitAIPW must be a float > 0.0 and < 1.0. Got 1.0"),
        ({"outcome": "normal"}, r"The 'outcome' parameter of CrossFitAIPW must be one of \['auto', 'binary', "),
        ({"representation": "post_embeddings"}, r"The 'representation' parameter of CrossFitAIPW must be one of"),
        ({"representation": None}, r"The 'representation' parameter of CrossFitAIPW must be one of"),
        ({"name": "my method"}, r"The name of a method must be made of letters, digits"),
        ({"representation_options": {"bad": 1}}, r"The 'representation_options' of method"),
    ],
)
def test_parameter_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CrossFitAIPW(**kwargs)


def test_estimator_and_input_errors():
    with pytest.raises(ValueError, match=r"The 'doubly_robust' parameter of CrossFitEffect must be one of \['aipw', "):
        CrossFitEffect("ipw")
    X, t, y, _ = simulate(3)
    few = t.copy()
    few[np.flatnonzero(few == 1)[3:]] = 0  # three treated units: fewer than the five folds
    with pytest.raises(
        ValueError, match=r"'n_folds' parameter of crossfit_folds must be at most the size of the smaller"
    ):
        CrossFitAIPW().estimate(X, few, y)
    with pytest.raises(ValueError, match=r"Found input variables with inconsistent numbers of samples"):
        CrossFitTMLE().estimate(X, t[:-1], y[:-1])


# ------------------------------------------------------------------------------ the penalty: C = "auto"
def simulate_separable(seed: int) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray, float]:
    """A binary confounder Z that 1,000 noisy features reveal (each present with probability 0.15 if Z, 0.05
    if not: Z is separable by their sum), 3,000 pure-noise features (probability 0.1), P(T=1) = 0.9 / 0.1
    by Z and a binary outcome; true ATE (mean of the per-unit effects) about 0.21, naive difference about
    0.45. With C = 0.1 the propensity model fits the noise: out-of-fold 1st / 99th percentiles about
    0.005 / 0.997 instead of 0.1 / 0.9 and AIPW 0.24-0.49 below the truth (seeds 0-4).
    """
    rng = np.random.default_rng(seed)
    n, p, k = 2000, 4000, 1000
    z = rng.random(n) < 0.5
    prob = np.full((n, p), 0.1)
    prob[:, :k] = np.where(z[:, None], 0.15, 0.05)
    X = sp.csr_matrix((rng.random((n, p)) < prob).astype(np.float32))
    t = (rng.random(n) < np.where(z, 0.9, 0.1)).astype(np.int64)
    p1, p0 = _expit(-1.0 + 1.5 * z + 1.0), _expit(-1.0 + 1.5 * z)
    y = (rng.random(n) < np.where(t == 1, p1, p0)).astype(np.float64)
    return X, t, y, float(np.mean(p1 - p0))


def test_auto_C_chooses_a_stronger_penalty_where_C_0_1_overfits():
    """Measured (seeds 0-2): auto chose propensity C 0.01 / 0.03 / 0.03 (outcomes 0.003-0.01); AIPW error
    +0.053 / -0.008 / -0.149 against -0.275 / -0.240 / -0.406 with C = 0.1."""
    for seed in range(3):
        X, t, y, truth = simulate_separable(seed)
        auto, fixed = CrossFitAIPW().crossfit_estimate(X, t, y), CrossFitAIPW(C=0.1).crossfit_estimate(X, t, y)
        chosen = auto.details["penalty"]
        assert chosen["propensity"] < 0.1 and chosen["mu0"] < 0.1 and chosen["mu1"] < 0.1, chosen
        assert abs(auto.ate - truth) < abs(fixed.ate - truth) - 0.05, (seed, auto.ate, fixed.ate, truth)
        spread = [np.percentile(e.details["predictions"].propensity, [1, 99]) for e in (auto, fixed)]
        assert spread[0][0] > spread[1][0] and spread[0][1] < spread[1][1]  # less overconfident


def test_auto_C_details_and_determinism():
    X, t, y, _ = simulate(2)
    first, again = CrossFitTMLE().crossfit_estimate(X, t, y), CrossFitTMLE().crossfit_estimate(X, t, y)
    assert first == again and first.details["penalty"] == again.details["penalty"]
    penalty = first.details["penalty"]
    assert set(penalty) == {"C", "propensity", "mu0", "mu1", "grid", "cv_folds"}
    assert penalty["C"] == "auto" and penalty["grid"] == C_GRID and penalty["cv_folds"] == CV_FOLDS == 3
    assert all(penalty[m] in C_GRID for m in ("propensity", "mu0", "mu1"))
    assert CrossFitTMLE().choose_C(X, t, y) == {m: penalty[m] for m in ("propensity", "mu0", "mu1")}
    # the selection folds follow seed, not the cross-fitting folds' generator: n_folds leaves them alone
    assert CrossFitTMLE(n_folds=3).choose_C(X, t, y) == CrossFitTMLE().choose_C(X, t, y)
    fixed = CrossFitTMLE(C=0.5).crossfit_estimate(X, t, y).details["penalty"]
    assert fixed == {"C": 0.5, "propensity": 0.5, "mu0": 0.5, "mu1": 0.5}


@pytest.mark.parametrize("outcome", ["binary", "normal"])
def test_a_number_C_keeps_the_fixed_penalty_exactly(outcome):
    """A number C cross-fits exactly as before C="auto" existed: one scikit-learn model for every nuisance."""
    from sklearn.linear_model import LogisticRegression, Ridge

    X, t, y, _ = simulate(4, outcome=outcome)
    for cls, estimator in ((CrossFitAIPW, "aipw"), (CrossFitTMLE, "tmle")):
        est = cls(C=0.1).crossfit_estimate(X, t, y)
        logistic = LogisticRegression(C=0.1, solver="lbfgs", max_iter=1000)
        model = logistic if outcome == "binary" else Ridge(alpha=10.0)
        kind = "binary" if outcome == "binary" else "continuous"
        ref = crossfit(X, t, y, logistic, model, estimator=estimator, n_folds=5, seed=0, outcome=kind,
                       clip=0.01, level=0.95)  # fmt: skip
        assert (est.ate, est.ci_low, est.ci_high, est.method) == (ref.ate, ref.ci_low, ref.ci_high, ref.method)
        for name in ("propensity", "mu0", "mu1"):
            assert np.array_equal(getattr(est.details["predictions"], name), getattr(ref.details["predictions"], name))


def test_per_arm_penalties_fit_each_arm_with_its_own_C(monkeypatch):
    """When the arms' chosen C differ, each arm's out-of-fold predictions are those of its own C."""
    from sklearn.linear_model import LogisticRegression

    X, t, y, _ = simulate(5)
    chosen = {"propensity": 0.03, "mu0": 0.01, "mu1": 0.1}
    monkeypatch.setattr(CrossFitEffect, "choose_C", lambda self, X, t, y: dict(chosen))
    est = CrossFitAIPW().crossfit_estimate(X, t, y)
    assert est.details["penalty"] == {"C": "auto", **chosen, "grid": C_GRID, "cv_folds": CV_FOLDS}
    assert est.method == "aipw_crossfit" and est.details["crossfit"] == {"n_folds": 5, "seed": 0, "outcome": "binary"}

    def logistic(C):
        return LogisticRegression(C=C, solver="lbfgs", max_iter=1000)

    ref0 = crossfit_predictions(X, t, y, logistic(0.03), logistic(0.01), outcome="binary")
    ref1 = crossfit_predictions(X, t, y, logistic(0.03), logistic(0.1), outcome="binary")
    pred = est.details["predictions"]
    assert np.array_equal(pred.propensity, ref0.propensity) and np.array_equal(pred.folds, ref0.folds)
    assert np.array_equal(pred.mu0, ref0.mu0) and np.array_equal(pred.mu1, ref1.mu1)
    ref = CrossFitAIPW(C=0.1).crossfit_estimate(X, t, y)
    assert est.ate != ref.ate and np.isfinite(est.ate) and est.ci_low < est.ate < est.ci_high


def test_cross_validated_C_edge_cases():
    X, t, y, _ = simulate(6)
    assert cross_validated_C(X, np.ones(N), "binary", 0) is None  # a constant outcome: no model
    few = np.zeros(N)
    few[: CV_FOLDS - 1] = 1.0  # too few of a class to cross-validate: the strongest penalty
    assert cross_validated_C(X, few, "binary", 0) == C_GRID[0]
    assert cross_validated_C(X[:2], np.array([0.5, 1.5]), "continuous", 0) == C_GRID[0]
    assert cross_validated_C(X, y, "binary", 0) in C_GRID
    assert cross_validated_C(X, y + np.arange(N) / N, "continuous", 0) in C_GRID
    constant_arm = y.copy()
    constant_arm[t == 1] = 1.0  # every treated unit has Y = 1: mu1 needs no model
    est = CrossFitAIPW().crossfit_estimate(X, t, constant_arm)
    assert est.details["penalty"]["mu1"] is None and est.details["penalty"]["mu0"] in C_GRID
    assert np.all(est.details["predictions"].mu1 == 1.0)


# ---------------------------------------------------------------------------------------- in textcause
def test_runs_through_evaluate_on_the_tiny_corpus(tiny_corpus):
    table = textcause.evaluate(
        CrossFitAIPW(n_folds=3),
        corpus=tiny_corpus,
        tasks={"linguistic_complexity": [1], "placebo": [1]},
        seeds=[0],
        n_boot=0,
        progress=False,
    )
    assert (table["status"] == "ok").all(), table["error"].dropna().tolist()
    assert list(table["estimator"]) == ["unadjusted", "dml_aipw"] * 2 and (table["split"] == "all").all()
    own = table[table["estimator"] == "dml_aipw"]
    assert (own["model"] == "crossfit_aipw_lr_bigram_binary").all() and (own["representation"] == "bigram_binary").all()
    assert (own["ci_method"] == "the method's own interval").all() and (own["ci_low"] < own["ate"]).all()
    assert np.allclose(own["bias"], own["ate"] - own["true_ate"]) and own["covers_truth"].notna().all()


def test_runs_as_a_benchmark_method_cell_with_a_normal_outcome(tiny_corpus, tmp_path):
    grid = grid_from_dict(
        {
            "corpora": {"tiny": tiny_corpus},
            "tasks": {"placebo": [1]},
            "models": ["textcause.methods.crossfit:CrossFitAIPW", "textcause.methods.crossfit:CrossFitTMLE"],
            "seeds": [1],
            "overrides": {"data.outcome": "normal"},
            "evaluation": {"n_boot": 0},
        }
    )
    rows = [row for cell in grid.cells for row in run_cell(cell, tmp_path / "out").rows]
    assert {r["status"] for r in rows} == {"ok"}, [r.get("error") for r in rows]
    own = {r["estimator"]: r for r in rows if r["estimator"] != "unadjusted"}
    assert set(own) == {"dml_aipw", "dml_tmle"}
    assert own["dml_tmle"]["model"] == "crossfit_tmle_lr_bigram_binary"
    for r in own.values():
        assert r["true_ate"] == 0.0 and r["ci_low"] < r["ate"] < r["ci_high"] and np.isfinite(r["bias"])


def test_a_thin_subclass_fingerprint_covers_its_shared_base(monkeypatch):
    from textcause.methods import adapters
    from textcause.methods.crossfit import CrossFitAIPW, CrossFitEffect

    before = describe_method(CrossFitAIPW()).fingerprint
    real = adapters._source
    monkeypatch.setattr(adapters, "_source", lambda obj: real(obj) + ("# edited" if obj is CrossFitEffect else ""))
    assert describe_method(CrossFitAIPW()).fingerprint != before  # editing the base re-runs resumed cells

"""Stages 3 and 4: the recommended model refit as it was fitted, refuted, and its sensitivity measured."""

from __future__ import annotations

import json

import numpy as np
import pytest
from advise.advise_corpus import advise_dict, write_study_corpus
from scipy.optimize import minimize

from textcause.advise import refit as refit_module
from textcause.advise.confounding import ALL_TEXT, headline, sensitivity
from textcause.advise.inputs import prepare
from textcause.advise.refit import RefitPlan, folds_of, plan_for
from textcause.advise.robustness import robustness
from textcause.advise.spec import advise_from_dict
from textcause.paths import model_config_path
from textcause.sensitivity import AustenCurve, Benchmark, robustness_value


def test_the_synthetic_study_is_refuted_and_its_sensitivity_measured(tmp_path):
    corpus = write_study_corpus(tmp_path / "c.jsonl.gz")
    spec = advise_from_dict(advise_dict(corpus, e_value=True), source="toy.yaml")
    prepared = prepare(spec, tmp_path / "out")
    best = {"model": "lr_unigram_binary", "estimator": "ipw"}
    found = robustness(
        prepared.study, best, None, binary=True, e_value=True, out=tmp_path / "out", name="toy",
        estimate_dir=tmp_path / "out" / "estimate", n_boot=50,
    )  # fmt: skip
    assert found["status"] == "ok", found.get("reason")
    placebo, common, sub = found["refuters"]
    assert placebo["refuter"] == "placebo_treatment" and placebo["new_low"] <= 0 <= placebo["new_high"]
    assert placebo["passed"] and placebo["expected"] == 0
    assert common["new_low"] <= common["expected"] <= common["new_high"] and common["passed"]
    assert common["expected"] == found["estimate"]["refit_on_all_users"][0] == sub["expected"]
    # not estimated by a run: the refit's own estimate is the target bias
    assert found["austen"]["bias"] == pytest.approx(found["estimate"]["ate"])
    refit = found["refit"]
    assert refit["penalty"] == "l2" and not refit["approximated"] and refit["c_per_user"] == pytest.approx(1 / 0.02)
    assert "C = 1 / (weight decay 0.02 x training users)" in refit["note"]
    names = [b["name"] for b in found["austen"]["benchmarks"]]
    assert names[-1] == ALL_TEXT and all(n.startswith("topic ") for n in names[:-1])
    assert found["e_value"]["point"] >= 1 and found["e_value"]["ci"] >= 1
    assert found["sentence"].startswith("The estimate (") and "would need" in found["sentence"]
    assert (tmp_path / "out" / found["figure"]).is_file()
    json.dumps(found)  # advise.json carries it as it is


def test_the_lbfgs_models_penalty_is_the_same_objective_in_scikit_learn():
    """mean log-loss + weight_decay / 2 ||w||^2 (intercept free) has the optimum of C = 1 / (wd n)."""
    rng = np.random.default_rng(0)
    n, wd = 200, 0.05
    X = rng.normal(size=(n, 3))
    t = (rng.random(n) < 1 / (1 + np.exp(-X @ [1.0, -0.5, 0.2]))).astype(int)
    plan = plan_for("lr_unigram_binary", model_config_path("lr_unigram_binary"), overrides={
        "model.init_args.weight_decay": wd}, n_train=n)  # fmt: skip
    fit = plan.learner(n).fit(X, t)

    def objective(v):
        z = X @ v[:3] + v[3]
        return np.mean(np.logaddexp(0, z) - t * z) + wd / 2 * v[:3] @ v[:3]

    best = minimize(objective, np.zeros(4), method="BFGS", options={"gtol": 1e-10}).x
    assert np.allclose(fit.coef_.ravel(), best[:3], atol=1e-4) and fit.intercept_[0] == pytest.approx(best[3], abs=1e-4)


def test_each_kind_of_model_gets_its_refit(monkeypatch):
    assert plan_for("unadjusted", model_config_path("unadjusted"), n_train=80).kind == "constant"
    nn = plan_for("nn_unigram_binary", model_config_path("nn_unigram_binary"), n_train=80)
    assert nn.approximated and nn.representation == "unigram_binary" and nn.c_per_user == pytest.approx(100.0)
    assert nn.note.startswith("approximated: the model (PropensityModel)")
    # a searched network's stand-in takes the decay it chose (its rows' tuned), not its YAML's 0.01
    searched = '{"model.init_args.l1":0.003,"model.init_args.lr":0.003,"model.init_args.weight_decay":0.0}'
    assert (
        plan_for("nn_unigram_binary", model_config_path("nn_unigram_binary"), n_train=80, tuned=searched).c_per_user
        == 80
    )
    decayed = searched.replace('"model.init_args.weight_decay":0.0', '"model.init_args.weight_decay":0.02')
    assert (
        plan_for("nn_unigram_binary", model_config_path("nn_unigram_binary"), n_train=80, tuned=decayed).c_per_user
        == 50
    )
    method = plan_for("blind", None, n_train=80)
    assert method.approximated and method.representation == "bigram_binary" and "an outside method" in method.note
    chosen = {"penalty": "l1", "C": 0.5, "feature_scaling": "maxabs"}
    monkeypatch.setattr(refit_module, "_tuned_choice", lambda checkpoint, tuned=None: chosen)
    tuned = plan_for("lr_tuned_unigram_binary", model_config_path("lr_tuned_unigram_binary"), n_train=80)
    assert (tuned.penalty, tuned.solver, tuned.scale, tuned.approximated) == ("l1", "tuned", "maxabs", False)
    model = tuned.learner(160)  # a fold of 160 users: C scaled so the penalty per user is the chosen one
    assert (model.C, model.solver, model.l1_ratio) == (pytest.approx(0.25), "liblinear", 1.0)
    assert "(l1, C = 0.5 on its 80 training users" in tuned.note
    l2 = refit_module.RefitPlan("m", "unigram_binary", "logistic", "l2", 40.0, 0.0, "maxabs", "tuned")
    assert (l2.learner(160).solver, l2.learner(160).dual) == ("liblinear", False)  # the tuned LR's primal L2


def test_the_sentence_names_the_strength_and_the_groups_that_reach_it():
    alpha, r2 = np.array([0.1, 0.3, 0.5]), np.array([0.9, 0.3, 0.1])
    rv = robustness_value(4.18445, 783)
    strong = AustenCurve(0.2, "ate", alpha, r2, np.zeros(3), (Benchmark("topic 1 (beer)", 0.4, 0.5),))
    text = headline(0.2, 0.1, 0.3, strong, rv)
    assert text == (
        "To overturn the estimated effect (+0.200 [+0.100, +0.300], bring it to 0), a hidden confounder that the "
        "text does not carry would need an influence on treatment (alpha) and a partial R² with the outcome of at "
        "least 0.30 each (robustness value of the OLS fit: 13.9% of the residual variance of both), a strength that "
        "the observed 'topic 1 (beer)' reaches."
    )
    weak = AustenCurve(0.2, "ate", alpha, r2, np.zeros(3), (Benchmark("a", 0.1, 0.05), Benchmark("b", 0.3, 0.2)))
    assert headline(0.2, -0.1, 0.5, weak, rv).endswith(
        "more than the strongest observed covariate group, 'b' (alpha 0.30, R² 0.20)."
    )
    assert headline(0.2, -0.1, 0.5, weak, rv).startswith(
        "The estimate (+0.200 [-0.100, +0.500]) already does not exclude 0"
    )


def test_no_e_value_for_a_continuous_outcome_and_none_unless_asked():
    rng = np.random.default_rng(1)
    n = 300
    X = rng.random((n, 6))
    t = (rng.random(n) < 0.5).astype(float)
    y = 0.5 * t + X[:, 0] + rng.normal(size=n)
    plan = RefitPlan("m", "unigram_binary", "logistic", c_per_user=100.0)
    folds = folds_of(t, 5, 0)
    out = sensitivity(plan, t, y, X, None, folds, bias=0.5, binary=False, e_value_asked=True)
    assert out["e_value"] is None and out["outcome_model"].startswith("ridge regression")
    assert out["ols"].estimate == pytest.approx(0.5, abs=0.3) and out["rv"].rv_q > 0
    yb = (y > np.median(y)).astype(float)
    assert sensitivity(plan, t, yb, X, None, folds, bias=0.3, binary=True, e_value_asked=False)["e_value"] is None


def test_the_tuned_choice_is_read_from_a_real_checkpoint(tmp_path):
    import torch

    from textcause.models.components.linear import LogisticRegression
    from textcause.models.tuned_lr import TunedLogisticRegression

    model = TunedLogisticRegression(LogisticRegression(3), feature_scaling="none")
    model.set_extra_state({"penalty": "elasticnet", "C": 0.3, "l1_ratio": 0.5})
    path = tmp_path / "last.ckpt"
    torch.save({"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams)}, path)
    assert refit_module._tuned_choice(str(path)) == {
        "penalty": "elasticnet", "C": 0.3, "l1_ratio": 0.5, "feature_scaling": "none",
    }  # fmt: skip
    assert refit_module._tuned_choice(str(tmp_path / "missing.ckpt")) == {}


def test_the_tuned_choice_is_read_from_the_row_before_the_checkpoint(tmp_path):
    import torch

    from textcause.models.components.linear import LogisticRegression
    from textcause.models.tuned_lr import TunedLogisticRegression

    model = TunedLogisticRegression(LogisticRegression(3), feature_scaling="none")
    model.set_extra_state({"penalty": "elasticnet", "C": 0.3, "l1_ratio": 0.5})
    path = tmp_path / "last.ckpt"
    torch.save({"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams)}, path)
    record = {"rows": [{"estimator": "unadjusted"}, {"estimator": "ipw", "tuned": '{"C":0.5,"penalty":"l1"}'}]}
    assert refit_module.tuned_of(record) == '{"C":0.5,"penalty":"l1"}' and refit_module.tuned_of({}) is None
    assert refit_module._tuned_choice(str(path), refit_module.tuned_of(record)) == {"penalty": "l1", "C": 0.5}
    assert refit_module._tuned_choice(None, '{"C":2.0,"l1_ratio":0.25,"penalty":"elasticnet"}') == {
        "penalty": "elasticnet", "C": 2.0, "l1_ratio": 0.25,
    }  # fmt: skip
    config = model_config_path("lr_tuned_unigram_binary")
    plan = plan_for(
        "lr_tuned_unigram_binary", config, n_train=80, checkpoint=str(path), tuned=refit_module.tuned_of(record)
    )
    assert (plan.penalty, plan.c_per_user, plan.scale, plan.approximated) == (
        "l1",
        40.0,
        "maxabs",
        False,
    )  # config's scaling
    own = plan_for("lr_tuned_unigram_binary", config, n_train=80, overrides={"model.init_args.feature_scaling": "none"},
                   tuned='{"C":0.5,"penalty":"l2"}')  # fmt: skip
    assert (own.penalty, own.scale) == ("l2", "none")
    from_ckpt = plan_for("lr_tuned_unigram_binary", config, n_train=80, checkpoint=str(path))  # no row: the checkpoint
    assert (from_ckpt.penalty, from_ckpt.l1_ratio, from_ckpt.scale) == ("elasticnet", 0.5, "none")


def test_a_risk_ratio_that_does_not_exist_leaves_the_other_analyses_standing(monkeypatch):
    """Before: the E-value's ValueError failed the whole stage (Twitter study: no refuters, no Austen plot)."""
    from textcause.advise import confounding

    def no_ratio(*args, **kwargs):
        raise ValueError("The adjusted mean outcome of an arm is not positive in risk_ratio.")

    monkeypatch.setattr(confounding, "risk_ratio", no_ratio)
    rng = np.random.default_rng(0)
    n = 300
    X = rng.random((n, 6))  # non-negative, as text features are (the benchmark groups are NMF topics)
    t = (rng.random(n) < 0.2 + 0.6 * X[:, 0]).astype(float)
    y = ((0.5 * t + X[:, 0] + rng.normal(size=n)) > 0.5).astype(float)
    plan = RefitPlan("m", "unigram_binary", "logistic", c_per_user=100.0)
    out = sensitivity(plan, t, y, X, None, folds_of(t, 5, 0), bias=0.3, binary=True, e_value_asked=True)
    assert out["e_value"] is None and "not positive" in out["e_value_error"]
    assert out["curve"] is not None and out["rv"].rv_q > 0

"""evaluate_propensities with outcome predictions: AIPW and TMLE rows with the bootstrap and the
influence-function interval, a continuous-outcome task end to end, the outcome kind of a task, errors."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from textcause.data.build import DataSettings, build_data, outcome_kind
from textcause.estimators import CI_INFLUENCE, aipw, bootstrap_ci, tmle
from textcause.metrics.evaluation import CI_METHOD, evaluate_propensities
from textcause.run.evaluation import EvaluationSettings, evaluate_predictions


def binary_data(n: int = 600, seed: int = 0):
    """Confounded binary data with a known ATE of 0.3 and the true nuisances."""
    rng = np.random.default_rng(seed)
    x = rng.random(n)
    p = 0.2 + 0.6 * x
    t = (rng.random(n) < p).astype(float)
    mu0, mu1 = 0.1 + 0.4 * x, 0.4 + 0.4 * x
    y = (rng.random(n) < np.where(t == 1, mu1, mu0)).astype(float)
    return t, y, p, mu0, mu1


def test_aipw_and_tmle_rows_carry_both_intervals_each_labelled():
    t, y, p, mu0, mu1 = binary_data()
    rows = {
        r["estimator"]: r
        for r in evaluate_propensities(
            t, y, p, true_ate=0.3, estimators=["ipw", "aipw", "tmle"], n_boot=60, seed=2, mu0=mu0, mu1=mu1
        )
    }
    assert list(rows) == ["unadjusted", "ipw", "aipw", "tmle"]
    for name, fn in (("aipw", aipw), ("tmle", tmle)):
        kwargs = {"outcome": "binary"} if name == "tmle" else {}
        point, boot = (
            fn(t, y, p, mu0, mu1, **kwargs),
            bootstrap_ci(name, t, y, p, mu0, mu1, n_boot=60, seed=2, **kwargs),
        )
        r = rows[name]
        assert r["ate"] == pytest.approx(point.ate) and abs(r["bias"]) < 0.1
        assert (r["ci_low"], r["ci_high"], r["ci_method"]) == (boot.ci_low, boot.ci_high, CI_METHOD)
        assert (r["influence_ci_low"], r["influence_ci_high"]) == (point.ci_low, point.ci_high)
        assert r["influence_ci_method"] == CI_INFLUENCE
        assert r["covers_truth"] == (boot.ci_low <= 0.3 <= boot.ci_high)
        assert r["influence_covers_truth"] == (point.ci_low <= 0.3 <= point.ci_high)
    for name in ("unadjusted", "ipw"):  # the propensity-only rows are what they always were
        assert not {"influence_ci_low", "influence_ci_high", "influence_ci_method"} & set(rows[name])


def test_influence_interval_follows_the_level_and_exists_without_a_bootstrap():
    t, y, p, mu0, mu1 = binary_data()
    row = evaluate_propensities(t, y, p, estimators=["aipw"], n_boot=0, level=0.8, mu0=mu0, mu1=mu1)[1]
    point = aipw(t, y, p, mu0, mu1, level=0.8)
    assert row["ci_low"] is None and row["ci_method"] is None and "covers_truth" not in row
    assert (row["influence_ci_low"], row["influence_ci_high"]) == (point.ci_low, point.ci_high)
    assert "influence_covers_truth" not in row  # no true ATE given


def test_without_outcome_predictions_aipw_and_tmle_are_skipped_with_a_warning():
    t, y, p, _, _ = binary_data()
    with pytest.warns(UserWarning, match=r"tmle needs outcome-model predictions \(mu0, mu1\); it was skipped"):
        rows = evaluate_propensities(t, y, p, estimators=["ipw", "tmle"], n_boot=0)
    assert [r["estimator"] for r in rows] == ["unadjusted", "ipw"]


def test_evaluation_errors():
    t, y, p, mu0, mu1 = binary_data(n=50)
    with pytest.raises(ValueError, match="Pass both 'mu0' and 'mu1' to evaluate_propensities"):
        evaluate_propensities(t, y, p, estimators=["aipw"], n_boot=0, mu0=mu0)
    with pytest.raises(ValueError, match=r"Found input variables with inconsistent numbers of samples: \[50, 49, 50\]"):
        evaluate_propensities(t, y, p, estimators=["aipw"], n_boot=0, mu0=mu0[:-1], mu1=mu1)
    with pytest.raises(ValueError, match="mu1"):
        evaluate_propensities(t, y, p, estimators=["aipw"], n_boot=0, mu0=mu0, mu1=np.full(50, np.nan))
    with pytest.raises(
        ValueError, match=r"The 'outcome' parameter of evaluate_propensities must be one of \['binary', 'continuous'\]"
    ):
        evaluate_propensities(t, y, p, n_boot=0, outcome="normal")
    with pytest.raises(ValueError, match="'estimators' parameter of EvaluationSettings"):
        EvaluationSettings(estimators=("ipw", "doubly_robust"))
    assert EvaluationSettings(estimators=("ipw", "aipw", "tmle")).estimators == ("ipw", "aipw", "tmle")


def test_outcome_kind_of_tasks():
    semi = SimpleNamespace(task="linguistic_complexity", name="lc-2", info={"outcome": "normal"})
    assert outcome_kind(semi) == "continuous"
    assert outcome_kind(SimpleNamespace(task="placebo", info={"outcome": "binary"})) == "binary"
    assert outcome_kind(SimpleNamespace(task="observational", info={"threshold": None})) == "continuous"
    assert outcome_kind(SimpleNamespace(task="observational", info={"threshold": 0.5})) == "binary"
    with pytest.raises(ValueError, match="The task 'lc-1' does not say its outcome kind"):
        outcome_kind(SimpleNamespace(task="x", name="lc-1", info={}))


def _true_means(task) -> tuple[np.ndarray, np.ndarray]:
    """E[Y(0) | class], E[Y(1) | class] of a semi-synthetic task, from its outcome table."""
    table = np.asarray(task.info["outcome_means"], dtype=float)
    c = task.latent_class.astype(int) - 1
    return table[c, 0], table[c, 1]


def test_continuous_outcome_task_end_to_end(tiny_corpus):
    """A task drawn with outcome='normal': the run path sees 'continuous' and TMLE / AIPW recover the truth."""
    settings = DataSettings(corpus=tiny_corpus, task="linguistic_complexity", level=1, seed=0, representation="none")
    built = build_data(DataSettings(**{**settings.__dict__, "outcome": "normal"}))
    task = built.task
    assert outcome_kind(task) == "continuous" and outcome_kind(build_data(settings).task) == "binary"
    assert not np.all((task.outcome == 0) | (task.outcome == 1))
    idx = np.arange(len(task))
    mu0, mu1 = _true_means(task)
    pred = {
        "index": idx,
        "t": task.treatment.astype(float),
        "y": task.outcome.astype(float),
        "propensity": task.propensity.astype(float),
        "p_true": task.propensity.astype(float),
        "mu0": mu0,
        "mu1": mu1,
    }
    data = SimpleNamespace(
        task=task,
        hparams=SimpleNamespace(corpus="tiny", task=task.task, level=task.level, seed=0, representation="none"),
    )
    model = SimpleNamespace()
    evaluation = EvaluationSettings(n_boot=30, estimators=("ipw", "aipw", "tmle"))
    rows, _ = evaluate_predictions(pred, model, data, evaluation, "run")
    rows = {r["estimator"]: r for r in rows}
    assert "error" not in rows["tmle"]
    args = (pred["t"], pred["y"], pred["propensity"], mu0, mu1)
    assert rows["tmle"]["ate"] == pytest.approx(tmle(*args, outcome="continuous").ate)
    for name in ("aipw", "tmle"):
        r = rows[name]
        assert abs(r["ate"] - task.true_ate) < 0.25, (name, r["ate"], task.true_ate)
        assert r["influence_ci_low"] < r["ate"] < r["influence_ci_high"] and r["ci_low"] < r["ci_high"]
        assert r["influence_ci_method"] == CI_INFLUENCE
    # the same predictions without outcome predictions: the doubly robust rows are skipped with a warning
    plain = {k: v for k, v in pred.items() if k not in ("mu0", "mu1")}
    with pytest.warns(UserWarning, match="gives no outcome predictions .* aipw and tmle were skipped"):
        rows, _ = evaluate_predictions(plain, model, data, evaluation, "run")
    assert [r["estimator"] for r in rows] == ["unadjusted", "ipw"]

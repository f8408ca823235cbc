"""evaluate_cfr on synthetic representations: every method beside identity, probes, TPR gaps, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from textcause.counterfactual.cfr.evaluate import METHODS, CFRSettings, evaluate_cfr
from textcause.counterfactual.cfr.pairs import make_pairs


def synthetic(n: int = 1200, d: int = 12, seed: int = 0):
    """x = noise + z v + W[y]; the true counterfactual flips z (a pure mean shift, so CFRs can match it)."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 2, n)
    y = np.where(rng.random(n) < 0.7, z, rng.integers(0, 2, n))  # the label leans on the concept
    v, w = rng.normal(size=d), 0.25 * rng.normal(size=(2, d))
    noise = rng.normal(size=(n, d))
    x, x_cf = noise + np.outer(z, v) + w[y], noise + np.outer(1 - z, v) + w[y]
    pairs = make_pairs(
        [f"t{i}" for i in range(n)],
        [f"c{i}" for i in range(n)],
        np.where(z == 1, "male", "female"),
        np.where(y == 1, "b", "a"),
        concept_values=("female", "male"),
    )
    return x, x_cf, pairs


@pytest.fixture(scope="module")
def result():
    x, x_cf, pairs = synthetic()
    return evaluate_cfr(x, x_cf, pairs, CFRSettings(n_boot=50, n_samples=5))


def test_every_method_has_pip_atv_and_an_interval(result):
    for m in METHODS:
        p = result.value("cfr", m, "pip")
        assert 0 <= p <= 1 and 0 <= result.value("cfr", m, "atv") <= 1
        row = next(r for r in result.rows if (r["method"], r["metric"]) == (m, "atv"))
        assert row["lo"] <= row["value"] <= row["hi"]
    assert result.info["n_train"] + result.info["n_test"] == 1200


def test_identity_estimates_no_effect_and_cfrs_beat_it_on_a_mean_shift(result):
    assert result.value("cfr", "identity", "effect", "b") == 0.0
    assert result.value("cfr", "true_text", "effect", "b") > 0.05  # the concept moves Yhat
    # the true counterfactual is a mean shift: the oracle and LEACE CFRs are much closer than identity
    for m in ("oracle_cfr", "cfr", "cfr_stochastic", "leace_mean_cfr", "leace_mean_cfr_stochastic"):
        assert result.value("cfr", m, "atv") < result.value("cfr", "identity", "atv")
        row = next(r for r in result.rows if (r["method"], r["metric"]) == (m, "atv_vs_identity"))
        assert row["hi"] < 0


def test_probes_at_chance_after_erasure(result):
    assert result.value("probe", "none", "auc") > 0.9
    for eraser in ("orth", "leace", "oracle"):
        assert abs(result.value("probe", eraser, "auc") - 0.5) < 0.07


def test_tpr_gaps_for_every_training_variant(result):
    for a in ("original", "erased", "leace_erased", "cfr_augmented", "leace_mean_cfr_augmented", "text_augmented"):
        gaps = {c: result.value("tpr", a, "gap", c) for c in ("a", "b")}
        assert all(-1 <= g <= 1 for g in gaps.values())
        assert result.value("tpr", a, "mean_abs_gap") == pytest.approx(np.mean(np.abs(list(gaps.values()))))
        assert 0 <= result.value("tpr", a, "weighted_abs_gap") <= max(map(abs, gaps.values())) + 1e-12
    # the original classifier uses the concept: a visible gap that augmentation shrinks
    assert result.value("tpr", "original", "mean_abs_gap") > result.value("tpr", "text_augmented", "mean_abs_gap")


def test_same_seed_same_rows():
    x, x_cf, pairs = synthetic(400)
    a = evaluate_cfr(x, x_cf, pairs, CFRSettings(n_boot=20, n_samples=3))
    b = evaluate_cfr(x, x_cf, pairs, CFRSettings(n_boot=20, n_samples=3))
    assert [(r["method"], r["metric"], r["klass"], r["value"], r["lo"]) for r in a.rows] == [
        (r["method"], r["metric"], r["klass"], r["value"], r["lo"]) for r in b.rows
    ]


def test_bad_inputs():
    x, x_cf, pairs = synthetic(100)
    with pytest.raises(ValueError, match="one shape"):
        evaluate_cfr(x, x_cf[:, :3], pairs)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        evaluate_cfr(x[:50], x_cf, pairs)
    with pytest.raises(ValueError, match="'methods' parameter"):
        CFRSettings(methods=("identity", "magic"))
    with pytest.raises(ValueError, match="'test_fraction' parameter"):
        CFRSettings(test_fraction=1.0)

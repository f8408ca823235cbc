"""LEACE / oracle erasure (concept-erasure) and the CFRs: a held-out probe at chance, exact CFRs."""

from __future__ import annotations

import numpy as np
import pytest

from textcause.counterfactual.cfr.erasure import averaged_proba, fit_editor
from textcause.counterfactual.cfr.evaluate import make_classifier, probe_scores
from textcause.counterfactual.cfr.metrics import atv, pip


def gaussian(n: int, d: int = 16, shift: float = 1.5, seed: int = 0):
    """x = noise + z * v (+ a correlated nuisance), x_cf = the same noise with z flipped."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 2, n)
    v = rng.normal(size=d) * shift / np.sqrt(d)
    noise = rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) / np.sqrt(d)
    return noise + np.outer(z, v), noise + np.outer(1 - z, v), z


@pytest.mark.parametrize("method", ["leace", "oracle"])
def test_erasure_leaves_a_held_out_probe_at_chance(method):
    x, _, z = gaussian(4000)
    tr, te = slice(0, 3000), slice(3000, None)
    before = probe_scores(make_classifier(1.0, tol=1e-8).fit(x[tr], z[tr]), x[te], z[te])
    assert before["auc"] > 0.8  # the concept is linearly readable before
    editor = fit_editor(x[tr], z[tr], method=method)
    assert editor.rank == 1
    erased_tr = editor.erase(x[tr], z[tr]) if method == "oracle" else editor.erase(x[tr])
    erased_te = editor.erase(x[te], z[te]) if method == "oracle" else editor.erase(x[te])
    after = probe_scores(make_classifier(1.0, tol=1e-8).fit(erased_tr, z[tr]), erased_te, z[te])
    assert abs(after["auc"] - 0.5) < 0.05
    assert after["accuracy"] <= after["majority"] + 0.03


def test_small_l2_normalised_vectors_with_constant_coordinates_are_erased_too():
    # MiniLM-like: small, unit-norm rows, and a few coordinates constant on the corpus (3 are on the
    # templates). Erasure leaves class-following rounding residue there; standardising it would let
    # the probe read the concept from noise, so the probe drops near-constant features.
    x, _, z = gaussian(3000, d=32, shift=3.0, seed=1)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    x[:, :3] = 0.03
    editor = fit_editor(x[:2000], z[:2000])
    erased = editor.erase(x)
    assert 0 < erased[:2000, :3].std(axis=0).max() < 1e-12  # the residue
    probe = make_classifier(1.0, tol=1e-8).fit(erased[:2000], z[:2000])
    assert abs(probe_scores(probe, erased[2000:], z[2000:])["auc"] - 0.5) < 0.05


def test_erased_class_means_match_on_the_fitting_data():
    x, _, z = gaussian(2000)
    r = fit_editor(x, z).erase(x)
    np.testing.assert_allclose(r[z == 0].mean(0), r[z == 1].mean(0), atol=1e-8)


def test_deterministic_cfr_moves_to_the_target_class_mean():
    x, _, z = gaussian(3000)
    editor = fit_editor(x, z)
    cfr = editor.counterfactual(x, 1 - z)
    # the concept component of every CFR is the target class's mean component
    comp = editor.component(cfr)
    np.testing.assert_allclose(comp[z == 0], np.broadcast_to(editor.class_means[1], comp[z == 0].shape), atol=1e-8)
    # a CFR to the unit's own value changes only the concept component
    same = editor.counterfactual(x, z)
    np.testing.assert_allclose(editor.erase(same), editor.erase(x), atol=1e-8)


def test_oracle_cfr_is_the_mean_shift():
    x, _, z = gaussian(3000)
    editor = fit_editor(x, z, method="oracle")
    diff = x[z == 1].mean(0) - x[z == 0].mean(0)
    np.testing.assert_allclose(editor.coef, diff, atol=1e-8)
    np.testing.assert_allclose(editor.counterfactual(x, 1 - z, z), x + np.outer(1 - 2 * z, diff), atol=1e-8)


def test_pip_1_and_atv_0_when_the_cfr_is_the_true_counterfactual():
    x, _, z = gaussian(1000)
    y = (x[:, 0] > 0).astype(int)
    clf = make_classifier(1.0).fit(x, y)
    editor = fit_editor(x, z)
    x_cf = editor.counterfactual(x, 1 - z)  # a "true" counterfactual embedding equal to the CFR
    p_true, p_cfr = clf.predict_proba(x_cf), clf.predict_proba(editor.counterfactual(x, 1 - z))
    assert pip(p_true, p_cfr) == 1.0
    assert atv(p_true, p_cfr) == 0.0


def test_stochastic_cfrs_are_drawn_from_the_target_pool():
    x, _, z = gaussian(500)
    editor = fit_editor(x, z)
    rng = np.random.default_rng(0)
    samples = editor.sample_counterfactuals(x[:10], 1 - z[:10], rng, 7)
    assert samples.shape == (7, 10, x.shape[1])
    comps = editor.component(samples.reshape(-1, x.shape[1])).reshape(7, 10, -1)
    pool = {tuple(np.round(p, 8)) for p in editor.pools[int(1 - z[0])]}
    assert all(tuple(np.round(c, 8)) in pool for c in comps[:, 0, :])
    mean = averaged_proba(lambda a: np.tile([0.25, 0.75], (len(a), 1)), samples)
    np.testing.assert_allclose(mean, np.tile([0.25, 0.75], (10, 1)))
    # the same seed draws the same CFRs
    again = editor.sample_counterfactuals(x[:10], 1 - z[:10], np.random.default_rng(0), 7)
    np.testing.assert_array_equal(samples, again)


@pytest.mark.parametrize(
    "x, z, match",
    [
        (np.zeros((4, 3)), np.array([0, 0, 0, 0]), "both values"),
        (np.zeros((4, 3)), np.array([0, 1, 2, 0]), "0 / 1"),
        (np.zeros(4), np.array([0, 1, 0, 1]), "2-d array"),
        (np.full((4, 3), np.nan), np.array([0, 1, 0, 1]), "non-finite"),
        (np.zeros((4, 3)), np.array([0, 1, 0]), "inconsistent numbers of samples"),
    ],
)
def test_bad_inputs(x, z, match):
    with pytest.raises(ValueError, match=match):
        fit_editor(x, z)


def test_oracle_needs_z():
    x, _, z = gaussian(100)
    with pytest.raises(ValueError, match="needs the concept value"):
        fit_editor(x, z, method="oracle").erase(x)
    with pytest.raises(ValueError, match="'method' parameter"):
        fit_editor(x, z, method="inlp")

"""The selection sampler S ~ Bernoulli(f(W, G)): the intended W-G association on synthetic authors."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import linregress, pearsonr

from textcause.gender.selection import (
    association,
    draw_w,
    expected_association,
    select_authors,
    selection_probability,
)

N_W = 8


def synthetic_authors(n: int, p_female: float = 0.5, seed: int = 0):
    """``n`` authors with a gender drawn with ``p_female`` and W drawn independently of it."""
    rng = np.random.default_rng(seed)
    female = rng.random(n) < p_female
    w = draw_w(n, N_W, rng)
    return np.array([f"a{i}" for i in range(n)], dtype=object), female, w


def test_probability_by_hand() -> None:
    w = np.array([0, 7, 0, 7, 3])
    female = np.array([True, True, False, False, True])
    got = selection_probability(w, female, N_W, 0.6)
    x = w / 7 - 0.5
    g = np.array([1, 1, -1, -1, 1])
    np.testing.assert_allclose(got, 0.5 + 0.6 * x * g)
    np.testing.assert_allclose(got[:4], [0.2, 0.8, 0.8, 0.2])
    np.testing.assert_allclose(selection_probability(w, female, N_W, 0.0), 0.5)


def test_association_matches_linregress_and_pearsonr() -> None:
    rng = np.random.default_rng(3)
    w = rng.integers(0, N_W, 500)
    female = rng.random(500) < 0.2 + 0.08 * w
    a = association(w, female, N_W)
    share = np.array([100 * female[w == k].mean() for k in range(N_W)])
    ref = linregress(np.arange(N_W), share)
    np.testing.assert_allclose(a.share, share)
    assert a.count.tolist() == [int((w == k).sum()) for k in range(N_W)]
    assert a.slope == pytest.approx(ref.slope) and a.r == pytest.approx(ref.rvalue)
    assert a.corr == pytest.approx(pearsonr(w, female.astype(float)).statistic)


def test_strength_zero_keeps_w_and_g_independent() -> None:
    authors, female, w = synthetic_authors(200_000)
    before = association(w, female, N_W)
    sel = select_authors(authors, female, w, N_W, 0.0, np.random.default_rng(1))
    assert 0.49 < len(sel) / len(authors) < 0.51
    # per-W shares have a standard error of about 0.45 points with ~12,500 authors each
    assert abs(sel.association.slope) < 0.3 and abs(sel.association.corr) < 0.01
    assert abs(before.slope) < 0.3


@pytest.mark.parametrize("strength", [0.25, 0.5, 1.0])
@pytest.mark.parametrize("p_female", [0.5, 0.4])
def test_strength_gives_the_closed_form_association(strength: float, p_female: float) -> None:
    authors, female, w = synthetic_authors(200_000, p_female=p_female)
    sel = select_authors(authors, female, w, N_W, strength, np.random.default_rng(2))
    share, slope = expected_association(strength, N_W, p_female)
    np.testing.assert_allclose(sel.association.share, share, atol=2.0)
    assert sel.association.slope == pytest.approx(slope, abs=0.35)
    assert 0.48 < len(sel) / len(authors) < 0.52  # about half the authors at every strength
    if p_female == 0.5:
        assert slope == pytest.approx(100 * strength / (N_W - 1))


def test_closed_form_by_hand() -> None:
    # p = 0.4, strength 1, n_w = 3: x = -1/2, 0, 1/2 -> f(female) = 0, 1/2, 1 and f(male) = 1, 1/2, 0
    share, slope = expected_association(1.0, 3, 0.4)
    np.testing.assert_allclose(share, [0.0, 40.0, 100.0])
    assert slope == pytest.approx(50.0)
    share, _ = expected_association(0.5, 3, 0.4)  # f(female) = 1/4, 1/2, 3/4
    assert share[0] == pytest.approx(100 * 0.4 * 0.25 / (0.4 * 0.25 + 0.6 * 0.75))


def test_samples_are_nested_across_strengths_and_seeded() -> None:
    authors, female, w = synthetic_authors(5_000)
    weak = select_authors(authors, female, w, N_W, 0.3, np.random.default_rng(7))
    strong = select_authors(authors, female, w, N_W, 0.9, np.random.default_rng(7))
    again = select_authors(authors, female, w, N_W, 0.3, np.random.default_rng(7))
    favoured = set(authors[(w / (N_W - 1) - 0.5) * np.where(female, 1, -1) > 0])
    assert (set(weak.authors) & favoured) <= set(strong.authors)
    assert weak.authors.tolist() == again.authors.tolist()


def test_full_strength_separates_the_extremes() -> None:
    authors, female, w = synthetic_authors(10_000)
    sel = select_authors(authors, female, w, N_W, 1.0, np.random.default_rng(0))
    assert not sel.female[sel.w_index == 0].any()
    assert sel.female[sel.w_index == N_W - 1].all()


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: selection_probability(np.array([0, 1]), np.array([True, False]), N_W, 1.5), "'strength' parameter"),
        (lambda: selection_probability(np.array([0, 9]), np.array([True, False]), N_W, 0.5), "integer indices"),
        (lambda: selection_probability(np.array([0, 1]), np.array([True]), N_W, 0.5), "inconsistent numbers"),
        (lambda: association(np.array([0, 0]), np.array([1, 0]), N_W), "two"),
        (lambda: association(np.array([0, 1]), np.array([2, 0]), N_W), "booleans or 0/1"),
        (lambda: draw_w(3, 1, np.random.default_rng(0)), "'n_w' parameter"),
        (lambda: expected_association(0.5, N_W, 1.0), "'p_female' parameter"),
        (
            lambda: select_authors(["a", "b"], [True, False], [0], N_W, 0.5, np.random.default_rng(0)),
            "inconsistent numbers",
        ),
    ],
)
def test_bad_input_is_one_value_error(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()

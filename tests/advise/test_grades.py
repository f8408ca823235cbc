"""Grades by hand: mean absolute bias, coverage, placebo false discoveries, the rank and the choice."""

from __future__ import annotations

import pandas as pd
import pytest

from textcause.advise.grades import candidate_pairs, grade, recommend


def _rows(model, est, biases, covers, placebo_ci):
    rows = [
        {"model": model, "estimator": est, "task": "linguistic_complexity", "level": 3, "seed": s, "ate": 0.4 + b,
         "bias": b, "ci_low": 0.3 + b, "ci_high": 0.5 + b, "covers_truth": c}
        for s, (b, c) in enumerate(zip(biases, covers))
    ]  # fmt: skip
    rows += [
        {"model": model, "estimator": est, "task": "placebo", "level": 1, "seed": s, "ate": (lo + hi) / 2,
         "bias": (lo + hi) / 2, "ci_low": lo, "ci_high": hi, "covers_truth": lo <= 0 <= hi}
        for s, (lo, hi) in enumerate(placebo_ci)
    ]  # fmt: skip
    return rows


def test_grades_equal_a_hand_computation_and_the_blind_method_ranks_last():
    good = _rows("lr", "ipw", [0.02, -0.04, 0.0], [True, True, True], [(-0.1, 0.1), (-0.05, 0.2), (-0.2, 0.0)])
    blind = _rows("blind", "ipw", [-0.3, -0.35, -0.4], [False, False, False], [(0.1, 0.3), (0.2, 0.4), (-0.1, 0.1)])
    g = grade(pd.DataFrame(good + blind))
    assert g["model"].tolist() == ["lr", "blind"] and g["rank"].tolist() == [1, 2]
    lr = g.iloc[0]
    # |bias| of the 3 task cells and of the 3 placebo cells (their ATE): 0.02, 0.04, 0, 0, 0.075, 0.1
    assert lr["bias"] == pytest.approx((0.02 + 0.04 + 0.0 + 0.0 + 0.075 + 0.1) / 6)
    assert lr["coverage"] == 1.0 and lr["placebo_fd"] == 0.0 and lr["usable"]
    bl = g.iloc[1]
    assert bl["placebo_fd"] == pytest.approx(2 / 3) and bl["coverage"] == pytest.approx(1 / 6) and not bl["usable"]
    assert recommend(g)["model"] == "lr"


def test_an_unusable_best_is_recommended_only_when_nothing_is_usable():
    a = _rows("a", "ipw", [0.01] * 3, [False] * 3, [(0.01, 0.03)] * 3)  # least bias, never covers, placebo FD 3/3
    b = _rows("b", "ipw", [0.1] * 3, [True] * 3, [(-0.1, 0.1)] * 3)
    g = grade(pd.DataFrame(a + b))
    assert g["model"].tolist() == ["a", "b"] and g["usable"].tolist() == [False, True]
    assert recommend(g)["model"] == "b"
    only_a = grade(pd.DataFrame(a))
    assert recommend(only_a)["model"] == "a" and not recommend(only_a)["usable"]


def test_the_unadjusted_estimator_is_one_pair():
    rows = _rows("lr", "ipw", [0.0] * 3, [True] * 3, [(-0.1, 0.1)] * 3)
    rows += _rows("lr", "unadjusted", [0.3] * 3, [False] * 3, [(0.1, 0.2)] * 3)
    rows += _rows("nn", "unadjusted", [0.3] * 3, [False] * 3, [(0.1, 0.2)] * 3)
    pairs = candidate_pairs(pd.DataFrame(rows))
    assert sorted(set(zip(pairs["model"], pairs["estimator"]))) == [("lr", "ipw"), ("unadjusted", "unadjusted")]


def test_no_calibration_columns_is_one_sentence():
    with pytest.raises(ValueError, match=r"The calibration results lack the column\(s\) \['bias'"):
        grade(pd.DataFrame({"model": ["a"], "estimator": ["ipw"], "task": ["x"], "ate": [0.1]}))

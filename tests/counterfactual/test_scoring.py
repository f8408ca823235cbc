"""The scorer on hand-made gold / prediction pairs (subtask 2: end-inclusive character offsets)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score, precision_score, recall_score

from textcause.counterfactual.data import OFFSET_COLUMNS, read_subtask1, read_subtask2
from textcause.counterfactual.scoring import (
    binary_scores,
    score_files,
    score_subtask1,
    score_subtask2,
    span_scores,
    write_subtask1_predictions,
    write_subtask2_predictions,
)

S = "If it had rained, the crops would have grown."
ANTE = (0, 15)  # "If it had rained"
CONS = (18, 43)  # "the crops would have grown"
GOLD = (*ANTE, *CONS)
NONE = (-1, -1)


def test_offsets_of_the_hand_made_sentence_are_end_inclusive():
    assert S[ANTE[0] : ANTE[1] + 1] == "If it had rained"
    assert S[CONS[0] : CONS[1] + 1] == "the crops would have grown"


def test_exact_prediction_scores_one():
    s = span_scores(S, GOLD, GOLD)
    assert s == dict.fromkeys(s, 1.0)


def test_partial_overlap_counts_tokens_of_the_intersections():
    pred = (3, 15, *CONS)  # "it had rained": 3 of the antecedent's 4 tokens
    s = span_scores(S, GOLD, pred)
    assert s["exact_match"] == 0.0
    assert s["precision"] == 1.0 and s["recall"] == pytest.approx(8 / 9)
    assert s["f1"] == pytest.approx(2 * (8 / 9) / (1 + 8 / 9))
    assert s["char_recall"] == pytest.approx((13 + 26) / (16 + 26))


def test_disjoint_prediction_scores_zero():
    s = span_scores(S, GOLD, (39, 43, 0, 1))  # antecedent "grown", consequent "If"
    assert s["f1"] == s["precision"] == s["recall"] == s["exact_match"] == 0.0


def test_missing_consequent_predicted_missing_is_correct():
    gold = (*ANTE, *NONE)
    s = span_scores(S, gold, gold)
    assert s["exact_match"] == 1.0 and s["f1"] == 1.0 and s["char_f1"] == 1.0


def test_span_predicted_where_gold_has_no_consequent_is_wrong():
    s = span_scores(S, (*ANTE, *NONE), GOLD)
    assert s["exact_match"] == 0.0
    assert s["recall"] == 1.0 and s["precision"] == pytest.approx(4 / 9)  # 5 consequent tokens too many


def test_no_consequent_predicted_where_gold_has_one_is_wrong():
    s = span_scores(S, GOLD, (*ANTE, *NONE))
    assert s["exact_match"] == 0.0
    assert s["precision"] == 1.0 and s["recall"] == pytest.approx(4 / 9)


@pytest.mark.parametrize(
    "pred, char_p, char_r",
    [
        ((1, 15, *CONS), 1.0, 41 / 42),  # start one late ("f it had rained")
        ((0, 14, *CONS), 1.0, 41 / 42),  # end one early ("If it had raine")
        ((0, 16, *CONS), 42 / 43, 1.0),  # end one late ("If it had rained,")
        ((*ANTE, 17, 43), 42 / 43, 1.0),  # start one early (the space before "the")
    ],
)
def test_off_by_one_at_either_end_is_no_exact_match(pred, char_p, char_r):
    s = span_scores(S, GOLD, pred)
    assert s["exact_match"] == 0.0
    # the official token count forgives a character that makes no new whitespace token ...
    assert s["f1"] == 1.0
    # ... the character diagnostic does not
    assert s["char_precision"] == pytest.approx(char_p) and s["char_recall"] == pytest.approx(char_r)


def test_off_by_one_into_a_neighbouring_token_costs_precision():
    s = span_scores(S, GOLD, (*ANTE, 16, 43))  # ", the crops ...": "," is a 6th consequent token
    assert s["exact_match"] == 0.0 and s["recall"] == 1.0 and s["precision"] == pytest.approx(9 / 10)


def test_exclusive_end_predictions_are_never_an_exact_match(gold2_path):
    gold = read_subtask2(gold2_path)
    pred = gold[["sentenceID", *OFFSET_COLUMNS]].copy()
    pred["antecedent_endid"] += 1  # the common bug: writing Python's exclusive end
    has = pred["consequent_startid"] >= 0
    pred.loc[has, "consequent_endid"] += 1
    scores = score_subtask2(gold, pred)
    assert scores["exact_match"] == 0.0
    assert scores["f1"] == 1.0  # the extra character is punctuation or a space: no new token
    assert scores["char_f1"] < 1.0
    assert score_subtask2(gold, gold[["sentenceID", *OFFSET_COLUMNS]])["exact_match"] == 1.0


def test_shuffled_rows_score_the_same(gold2_path):
    gold = read_subtask2(gold2_path)
    pred = gold[["sentenceID", *OFFSET_COLUMNS]].copy()
    pred.loc[0, "antecedent_startid"] = 3
    pred.loc[2, "consequent_startid"], pred.loc[2, "consequent_endid"] = 0, 1
    shuffled = pred.iloc[[2, 0, 1]].reset_index(drop=True)
    assert score_subtask2(gold, shuffled) == score_subtask2(gold, pred)
    assert score_subtask2(gold, pred)["exact_match"] == pytest.approx(1 / 3)


def test_integer_valued_floats_and_text_are_integers(gold2_path):
    gold = read_subtask2(gold2_path)
    pred = gold[["sentenceID", *OFFSET_COLUMNS]].astype(float).astype(str)  # "1.0", "-1.0"
    assert score_subtask2(gold, pred)["exact_match"] == 1.0


def _pred(gold: pd.DataFrame) -> pd.DataFrame:
    return gold[["sentenceID", *OFFSET_COLUMNS]].astype(object).copy()


@pytest.mark.parametrize(
    "column, value, match",
    [
        ("antecedent_startid", "abc", "row 1 .*sentenceID 1.*antecedent is malformed: offsets must be integers"),
        ("antecedent_endid", 3.5, "row 1 .*offsets must be integers"),
        ("antecedent_endid", "", "row 1 .*offsets must be integers"),
        ("antecedent_startid", -1, "antecedent is malformed: the span is required"),
        ("consequent_startid", -1, "consequent is malformed: a missing span must be -1 at both ends"),
        ("antecedent_startid", 20, "the end comes before the start"),
        ("consequent_endid", 45, "lies outside the sentence of 45 characters"),
        ("antecedent_startid", -2, "must be >= 0"),
    ],
)
def test_malformed_prediction_rows_are_refused_in_one_sentence(gold2_path, column, value, match):
    gold = read_subtask2(gold2_path)
    pred = _pred(gold)
    pred.loc[0, column] = value
    with pytest.raises(ValueError, match=match):
        score_subtask2(gold, pred, source="subtask2.csv")


def test_malformed_rows_score_zero_with_a_warning_when_asked(gold2_path):
    gold = read_subtask2(gold2_path)
    pred = _pred(gold)
    pred.loc[0, "antecedent_startid"] = "x"
    with pytest.warns(UserWarning, match="row 1 .*sentenceID 1.*scores 0"):
        scores = score_subtask2(gold, pred, malformed="zero")
    assert scores["n_malformed"] == 1 and scores["exact_match"] == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="'malformed' parameter of score_subtask2 must be one of"):
        score_subtask2(gold, pred, malformed="skip")


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda p: p.drop(columns="consequent_endid"), r"lack the column\(s\) \['consequent_endid'\]"),
        (lambda p: pd.concat([p, p.iloc[[0]]]), "a second prediction for this sentenceID"),
        (lambda p: p.iloc[:2], "lack 1 of the 3 gold sentences .*sentenceID 3"),
        (lambda p: p.assign(sentenceID=[1, 2, 99]), "sentenceID 99.*not in the gold file"),
        (lambda p: p.assign(sentenceID=["1", "two", "3"]), "row 2 .*the sentenceID must be an integer"),
    ],
)
def test_prediction_rows_must_match_gold_one_to_one(gold2_path, change, match):
    gold = read_subtask2(gold2_path)
    with pytest.raises(ValueError, match=match):
        score_subtask2(gold, change(_pred(gold)))


def test_binary_scores_match_scikit_learn():
    y = np.array([1, 1, 1, 0, 0, 0, 0, 1])
    p = np.array([1, 0, 1, 1, 0, 0, 0, 1])
    s = binary_scores(y, p)
    assert s["precision"] == pytest.approx(3 / 4) and s["recall"] == pytest.approx(3 / 4)
    assert s["f1"] == pytest.approx(f1_score(y, p)) and s["accuracy"] == pytest.approx(6 / 8)
    assert s["precision"] == precision_score(y, p) and s["recall"] == recall_score(y, p)
    assert binary_scores(y, np.zeros_like(y))["f1"] == 0.0  # no positive predicted: 0, not NaN
    with pytest.raises(ValueError, match="'y_pred' must be a non-empty array of 0/1 labels"):
        binary_scores(y, p * 2)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        binary_scores(y, p[:3])


def test_subtask1_joined_on_sentence_id(tmp_path, make_subtask1):
    gold = read_subtask1(make_subtask1(tmp_path / "g.csv", n=30))
    rng = np.random.default_rng(0)
    pred = pd.DataFrame({"sentenceID": gold["sentenceID"], "pred_label": rng.integers(0, 2, len(gold))})
    expected = binary_scores(gold["gold_label"], pred["pred_label"])
    assert score_subtask1(gold, pred.sample(frac=1, random_state=1)) == expected
    assert score_subtask1(gold, pred.assign(pred_label=pred["pred_label"].astype(float))) == expected
    bad = pred.astype(object)
    bad.loc[4, "pred_label"] = "yes"
    with pytest.raises(ValueError, match="row 5 .*the pred_label must be 0 or 1. Got 'yes' instead"):
        score_subtask1(gold, bad)


def test_official_files_round_trip(tmp_path, gold2_path, make_subtask1):
    gold2 = read_subtask2(gold2_path)
    out = write_subtask2_predictions(
        tmp_path / "subtask2.csv", gold2["sentenceID"], gold2[list(OFFSET_COLUMNS)].to_numpy()
    )
    assert (
        out.read_text().splitlines()[0]
        == "sentenceID,antecedent_startid,antecedent_endid,consequent_startid,consequent_endid"
    )
    assert out.read_text().splitlines()[3].endswith(",-1,-1")
    assert score_files(gold2_path, out, 2)["exact_match"] == 1.0
    gold1_path = make_subtask1(tmp_path / "g1.csv", n=20)
    gold1 = read_subtask1(gold1_path)
    out1 = write_subtask1_predictions(tmp_path / "subtask1.csv", gold1["sentenceID"], gold1["gold_label"])
    assert out1.read_text().splitlines()[0] == "sentenceID,pred_label"
    assert score_files(gold1_path, out1, 1)["f1"] == 1.0
    with pytest.raises(ValueError, match="'subtask' parameter of score_files must be one of"):
        score_files(gold1_path, out1, 3)
    with pytest.raises(ValueError, match="prediction file .subtask1.csv. lacks the column"):
        score_files(gold2_path, out1, 2)

"""``--official``: the organisers' subtask-2 arithmetic, on hand-made cases whose numbers are worked out by hand.

Each case is one where the organisers' script and the task's definition (``span_scores``) differ,
so a scorer that followed either one everywhere would fail one of the two assertions.
"""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from textcause.cli.main import main
from textcause.counterfactual.data import OFFSET_COLUMNS, read_subtask2
from textcause.counterfactual.official import official_span_scores
from textcause.counterfactual.scoring import score_files, span_scores

S = "If it had rained, the crops would have grown."
GOLD = (0, 15, 18, 43)  # "If it had rained", "the crops would have grown" (END INCLUSIVE)
S_I = "If only I had asked, so would I."
GOLD_I = (0, 18, 21, 30)  # "If only I had asked", "so would I"


def cells(*values) -> list[str]:
    return [str(v) for v in values]


def test_the_hand_made_offsets_are_end_inclusive():
    assert S_I[0 : 18 + 1] == "If only I had asked" and S_I[21 : 30 + 1] == "so would I"


def test_a_perfect_prediction_scores_one_both_ways():
    assert official_span_scores(S, GOLD, cells(*GOLD)) == (1.0, 1.0, 1.0, True, True)


def test_end_exclusive_slices_forgive_a_dropped_one_letter_last_word():
    pred = (0, 18, 21, 28)  # the consequent "so would": the last word "I" missed
    p, r, f1, exact, valid = official_span_scores(S_I, GOLD_I, cells(*pred))
    # the script slices S_I[21:30] = "so would " for the gold consequent: 2 words, as the prediction
    assert (p, r, f1, exact, valid) == (1.0, 1.0, 1.0, False, True)
    ours = span_scores(S_I, GOLD_I, pred)
    assert ours["precision"] == 1.0 and ours["recall"] == pytest.approx(7 / 8)  # 7 of the 8 gold words


def test_precision_and_recall_are_printed_swapped(gold2_path, tmp_path):
    gold = read_subtask2(gold2_path)
    pred = gold[["sentenceID", *OFFSET_COLUMNS]].copy()
    pred.loc[0, "antecedent_startid"] = 3  # "it had rained": 8 of sentence 1's 9 gold words, nothing extra
    pred.to_csv(tmp_path / "pred.csv", index=False)
    s = score_files(gold2_path, tmp_path / "pred.csv", 2, official=True)
    assert s["precision"] == 1.0 and s["recall"] == pytest.approx((8 / 9 + 1 + 1) / 3)
    assert s["printed_precision"] == s["recall"] and s["printed_recall"] == s["precision"]
    assert s["exact_match"] == pytest.approx(2 / 3)
    assert s["f1"] == pytest.approx((2 * (8 / 9) / (1 + 8 / 9) + 2) / 3)


def test_a_one_character_antecedent_is_invalid_there_but_still_an_exact_match():
    sentence, gold = "X would be nice.", (0, 0, -1, -1)
    assert official_span_scores(sentence, gold, cells(*gold)) == (0.0, 0.0, 0.0, True, False)
    assert span_scores(sentence, gold, gold)["f1"] == 1.0


@pytest.mark.parametrize(
    "pred",
    [
        ("-1", "15", "18", "43"),  # no antecedent
        ("0", "15", "-1", "43"),  # a consequent -1 at one end only
        ("15", "0", "18", "43"),  # an antecedent that ends before it starts
        ("0", "15", "43", "18"),  # a consequent that ends before it starts
        ("0", "15", "-2", "43"),  # below -1
    ],
)
def test_the_validity_rule_scores_zero(pred):
    assert official_span_scores(S, GOLD, pred)[:3] == (0.0, 0.0, 0.0)


def test_exact_match_compares_the_cells_text():
    p, r, f1, exact, valid = official_span_scores(S, GOLD, [" 0", "15", "18", "43"])
    assert f1 == 1.0 and not exact and valid  # Python's int reads " 0"; the strings differ
    with pytest.raises(ValueError):
        official_span_scores(S, (0, 15, -1, -1), ["0", "15", "-1.0", "-1.0"])  # where the script crashes


def test_exclusive_end_predictions_score_f1_but_no_exact_match(gold2_path, tmp_path):
    gold = read_subtask2(gold2_path)
    pred = gold[["sentenceID", *OFFSET_COLUMNS]].copy()
    pred["antecedent_endid"] += 1
    has = pred["consequent_startid"] >= 0
    pred.loc[has, "consequent_endid"] += 1
    pred.to_csv(tmp_path / "pred.csv", index=False)
    s = score_files(gold2_path, tmp_path / "pred.csv", 2, official=True)
    assert s["exact_match"] == 0.0 and s["f1"] == 1.0 and s["n_invalid"] == 0


def test_unparsable_cells_and_row_order_warn_instead_of_stopping(gold2_path, tmp_path):
    gold = read_subtask2(gold2_path)
    pred = gold[["sentenceID", *OFFSET_COLUMNS]].astype(object)
    pred.loc[2, "antecedent_endid"] = "34.0"
    pred.iloc[::-1].to_csv(tmp_path / "pred.csv", index=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = score_files(gold2_path, tmp_path / "pred.csv", 2, official=True)
    messages = [str(w.message) for w in caught]
    assert any("not in the gold file's order" in m for m in messages)
    assert any("row 1 (sentenceID 3)" in m and "crashes" in m for m in messages)
    assert s["n_unparsable"] == 1 and s["f1"] == pytest.approx(2 / 3) and s["exact_match"] == pytest.approx(2 / 3)


def test_score_command_official(gold2_path, tmp_path, capsys):
    gold = pd.read_csv(gold2_path)
    pred = gold[["sentenceID", *OFFSET_COLUMNS]].copy()
    pred.loc[0, "antecedent_startid"] = 3
    pred.to_csv(tmp_path / "subtask2.csv", index=False)
    args = ["semeval", "score", "--gold", str(gold2_path), "--pred", str(tmp_path / "subtask2.csv"), "--subtask", "2"]
    assert main([*args, "--official"]) == 0
    out = capsys.readouterr().out
    # mean recall (8/9 + 1 + 1) / 3 = 96.30, printed by the script under "pre"
    assert "precision 100.00  recall 96.30" in out and "organisers' script prints them: pre 96.30  rec 100.00" in out
    assert main(args) == 0 and "char_f1" in capsys.readouterr().out

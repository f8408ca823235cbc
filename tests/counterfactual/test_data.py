"""Readers of the official CSV files (one sentence per malformed row) and the validation split."""

from __future__ import annotations

import numpy as np
import pytest

from textcause.counterfactual.data import (
    carve_validation,
    check_disjoint,
    default_path,
    parse_int,
    read_subtask1,
    read_subtask2,
)


def test_parse_int_accepts_integer_valued_floats_only():
    assert [parse_int(v) for v in ("12", " 12 ", "12.0", "-1.0", -1, np.int64(3), 4.0)] == [12, 12, 12, -1, -1, 3, 4]
    assert [parse_int(v) for v in ("12.5", "", "nan", "abc", "inf", True, float("nan"))] == [None] * 7


def test_read_subtask1(tmp_path, make_subtask1):
    frame = read_subtask1(make_subtask1(tmp_path / "t.csv", n=50))
    assert list(frame.columns) == ["sentenceID", "gold_label", "sentence"]
    assert frame["sentenceID"].dtype == np.int64 and set(frame["gold_label"]) == {0, 1}
    assert frame["sentenceID"].is_unique and len(frame) == 50


@pytest.mark.parametrize(
    "body, match",
    [
        (
            "sentenceID,gold_label,sentence\n1,1,If only.\n2,2,No.\n",
            r"'bad.csv' row 2 \(sentenceID 2\): the gold_label must be 0 or 1. Got '2'",
        ),
        ("sentenceID,gold_label,sentence\n1,yes,If only.\n", "row 1 .*gold_label must be 0 or 1"),
        ("sentenceID,gold_label,sentence\n1,1,If only.\n1,0,No.\n", "row 2 .*repeats row 1"),
        ("sentenceID,gold_label,sentence\nx1,1,If only.\n", "row 1 .*the sentenceID must be an integer"),
        ("sentenceID,gold_label,sentence\n1,1,  \n", "row 1 .*the sentence is empty"),
        ("sentenceID,label,sentence\n1,1,If only.\n", r"lacks the column\(s\) \['gold_label'\]"),
        ("sentenceID,gold_label,sentence\n", "has no rows"),
    ],
)
def test_read_subtask1_refuses_malformed_rows(tmp_path, body, match):
    path = tmp_path / "bad.csv"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        read_subtask1(path)


def test_read_subtask1_keeps_a_sentence_that_looks_like_a_missing_value(tmp_path):
    path = tmp_path / "na.csv"
    path.write_text("sentenceID,gold_label,sentence\n1,0,NA\n", encoding="utf-8")
    assert read_subtask1(path)["sentence"].tolist() == ["NA"]


def test_missing_files_and_undecodable_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_subtask1(tmp_path / "nope.csv")
    (tmp_path / "latin.csv").write_bytes(b"sentenceID,gold_label,sentence\n1,0,caf\xe9\n")
    with pytest.raises(ValueError, match="not a readable UTF-8 CSV"):
        read_subtask1(tmp_path / "latin.csv")
    with pytest.raises(ValueError, match="'name' parameter of default_path must be one of"):
        default_path("subtask3_train")


def test_read_subtask2(gold2_path):
    frame = read_subtask2(gold2_path)
    assert frame["consequent_startid"].tolist()[2] == -1 and frame["consequent"].tolist()[2] == ""
    for row in frame.itertuples():
        assert row.sentence[row.antecedent_startid : row.antecedent_endid + 1] == row.antecedent


@pytest.mark.parametrize(
    "change, match",
    [
        (
            {"antecedent_endid": 16},
            r"row 1 \(sentenceID 1\): sentence\[antecedent_startid:antecedent_endid \+ 1\] is not the antecedent text",
        ),
        ({"antecedent_endid": 16, "antecedent": "If it had rained,"}, None),
        ({"consequent_endid": 44}, "the offsets look end-exclusive"),
        ({"consequent_endid": 45}, "lies outside the sentence of 45 characters"),
        ({"antecedent_startid": -1, "antecedent_endid": -1}, "antecedent offsets are invalid: the span is required"),
        ({"consequent_endid": -1}, "a missing span must be -1 at both ends"),
        ({"antecedent_startid": "zero"}, "offsets must be integers"),
        ({"antecedent_startid": 16}, "the end comes before the start"),
    ],
)
def test_read_subtask2_refuses_malformed_rows(tmp_path, rows2, write_csv, change, match):
    rows2[0].update(change)
    path = write_csv(tmp_path / "s2.csv", rows2)
    if match is None:  # a consistent change is fine
        assert read_subtask2(path)["antecedent_endid"].iloc[0] == 16
        return
    with pytest.raises(ValueError, match=match):
        read_subtask2(path)


def test_read_subtask2_missing_consequent_must_have_no_text(tmp_path, rows2, write_csv):
    rows2[2]["consequent"] = "the rate"
    with pytest.raises(
        ValueError, match=r"row 3 \(sentenceID 3\): the consequent offsets are -1 but its text is not empty"
    ):
        read_subtask2(write_csv(tmp_path / "s2.csv", rows2))


def test_integer_valued_float_offsets_are_read(tmp_path, rows2, write_csv):
    rows2[0]["antecedent_endid"] = "15.0"
    assert read_subtask2(write_csv(tmp_path / "s2.csv", rows2))["antecedent_endid"].iloc[0] == 15


def test_carve_validation_is_seeded_stratified_and_a_partition(tmp_path, make_subtask1):
    train = read_subtask1(make_subtask1(tmp_path / "t.csv", n=400, positive=0.1))
    fit, val = carve_validation(train, fraction=0.25, seed=3)
    again_fit, again_val = carve_validation(train, fraction=0.25, seed=3)
    assert val["sentenceID"].tolist() == again_val["sentenceID"].tolist()
    assert fit["sentenceID"].tolist() == again_fit["sentenceID"].tolist()
    other = carve_validation(train, fraction=0.25, seed=4)[1]
    assert val["sentenceID"].tolist() != other["sentenceID"].tolist()
    ids = np.concatenate([fit["sentenceID"], val["sentenceID"]])
    assert sorted(ids) == sorted(train["sentenceID"]) and len(val) == 100
    assert abs(val["gold_label"].mean() - train["gold_label"].mean()) < 0.02  # stratified
    assert fit["sentenceID"].is_monotonic_increasing  # file order kept


def test_carve_validation_refuses_bad_input(tmp_path, make_subtask1):
    train = read_subtask1(make_subtask1(tmp_path / "t.csv", n=40))
    with pytest.raises(ValueError, match="'fraction' parameter of carve_validation must be a float > 0.0 and < 1.0"):
        carve_validation(train, fraction=1.0)
    with pytest.raises(ValueError, match="'seed' parameter of carve_validation must be an int >= 0"):
        carve_validation(train, seed=-1)
    with pytest.raises(ValueError, match="at least 2 rows of each class"):
        carve_validation(train.assign(gold_label=0))


def test_check_disjoint_refuses_shared_sentence_ids(tmp_path, make_subtask1):
    a = read_subtask1(make_subtask1(tmp_path / "a.csv", n=20))
    b = read_subtask1(make_subtask1(tmp_path / "b.csv", n=20, start_id=500))
    check_disjoint(a, b)
    with pytest.raises(ValueError, match=r"share 20 sentenceID\(s\) \(e.g. 100000\): fitting on test rows would leak"):
        check_disjoint(a, a)

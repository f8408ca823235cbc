"""The defects the malformed-file properties (``test_malformed_properties.py``) found, as fixed examples.

Each failed before its fix: the reader raised another exception than one ``ValueError`` sentence, or
read a file it should have refused.
"""

from __future__ import annotations

import pytest

from textcause.counterfactual.data import read_subtask1, read_subtask2, shown


@pytest.mark.parametrize("raw", ["1e30", "99999999999999999999", "-9223372036854775809"])
def test_a_sentence_id_beyond_int64_is_one_sentence(tmp_path, raw):
    """Before: OverflowError (Python int too large to convert to C long)."""
    path = tmp_path / "s1.csv"
    path.write_text(f"sentenceID,gold_label,sentence\n{raw},0,p0st-a\n", encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"^'s1\.csv' row 1 \(sentenceID '.*'\): the sentenceID must be an integer in \["
    ) as info:
        read_subtask1(path)
    assert type(info.value) is ValueError
    path.write_text("sentenceID,gold_label,sentence\n9223372036854775807,0,p0st-a\n", encoding="utf-8")
    assert read_subtask1(path)["sentenceID"].tolist() == [2**63 - 1]


@pytest.mark.parametrize(
    ("header", "column"),
    [
        ("sentenceID,gold_label,sentence,sentenceID", "sentenceID"),
        ("sentence,sentenceID,gold_label,sentence", "sentence"),
    ],
)
def test_a_column_named_twice_is_refused(tmp_path, header, column):
    """Before: pandas renamed the second one 'sentenceID.1' and the reader silently took the first."""
    path = tmp_path / "s1.csv"
    path.write_text(header + "\n" + ",".join(["0"] * 4) + "\n", encoding="utf-8")
    with pytest.raises(
        ValueError, match=rf"^Column '{column}' is named 2 times in the header of the subtask-1 file 's1\.csv'"
    ):
        read_subtask1(path)
    path.write_text("sentenceID,gold_label,sentence,extra,extra\n0,0,p0st-a,1,2\n", encoding="utf-8")  # unused: fine
    assert read_subtask1(path)["sentence"].tolist() == ["p0st-a"]


def test_subtask_2_column_named_twice_is_refused(tmp_path):
    cols = "sentenceID,sentence,antecedent,consequent,antecedent_startid,antecedent_endid,consequent_startid,consequent_endid"
    path = tmp_path / "s2.csv"
    path.write_text(cols + ",antecedent\n1,If so,If so,{},0,4,-1,-1,x\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^Column 'antecedent' is named 2 times in the header of the subtask-2 file"):
        read_subtask2(path)


def test_a_long_label_is_not_quoted(tmp_path):
    """Before: a label cell holding a shifted sentence was quoted whole in the message."""
    path = tmp_path / "s1.csv"
    path.write_text("sentenceID,gold_label,sentence\n1," + "p0st-" * 50 + ",x\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"the gold_label must be 0 or 1\. Got a text of 250 characters instead\.$"):
        read_subtask1(path)
    assert shown("yes") == "'yes'"

"""The defects the malformed-file properties (``test_malformed_properties.py``) found, as fixed examples.

Each failed before its fix: the reader raised another exception than one ``ValueError`` sentence,
or read a file it should have refused, or merged users it should have kept apart.
"""

from __future__ import annotations

import pytest

from textcause.corpus import load_histories


def test_csv_header_naming_a_used_column_twice_is_refused(tmp_path):
    """Before: pandas renamed the second 'text' to 'text.1' and the reader silently took the first."""
    path = tmp_path / "c.csv"
    path.write_text("author,text,time,text\nu1,p0st-a,0,p0st-b\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^Column 'text' is named 2 times in the header \(line 1\) of '.*c\.csv'"):
        load_histories(path, min_posts=1)
    path.write_text("author,text,time,extra,extra\nu1,p0st-a,0,1,2\n", encoding="utf-8")  # unused: no matter
    assert load_histories(path, min_posts=1).texts == [["p0st-a"]]


def test_hugging_face_csv_keeps_author_ids_as_written(tmp_path, monkeypatch):
    """Before: the csv builder read '01' and '1' as the integer 1, merging two users into one."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = tmp_path / "c.csv"
    path.write_text("author,text,time\n01,p0st-a,0\n1,p0st-b,1\n1.0,7,2\n", encoding="utf-8")
    for corpus in (load_histories(path, format="hf", min_posts=1), load_histories(path, format="csv", min_posts=1)):
        assert corpus.user_ids == ["01", "1", "1.0"]
        assert corpus.texts == [["p0st-a"], ["p0st-b"], ["7"]]


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        ("c.ndjson", ['{"author": 0, "text": "p0st-a", "time": 0}', '{"author": "0", "text": "p0st-b", "time": 1}']),
        ("h.jsonl", ['{"user_id": 0, "posts": ["p0st-a"]}', '{"user_id": "0", "posts": ["p0st-b"]}']),
    ],
)
def test_hugging_face_json_refuses_ids_written_both_ways(tmp_path, monkeypatch, name, lines):
    """Before: the json builder stored 0 and "0" as one JSON column and read both as 0: one user."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rule = r"^The user id '0' is written as an integer on line 1 and as a string on line 2 of '.*'"
    for kwargs in ({"format": "hf"}, {"hf_builder": "json"}, {}):  # {}: the file's own reader, the same rule
        with pytest.raises(ValueError, match=rule) as info:
            load_histories(path, min_posts=1, **kwargs)
        assert type(info.value) is ValueError and "\n" not in str(info.value)
    path.write_text(lines[0] + "\n" + lines[1].replace('"0"', '"u0"') + "\n", encoding="utf-8")  # 0 and "u0": fine
    assert load_histories(path, format="hf", min_posts=1).user_ids == ["0", "u0"]


def test_hugging_face_json_ids_of_several_types_without_local_files_are_refused(tmp_path, monkeypatch):
    import datasets

    from textcause.corpus.hf import dataset_records

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = tmp_path / "c.ndjson"
    path.write_text('{"author": 0, "text": "p0st-a"}\n{"author": "0", "text": "p0st-b"}\n', encoding="utf-8")
    ds = datasets.load_dataset("json", data_files=str(path), cache_dir=str(tmp_path / "c"))["train"]
    if type(ds.features["author"]).__name__ != "Json":
        pytest.skip("this datasets version types the column otherwise")
    with pytest.raises(ValueError, match=r"holds ids of more than one JSON type.*write every id one way"):
        dataset_records(ds, "'memory'", "author", "text", None)


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("c.ndjson", b'{"author": "\xff0", "text": "p0st-a", "time": 0}'),
        ("c.ndjson", b'{"author": "u\xff", "text": "p0st-a", "time": 0}'),
        ("h.jsonl", b'{"user_id": "01", "posts": [{"text": "p0st-\xff", "time": 0}]}'),
    ],
)
def test_hugging_face_json_with_invalid_utf8_gives_one_sentence(tmp_path, monkeypatch, name, line):
    """Before: pyarrow's JSON reader let the bytes through and UnicodeDecodeError / ArrowInvalid escaped later."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = tmp_path / name
    good = (
        b'{"author": "1", "text": "p0st-b", "time": 0}'
        if name == "c.ndjson"
        else b'{"user_id": "1", "posts": ["p0st-b"]}'
    )
    path.write_bytes(good + b"\n" + line + b"\n")
    with pytest.raises(ValueError, match=r"could not be (read: it holds text that is not valid UTF-8|loaded)") as info:
        load_histories(path, format="hf", min_posts=1)
    assert type(info.value) is ValueError and "\n" not in str(info.value) and "p0st" not in str(info.value)


def test_hugging_face_table_refuses_a_wrong_time_type_on_a_dropped_row(tmp_path, monkeypatch):
    """Before: format='ndjson' refused a boolean time on a row with a blank text, the json builder kept the rest."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = tmp_path / "c.ndjson"
    path.write_text(
        '{"author": 0, "text": "", "time": true}\n{"author": 1, "text": "p0st-a", "time": 0}\n', encoding="utf-8"
    )
    for fmt in ("ndjson", "hf"):
        with pytest.raises(
            ValueError, match=r"(?i)line 1 .*has a 'time' of type boolean|row 0 .*time \('time'\) of type boolean"
        ):
            load_histories(path, format=fmt, min_posts=1)

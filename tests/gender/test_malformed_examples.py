"""The defects the malformed-file properties (``test_malformed_properties.py``) found, as fixed examples.

Each failed before its fix: another exception than one ``ValueError`` sentence, a file read that
should have been refused, or a range built whatever its size.
"""

from __future__ import annotations

import pytest

from textcause.gender.build import GenderDataSettings, _w_values
from textcause.gender.probes import load_w_list
from textcause.gender.selected import read_w_file
from textcause.gender.words import load_gendered_words


@pytest.mark.parametrize(
    ("name", "load"), [("w.txt", load_w_list), ("w.yaml", load_w_list), ("g.yaml", load_gendered_words)]
)
def test_invalid_utf8_is_one_value_error_naming_the_line(tmp_path, name, load):
    """Before: UnicodeDecodeError (a subclass, with a byte dump) from read_text."""
    path = tmp_path / name
    path.write_bytes(b"values: [1801,\n 1901,\n \xff]\n" if name != "w.txt" else b"1801\n1901\n\xff\n")
    with pytest.raises(ValueError, match=r"^The .*'.*' is not UTF-8 text \(line 3\): save it as UTF-8\.$") as info:
        load(str(path) if load is load_w_list else path)
    assert type(info.value) is ValueError


@pytest.mark.parametrize("bad", ["nan", "inf", "1e400"])
def test_a_non_finite_number_in_a_numeric_w_list_is_refused(tmp_path, bad):
    """Before: 'nan' made a numeric W list with a NaN number (the slope came out NaN)."""
    path = tmp_path / "w.txt"
    path.write_text(f"1801\n{bad}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^The W list 'w' holds the number '{bad}', which is not finite"):
        load_w_list(str(path))


def test_a_huge_range_is_refused_before_it_is_built(tmp_path):
    """Before: range: {start: 0, stop: 10**15} tried to build 10**15 strings."""
    path = tmp_path / "w.yaml"
    path.write_text("range: {start: 0, stop: 1000000000000000, step: 1}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"gives 1000000000000001 values: at most 100000 are allowed\.$"):
        load_w_list(str(path))
    path.write_text("range: {start: 0, stop: 9, step: true}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="must give ints start <= stop and step >= 1"):
        load_w_list(str(path))


def test_a_value_that_is_a_list_or_null_is_refused(tmp_path):
    """Before: [1, 2] and null were read as the values '[1, 2]' and 'None'."""
    path = tmp_path / "w.yaml"
    for bad, kind in (("[1, 2]", "list"), ("null", "NoneType"), ("{a: 1}", "dict")):
        path.write_text(f"values: [Paris, Rome, {bad}]\n", encoding="utf-8")
        with pytest.raises(ValueError, match=rf"^The W list 'w' holds a value of type {kind}: each value must be"):
            load_w_list(str(path))


def test_w_csv_errors_are_one_sentence(tmp_path):
    """Before: pandas' ParserError / UnicodeDecodeError, and an author's second row silently won."""
    path = tmp_path / "w.csv"
    settings = GenderDataSettings(prefix="w", w_file=str(path))
    for payload in (b"author,w\nu1,\xff\n", b'author,w\nu1,"1\n', b""):
        path.write_bytes(payload)
        for read in (lambda: read_w_file(path, "w", None), lambda: _w_values(settings)):
            with pytest.raises(ValueError, match=r"^The W file '.*w\.csv' is not a readable UTF-8 CSV file") as info:
                read()
            assert type(info.value) is ValueError
    path.write_text("author,w\nu1,1\nu2,2\nu1,3\n", encoding="utf-8")
    rule = r"^The W file '.*' gives the author 'u1' two rows \(rows 1 and 3 after the header\)"
    for read in (lambda: read_w_file(path, "w", None), lambda: _w_values(settings)):
        with pytest.raises(ValueError, match=rule):
            read()
    path.write_text("author,w,w\nu1,1,2\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"names the column 'w' 2 times"):
        read_w_file(path, "w", None)


def test_a_w_csv_whose_rows_are_longer_than_its_header_is_refused(tmp_path):
    """Before: pandas made each row's extra leading field the index, and W came from the wrong column."""
    path = tmp_path / "w.csv"
    path.write_text("author,w\nu1,1990,x\nu2,1980,y\n", encoding="utf-8")
    settings = GenderDataSettings(prefix="w", w_file=str(path))
    for read in (lambda: read_w_file(path, "w", None), lambda: _w_values(settings)):
        with pytest.raises(ValueError, match=r"has rows with more fields than its header's 2 columns"):
            read()

"""Malformed gender input files: one ``ValueError`` sentence or a correct load, never anything else.

Hypothesis draws W values (years, places, any unicode) and writes them as every file the gender
commands read: a W text file (one value per line), a W YAML (``values`` or ``range``), a gendered
word YAML and a W CSV per author (``read_w_file``). Then one damage: a byte-order mark, CRLF,
blank lines and comments, a duplicate value or author, invalid UTF-8, a NUL byte, a truncation,
a non-finite or huge number, a wrong category, a value of the wrong type, a range too large, a
duplicate YAML key, a column named twice, an empty file.

``same``: exactly the values written; ``refuse``: one ``ValueError`` (the class itself, not
``UnicodeDecodeError``), one line, naming the file, never quoting a long value; ``either``: a
valid load or such a refusal. Deterministic; ``slow`` draws many more. Defects found are pinned in
``test_malformed_examples.py``.
"""

from __future__ import annotations

import csv
import io
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from textcause.gender.probes import load_w_list, make_probes
from textcause.gender.selected import read_w_file
from textcause.gender.words import load_gendered_words


def _not_a_non_finite_number(v: str) -> bool:
    try:
        return math.isfinite(float(v))
    except ValueError:
        return True


LONG = "p0st-" + "x" * 60  # a value a message must never quote whole
FAST = settings(
    max_examples=100, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
MANY = settings(FAST, max_examples=2000)

value = st.one_of(
    st.integers(1000, 2100).map(str),
    st.sampled_from(["Paris", "New York", "Côte d'Ivoire", "r/AskReddit", "1.5", "-3", LONG]),
    st.text(min_size=1, max_size=10)
    .map(str.strip)
    .filter(lambda v: v and not v.startswith("#") and "\x00" not in v and v.splitlines() == [v])
    .filter(_not_a_non_finite_number),
)
KINDS = ["txt", "yaml-values", "yaml-range", "words", "csv"]
BYTE_DAMAGE = ["bom", "crlf", "invalid utf-8", "nul", "truncate"]
DAMAGE = ["none", "blank lines", "duplicate", "non-finite", "wrong type", "bogus category", "huge range", "yaml key twice", "column twice", "empty"] + BYTE_DAMAGE  # fmt: skip


@dataclass
class Case:
    kind: str
    payload: bytes
    verdict: str
    want: list
    damage: str


def _csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def _yaml_str(v: str) -> str:
    return '"' + v.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'


@st.composite
def cases(draw: st.DrawFn, kind: str) -> Case:
    values = draw(st.lists(value, min_size=2, max_size=6, unique=True))
    damage = draw(st.sampled_from(DAMAGE))
    verdict, want = "same", list(values)
    if damage == "duplicate" and kind in ("txt", "yaml-values", "csv"):
        values.append(values[0])
        verdict = "refuse"
    if damage == "non-finite" and kind in ("txt", "yaml-values"):
        values = ["1801", draw(st.sampled_from(["nan", "inf", "-Infinity", "1e400"]))]
        verdict = "refuse"
    if kind == "txt":
        lines = list(values)
        if damage == "blank lines":
            lines = ["# a comment", "", *[x for v in lines for x in (v, "   ")]]
        text = "\n".join(lines) + "\n"
    elif kind == "yaml-values":
        items = [_yaml_str(v) for v in values]
        if damage == "wrong type":
            items.append(draw(st.sampled_from(["[1, 2]", "{a: 1}", "null", "true"])))
            verdict = "refuse"
        text = "values: [" + ", ".join(items) + "]\n"
        if damage == "bogus category":
            text += "category: bogus\n"
            verdict = "refuse"
        if damage == "yaml key twice":
            text += "values: [a, b]\n"
            verdict = "refuse"
    elif kind == "yaml-range":
        start = draw(st.integers(1000, 2000))
        step = draw(st.integers(1, 50))
        stop = start + step * draw(st.integers(1, 20))
        want = [str(v) for v in range(start, stop + 1, step)]
        if damage == "huge range":
            stop, step, verdict = 10**15, 1, "refuse"
        if damage == "wrong type":
            step, verdict = draw(st.sampled_from(["true", "1.5", "'a'", "0"])), "refuse"
        text = f"category: date\nrange: {{start: {start}, stop: {stop}, step: {step}}}\n"
    elif kind == "words":
        pairs = [[v, v + "-m"] for v in values if v != values[0] or damage != "duplicate"]
        want = [p[0] for p in pairs]
        verdict = "same" if damage != "duplicate" else verdict
        if damage == "duplicate":
            pairs.append(list(pairs[0]))  # a pair listed twice: kept once
            verdict = "same"
        text = "pairs:\n" + "".join(f"  - [{_yaml_str(f)}, {_yaml_str(m)}]\n" for f, m in pairs)
        if damage == "wrong type":
            text += "  - [she]\n"
            verdict = "refuse"
        if damage == "yaml key twice":
            text += "pairs: []\n"
            verdict = "refuse"
    else:  # a W CSV per author
        rows = [["author", "w", "gender"]] + [[f"u{k}", v, "female" if k % 2 else "male"] for k, v in enumerate(values)]
        if damage == "duplicate":
            rows.append(["u0", "1999", "male"])
        if damage == "column twice":
            rows = [r + [r[1]] for r in rows]
            verdict = "refuse"
        want = [r[1] for r in rows[1:]]
        text = _csv(rows)
        if damage == "blank lines":
            text = text.replace("\n", "\n\n")
    if damage == "empty":
        text, verdict = "", "refuse"
    payload = text.encode("utf-8")
    if damage == "crlf":
        payload = payload.replace(b"\n", b"\r\n")
    elif damage == "bom":
        payload = b"\xef\xbb\xbf" + payload
    elif damage == "invalid utf-8":
        at = draw(st.integers(0, len(payload)))
        payload = payload[:at] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\x80"])) + payload[at:]
        verdict = "refuse"
    elif damage in ("nul", "truncate"):
        at = draw(st.integers(0, len(payload)))
        payload = payload[:at] + b"\x00" + payload[at:] if damage == "nul" else payload[:at]
        verdict = "either"
    return Case(kind, payload, verdict, want, damage)


def load(path: Path, kind: str) -> list[str]:
    if kind in ("txt", "yaml-values", "yaml-range"):
        w = load_w_list(str(path))
        make_probes(w)  # the category must have templates
        return list(w.values)
    if kind == "words":
        return list(load_gendered_words(path).words("female"))
    return read_w_file(path, "w", "gender")["w"].tolist()


def run(case: Case) -> None:
    suffix = {"txt": ".txt", "csv": ".csv"}.get(case.kind, ".yaml")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"w{suffix}"
        path.write_bytes(case.payload)
        try:
            got = load(path, case.kind)
        except ValueError as e:
            event(f"refused: {case.damage}")
            message = str(e)
            assert type(e) is ValueError, f"{type(e).__name__}: {message}"
            assert "\n" not in message and LONG not in message, message
            assert case.verdict in ("refuse", "either"), f"{case.kind} {case.damage}: refused: {message}"
            return
        event(f"read: {case.damage}")
        assert case.verdict in ("same", "either"), f"{case.kind} {case.damage}: read a file that must be refused"
        if case.verdict == "same":
            assert got == case.want


@pytest.mark.parametrize("kind", KINDS)
def test_malformed_gender_files(kind):
    given(cases(kind))(FAST(lambda case: run(case)))()


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_malformed_gender_files_many(kind):
    given(cases(kind))(MANY(lambda case: run(case)))()

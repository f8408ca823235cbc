"""Malformed SemEval-2020 Task 5 files: one ``ValueError`` sentence or a correct load, never anything else.

Hypothesis draws a small valid subtask-1 or subtask-2 file (sentences of any unicode: quotes,
commas, newlines; spans placed in them with END-INCLUSIVE offsets; missing consequents), writes it
as CSV and damages it one way: a missing, extra or twice-named column, a bad label, a bad or
repeated sentenceID, offsets out of range, end-exclusive or not matching the span text, a short or
long row, invalid UTF-8, a byte-order mark, CRLF newlines, blank lines, a truncation at a random
byte, an unbalanced quote, a NUL byte, an empty file, a header alone.

Each damage states what reading must give: ``same`` (exactly the rows written), ``refuse`` or
``either``. A refusal is exactly one ``ValueError`` (not a subclass such as ``UnicodeDecodeError``,
and not chained to pandas' ``ParserError``) whose message is one line naming the file and never
quoting a sentence (every sentence is longer than a cell a message may show). Deterministic; ``slow`` draws many more.
The defects found are pinned in ``test_malformed_examples.py``.
"""

from __future__ import annotations

import csv
import io
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from textcause.counterfactual.data import SUBTASK1_COLUMNS, SUBTASK2_COLUMNS, read_subtask1, read_subtask2

MARK = "p0st-"
PAD = " and so on" * 3  # every sentence is longer than the longest cell a message may show
FAST = settings(
    max_examples=80, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
MANY = settings(FAST, max_examples=1500)

piece = st.text(max_size=12)
BAD_LABELS = ["2", "-1", "yes", "", " ", "1.5", "nan", "inf", "0x1", "True", MARK + "a label" * 40]
BAD_IDS = ["", "abc", "1.5", "nan", "1e30", "99999999999999999999", MARK + "x" * 300]
DAMAGE = [
    "none", "missing column", "extra column", "twice-named column", "bad label", "bad id", "repeated id",
    "offset out of range", "end exclusive", "offset text", "short row", "long row", "invalid utf-8", "bom",
    "crlf", "blank lines", "truncate", "unbalanced quote", "nul", "empty file", "header only",
]  # fmt: skip


@dataclass
class Case:
    name: str
    payload: bytes
    verdict: str  # "same", "refuse" or "either"
    rows: list[dict]  # the rows written (for "same")
    damage: str


def subtask2_row(draw: st.DrawFn, sid: int) -> dict:
    parts = [
        MARK + draw(piece) + PAD,
        draw(st.text(min_size=1, max_size=8)),
        draw(piece),
        draw(st.text(min_size=1, max_size=8)),
        draw(piece),
    ]
    sentence = "".join(parts)
    a0 = len(parts[0])
    a1 = a0 + len(parts[1]) - 1
    row = {"sentenceID": sid, "sentence": sentence, "antecedent": parts[1]}
    if draw(st.booleans()):
        c0 = a1 + 1 + len(parts[2])
        c1 = c0 + len(parts[3]) - 1
        row.update(
            consequent=parts[3], antecedent_startid=a0, antecedent_endid=a1, consequent_startid=c0, consequent_endid=c1
        )
    else:
        row.update(consequent=draw(st.sampled_from(["{}", ""])), antecedent_startid=a0, antecedent_endid=a1)
        row.update(consequent_startid=-1, consequent_endid=-1)
    return row


def write_csv(rows: list[dict], columns: list[str], quote_all: bool, end: str = "\n") -> bytes:
    out = io.StringIO()
    for values in [columns] + [[str(r.get(c, "")) for c in columns] for r in rows]:
        line = io.StringIO()
        # "\r\n": QUOTE_MINIMAL quotes every field holding "\r" or "\n"
        csv.writer(line, quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL, lineterminator="\r\n").writerow(
            values
        )
        out.write(line.getvalue()[:-2] + end)
    return out.getvalue().encode("utf-8")


@st.composite
def cases(draw: st.DrawFn, subtask: int) -> Case:
    n = draw(st.integers(1, 5))
    ids = draw(st.lists(st.integers(-10, 10**9), min_size=n, max_size=n, unique=True))
    if subtask == 1:
        rows = [
            {"sentenceID": i, "gold_label": draw(st.sampled_from([0, 1])), "sentence": MARK + draw(piece) + PAD}
            for i in ids
        ]
        columns = list(SUBTASK1_COLUMNS)
    else:
        rows = [subtask2_row(draw, i) for i in ids]
        columns = list(SUBTASK2_COLUMNS)
    damage = draw(st.sampled_from(DAMAGE))
    verdict, end = "same", "\n"
    k = draw(st.integers(0, n - 1))
    if damage == "missing column":
        columns.remove(draw(st.sampled_from(columns)))
        verdict = "refuse"
    elif damage == "extra column":
        columns.insert(draw(st.integers(0, len(columns))), draw(st.sampled_from(["extra", "Sentence", "id "])))
    elif damage == "twice-named column":
        columns.append(draw(st.sampled_from(columns)))
        verdict = "refuse"
    elif damage == "bad label" and subtask == 1:
        rows[k]["gold_label"] = draw(st.sampled_from(BAD_LABELS))
        verdict = "refuse"
    elif damage == "bad id":
        rows[k]["sentenceID"] = draw(st.sampled_from(BAD_IDS))
        verdict = "refuse"
    elif damage == "repeated id" and n > 1:
        rows[k]["sentenceID"] = rows[(k + 1) % n]["sentenceID"]
        verdict = "refuse"
    elif damage in ("offset out of range", "end exclusive", "offset text") and subtask == 2:
        col = draw(st.sampled_from(["antecedent", "consequent"]))
        if col == "consequent" and rows[k]["consequent_startid"] == -1:
            col = "antecedent"
        r = rows[k]
        if damage == "offset out of range":
            which = draw(st.sampled_from(["startid", "endid"]))
            r[f"{col}_{which}"] = draw(st.sampled_from([len(r["sentence"]), -2, 10**12, "1.5", "", "x"]))
        elif damage == "end exclusive":
            r[f"{col}_endid"] += 1
        else:
            r[col] = r[col] + "!"
        verdict = "refuse"
    elif damage == "crlf":
        end = "\r\n"
    elif damage == "blank lines":
        end = "\n\n"
    payload = write_csv(rows, columns, draw(st.booleans()), end)
    if damage == "short row":  # a row with one field less: pandas would fill it with NaN
        payload += b",".join([b"7"] * (len(columns) - 1)) + b"\n"
        verdict = "refuse"
    elif damage == "long row":
        payload += (",".join(["7"] * (len(columns) + 1))).encode() + b"\n"
        verdict = "refuse"
    elif damage == "invalid utf-8":
        at = draw(st.integers(0, len(payload)))
        payload = payload[:at] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\x80", b"\xed\xa0\x80"])) + payload[at:]
        verdict = "refuse"
    elif damage == "bom":
        payload = b"\xef\xbb\xbf" + payload
    elif damage == "truncate":
        payload, verdict = payload[: draw(st.integers(0, len(payload)))], "either"
    elif damage in ("unbalanced quote", "nul"):
        at = draw(st.integers(0, len(payload)))
        payload, verdict = payload[:at] + (b'"' if damage == "unbalanced quote" else b"\x00") + payload[at:], "either"
    elif damage == "empty file":
        payload, verdict = b"", "refuse"
    elif damage == "header only":
        payload, verdict = payload.split(b"\n")[0] + b"\n", "refuse"
    return Case(f"subtask{subtask}.csv", payload, verdict, rows, damage)


def check(path: Path, case: Case, subtask: int) -> None:
    read = read_subtask1 if subtask == 1 else read_subtask2
    try:
        frame = read(path)
    except ValueError as e:
        event(f"refused: {case.damage}")
        message = str(e)
        assert type(e) is ValueError, f"{type(e).__name__}: {message}"
        assert e.__cause__ is None or isinstance(e.__cause__, ValueError) and type(e.__cause__) is ValueError
        assert "\n" not in message and not any(r["sentence"] in message for r in case.rows), message
        assert path.name in message, message
        assert len(message) < 400, message
        assert case.verdict in ("refuse", "either"), f"{case.damage}: refused a valid file: {message}"
        return
    event(f"read: {case.damage}")
    assert case.verdict in ("same", "either"), f"{case.damage}: read a file that must be refused"
    if case.verdict == "same":
        assert frame["sentenceID"].tolist() == [int(r["sentenceID"]) for r in case.rows]
        assert frame["sentence"].tolist() == [r["sentence"] for r in case.rows]
        if subtask == 1:
            assert frame["gold_label"].tolist() == [int(r["gold_label"]) for r in case.rows]
        else:
            for col in ("antecedent_startid", "antecedent_endid", "consequent_startid", "consequent_endid"):
                assert frame[col].tolist() == [int(r[col]) for r in case.rows]
            assert frame["consequent"].tolist() == [
                "" if r["consequent"] == "{}" else r["consequent"] for r in case.rows
            ]
    else:  # whatever was read is valid: ids unique, labels 0/1, spans match their texts
        assert frame["sentenceID"].is_unique
        if subtask == 2:
            for r in frame.itertuples():
                assert r.sentence[r.antecedent_startid : r.antecedent_endid + 1] == r.antecedent


def run(case: Case, subtask: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / case.name
        path.write_bytes(case.payload)
        check(path, case, subtask)


@pytest.mark.parametrize("subtask", [1, 2])
def test_malformed_semeval_files(subtask):
    given(cases(subtask))(FAST(lambda case: run(case, subtask)))()


@pytest.mark.slow
@pytest.mark.parametrize("subtask", [1, 2])
def test_malformed_semeval_files_many(subtask):
    given(cases(subtask))(MANY(lambda case: run(case, subtask)))()

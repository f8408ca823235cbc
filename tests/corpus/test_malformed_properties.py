"""Malformed corpus files of every supported format: one ``ValueError`` sentence or a correct load.

Hypothesis draws a small valid corpus (users, posts with any unicode, huge fields, blank posts,
UNIX or date times, ids that look alike), writes it in one of the formats ``load_histories`` reads
(history JSONL plain or gzipped, NDJSON, CSV plain or gzipped, Parquet, and the Hugging Face
builders and ``save_to_disk`` folders on those files), then damages it one way: truncation at a
random byte, a byte flip, invalid UTF-8, a byte-order mark, mixed newlines, blank lines, an
unbalanced quote, a missing, extra or duplicated column or key, a value of the wrong type, a NaN
or inf time, an empty id, an id written both as an integer and as a string, a user on two lines,
an empty file or a header alone.

Each damage states what reading must give: ``same`` (exactly the users, posts and times written,
after the documented rules), ``refuse`` (a refusal), ``same_or_refuse`` or ``either`` (any valid
corpus, or a refusal). A refusal is always exactly one ``ValueError`` (not a subclass such as
``UnicodeDecodeError``, ``json.JSONDecodeError``, pandas' ``ParserError`` or pyarrow's
``ArrowInvalid``, and not chained to one) whose message is one sentence: one line that ends with a
period or names the file, and never quotes a post. Anything else fails. The defects found are
pinned in ``test_malformed_examples.py``. Deterministic (``derandomize=True``); the ``slow``
variants draw many more examples.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

hypothesis = pytest.importorskip("hypothesis")
from corpus_checks import assert_well_formed
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from textcause.corpus import load_histories

MARK = "p0st-"  # every post starts with it, so a message quoting one is easy to spot
NAN = object()  # a time written as NaN: read as missing
FAST = settings(
    max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
MANY = settings(FAST, max_examples=1500)
HF_FAST = settings(FAST, max_examples=20)
HF_MANY = settings(FAST, max_examples=150)


# ---------------------------------------------------------------- a valid corpus and what it reads to


@dataclass
class Post:
    text: Any  # a string (blank ones are dropped), or None in JSON formats
    time: Any  # None, NAN, UNIX seconds (int) or an ISO date string


@dataclass
class User:
    uid: Any  # a string, or an int in typed formats
    posts: list[Post]


def _instant(time: Any) -> float:
    if isinstance(time, str):
        return datetime.fromisoformat(time).replace(tzinfo=timezone.utc).timestamp()
    return float(time)


def _iso(time: Any) -> str | None:
    if time is None or time is NAN:
        return None
    return time if isinstance(time, str) else datetime.fromtimestamp(time, tz=timezone.utc).isoformat()


def expected(users: list[User], rows: list[dict] | None) -> list[tuple[str, list[str], list[str | None] | None]]:
    """What ``load_histories(min_posts=1, max_posts=None)`` must give: the module docstrings' rules.

    ``rows`` are a comment table's rows (None for a history file): its users come in the order of
    their first kept row.
    """
    table = rows is not None
    if table:
        first = [str(r.get("author")) for r in rows if isinstance(r.get("text"), str) and r["text"].strip()]
        rank = {uid: k for k, uid in reversed(list(enumerate(first)))}
        users = sorted(users, key=lambda u: rank.get(str(u.uid), len(rank)))
    out = []
    for u in users:
        posts = [p for p in u.posts if isinstance(p.text, str) and p.text.strip()]
        if table:  # grouped by author, timed posts first by time (stable), untimed last
            untimed = [p.time is None or p.time is NAN for p in posts]
            order = sorted(
                range(len(posts)), key=lambda i: (untimed[i], 0.0 if untimed[i] else _instant(posts[i].time))
            )
            posts = [posts[i] for i in order]
        if posts:
            times = [_iso(p.time) for p in posts]
            out.append((str(u.uid), [p.text for p in posts], None if all(t is None for t in times) else times))
    return out


texts = st.text(max_size=24).map(lambda s: MARK + s)  # any unicode: quotes, commas, newlines, NUL
blank = st.sampled_from(["", "   ", "\t\n"])
huge = st.integers(100_000, 300_000).map(lambda n: MARK + "x" * n)
str_ids = st.one_of(
    st.sampled_from(["1", "01", "1.0", " 1", "NA", "null", "None", "u1", "U1", "é", "e\u0301", "[deleted]x"]),
    st.text(min_size=1, max_size=8).filter(lambda s: s.strip() and s not in ("[deleted]", "[removed]")),
)


@st.composite
def corpora(draw: st.DrawFn, typed: bool = True, json_texts: bool = True) -> list[User]:
    """1 to 4 users with distinct ids (all strings, or all integers where the format has types)."""
    as_int = typed and draw(st.booleans())
    ids = st.integers(0, 10**6) if as_int else str_ids
    uids = draw(st.lists(ids, min_size=1, max_size=4, unique_by=lambda x: str(x)))
    style = draw(st.sampled_from(["int", "date", "none", "some"]))
    text = st.one_of(texts, texts, texts, blank, huge, st.none() if json_texts else blank)
    users = []
    for uid in uids:
        n = draw(st.integers(1, 4))
        base = draw(st.integers(0, 2 * 10**9))
        steps = draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n))
        posts = []
        for k in range(n):
            t = base + sum(steps[: k + 1])
            time = {"int": t, "date": datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%d"), "none": None}
            time = time.get(style, draw(st.sampled_from([t, None])))
            posts.append(Post(draw(text), time))
        users.append(User(uid, posts))
    return users


# ---------------------------------------------------------------- writers: records -> payload bytes


def history_records(users: list[User]) -> list[dict]:
    return [{"user_id": u.uid, "posts": [{"text": p.text, "time": p.time} for p in u.posts]} for u in users]


def comment_records(users: list[User], order: list[int]) -> list[dict]:
    """One comment a row, users interleaved by ``order`` (user indices), each user's posts in order."""
    queues = [list(u.posts) for u in users]
    rows = []
    for i in order + [i for i, q in enumerate(queues) for _ in q]:
        if queues[i]:
            p = queues[i].pop(0)
            rows.append({"author": users[i].uid, "text": p.text, "time": p.time})
    return rows


def _json_value(v: Any) -> Any:
    return float("nan") if v is NAN else v


def write_json(records: list[dict], ends: list[str], ascii_: bool) -> bytes:
    out = []
    for k, r in enumerate(records):
        r = {key: _json_value(v) if key == "time" else v for key, v in r.items()}
        if "posts" in r and isinstance(r["posts"], list):
            r["posts"] = [{**p, "time": _json_value(p.get("time"))} if isinstance(p, dict) else p for p in r["posts"]]
        out.append(json.dumps(r, ensure_ascii=ascii_) + ends[k % len(ends)])
    return "".join(out).encode("utf-8")


def write_csv(records: list[dict], ends: list[str], quote_all: bool, header: list[str] | None = None) -> bytes:
    header = header or list(dict.fromkeys(k for r in records for k in r)) or ["author", "text", "time"]
    out = io.StringIO()
    for k, row in enumerate([header] + [[_csv_cell(r.get(c)) for c in header] for r in records]):
        line = io.StringIO()
        # "\r\n": QUOTE_MINIMAL quotes the fields holding a character of the line terminator
        csv.writer(line, quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL, lineterminator="\r\n").writerow(row)
        out.write(line.getvalue()[:-2] + ends[k % len(ends)])
    return out.getvalue().encode("utf-8")


def _csv_cell(v: Any) -> str:
    return "" if v is None else "NaN" if v is NAN else str(v)


def write_parquet(records: list[dict]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = list(dict.fromkeys(k for r in records for k in r)) or ["author", "text", "time"]
    data = {c: [_json_value(r.get(c)) for r in records] for c in columns}
    buf = io.BytesIO()
    pq.write_table(pa.table(data), buf)
    return buf.getvalue()


# ---------------------------------------------------------------- one damage, and what reading must give

FORMATS = ["jsonl", "jsonl.gz", "ndjson", "csv", "csv.gz", "parquet"]
HF_FORMATS = ["hf-jsonl", "hf-ndjson", "hf-csv", "hf-parquet", "hf-saved"]
BYTE_DAMAGE = ["truncate", "flip", "invalid utf-8", "bom", "unbalanced quote", "nul", "garbage line", "gzip cut"]
TEXT_FORMATS = ("jsonl", "ndjson", "csv")

WRONG = {  # values no reader may take for the field, in formats that have types
    "id": [1.5, True, ["a"], {"a": 1}, -0.0],
    "text": [7, True, ["t"], {"t": 1}, 1.5],
    "time": [True, [1], {"t": 1}, float("inf")],
}


@dataclass
class Case:
    name: str  # the file name
    payload: bytes  # uncompressed contents (Parquet: the file)
    verdict: str  # "same", "refuse", "same_or_refuse" or "either"
    want: list  # the expected load for "same" / "same_or_refuse"
    kwargs: dict
    damage: str = "none"
    clean: bytes = b""  # the payload before any damage to its bytes


@st.composite
def cases(draw: st.DrawFn, fmt: str) -> Case:
    base = fmt.removeprefix("hf-").removesuffix(".gz")
    kind = "jsonl" if base in ("jsonl", "saved") else base
    typed = kind != "csv"
    users = draw(corpora(typed=typed, json_texts=kind in ("jsonl", "ndjson")))
    table = kind != "jsonl"
    damage = draw(
        st.sampled_from(
            ["none", "newlines", "blank lines", "extra key", "missing key", "wrong type", "nan time", "empty id"]
            + (["spellings", "duplicate user"] if kind == "jsonl" else ["spellings", "duplicate column"])
            + ["empty file", "header only"]
            + BYTE_DAMAGE
        )
    )
    verdict = "same"
    ends = ["\n"]
    if kind == "jsonl":
        records = history_records(users)
    else:
        order = draw(st.lists(st.integers(0, len(users) - 1), max_size=12))
        records = comment_records(users, order)
    header = None
    if damage == "newlines":
        ends = draw(st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=1, max_size=4))
    elif damage == "blank lines":
        ends = draw(st.lists(st.sampled_from(["\n", "\n\n", "\n\n\n"]), min_size=1, max_size=3))
    elif damage == "extra key":
        extra = draw(st.one_of(st.integers(), st.text(max_size=5), st.none()))
        for r in records:
            r[draw(st.sampled_from(["extra", "meta2", "Text", "author "]))] = extra
        if kind == "jsonl" and draw(st.booleans()):
            records[0]["meta"] = {"gender": "female", "age": 37}
    elif damage == "missing key":
        key = draw(st.sampled_from(["user_id", "posts"] if kind == "jsonl" else ["author", "text", "time"]))
        for r in records if table else records[draw(st.integers(0, len(records) - 1)) :][:1]:
            r.pop(key, None)
        verdict = "refuse" if records else "same_or_refuse"
    elif damage == "wrong type" and kind != "csv":
        field = draw(st.sampled_from(["id", "text", "time"]))
        value = draw(st.sampled_from(WRONG[field]))
        k = draw(st.integers(0, max(0, len(records) - 1)))
        if records and kind == "jsonl":
            if field == "id":
                records[k]["user_id"] = value
            else:
                records[k]["posts"].append({"text": MARK + "w", "time": None, field: value})
            verdict = "refuse"
        elif records and kind == "parquet":  # a typed column: every value of the field
            for r in records:
                r[{"id": "author"}.get(field, field)] = value
            # a double id column of whole numbers is valid (integers with missing values, as pandas
            # stores them): -0.0 for every author is one user '0'
            whole = field == "id" and isinstance(value, float) and value.is_integer()
            verdict = "either" if whole else "refuse"
        elif records:  # on a kept row (an inf time is a wrong value, checked on kept rows only)
            records[k] = {**records[k], "text": MARK + "w", {"id": "author"}.get(field, field): value}
            verdict = "refuse"
    elif damage == "wrong type":  # CSV has no types: a time that is neither a number nor a date
        if records:
            k = draw(st.integers(0, len(records) - 1))
            records[k] = {
                **records[k],
                "text": MARK + "w",
                "time": draw(st.sampled_from(["soon", "inf", "1e30", "-inf"])),
            }
            verdict = "refuse"
    elif damage == "nan time":
        for u in users:
            for p in u.posts:
                if isinstance(p.time, int) and draw(st.booleans()):
                    p.time = NAN
        records = history_records(users) if kind == "jsonl" else comment_records(users, order)
        if kind == "parquet" and any(isinstance(r["time"], str) for r in records):
            verdict = "same_or_refuse"  # a string column with a float NaN: pyarrow refuses to write it
    elif damage == "empty id":
        k = draw(st.integers(0, len(records) - 1))
        empty = draw(st.sampled_from(["", " ", "\t"]))
        if kind == "jsonl":
            records[k]["user_id"] = empty
            verdict = "refuse"
        elif kind == "csv" or all(isinstance(u.uid, str) for u in users):  # a blank author: the row is dropped
            records.insert(k, {"author": empty, "text": MARK + "dropped", "time": None})
    elif damage == "spellings" and kind != "csv":
        if users and isinstance(users[0].uid, int) and kind != "parquet":
            dup = dict(
                records[0], **({"user_id": str(users[0].uid)} if kind == "jsonl" else {"author": str(users[0].uid)})
            )
            records.append(dup)
            verdict = "refuse"
    elif damage == "duplicate user":
        records.append(dict(records[0]))
        verdict = "refuse"
    elif damage == "duplicate column" and kind == "csv":
        header = ["author", "text", "time", draw(st.sampled_from(["text", "author", "time"]))]
        verdict = "refuse"
    elif damage == "header only":
        records = [] if kind != "jsonl" else records[:0]
        verdict = "refuse"
    want = expected(users, records if table else None)
    if not want and verdict == "same":
        verdict = "refuse"  # "No user in ... has at least min_posts=1 non-empty posts."

    if kind in ("jsonl", "ndjson"):
        payload = write_json(records, ends, draw(st.booleans()))
    elif kind == "csv":
        payload = write_csv(records, ends, draw(st.booleans()), header)
    else:
        try:
            payload = write_parquet(records)
        except Exception:  # pyarrow cannot type the column: write a valid file instead
            rows = comment_records(users, [])
            payload, verdict, want = write_parquet(rows), "same", expected(users, rows)
            if not want:
                verdict = "refuse"
    clean, clean_verdict = payload, verdict
    if damage == "empty file":
        payload, verdict = b"", "refuse"
    elif damage in BYTE_DAMAGE:
        payload, verdict = _damage(draw, damage, payload, kind, verdict)
    if fmt == "hf-saved" and damage in BYTE_DAMAGE:  # the damage goes to the saved folder's Arrow file
        payload, verdict = clean, "either" if damage in ("truncate", "flip") else clean_verdict
    name = ("h." if kind == "jsonl" else "c.") + kind + (".gz" if fmt.endswith(".gz") else "")
    kwargs = {"format": "hf" if fmt.startswith("hf-") else kind}
    return Case(name, payload, verdict, want, kwargs, damage, clean)


def _damage(draw: st.DrawFn, damage: str, data: bytes, kind: str, verdict: str) -> tuple[bytes, str]:
    """Damage the bytes of a file; the verdict that reading must then give."""
    at = draw(st.integers(0, len(data)))
    if damage == "truncate":
        return data[:at], "either"
    if damage == "flip" and data:
        at = min(at, len(data) - 1)
        return data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :], "either"
    if damage == "invalid utf-8":
        bad = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\x80", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"]))
        return data[:at] + bad + data[at:], "refuse" if kind in TEXT_FORMATS else "either"
    if damage == "bom":
        return b"\xef\xbb\xbf" + data, "same_or_refuse" if verdict == "same" else verdict
    if damage == "unbalanced quote":
        return data[:at] + b'"' + data[at:], "either"
    if damage == "nul":
        return data[:at] + b"\x00" + data[at:], "either"
    if damage == "garbage line":
        return data + b'}{ not a row ,,,"\n', "refuse" if kind in ("jsonl", "ndjson") else "either"
    return data, verdict  # "gzip cut" is applied to the compressed file by write()


# ---------------------------------------------------------------- the property


def write(folder: Path, case: Case, fmt: str, draw_cut: int) -> Path | None:
    """Write the case's file (compressed for .gz; a save_to_disk folder for hf-saved, None if none)."""
    path = folder / case.name
    data = case.payload
    if case.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
        if draw_cut:
            data = data[: max(2, len(data) * draw_cut // 10)]
    path.write_bytes(data)
    if fmt == "hf-saved":
        import datasets

        out = folder / "saved"
        try:  # a history JSONL that datasets itself cannot read has no saved folder: nothing to test
            datasets.Dataset.from_json(str(path), cache_dir=str(folder / "c")).save_to_disk(str(out))
        except Exception:  # datasets itself cannot read it
            return None
        if case.damage in ("truncate", "flip"):
            arrow = sorted(out.glob("*.arrow"))[0]
            data = arrow.read_bytes()
            at = draw_cut * len(data) // 10
            arrow.write_bytes(
                data[:at] if case.damage == "truncate" else data[:at] + bytes([data[at] ^ 0x5A]) + data[at + 1 :]
            )
        return out
    return path


def check(path: Path, case: Case) -> None:
    try:
        corpus = load_histories(path, min_posts=1, max_posts=None, **case.kwargs)
    except ValueError as e:
        message = str(e)
        assert type(e) is ValueError, f"{type(e).__name__} (a ValueError subclass) escaped: {message}"
        assert e.__cause__ is None and (e.__context__ is None or e.__suppress_context__), f"chained: {message}"
        assert message and "\n" not in message and "\r" not in message, f"not one line: {message!r}"
        assert message.endswith(".") or path.name in message, f"not a sentence: {message!r}"
        assert MARK not in message, "the message quotes a post"
        assert case.verdict != "same", f"a valid file was refused: {message}"
        event(f"refused ({case.verdict})")
        return
    event(f"loaded ({case.verdict})")
    assert case.verdict != "refuse", f"read instead of refused: {corpus!r}"
    assert_well_formed(corpus)
    if case.verdict in ("same", "same_or_refuse"):
        got = [(h.user_id, list(h.posts), None if h.times is None else list(h.times)) for h in corpus]
        if case.kwargs.get("format") == "hf":  # pyarrow's JSON reader parses dates: the same instants
            got, want = _instants(got), _instants(case.want)
        else:
            want = case.want
        assert got == want


def _instants(users: list) -> list:
    import pandas as pd

    return [
        (u, p, None if t is None else [None if x is None else pd.Timestamp(x).value for x in t]) for u, p, t in users
    ]


def run_case(fmt: str, case: Case, cut: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder), case, fmt, cut)
        if path is not None:
            check(path, case)


@st.composite
def format_and_case(draw: st.DrawFn, formats: list[str]) -> tuple[str, Case, int]:
    fmt = draw(st.sampled_from(formats))
    case = draw(cases(fmt))
    cut = draw(st.integers(1, 9)) if fmt.endswith(".gz") and draw(st.integers(0, 9)) == 0 else 0
    if cut:
        case.verdict = "either"
    if fmt == "hf-saved":
        cut = draw(st.integers(0, 9))
    return fmt, case, cut


@FAST
@given(format_and_case(FORMATS))
def test_malformed_files_give_one_sentence_or_a_correct_load(drawn):
    run_case(*drawn)


@pytest.mark.slow
@MANY
@given(format_and_case(FORMATS))
def test_malformed_files_many_examples(drawn):
    run_case(*drawn)


@pytest.fixture(scope="module")
def offline():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("HF_DATASETS_OFFLINE", "1")
        yield


@HF_FAST
@given(drawn=format_and_case(HF_FORMATS))
def test_malformed_hugging_face_sources_give_one_sentence_or_a_correct_load(offline, drawn):
    run_case(*drawn)


@pytest.mark.slow
@HF_MANY
@given(drawn=format_and_case(HF_FORMATS))
def test_malformed_hugging_face_sources_many_examples(offline, drawn):
    run_case(*drawn)


@pytest.mark.parametrize("name", ["c.tsv", "blog.xml", "tweets.txt", "c.json.bz2"])
def test_unsupported_formats_give_one_sentence(tmp_path, name):
    path = tmp_path / name
    path.write_text("author\ttext\ttime\nu1\t<post>x</post>\t1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^Cannot tell the format of .*: pass format=") as info:
        load_histories(path, min_posts=1)
    assert type(info.value) is ValueError and "\n" not in str(info.value)

"""Property-based tests of the corpus readers: on any small file, a valid Corpus or one ValueError.

Random history JSONL lines, NDJSON comments and CSV rows carry values of random JSON types (strings
with any unicode, huge integers, NaN, inf, lists, objects, null), missing fields, ragged rows,
garbage lines, invalid UTF-8 and damaged gzip. The property: ``load_histories`` returns a
``Corpus`` whose ids and posts are strings (times parallel to the posts), or raises one
``ValueError`` sentence (``FileNotFoundError`` for a missing path) that never quotes a post's
text; never another exception, never a hang. Deterministic through the profile in
``tests/conftest.py``.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from corpus_checks import assert_well_formed
from hypothesis import event, given, settings
from hypothesis import strategies as st

from textcause.corpus import load_histories

#: Post texts are drawn with this prefix, so a message quoting one is easy to spot.
MARK = "p0st-"

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([10**30, -(10**30), 2**63, 0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e20, 1e30, -1e20, 1.5, 1e9, 86400.0]),
    st.text(max_size=8),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=6,
)
texts = st.text(min_size=4, max_size=30).map(lambda s: MARK + s)  # any unicode, newlines and quotes included
times = st.one_of(
    st.none(),
    st.integers(-10, 2 * 10**9),
    st.sampled_from(["2016-02-17", "2016-02-17T04:22:47", "soon", "", "1e30", "NaN"]),
    json_values,
)
ids = st.one_of(st.sampled_from(["u1", "u2", "u3"]), st.integers(0, 3), json_values)


good_times = st.one_of(st.none(), st.integers(0, 2 * 10**9), st.sampled_from(["2016-02-17", "2016-02-17T04:22:47"]))
good_texts = st.one_of(texts, texts, texts, st.sampled_from(["", "   ", None]))


def _maybe(draw: st.DrawFn, value_strategy: st.SearchStrategy, key: str, obj: dict, p_missing: int = 6) -> None:
    if draw(st.integers(0, p_missing)):
        obj[key] = draw(value_strategy)


@st.composite
def posts(draw: st.DrawFn) -> object:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(json_values)
    if kind == 1:
        return draw(texts)
    post: dict = {}
    _maybe(draw, st.one_of(texts, texts, texts, json_values), "text", post)
    _maybe(draw, times, "time", post)
    return post


@st.composite
def history_line(draw: st.DrawFn) -> str:
    """One line of a history JSONL, of any shape and types."""
    kind = draw(st.integers(0, 19))
    if kind == 0:
        return draw(st.text(max_size=20))  # not JSON, or JSON that is not an object
    if kind == 1:
        return json.dumps(draw(json_values))
    obj: dict = {}
    _maybe(draw, ids, "user_id", obj, 12)
    _maybe(draw, st.one_of(st.lists(posts(), max_size=6), json_values), "posts", obj, 12)
    _maybe(draw, st.one_of(st.dictionaries(st.text(max_size=4), scalars, max_size=3), json_values), "meta", obj)
    return json.dumps(obj, ensure_ascii=draw(st.booleans()))


#: One defect of issue 14 put into an otherwise good history line: (what, field, value).
DEFECTS = [
    ("id", "user_id", ["a", "b"]),
    ("id", "user_id", {"a": 1}),
    ("id", "user_id", 1.5),
    ("id", "user_id", True),
    ("text", "text", ["list", "as", "text"]),
    ("text", "text", 7),
    ("text", "text", {"t": 1}),
    ("meta", "meta", [1]),
    ("meta", "meta", "x"),
    ("time", "time", 1e20),
    ("time", "time", -1e20),
    ("time", "time", [1]),
    ("time", "time", True),
    ("post", "posts", [3]),
    ("duplicate", "user_id", None),
]


@st.composite
def history_files(draw: st.DrawFn) -> tuple[str, object]:
    """A history JSONL and what reading it must give.

    Three kinds: well-formed (distinct ids, right types; expected: each user's non-blank posts),
    well-formed but for one defect of issue 14 (expected: a refusal naming its line), or lines of
    any shape (expected: nothing but the general property).
    """
    n = draw(st.integers(0, 8))
    kind = draw(st.sampled_from(["good", "defect", "any"]))
    if kind == "any":
        lines = draw(st.lists(st.one_of(history_line(), st.just("")), min_size=n, max_size=n))
        return "\n".join(lines) + "\n", None
    objs, expected = [], []
    for i in range(max(n, 2) if kind == "defect" else n):
        user = draw(st.sampled_from([f"u{i}", i]))
        post = st.one_of(st.fixed_dictionaries({"text": good_texts}, optional={"time": good_times}), texts)
        obj = {"user_id": user, "posts": draw(st.lists(post, max_size=5))}
        _maybe(draw, st.dictionaries(st.text(max_size=4), scalars, max_size=3), "meta", obj, 2)
        objs.append(obj)
        kept = [q if isinstance(q, str) else q["text"] for q in obj["posts"]]
        expected.append((str(user), [t for t in kept if t and t.strip()]))
    if kind == "good":
        return "".join(json.dumps(o, ensure_ascii=draw(st.booleans())) + "\n" for o in objs), ("good", expected)
    what, field, value = draw(st.sampled_from(DEFECTS))
    k = draw(st.integers(1, len(objs) - 1))  # the defective line (0-based), never the first
    obj = objs[k]
    if what == "duplicate":
        obj["user_id"] = objs[0]["user_id"]
    elif what in ("text", "time"):
        obj["posts"].append({"text": MARK + "x", "time": None})
        obj["posts"][-1][field] = value
    else:
        obj[field] = value
    return "".join(json.dumps(o) + "\n" for o in objs), ("defect", k + 1)


@st.composite
def ndjson_files(draw: st.DrawFn) -> str:
    """An NDJSON comment table: well-formed half the time, else comments of any shape and types."""
    clean = draw(st.booleans())
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        if not clean and not draw(st.integers(0, 19)):
            lines.append(draw(st.text(max_size=20)))
            continue
        obj: dict = {}
        _maybe(draw, st.sampled_from(["u1", "u2", 3, None]) if clean else ids, "author", obj, 12)
        _maybe(draw, good_texts if clean else st.one_of(texts, texts, json_values), "text", obj, 12)
        _maybe(draw, good_times if clean else times, "time", obj)
        lines.append(json.dumps(obj, ensure_ascii=draw(st.booleans())))
    return "\n".join(lines) + "\n"


@st.composite
def csv_files(draw: st.DrawFn) -> tuple[str, object]:
    """A CSV comment table and, for a good table with one defect, the line the refusal must name.

    Kinds: well-formed and quoted; well-formed but for one defect of issue 14 (a ragged row, a time
    of 1e30, one bad time among good ones); or ragged rows, odd headers and no quoting at all.
    """
    kind = draw(st.sampled_from(["good", "defect", "any"]))
    if kind == "any":
        header = draw(
            st.sampled_from(
                [["author", "text", "time"], ["author", "text"], ["text", "author", "time", "extra"], ["user", "body"]]
            )
        )
        cells = st.one_of(
            st.sampled_from(["u1", "u2", "[deleted]", "NA", "", "null"]),
            texts,
            st.integers(-10, 2 * 10**9).map(str),
            st.sampled_from(["2016-02-17", "1e30", "soon", "inf"]),
            st.text(max_size=6),
        )
        rows = draw(st.lists(st.lists(cells, min_size=len(header) - 1, max_size=len(header) + 1), max_size=8))
        if draw(st.booleans()):
            return _csv_text([header, *rows]), None
        return "\n".join(",".join(r) for r in [header, *rows]) + "\n", None  # no quoting: texts break rows
    row = st.tuples(
        st.sampled_from(["u1", "u2", "[deleted]", "NA", ""]),
        good_texts.map(lambda t: t or ""),
        good_times.map(lambda t: "" if t is None else str(t)),
    ).map(list)
    rows = draw(st.lists(row, min_size=1 if kind == "defect" else 0, max_size=8))
    if kind == "good":
        return _csv_text([["author", "text", "time"], *rows]), None
    k = draw(st.integers(0, len(rows) - 1))
    what = draw(st.sampled_from(["extra field", "missing field", "1e30", "soon"]))
    if what == "extra field":
        rows[k] = [*rows[k], "x"]
    elif what == "missing field":
        rows[k] = rows[k][:2]
    else:  # a kept row (a user's non-blank post) with a bad time
        rows[k] = ["u1", MARK + "x", what]
    body = _csv_text([["author", "text", "time"], *rows[:k]])
    line = len(re.findall(r"\r\n|\r|\n", body)) + 1  # where row k starts in the file
    return body + _csv_text(rows[k:]), ("defect", line, what)


def _csv_text(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue()


def check_corpus_or_refusal(path: Path, body: str, expected: object = None, min_posts: int = 1, **kwargs) -> None:
    """The general property; with ``expected``, also the exact corpus or the line of the refusal."""
    try:
        corpus = load_histories(path, min_posts=min_posts, **kwargs)
    except (ValueError, FileNotFoundError) as e:
        message = str(e)
        assert message and "\n" not in message.strip(), message
        assert MARK not in message, message  # never a post's text
        if expected is not None and expected[0] == "defect":
            assert f"line {expected[1]}" in message.lower(), message
        elif expected is not None:
            assert not any(len(posts) >= min_posts for _, posts in expected[1]), message
            assert message.startswith("No user in") or message.endswith("holds no records."), message
        event("refused")
        return
    event("corpus")
    assert expected is None or expected[0] == "good", (expected, corpus)
    if expected is not None:
        assert [(h.user_id, list(h.posts)) for h in corpus] == [u for u in expected[1] if len(u[1]) >= min_posts]
    assert_well_formed(corpus, meta=True)


def _write(folder: Path, name: str, body: str, damage: int) -> Path:
    path = folder / name
    data = body.encode("utf-8")
    if damage == 1:  # invalid UTF-8 somewhere
        data = data[: len(data) // 2] + b"\xff\xfe" + data[len(data) // 2 :]
    if name.endswith(".gz"):
        data = gzip.compress(data)
        if damage == 2:  # a truncated download
            data = data[: max(2, len(data) // 2)]
    path.write_bytes(data)
    return path


@settings(max_examples=200)
@given(
    history_files(),
    st.sampled_from(["h.jsonl", "h.jsonl.gz"]),
    st.sampled_from([None, "jsonl"]),
    st.integers(0, 9),
    st.integers(1, 3),
)
def test_history_jsonl_gives_a_corpus_or_one_sentence(file, name, fmt, damage, min_posts):
    body, expected = file
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), name, body, damage)
        damaged = damage == 1 or (damage == 2 and name.endswith(".gz"))
        check_corpus_or_refusal(
            path, body, None if damaged else expected, format=fmt, min_posts=min_posts, max_posts=None
        )


@settings(max_examples=100)
@given(ndjson_files(), st.sampled_from(["c.ndjson", "c.jsonl.gz"]), st.integers(0, 9), st.sampled_from(["time", None]))
def test_ndjson_gives_a_corpus_or_one_sentence(body, name, damage, time_col):
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), name, body, damage)
        check_corpus_or_refusal(path, body, format="ndjson", time_col=time_col)


@settings(max_examples=150)
@given(
    csv_files(),
    st.sampled_from(["c.csv", "c.csv.gz"]),
    st.integers(0, 9),
    st.sampled_from(["time", None]),
    st.booleans(),
)
def test_csv_gives_a_corpus_or_one_sentence(file, name, damage, time_col, dedupe):
    body, expected = file
    damaged = damage == 1 or (damage == 2 and name.endswith(".gz"))
    if expected is not None and (damaged or (expected[2] in ("1e30", "soon") and time_col is None)):
        expected = None  # damaged first, or a time column that is not read
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), name, body, damage)
        check_corpus_or_refusal(path, body, expected, format="csv", time_col=time_col, drop_duplicates=dedupe)


@settings(max_examples=30)
@given(st.binary(max_size=64), st.sampled_from(["x.jsonl", "x.csv", "x.parquet", "x.ndjson", "x.jsonl.gz"]))
def test_random_bytes_give_one_sentence(data, name):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        check_corpus_or_refusal(path, "")

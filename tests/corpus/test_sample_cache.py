"""The on-disk cache of corpus readings, samples and whole (textcause.corpus.memo): same corpus, no parse, damage caught."""

from __future__ import annotations

import gzip
import json
import os

import pytest

from textcause.corpus import memo, read_corpus
from textcause.paths import cache_root


def _write(path, n_users=60, n_posts=8, word="post"):
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for u in range(n_users):
            posts = [{"text": f"{word} {u} {i} é", "time": f"2020-01-{i + 1:02d}T10:00:00"} for i in range(n_posts)]
            fh.write(json.dumps({"user_id": f"u{u}", "posts": posts, "meta": {"gender": "f", "age": 20 + u}}) + "\n")
    return str(path)


@pytest.fixture
def spy(monkeypatch):
    """The calls that parse the corpus file (load_histories), with the process memo emptied."""
    calls = []
    real = memo.load_histories
    monkeypatch.setattr(memo, "load_histories", lambda *a, **k: calls.append(a) or real(*a, **k))
    memo._read.cache_clear()
    yield calls
    memo._read.cache_clear()


def _same(a, b):
    assert a == b and a.source == b.source  # ids, posts and times, in order
    assert [h.meta for h in a] == [h.meta for h in b]


def test_a_new_process_reads_the_sample_from_the_cache(tmp_path, spy):
    path = _write(tmp_path / "c.jsonl.gz")
    first = read_corpus(path, min_posts=3, max_posts=5, n_users=20)
    assert len(spy) == 1 and len(first) == 20 and first[0].times is not None
    memo._read.cache_clear()  # as a new process would start
    again = read_corpus(path, min_posts=3, max_posts=5, n_users=20)
    assert len(spy) == 1  # not parsed again
    _same(first, again)
    other = read_corpus(path, min_posts=3, max_posts=6, n_users=20)  # another setting: its own entry
    assert len(spy) == 2 and len(other[0]) == 6


def test_a_changed_corpus_file_is_read_again(tmp_path, spy):
    path = _write(tmp_path / "c.jsonl.gz")
    read_corpus(path, min_posts=3, max_posts=5, n_users=20)
    memo._read.cache_clear()
    _write(path, word="changed")
    os.utime(path, ns=(1, 1))  # another modification time, whatever the clock's resolution
    changed = read_corpus(path, min_posts=3, max_posts=5, n_users=20)
    assert len(spy) == 2 and changed[0].posts[0].startswith("changed")


def test_a_damaged_cache_file_is_named_and_read_anew(tmp_path, spy):
    path = _write(tmp_path / "c.jsonl.gz")
    first = read_corpus(path, min_posts=3, max_posts=5, n_users=20)
    file = memo.sample_file(path, 3, 5, 20, ("author", "text", "time", False))
    blob = file.read_bytes()
    file.write_bytes(blob[:-5] + bytes([blob[-5] ^ 1]) + blob[-4:])  # one bit of the payload flipped
    memo._read.cache_clear()
    with pytest.warns(
        UserWarning, match=r"Ignoring the corpus sample cache '.*\.json': it does not match its checksum"
    ):
        again = read_corpus(path, min_posts=3, max_posts=5, n_users=20)
    assert len(spy) == 2
    _same(first, again)
    assert file.read_bytes() == blob  # rewritten whole


def test_the_whole_corpus_is_cached_too_in_an_entry_of_its_own(tmp_path, spy):
    path = _write(tmp_path / "c.jsonl.gz")
    whole = read_corpus(path, min_posts=3, max_posts=5)
    assert len(spy) == 1 and len(whole) == 60
    memo._read.cache_clear()  # as a new process would start
    again = read_corpus(path, min_posts=3, max_posts=5)
    assert len(spy) == 1  # not parsed again
    _same(whole, again)
    sample = read_corpus(path, min_posts=3, max_posts=5, n_users=20)  # not the whole corpus's entry
    assert len(spy) == 2 and len(sample) == 20
    assert len(list((cache_root() / "corpora").glob("*.json"))) == 2


def test_half_an_emoji_and_odd_metadata_round_trip_or_are_not_cached(tmp_path, spy):
    path = tmp_path / "odd.jsonl"
    rows = [
        {"user_id": "a", "posts": [{"text": "bad \ud83d emoji"}, {"text": "two"}], "meta": {"k": 1}},
        {"user_id": "b", "posts": [{"text": "x"}, {"text": "y"}], "meta": {"k": 2}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")  # \ud83d escaped
    first = read_corpus(str(path), min_posts=1, max_posts=5, n_users=2, time_col=None)
    memo._read.cache_clear()
    again = read_corpus(str(path), min_posts=1, max_posts=5, n_users=2, time_col=None)
    assert len(spy) == 1 and any("\ud83d" in post for h in again for post in h.posts)
    _same(first, again)


def test_no_cache_root_reads_the_corpus(tmp_path, spy, monkeypatch):
    path = _write(tmp_path / "c.jsonl.gz")

    def nowhere():
        raise PermissionError("[Errno 13] Permission denied: '/home/x/.cache'")

    monkeypatch.setattr(memo, "cache_root", nowhere)
    with pytest.warns(UserWarning, match=r"^No corpus sample cache \(\[Errno 13\] Permission denied"):
        corpus = read_corpus(path, min_posts=3, max_posts=5, n_users=20)
    assert len(spy) == 1 and len(corpus) == 20


def test_new_reading_code_reads_anew(tmp_path, spy, monkeypatch):
    path = _write(tmp_path / "c.jsonl.gz")
    read_corpus(path, min_posts=3, max_posts=5, n_users=20)
    memo._read.cache_clear()
    monkeypatch.setattr(memo, "_reader_version", lambda: "another version of the readers")
    read_corpus(path, min_posts=3, max_posts=5, n_users=20)
    assert len(spy) == 2


def test_metadata_with_nan_is_cached_and_numpy_numbers_are_not(tmp_path, spy):
    path = tmp_path / "nan.jsonl"
    rows = [
        {"user_id": f"u{i}", "posts": [{"text": "a"}, {"text": "b"}], "meta": {"age": float("nan")}} for i in range(4)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")  # NaN, as json writes it
    first = read_corpus(str(path), min_posts=1, max_posts=5, n_users=3, time_col=None)
    memo._read.cache_clear()
    again = read_corpus(str(path), min_posts=1, max_posts=5, n_users=3, time_col=None)
    assert len(spy) == 1 and all(h.meta["age"] != h.meta["age"] for h in again)  # NaN read back as NaN
    assert first == again
    import numpy as np

    assert not memo._same([1.0], [np.float64(1.0)]) and not memo._same({"a": [1]}, {"a": (1,)})
    assert memo._same({"a": [float("nan"), "x", None, True]}, {"a": [float("nan"), "x", None, True]})

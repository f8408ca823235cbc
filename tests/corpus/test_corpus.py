"""Tests of textcause.corpus readers: every format on tiny files with known results, every error.

The real corpora (``../shared/data``) are only read by the ``slow`` tests at the bottom, which never
show post text (they compare counts and booleans).
"""

from __future__ import annotations

import gzip
import json
import math
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from textcause.corpus import (
    DELETED_AUTHORS,
    Corpus,
    History,
    corpus_summary,
    load_histories,
)
from textcause.paths import data_root


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("TEXTCAUSE_CACHE", str(tmp_path / "cache"))


# ---------------------------------------------------------------- history JSONL


def _posts(prefix: str, n: int, times: bool = True) -> list[dict]:
    return [{"text": f"{prefix} {i}", "time": f"2004-01-{i + 1:02d}" if times else None} for i in range(n)]


def _users() -> list[dict]:
    u1 = _posts("a", 12)
    u1[3]["text"] = ""  # blank posts are dropped before counting
    u1[7]["text"] = "   "
    u4 = _posts("d", 11)
    u4[0]["text"] = None
    u4[1]["text"] = "\n"
    return [
        {"user_id": "u1", "posts": u1, "meta": {"gender": "female"}},
        {"user_id": "u2", "posts": _posts("b", 5), "meta": {}},  # too few posts
        {"user_id": 3, "posts": _posts("c", 70, times=False)},  # int id, no times, truncated
        {"user_id": "u4", "posts": u4, "meta": {"gender": "male"}},  # 9 non-empty: dropped
    ]


def _write_jsonl(path: Path, rows: list[dict], gz: bool = False) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_history_jsonl_filters_truncates_and_keeps_order(tmp_path):
    corpus = load_histories(_write_jsonl(tmp_path / "h.jsonl", _users()))
    assert corpus.user_ids == ["u1", "3"]
    u1, u3 = corpus
    assert u1.posts == tuple(f"a {i}" for i in range(12) if i not in (3, 7))
    assert u1.times == tuple(f"2004-01-{i + 1:02d}" for i in range(12) if i not in (3, 7))
    assert u1.meta == {"gender": "female"}
    assert u3.posts == tuple(f"c {i}" for i in range(60))  # first (oldest) 60 of 70
    assert u3.times is None and u3.meta == {}
    assert corpus.source == str(tmp_path / "h.jsonl")


def test_history_jsonl_gz_equals_plain_and_max_posts_none(tmp_path):
    plain = load_histories(_write_jsonl(tmp_path / "h.jsonl", _users()), max_posts=None, min_posts=5)
    gz = load_histories(_write_jsonl(tmp_path / "h.jsonl.gz", _users(), gz=True), max_posts=None, min_posts=5)
    assert plain.histories == gz.histories
    assert [len(h) for h in gz] == [10, 5, 70, 9]


def test_history_jsonl_string_posts_and_unix_times(tmp_path):
    rows = [{"user_id": "s", "posts": ["x", "", "y"]}, {"user_id": "t", "posts": [{"text": "z", "time": 0}]}]
    corpus = load_histories(_write_jsonl(tmp_path / "s.jsonl", rows), min_posts=1)
    assert corpus[0].posts == ("x", "y") and corpus[0].times is None
    assert corpus[1].times == ("1970-01-01T00:00:00+00:00",)


def test_twitter_short_name_honours_textcause_data(tmp_path, monkeypatch):
    root = tmp_path / "data"
    root.mkdir()
    _write_jsonl(root / "pan19-twitter-histories.jsonl.gz", _users(), gz=True)
    monkeypatch.setenv("TEXTCAUSE_DATA", str(root))
    corpus = load_histories("twitter")
    assert corpus.source == str(root / "pan19-twitter-histories.jsonl.gz")
    assert corpus.user_ids == ["u1", "3"]


# ---------------------------------------------------------------- flat comment tables


def _table() -> pd.DataFrame:
    """Comments out of time order, interleaved authors, blanks, a deleted author, ties."""
    rows = [
        ("NA", "", 400),  # blank: dropped, so NA is ordered by its first kept row
        ("bob", "b late", 300),
        ("amy", "a mid", 200),
        ("bob", "", 100),  # blank: dropped
        ("[deleted]", "gone 1", 50),
        ("amy", "a early", 100),
        ("NA", "null", 10),  # a user called NA saying "null": both kept as strings
        ("bob", "b early", 100),
        ("amy", "a tie first", 250),
        ("amy", "a tie second", 250),  # same time: table order kept
        ("[deleted]", "gone 2", 60),
        ("cat", "   ", 5),  # cat has only a blank post: dropped entirely
        ("bob", "b mid", 200),
    ]
    return pd.DataFrame(rows, columns=["author", "text", "time"])


def _iso(t: int) -> str:
    return pd.Timestamp(t, unit="s", tz="UTC").isoformat()


EXPECTED = {
    "amy": (("a early", "a mid", "a tie first", "a tie second"), (100, 200, 250, 250)),
    "NA": (("null",), (10,)),
    "bob": (("b early", "b mid", "b late"), (100, 200, 300)),
}


def _check_table_corpus(corpus: Corpus) -> None:
    assert corpus.user_ids == ["bob", "amy", "NA"]  # first appearance among kept rows
    for h in corpus:
        posts, times = EXPECTED[h.user_id]
        assert h.posts == posts
        assert h.times == tuple(_iso(t) for t in times)
    assert not set(corpus.user_ids) & DELETED_AUTHORS


def test_csv_groups_orders_and_drops(tmp_path):
    path = tmp_path / "c.csv"
    _table().to_csv(path, index=False)
    _check_table_corpus(load_histories(path, min_posts=1))
    assert load_histories(path, min_posts=3).user_ids == ["bob", "amy"]
    assert load_histories(path, min_posts=3, max_posts=3)[1].posts == EXPECTED["amy"][0][:3]


def test_csv_nan_text_and_custom_columns(tmp_path):
    df = _table().rename(columns={"author": "user", "text": "body", "time": "created_utc"})
    df.loc[df["body"] == "a mid", "body"] = np.nan
    path = tmp_path / "c.csv"
    df.to_csv(path, index=False)
    corpus = load_histories(path, min_posts=1, author_col="user", text_col="body", time_col="created_utc")
    assert corpus[1].posts == ("a early", "a tie first", "a tie second")


def test_parquet_matches_csv(tmp_path):
    path = tmp_path / "c.parquet"
    _table().to_parquet(path)
    _check_table_corpus(load_histories(path, min_posts=1))


def test_parquet_datetime_column(tmp_path):
    df = _table()
    df["time"] = pd.to_datetime(df["time"], unit="s", utc=True)
    path = tmp_path / "d.parquet"
    df.to_parquet(path)
    _check_table_corpus(load_histories(path, min_posts=1))


@pytest.mark.parametrize("name", ["c.ndjson", "c.jsonl", "c.jsonl.gz"])
def test_ndjson_matches_csv(tmp_path, name):
    rows = _table().to_dict(orient="records")
    path = _write_jsonl(tmp_path / name, rows, gz=name.endswith(".gz"))
    _check_table_corpus(load_histories(path, min_posts=1))
    _check_table_corpus(load_histories(path, min_posts=1, format="ndjson"))


def test_string_dates_sorted_by_date_and_kept_as_written(tmp_path):
    df = pd.DataFrame(
        {
            "author": ["x", "x", "x", "x"],
            "text": ["p3", "p1", "p2", "p0"],
            "time": ["2016-02-17", "2016-02-16T10:00:00", "2016-02-16T23:00:00", None],
        }
    )
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    h = load_histories(path, min_posts=1)[0]
    assert h.posts == ("p1", "p2", "p3", "p0")  # undated post last
    assert h.times == ("2016-02-16T10:00:00", "2016-02-16T23:00:00", "2016-02-17", None)


def test_time_col_none_keeps_table_order(tmp_path):
    path = tmp_path / "c.csv"
    _table().drop(columns="time").to_csv(path, index=False)
    corpus = load_histories(path, min_posts=1, time_col=None)
    assert corpus[1].posts == ("a mid", "a early", "a tie first", "a tie second")
    assert corpus[1].times is None


def test_drop_duplicates(tmp_path):
    df = pd.concat([_table()] * 3, ignore_index=True)
    path = tmp_path / "dup.csv"
    df.to_csv(path, index=False)
    assert [len(h) for h in load_histories(path, min_posts=1, max_posts=None)] == [9, 12, 3]
    _check_table_corpus(load_histories(path, min_posts=1, drop_duplicates=True))


# ---------------------------------------------------------------- Hugging Face datasets


def test_hf_saved_flat_rows(tmp_path):
    import datasets

    datasets.Dataset.from_pandas(_table(), preserve_index=False).save_to_disk(str(tmp_path / "flat"))
    _check_table_corpus(load_histories(tmp_path / "flat", min_posts=1))


def test_hf_saved_history_rows_and_splits(tmp_path):
    import datasets

    rows = _users()
    for r in rows:
        r["user_id"] = str(r["user_id"])
        r.setdefault("meta", {})
        r["meta"] = {"gender": r["meta"].get("gender", "")}
    train = datasets.Dataset.from_list(rows)
    datasets.DatasetDict({"train": train, "test": train.select([0])}).save_to_disk(str(tmp_path / "dd"))
    expected = load_histories(_write_jsonl(tmp_path / "h.jsonl", _users()))
    assert load_histories(tmp_path / "dd").histories == expected.histories
    assert load_histories(tmp_path / "dd")[0].meta == {"gender": "female"}
    assert load_histories(tmp_path / "dd", hf_split="test").user_ids == ["u1"]
    train.save_to_disk(str(tmp_path / "single"))
    assert load_histories(tmp_path / "single", format="hf").histories == expected.histories


def test_hf_builder_on_local_csv_and_json(tmp_path):
    csv = tmp_path / "c.csv"
    _table().to_csv(csv, index=False)
    _check_table_corpus(load_histories("my-export", hf_builder="csv", data_files=str(csv), min_posts=1))
    _check_table_corpus(load_histories(csv, format="hf", min_posts=1))  # builder from the extension
    hist = _write_jsonl(tmp_path / "h.jsonl", _users())
    expected = load_histories(hist)
    got = load_histories(hist, hf_builder="json")
    assert [h.posts for h in got] == [h.posts for h in expected] and got.user_ids == ["u1", "3"]
    # the json builder parses ISO dates into timestamps: they come back as ISO date-times
    assert [t[:10] for t in got[0].times] == list(expected[0].times) and got[1].times is None


# ---------------------------------------------------------------- sampling and summary


def _many(tmp_path: Path, n: int = 8) -> Path:
    rows = [{"user_id": f"u{i}", "posts": _posts(str(i), 10 + i)} for i in range(n)]
    return _write_jsonl(tmp_path / "many.jsonl", rows)


def test_sampling_is_seeded_and_keeps_corpus_order(tmp_path):
    path = _many(tmp_path)
    full = load_histories(path).user_ids
    a = load_histories(path, n_users=3, seed=1)
    assert a.histories == load_histories(path, n_users=3, seed=1).histories
    expected = sorted(np.random.default_rng(1).choice(8, size=3, replace=False))
    assert a.user_ids == [full[i] for i in expected]
    assert a.user_ids == [u for u in full if u in set(a.user_ids)]  # corpus order
    samples = {tuple(load_histories(path, n_users=3, seed=s).user_ids) for s in range(6)}
    assert len(samples) > 1
    assert len(samples) == 6  # seeds 0-5, pinned: six different samples
    assert load_histories(path, n_users=8).user_ids == full


def test_corpus_summary_known_values():
    corpus = Corpus((History("a", ("xx", "xxxx")), History("b", ("x", "xxx", "xxxxxxx", "xxxxx"))))
    s = corpus_summary(corpus)
    assert s == {
        "n_users": 2,
        "n_posts": 6,
        "posts_per_user_mean": 3.0,
        "posts_per_user_sd": math.sqrt(2.0),
        "posts_per_user_min": 2,
        "posts_per_user_max": 4,
        "median_post_chars": 3.5,
    }


# ---------------------------------------------------------------- errors


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"No corpus found at '.*nope\.jsonl'.*TEXTCAUSE_DATA"):
        load_histories(tmp_path / "nope.jsonl")


def test_short_name_without_data(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTCAUSE_DATA", str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match="No corpus found at .*blogs-histories"):
        load_histories("blogs")


@pytest.mark.parametrize(
    "kwargs, col",
    [({"author_col": "user"}, "user"), ({"text_col": "body"}, "body"), ({"time_col": "created"}, "created")],
)
@pytest.mark.parametrize("ext", ["csv", "parquet", "ndjson", "hf"])
def test_unknown_column(tmp_path, kwargs, col, ext):
    df = _table()
    path = tmp_path / f"c.{ext}"
    if ext == "csv":
        df.to_csv(path, index=False)
    elif ext == "parquet":
        df.to_parquet(path)
    elif ext == "ndjson":
        _write_jsonl(path, df.to_dict(orient="records"))
    else:
        import datasets

        datasets.Dataset.from_pandas(df, preserve_index=False).save_to_disk(str(path))
    param = next(iter(kwargs))
    pattern = rf"Column '{col}' \(the {param} parameter\) is not in .*\['author', 'text', 'time'\]"
    with pytest.raises(ValueError, match=pattern):
        load_histories(path, min_posts=1, **kwargs)


def test_too_few_users_for_n_users(tmp_path):
    with pytest.raises(ValueError, match=r"Only 2 users .* min_posts=10 .* fewer than n_users=3"):
        load_histories(_write_jsonl(tmp_path / "h.jsonl", _users()), n_users=3)


def test_no_user_left(tmp_path):
    with pytest.raises(ValueError, match=r"No user in .* has at least min_posts=100 non-empty posts"):
        load_histories(_write_jsonl(tmp_path / "h.jsonl", _users()), min_posts=100, max_posts=None)


@pytest.mark.parametrize("gz", [False, True])
def test_malformed_jsonl_line(tmp_path, gz):
    path = tmp_path / ("bad.jsonl.gz" if gz else "bad.jsonl")
    lines = json.dumps(_users()[0]) + "\n\n" + '{"user_id": "x", "posts": [\n'
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(lines)
    else:
        path.write_text(lines, encoding="utf-8")
    with pytest.raises(ValueError, match=rf"Line 3 of '.*{path.name}' is not valid JSON"):
        load_histories(path, format="jsonl")


#: A JSON Lines file with one defective line, and the sentence that names it.
JSONL_DEFECTS = [
    ('{"user_id": "u", "posts": []}\n[1, 2]\n', r"Line 2 of .* is not a JSON object"),
    ('{"user_id": "u", "posts": []}\n{"user_id": "v"}\n', r"Line 2 of .* has no 'posts' list.*format='ndjson'"),
    ('{"posts": []}\n', r"Line 1 of .* has no 'user_id'"),
    ('{"user_id": "u", "posts": [3]}\n', r"Line 1 of .* has a post of type int"),
]


def test_jsonl_line_not_an_object_or_without_posts(tmp_path):
    path = tmp_path / "a.jsonl"
    for text, message in JSONL_DEFECTS:
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ValueError, match=message):
            load_histories(path)


def test_corrupt_gzip_and_empty_file(tmp_path):
    path = tmp_path / "cut.jsonl.gz"
    data = gzip.compress((json.dumps(_users()[0]) + "\n").encode() * 50)
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"could not be read as \(gzipped\) UTF-8 JSON Lines"):
        load_histories(path)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="holds no records"):
        load_histories(empty)


def test_unknown_format_and_extension(tmp_path):
    path = _write_jsonl(tmp_path / "h.jsonl", _users())
    with pytest.raises(ValueError, match=r"Unknown corpus format 'xml': choose one of 'jsonl'"):
        load_histories(path, format="xml")
    other = tmp_path / "h.txt"
    other.write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match=r"Cannot tell the format of '.*h\.txt' from its extension"):
        load_histories(other)
    with pytest.raises(ValueError, match="is a folder but not a saved Hugging Face dataset"):
        load_histories(tmp_path)
    with pytest.raises(ValueError, match="is a folder, not a csv file"):
        load_histories(tmp_path, format="csv")


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"min_posts": 0}, r"The 'min_posts' parameter of load_histories must be an int >= 1\. Got 0 instead\."),
        ({"max_posts": 5}, r"The 'max_posts' parameter .* must be an int >= min_posts \(10\) or None\. Got 5"),
        ({"max_posts": 10.0}, r"The 'max_posts' parameter .* Got 10\.0 instead"),
        ({"n_users": 0}, r"The 'n_users' parameter of load_histories must be an int >= 1\. Got 0"),
        ({"seed": -1}, r"The 'seed' parameter of load_histories must be an int >= 0"),
        ({"text_col": ""}, r"The 'text_col' parameter of load_histories must be a column name"),
        ({"author_col": None}, r"The 'author_col' parameter of load_histories must be a column name"),
        ({"time_col": 3}, r"The 'time_col' parameter of load_histories must be a column name or None"),
        ({"drop_duplicates": 1}, r"The 'drop_duplicates' parameter of load_histories must be a bool"),
    ],
)
def test_bad_parameters(tmp_path, kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        load_histories(_write_jsonl(tmp_path / "h.jsonl", _users()), **kwargs)


def test_bad_time_values(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame({"author": ["a", "a"], "text": ["x", "y"], "time": ["2016-01-01", "soon"]}).to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"Column 'time' of .* neither UNIX timestamps nor dates \(e\.g\. 'soon'\)"):
        load_histories(path, min_posts=1)


def test_hf_errors(tmp_path):
    import datasets

    with pytest.raises(FileNotFoundError, match=r"No Hugging Face dataset found at 'x'"):
        load_histories("x", hf_builder="csv", data_files=str(tmp_path / "missing.csv"))
    datasets.DatasetDict({"train": datasets.Dataset.from_pandas(_table())}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(ValueError, match=r"Split 'validation' is not in .*\['train'\]: pass hf_split"):
        load_histories(tmp_path / "dd", hf_split="validation")
    datasets.Dataset.from_list([{"name": "u", "posts": ["a"]}]).save_to_disk(str(tmp_path / "noid"))
    with pytest.raises(ValueError, match=r"have no 'user_id' or 'author' column.*\['name', 'posts'\]"):
        load_histories(tmp_path / "noid", min_posts=1)
    odd = tmp_path / "x.txt"
    odd.write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match="Cannot tell which Hugging Face builder reads"):
        load_histories(odd, format="hf")


def test_corpus_summary_empty():
    with pytest.raises(ValueError, match="The corpus is empty"):
        corpus_summary(Corpus(()))


# ---------------------------------------------------------------- real corpora (slow)


def _need(name: str) -> Path:
    path = data_root() / name
    if not path.exists():
        pytest.skip(f"{path} is not available")
    return path


@pytest.mark.slow
def test_real_twitter():
    _need("pan19-twitter-histories.jsonl.gz")
    corpus = load_histories("twitter")
    assert len(corpus) == 4120
    assert all(len(h) == 60 and h.times is None for h in corpus)
    kinds = [h.meta["kind"] for h in corpus]
    assert kinds.count("human") == kinds.count("bot") == 2060


@pytest.mark.slow
def test_real_reddit_drunk_against_pandas():
    path = _need("reddit-sample/lifestyle_drunk.csv")
    df = pd.read_csv(path, dtype={"author": str, "text": str}, keep_default_na=False)
    assert df["author"].nunique() == 311
    blank = df["text"].str.strip() == ""
    assert int(blank.sum()) == 3246
    kept = df[~blank & ~df["author"].isin(DELETED_AUTHORS)]
    counts = kept["author"].value_counts()
    expected = set(counts[counts >= 10].index)
    corpus = load_histories("reddit-drunk", max_posts=None)
    assert len(corpus) == len(expected) == 269
    assert set(corpus.user_ids) == expected
    assert all(len(h) == counts[h.user_id] for h in corpus)
    assert all(list(h.times) == sorted(h.times) for h in corpus)  # same-format ISO strings
    # one user's posts equal an independent stable sort by time (compared without printing text)
    user = corpus[0].user_id
    ref = kept[kept["author"] == user].sort_values("time", kind="stable")["text"].tolist()
    same_posts = list(corpus[0].posts) == ref
    assert same_posts
    assert max(len(h) for h in load_histories("reddit-drunk")) == 60


@pytest.mark.slow
def test_real_blogs():
    _need("blogs-histories.jsonl.gz")
    corpus = load_histories("blogs")
    assert len(corpus) == 8000
    s = corpus_summary(corpus)
    assert (s["posts_per_user_min"], s["posts_per_user_max"]) == (10, 60)
    assert round(s["posts_per_user_mean"], 1) == 31.7 and round(s["posts_per_user_sd"], 1) == 19.0
    assert s["n_posts"] == 253_280 and s["posts_per_user_mean"] == pytest.approx(253_280 / 8000, rel=1e-12)
    assert s["posts_per_user_sd"] == pytest.approx(18.962122646526357, rel=1e-9)
    assert s["median_post_chars"] == 715
    assert statistics.mean(len(h) for h in corpus) == s["posts_per_user_mean"]


def test_hf_dataset_name_not_available_offline():
    import datasets

    if not datasets.config.HF_HUB_OFFLINE:
        pytest.skip("datasets was imported without HF_HUB_OFFLINE=1; this test must not reach the network")
    with pytest.raises(ValueError, match=r"'someone/nonexistent' is not available offline.*save_to_disk"):
        load_histories("someone/nonexistent", format="hf")


# ---------------------------------------------------------------- hostile input (issue 14)
# Every refusal is one ValueError sentence naming the file and the line (or row), never a post's text.

SECRET = "my very private post"


def _history_line(**fields) -> dict:
    row = {"user_id": "u", "posts": [{"text": SECRET, "time": None}], "meta": {}}
    row.update(fields)
    return row


def _refused(path, pattern, **kwargs) -> str:
    with pytest.raises(ValueError, match=pattern) as info:
        load_histories(path, min_posts=1, **kwargs)
    message = str(info.value)
    assert SECRET not in message and "\n" not in message.strip()
    return message


@pytest.mark.parametrize(
    "uid, kind",
    [(["a", "b"], "array"), ({"a": 1}, "object"), (1.5, "number"), (3.0, "number"), (True, "boolean")],
)
def test_user_ids_must_be_strings_or_integers(tmp_path, uid, kind):
    # issue 14: list or dict ids became strings like "['a', 'b']"
    path = _write_jsonl(tmp_path / "h.jsonl", [_history_line(user_id="ok"), _history_line(user_id=uid)])
    _refused(path, rf"Line 2 of '.*h\.jsonl' has a 'user_id' of type {kind}: user ids must be strings or integers\.")


def test_empty_user_id(tmp_path):
    _refused(_write_jsonl(tmp_path / "h.jsonl", [_history_line(user_id="  ")]), r"Line 1 of .* has an empty 'user_id'")


@pytest.mark.parametrize("text, kind", [(["list", "as", "text"], "array"), ({"t": 1}, "object"), (42, "integer")])
def test_post_text_must_be_a_string(tmp_path, text, kind):
    # issue 14: a list as post text became the post "['list', 'as', 'text']"
    row = _history_line(posts=[{"text": SECRET}, {"text": text, "time": None}])
    _refused(
        _write_jsonl(tmp_path / "h.jsonl", [row]),
        rf"Line 1 of '.*h\.jsonl' \(post 2\) has a 'text' of type {kind}: post texts must be strings",
    )


def test_duplicated_user_ids_are_refused(tmp_path):
    # issue 14: 60 lines with 59 distinct ids gave 60 users
    rows = [_history_line(user_id=f"u{i}") for i in range(59)] + [_history_line(user_id="u7")]
    message = _refused(
        _write_jsonl(tmp_path / "h.jsonl", rows),
        r"The user id 'u7' is on both line 8 and line 60 of '.*h\.jsonl': .*distinct ids",
    )
    assert message.count(".") >= 1
    # an integer id and its decimal string are refused by the rule of every reader (issue 43)
    _refused(
        _write_jsonl(tmp_path / "i.jsonl", [_history_line(user_id=3), _history_line(user_id="3")]),
        r"The user id '3' is written as an integer on line 1 and as a string on line 2",
    )
    _refused(
        _write_jsonl(tmp_path / "j.jsonl", [_history_line(user_id=3), _history_line(user_id=3)]),
        r"The user id '3' is on both line 1 and line 2",
    )


def test_duplicated_user_ids_in_hf_history_rows(tmp_path):
    import datasets

    rows = [{"user_id": "a", "posts": ["x"]}, {"user_id": "b", "posts": ["y"]}, {"user_id": "a", "posts": ["z"]}]
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "dup"))
    with pytest.raises(ValueError, match=r"The user id 'a' is on both row 0 and row 2 of '.*dup'"):
        load_histories(tmp_path / "dup", min_posts=1)


def test_comment_tables_still_group_repeated_authors(tmp_path):
    path = tmp_path / "c.csv"
    _table().to_csv(path, index=False)
    assert [len(h) for h in load_histories(path, min_posts=1)] == [3, 4, 1]  # duplicates are the norm there


@pytest.mark.parametrize(
    "body, line, fields",
    [
        ("u,a,1\nu,b,2,3,4\n", 3, 5),  # issue 14: a 5-field row in a 3-column CSV was accepted
        ("u,a,1\nu,b\n", 3, 2),  # a short row was padded with empty fields
        ('u,"two\nlines",1\n\nu,b,2,\n', 5, 4),  # lines count in the file: a quoted newline and a blank line
    ],
)
def test_ragged_csv_rows_are_refused(tmp_path, body, line, fields):
    path = tmp_path / "r.csv"
    path.write_text("author,text,time\n" + body, encoding="utf-8")
    _refused(path, rf"Line {line} of '.*r\.csv' has {fields} fields but the header has 3: every row")


def test_trailing_comma_on_every_row_is_refused_not_shifted(tmp_path):
    # pandas would silently take the first column as the index and shift every column by one
    path = tmp_path / "r.csv"
    path.write_text("author,text,time\nu,a,1,\nu,b,2,\n", encoding="utf-8")
    _refused(path, r"Line 2 of .* has 4 fields but the header has 3")


@pytest.mark.parametrize("meta, kind", [([1, 2], "array"), ("gender=f", "string"), (3, "integer")])
def test_meta_must_be_a_mapping(tmp_path, meta, kind):
    # issue 14: a non-dict meta silently became {}
    _refused(
        _write_jsonl(tmp_path / "h.jsonl", [_history_line(meta=meta)]),
        rf"Line 1 of .* has a 'meta' of type {kind}: meta must be a mapping",
    )
    assert load_histories(_write_jsonl(tmp_path / "n.jsonl", [_history_line(meta=None)]), min_posts=1)[0].meta == {}


def test_csv_time_out_of_range_is_reported_not_dropped(tmp_path):
    # issue 14: a CSV time of 1e30 was dropped silently (the post lost its time)
    path = tmp_path / "t.csv"
    path.write_text("author,text,time\nu,a,100\nu,b,1e30\n", encoding="utf-8")
    _refused(
        path,
        r"Column 'time' of '.*t\.csv' holds values that are UNIX timestamps outside 1677-09-21 to "
        r"2262-04-11 \(e\.g\. 1e\+30\), first on line 3",
    )


@pytest.mark.parametrize("value", [1e20, -1e20, 10**30])
def test_jsonl_time_out_of_range_is_reported_not_overflowed(tmp_path, value):
    # issue 14: a JSONL time of 1e20 raised a raw OverflowError
    row = _history_line(posts=[{"text": SECRET, "time": 0}, {"text": SECRET, "time": value}])
    _refused(
        _write_jsonl(tmp_path / "h.jsonl", [row]),
        rf"Line 1 of .* \(post 2\) has a 'time' of {value!r}".replace("+", r"\+")
        + r", which is not a UNIX timestamp in seconds that a date can hold",
    )


@pytest.mark.parametrize("value, kind", [(True, "boolean"), ([1], "array"), ({"s": 1}, "object")])
def test_jsonl_time_of_a_wrong_type(tmp_path, value, kind):
    row = _history_line(posts=[{"text": SECRET, "time": value}])
    _refused(_write_jsonl(tmp_path / "h.jsonl", [row]), rf"\(post 1\) has a 'time' of type {kind}: times must be")


def test_csv_bad_time_blames_the_bad_value(tmp_path):
    # issue 14: with one bad time among UNIX timestamps the message blamed a valid timestamp
    path = tmp_path / "t.csv"
    path.write_text("author,text,time\nu,a,1\nu,b,2\nu,c,soon\n", encoding="utf-8")
    message = _refused(path, r"neither UNIX timestamps nor dates \(e\.g\. 'soon'\), first on line 4")
    assert "'1'" not in message


def test_csv_times_mixing_dates_and_timestamps_parse(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("author,text,time\nu,late,2016-01-02\nu,early,86400\nu,mid,2016-01-01\n", encoding="utf-8")
    h = load_histories(path, min_posts=1)[0]
    assert h.posts == ("early", "mid", "late")
    assert h.times == ("1970-01-02T00:00:00+00:00", "2016-01-01", "2016-01-02")  # numbers -> ISO, dates as written


def test_long_bad_time_is_described_not_shown(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame({"author": ["u", "u"], "text": ["a", "b"], "time": ["2016-01-01", SECRET * 3]}).to_csv(
        path, index=False
    )
    _refused(path, r"\(e\.g\. a 60-character text\), first on line 3")


def test_parquet_dates_beyond_2262_sort_correctly(tmp_path):
    # nanosecond keys wrapped around: the year 3000 sorted before 2016
    df = pd.DataFrame(
        {
            "author": ["u"] * 3,
            "text": ["x", "y", "z"],
            "time": pd.to_datetime(["3000-01-01", "2016-01-01", "2017-01-01"]).as_unit("us"),
        }
    )
    df.to_parquet(tmp_path / "d.parquet")
    h = load_histories(tmp_path / "d.parquet", min_posts=1)[0]
    assert h.posts == ("y", "z", "x") and h.times[-1] == "3000-01-01T00:00:00"


def test_ndjson_values_of_the_wrong_type(tmp_path):
    rows = [{"author": "a", "text": "x", "time": 1}, {"author": ["a"], "text": SECRET, "time": 2}]
    _refused(
        _write_jsonl(tmp_path / "c.ndjson", rows),
        r"Line 2 of '.*c\.ndjson' has a 'author' of type array: authors must be strings or integers",
    )
    rows[1] = {"author": "a", "text": ["x"], "time": 2}
    _refused(_write_jsonl(tmp_path / "c.ndjson", rows), r"Line 2 of .* has a 'text' of type array: comment texts")
    rows[1] = {"author": "a", "text": SECRET, "time": [2]}
    _refused(_write_jsonl(tmp_path / "c.ndjson", rows), r"Line 2 of .* has a 'time' of type array: times must be")


def test_ndjson_integer_authors_with_gaps_stay_integers(tmp_path):
    # pandas stores integers with missing values as floats: the id 3 must not become "3.0"
    rows = [
        {"author": 3, "text": "x", "time": 1},
        {"author": None, "text": "y", "time": 2},
        {"author": 3, "text": "z", "time": 3},
    ]
    assert load_histories(_write_jsonl(tmp_path / "c.ndjson", rows), min_posts=1).user_ids == ["3"]


def test_parquet_values_of_the_wrong_type(tmp_path):
    df = pd.DataFrame({"author": [1.0, 2.5], "text": [SECRET, SECRET], "time": [1, 2]})
    df.to_parquet(tmp_path / "a.parquet")
    _refused(tmp_path / "a.parquet", r"Row 1 of '.*a\.parquet' has an author \('author'\) of type number: authors must")
    pd.DataFrame({"author": ["a", "b"], "text": [5, 7], "time": [1, 2]}).to_parquet(tmp_path / "t.parquet")
    _refused(
        tmp_path / "t.parquet", r"Row 0 of .* has a text \('text'\) of type integer: comment texts must be strings"
    )
    pd.DataFrame({"author": ["a", "b"], "text": [["x"], ["y"]], "time": [1, 2]}).to_parquet(tmp_path / "l.parquet")
    _refused(tmp_path / "l.parquet", r"Row 0 of .* has a text \('text'\) of type .*: comment texts must be strings")


def _corrupt_gzip(path: Path) -> Path:
    data = bytearray(
        gzip.compress("".join(json.dumps(_history_line(user_id=f"u{i}")) + "\n" for i in range(300)).encode())
    )
    for i in range(40, len(data) - 20, 7):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize(
    "make, pattern",
    [
        (lambda p: _corrupt_gzip(p / "z.jsonl.gz"), r"could not be read as \(gzipped\) UTF-8 JSON Lines"),
        (
            lambda p: (
                (p / "u.jsonl").write_bytes(b'{"user_id": "a", "posts": []}\n{"user_id": "\xff"}\n') and p / "u.jsonl"
            ),
            r"'.*u\.jsonl' could not be read as \(gzipped\) UTF-8 JSON Lines \(line 2 is not valid UTF-8\)",
        ),
        (
            lambda p: (p / "d.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n") and p / "d.jsonl",
            r"Line 1 of .* is not (valid JSON|JSON this reader can hold)",
        ),
        (
            lambda p: (p / "n.jsonl").write_text('{"user_id": ' + "9" * 5000 + ', "posts": []}\n') and p / "n.jsonl",
            r"Line 1 of .* is not JSON this reader can hold",
        ),
        (
            lambda p: (p / "b.csv").write_bytes(b"author,text,time\na,ok,1\nb,\xff\xfe,2\n") and p / "b.csv",
            r"'.*b\.csv' could not be read as a UTF-8 CSV table: line 3 is not valid UTF-8",
        ),
        (lambda p: (p / "e.csv").write_text("") == 0 and p / "e.csv", r"'.*e\.csv' could not be read as a CSV table"),
        (
            lambda p: (p / "q.csv").write_text('author,text,time\na,"unclosed,1\n') and p / "q.csv",
            r"'.*q\.csv' could not be read as a CSV table|Line 2 of .*q\.csv",
        ),
        (
            lambda p: (p / "x.parquet").write_bytes(b"PAR1 not really parquet PAR1") and p / "x.parquet",
            r"'.*x\.parquet' could not be read as a Parquet table",
        ),
    ],
)
def test_damaged_files_give_one_sentence_not_a_raw_exception(tmp_path, make, pattern):
    _refused(make(tmp_path), pattern)


def test_damaged_hf_dataset_folder(tmp_path):
    import datasets

    folder = tmp_path / "ds"
    datasets.Dataset.from_pandas(_table(), preserve_index=False).save_to_disk(str(folder))
    for arrow in folder.glob("*.arrow"):
        arrow.write_bytes(b"damaged")
    with pytest.raises(ValueError, match=r"The Hugging Face dataset '.*ds' could not be loaded \("):
        load_histories(folder, min_posts=1)


@pytest.mark.parametrize("source", [3, ["a.jsonl"], None])
def test_source_of_the_wrong_type(source):
    from textcause.corpus import read_corpus

    with pytest.raises(ValueError, match=r"The 'source' parameter of load_histories must be a corpus name or a path"):
        load_histories(source)
    with pytest.raises(ValueError, match=r"The 'source' parameter of load_histories must be a corpus name or a path"):
        read_corpus(source)


def test_unhashable_settings_in_read_corpus(tmp_path):
    from textcause.corpus import read_corpus

    with pytest.raises(ValueError, match=r"The 'min_posts' parameter of load_histories must be an int >= 1"):
        read_corpus(_write_jsonl(tmp_path / "h.jsonl", _users()), min_posts=[1])


def test_path_with_a_nul_byte_is_not_found():
    with pytest.raises(FileNotFoundError, match="No corpus found at"):
        load_histories("bad\x00name.jsonl")


# ---------------------------------------------------------------- issue 43: one rule for ids written two ways
# An id written as the integer 1 in one place and as the string "1" in another may be two users: every
# reader that keeps types refuses it in one sentence (a CSV has no types: 1 and "1" are the same text).

_TWO_WAYS = r"The user id '1' is written as an integer on {0} and as a string on {1} of '.*{2}': write"


def test_ndjson_comment_table_refuses_an_id_written_two_ways(tmp_path):
    rows = [
        {"author": 1, "text": "a", "time": 1},
        {"author": "b", "text": "b", "time": 2},
        {"author": "1", "text": "c", "time": 3},
    ]
    _refused(_write_jsonl(tmp_path / "c.ndjson", rows), _TWO_WAYS.format("line 1", "line 3", r"c\.ndjson"))
    rows[0], rows[2] = rows[2], rows[0]  # the string first
    _refused(_write_jsonl(tmp_path / "d.ndjson", rows), _TWO_WAYS.format("line 3", "line 1", r"d\.ndjson"))


def test_dataframe_comment_table_refuses_an_id_written_two_ways(tmp_path):
    from textcause.corpus.tables import table_records

    df = pd.DataFrame({"author": ["x", 1, "1"], "text": ["a", "b", "c"]}, dtype=object)
    with pytest.raises(ValueError, match=_TWO_WAYS.format("row 1", "row 2", "frame")):
        table_records(df, "'frame'", "author", "text", None)
    # the same ids written one way group as before
    df = pd.DataFrame({"author": [1, 2, 1], "text": ["a", "b", "c"]}, dtype=object)
    assert [r[:2] for r in table_records(df, "'frame'", "author", "text", None)] == [("1", ["a", "c"]), ("2", ["b"])]


def test_history_jsonl_names_an_id_written_two_ways_by_the_same_rule(tmp_path):
    rows = [_history_line(user_id=1), _history_line(user_id="1")]
    _refused(_write_jsonl(tmp_path / "h.jsonl", rows), _TWO_WAYS.format("line 1", "line 2", r"h\.jsonl"))


def test_csv_authors_are_text_so_quoted_and_bare_1_are_one_author(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text('author,text\n1,a\n"1",b\n', encoding="utf-8")
    assert [len(h) for h in load_histories(path, min_posts=1, time_col=None)] == [2]

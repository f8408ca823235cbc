"""Read real user histories from any supported source into a :class:`Corpus`.

:func:`load_histories` reads (``format=None`` infers it) history JSON Lines, plain or gzipped (one
user per line, posts oldest first; ``../shared/data/README.md``), flat comment tables (CSV, Parquet,
NDJSON: one comment per row, grouped by author and ordered by time; :mod:`textcause.corpus.tables`)
and Hugging Face datasets (:mod:`textcause.corpus.hf`). Every source then goes through the same
steps: drop blank posts, drop users with fewer than ``min_posts`` posts, keep each user's first
``max_posts`` posts, and with ``n_users`` keep a seeded random sample of users in corpus order.

Values are checked for their types, never coerced: a file that breaks a rule, or cannot be read, is
refused with one ``ValueError`` sentence naming the file and its line or row, never a post's text.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from textcause.corpus.filters import sample_indices
from textcause.corpus.hf import DataFiles, dataset_records, is_saved_dataset, json_data_files, load_hf_dataset
from textcause.corpus.jsonl import (
    Record,
    first_json_line,
    history_record,
    is_integer_id,
    iter_json_lines,
    unique_users,
)
from textcause.corpus.types import Corpus, History
from textcause.paths import resolve_corpus
from textcause.validation import check_int

__all__ = [
    "FORMATS",
    "corpus_summary",
    "load_histories",
]

#: The formats ``load_histories`` reads: history JSONL, flat NDJSON / CSV / Parquet, Hugging Face.
FORMATS = ("jsonl", "ndjson", "csv", "parquet", "hf")

_OWNER = "load_histories"
_SUFFIXES = {
    ".jsonl": "json",
    ".json": "json",
    ".ndjson": "ndjson",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}


def load_histories(
    source: str | os.PathLike[str],
    *,
    min_posts: int = 10,
    max_posts: int | None = 60,
    n_users: int | None = None,
    seed: int = 0,
    format: str | None = None,
    author_col: str = "author",
    text_col: str = "text",
    time_col: str | None = "time",
    hf_split: str = "train",
    hf_builder: str | None = None,
    data_files: DataFiles | None = None,
    drop_duplicates: bool = False,
) -> Corpus:
    """Read user histories, filter and truncate them, and optionally sample users.

    Args:
        source: a short corpus name (``"twitter"``, ``"blogs"``, ``"reddit-drunk"``: files under
            :func:`textcause.paths.data_root`, i.e. ``$TEXTCAUSE_DATA`` or ``../shared/data``), a path
            to a history JSONL(.gz), a CSV / Parquet / NDJSON comment table or a Hugging Face
            ``save_to_disk`` folder, or (with ``format="hf"``) a dataset in the local HF cache.
        min_posts: drop users with fewer non-empty posts than this (>= 1).
        max_posts: keep each user's first (oldest) ``max_posts`` posts; None keeps all.
        n_users: if given, keep a random sample of this many users (after filtering), in the
            corpus's order.
        seed: the seed of that sample (``numpy.random.default_rng(seed)``).
        format: ``"jsonl"`` (histories), ``"ndjson"``, ``"csv"``, ``"parquet"`` (flat comment
            tables), ``"hf"``, or None to infer it from the extension / folder / first record.
        author_col: the author column of a flat table.
        text_col: the text column of a flat table.
        time_col: the time column of a flat table (UNIX seconds or dates), or None to keep the
            table order.
        hf_split: the split to read from a Hugging Face ``DatasetDict``.
        hf_builder: a ``datasets`` builder (``"json"``, ``"csv"``, ``"parquet"``) to run on
            ``data_files`` (default: on ``source``).
        data_files: the local files for ``hf_builder``.
        drop_duplicates: drop a post whose text and time repeat an earlier post of the same user
            (before ``min_posts`` is applied). Off by default; scraped exports often repeat rows
            (``reddit-drunk`` repeats nearly every comment about 50 times).

    Returns:
        The :class:`Corpus`, with ``source`` set to the resolved path or dataset name.

    Raises:
        FileNotFoundError: nothing exists at ``source``.
        ValueError: a bad parameter, an unknown format or column, a file that cannot be read, a
            malformed line or a value of the wrong type (an id neither a string nor an integer, a text
            that is not a string, a time that does not parse, a ``meta`` that is not a mapping), a
            ragged CSV row or a user id on two lines of a history file (each with the file and its
            line or row), no user with ``min_posts`` posts, or fewer such users than ``n_users``.
            Never a raw parser or I/O exception.
    """
    min_posts = check_int(min_posts, "min_posts", _OWNER, low=1)
    if max_posts is not None:
        ok = isinstance(max_posts, int) and not isinstance(max_posts, bool) and max_posts >= min_posts
        if not ok:
            raise ValueError(
                f"The 'max_posts' parameter of {_OWNER} must be an int >= min_posts ({min_posts}) or "
                f"None. Got {max_posts!r} instead."
            )
    if n_users is not None:
        n_users = check_int(n_users, "n_users", _OWNER, low=1)
    seed = check_int(seed, "seed", _OWNER, low=0)
    if not isinstance(drop_duplicates, bool):
        raise ValueError(
            f"The 'drop_duplicates' parameter of {_OWNER} must be a bool. Got {drop_duplicates!r} instead."
        )
    if format is not None and format not in FORMATS:
        raise ValueError(
            f"Unknown corpus format {format!r}: choose one of {', '.join(map(repr, FORMATS))}, or None "
            "to infer it from the source."
        )
    for name, value in (("author_col", author_col), ("text_col", text_col)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"The '{name}' parameter of {_OWNER} must be a column name. Got {value!r} instead.")
    if time_col is not None and (not isinstance(time_col, str) or not time_col):
        raise ValueError(
            f"The 'time_col' parameter of {_OWNER} must be a column name or None. Got {time_col!r} instead."
        )
    if not isinstance(source, (str, os.PathLike)):
        raise ValueError(f"The 'source' parameter of {_OWNER} must be a corpus name or a path. Got {source!r} instead.")

    resolved = resolve_corpus(source)
    records = _read_records(resolved, format, author_col, text_col, time_col, hf_split, hf_builder, data_files)
    built = (_history(r, min_posts, max_posts, drop_duplicates) for r in records)
    histories = [h for h in built if h is not None]
    if not histories:
        raise ValueError(f"No user in '{resolved}' has at least min_posts={min_posts} non-empty posts.")
    if n_users is not None:
        if n_users > len(histories):
            raise ValueError(
                f"Only {len(histories)} users in '{resolved}' have at least min_posts={min_posts} "
                f"non-empty posts, fewer than n_users={n_users}: lower n_users or min_posts."
            )
        keep = sample_indices(len(histories), n_users, seed)
        histories = [histories[i] for i in keep]
    return Corpus(tuple(histories), resolved)


def _read_records(
    source: str,
    fmt: str | None,
    author_col: str,
    text_col: str,
    time_col: str | None,
    hf_split: str,
    hf_builder: str | None,
    data_files: DataFiles | None,
) -> Iterable[Record]:
    """Dispatch to the reader of ``source``'s format; records come in the source's user order."""
    # The table readers need pandas (a quarter of a second to import): only the formats that use
    # them import it, so a process reading a history JSONL, or a corpus from the cache, never does.
    path = Path(source)
    if hf_builder is not None or (fmt == "hf" and not _exists(path)):
        from textcause.corpus.csvfile import csv_na_options

        ds = load_hf_dataset(
            source,
            split=hf_split,
            builder=hf_builder,
            data_files=data_files,
            csv_options=csv_na_options(time_col, (author_col, text_col)),
        )
        files = json_data_files(source, hf_builder, data_files)
        return dataset_records(ds, f"'{source}'", author_col, text_col, time_col, files)
    if not _exists(path):
        raise FileNotFoundError(
            f"No corpus found at '{source}': give a path to a history JSONL, a CSV/Parquet/NDJSON "
            "comment table or a Hugging Face dataset folder, or set TEXTCAUSE_DATA to the folder "
            "holding the shared corpora."
        )
    if fmt is None:
        fmt = _infer_format(path)
    if fmt == "hf":
        from textcause.corpus.csvfile import csv_na_options

        ds = load_hf_dataset(source, split=hf_split, csv_options=csv_na_options(time_col, (author_col, text_col)))
        files = json_data_files(source, None, None)
        return dataset_records(ds, f"'{source}'", author_col, text_col, time_col, files)
    if path.is_dir():
        raise ValueError(f"'{source}' is a folder, not a {fmt} file: give the file itself.")
    if fmt == "jsonl":
        lines = (
            (f"line {n}", history_record(obj, f"Line {n} of '{source}'"), is_integer_id(obj.get("user_id")))
            for n, obj in iter_json_lines(path)
        )
        return unique_users(lines, f"'{source}'")
    from textcause.corpus.tables import read_table, table_records

    df = read_table(path, fmt, author_col, text_col, time_col)
    return table_records(df, f"'{source}'", author_col, text_col, time_col)


def _exists(path: Path) -> bool:
    """Whether something is at ``path`` (False for a name the system cannot even look up)."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _infer_format(path: Path) -> str:
    """The format of an existing path, from its folder markers, extension and first record."""
    if path.is_dir():
        if is_saved_dataset(path):
            return "hf"
        raise ValueError(
            f"'{path}' is a folder but not a saved Hugging Face dataset (no dataset_info.json and "
            "state.json, or dataset_dict.json): give a file, or a save_to_disk folder."
        )
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    kind = _SUFFIXES.get(Path(name).suffix)
    if kind is None:
        raise ValueError(
            f"Cannot tell the format of '{path}' from its extension: pass format='jsonl', 'ndjson', "
            "'csv', 'parquet' or 'hf'."
        )
    if kind == "json":
        first = first_json_line(path)
        if first is None:
            raise ValueError(f"'{path}' holds no records.")
        return "jsonl" if "posts" in first else "ndjson"
    return kind


def _is_blank(text: Any) -> bool:
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return True
    return not str(text).strip()


def _history(record: Record, min_posts: int, max_posts: int | None, dedupe: bool = False) -> History | None:
    """Drop blank (and repeated) posts, apply ``min_posts`` / ``max_posts``; None if the user is dropped."""
    user_id, texts, times, meta = record
    keep = [i for i, t in enumerate(texts) if not _is_blank(t)]
    if dedupe:
        seen: set[tuple[str, Any]] = set()
        unique = []
        for i in keep:
            key = (str(texts[i]), None if times is None else times[i])
            if key not in seen:
                seen.add(key)
                unique.append(i)
        keep = unique
    if len(keep) < min_posts:
        return None
    if max_posts is not None:
        keep = keep[:max_posts]
    posts = tuple(texts[i] if isinstance(texts[i], str) else str(texts[i]) for i in keep)
    kept_times = None if times is None else tuple(times[i] for i in keep)
    if kept_times is not None and all(t is None for t in kept_times):
        kept_times = None
    return History(user_id=user_id, posts=posts, times=kept_times, meta=meta)


def corpus_summary(corpus: Corpus) -> dict[str, Any]:
    """Size statistics of a corpus (no text): users, posts per user, median post length.

    Returns:
        ``n_users``, ``n_posts``, ``posts_per_user_mean``, ``posts_per_user_sd`` (sample sd,
        ddof=1; 0 for one user), ``posts_per_user_min``, ``posts_per_user_max`` and
        ``median_post_chars``.

    Raises:
        ValueError: the corpus is empty.
    """
    if len(corpus) == 0:
        raise ValueError("The corpus is empty: corpus_summary needs at least one user.")
    counts = np.array([len(h) for h in corpus], dtype=np.int64)
    lengths = [len(p) for h in corpus for p in h.posts]
    return {
        "n_users": int(counts.size),
        "n_posts": int(counts.sum()),
        "posts_per_user_mean": float(counts.mean()),
        "posts_per_user_sd": float(counts.std(ddof=1)) if counts.size > 1 else 0.0,
        "posts_per_user_min": int(counts.min()),
        "posts_per_user_max": int(counts.max()),
        "median_post_chars": float(statistics.median(lengths)),
    }

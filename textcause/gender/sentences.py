"""Texts with author metadata in, sentences out: the raw material of masked-gender fine-tuning.

:func:`read_documents` reads either a history corpus (the blog corpus, through the memoised
:func:`textcause.corpus.read_corpus` with every post of every user: one document per post, with
its author's ``meta``) or a flat table (CSV, Parquet, NDJSON: one document per row, every column
other than the text and author columns is metadata, Wiki-Bio / Reddit TL;DR shaped).
:func:`split_sentences` is a data-free regex splitter (NLTK's punkt data cannot be downloaded
here): a sentence ends at ``.``, ``!`` or ``?`` (runs of them, and closing quotes or brackets)
before whitespace, except after a common abbreviation (``Mr.``, ``e.g.``) or a one-letter initial;
a blank line also ends one.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from textcause.paths import resolve_corpus

#: Words whose final period does not end a sentence (lower case, without that period).
ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "jr",
        "sr",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "fig",
        "mt",
        "lt",
        "col",
        "gen",
        "rev",
        "sgt",
        "capt",
        "inc",
        "ltd",
        "co",
        "u.s",
        "a.m",
        "p.m",
        "approx",
    ]
)
#: Table suffixes read as flat tables (anything else is read as a history corpus).
TABLE_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".ndjson": "ndjson"}

_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*(?=\s|$)")
_LAST_WORD = re.compile(r"(\S+)$")
_BLANK_LINE = re.compile(r"\n\s*\n")


@dataclasses.dataclass(frozen=True)
class Document:
    """One text and who wrote it.

    Attributes:
        author: the author's id (the unit of the train / validation / test split).
        text: the text.
        meta: the author's (or the row's) metadata, e.g. ``{"gender": "female", "age": 23}``.
    """

    author: str
    text: str
    meta: Mapping[str, Any] = dataclasses.field(default_factory=dict, compare=False, hash=False)

    def __repr__(self) -> str:  # never print a whole text
        return f"Document(author={self.author!r}, n_chars={len(self.text)})"


def _ends_sentence(text: str, start: int, match: re.Match[str]) -> bool:
    """Whether a ``.``/``!``/``?`` run ends a sentence (a lone period after an abbreviation or initial does not)."""
    if match.group().rstrip("\"'\u201d\u2019)]") != ".":
        return True
    word = _LAST_WORD.search(text, start, match.start())
    last = word.group(1).lower().lstrip("(\"'\u201c\u2018[") if word else ""
    return not (last in ABBREVIATIONS or (len(last) == 1 and last.isalpha()))


def split_sentences(text: str) -> list[str]:
    """Split a text into sentences with a regex (no model, no data files).

    Args:
        text: any text.

    Returns:
        The non-empty sentences, stripped, in order (the text itself when it has no sentence end).
    """
    out: list[str] = []
    for block in _BLANK_LINE.split(text):
        start = 0
        for match in _END.finditer(block):
            if not _ends_sentence(block, start, match):
                continue
            piece = block[start : match.end()].strip()
            if piece:
                out.append(piece)
            start = match.end()
        tail = block[start:].strip()
        if tail:
            out.append(tail)
    return out


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or not str(value).strip()


def _table(path: Path, fmt: str) -> Any:
    import pandas as pd

    if fmt == "csv":
        try:
            return pd.read_csv(path, keep_default_na=False, na_values=[""])
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
            raise ValueError(f"'{path}' could not be read as a CSV table: {err}") from None
    if fmt == "parquet":
        return pd.read_parquet(path)
    from textcause.corpus.jsonl import iter_json_lines

    return pd.DataFrame.from_records([obj for _, obj in iter_json_lines(path)])


def table_documents(
    path: str | Path, *, text_col: str = "text", author_col: Optional[str] = "author"
) -> list[Document]:
    """One document per row of a CSV / Parquet / NDJSON table; the other columns are its metadata.

    Args:
        path: the table.
        text_col: the text column.
        author_col: the author column (None: every row is its own author).

    Raises:
        ValueError: a missing column or an unreadable table.
    """
    path = Path(path)
    name = path.name.lower().removesuffix(".gz")
    frame = _table(path, TABLE_SUFFIXES.get(Path(name).suffix, "ndjson"))
    for role, col in (("text_col", text_col), ("author_col", author_col)):
        if col is not None and col not in frame.columns:
            raise ValueError(
                f"Column {col!r} (the {role} parameter) is not in '{path}'; its columns are {list(frame.columns)}."
            )
    meta_cols = [c for c in frame.columns if c not in (text_col, author_col)]
    docs = []
    for i, row in enumerate(frame.to_dict("records")):
        text = row[text_col]
        if _blank(text) or (author_col is not None and _blank(row[author_col])):
            continue
        meta = {c: row[c] for c in meta_cols if not _blank(row[c])}
        author = f"row{i}" if author_col is None else str(row[author_col])
        docs.append(Document(author=author, text=str(text), meta=meta))
    return docs


def is_table(source: str | Path) -> bool:
    """Whether ``source`` is a flat table (by extension, or a JSON Lines file whose records have no ``posts``)."""
    path = Path(resolve_corpus(str(source)))
    name = path.name.lower().removesuffix(".gz")
    suffix = Path(name).suffix
    if suffix in TABLE_SUFFIXES:
        return True
    if suffix in (".jsonl", ".json") and path.is_file():
        from textcause.corpus.jsonl import first_json_line

        first = first_json_line(path)
        return first is not None and "posts" not in first
    return False


def read_documents(
    source: str | Path, *, text_col: str = "text", author_col: Optional[str] = "author"
) -> list[Document]:
    """Every text of a history corpus (one per post, with its author's meta) or of a flat table.

    Args:
        source: a short corpus name (``blogs``), a history JSONL, or a CSV / Parquet / NDJSON table.
        text_col: a table's text column.
        author_col: a table's author column (None: each row is its own author).

    Raises:
        FileNotFoundError: nothing exists at ``source``.
        ValueError: an unreadable source or a missing column.
    """
    if is_table(source):
        path = Path(resolve_corpus(str(source)))
        if not path.is_file():
            raise FileNotFoundError(f"No table found at '{path}'.")
        return table_documents(path, text_col=text_col, author_col=author_col)
    from textcause.corpus import read_corpus

    corpus = read_corpus(source, min_posts=1, max_posts=None)
    return [Document(author=h.user_id, text=post, meta=h.meta) for h in corpus for post in h.posts]

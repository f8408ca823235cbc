"""Flat comment tables (CSV, Parquet, NDJSON, or a DataFrame): one row per comment -> user records.

Rows with a missing, empty or blank text are dropped; so are rows whose author is missing, blank or
a deleted account (:data:`DELETED_AUTHORS`, Reddit's ``[deleted]`` / ``[removed]``: such rows belong
to many different people, so they cannot form one history). The remaining rows are grouped by
author, users in the order of their first row in the table, and each user's posts are ordered by
time (stable: ties keep the table order; rows without a time go last). Numeric times are UNIX
seconds and become ISO 8601 UTC strings; text times are kept as written and parsed only to sort.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np
import pandas as pd

from textcause.corpus.jsonl import Record, iter_json_lines

#: Author names that stand for many deleted accounts, never one user.
DELETED_AUTHORS = frozenset({"[deleted]", "[removed]"})

_ROLES = (("author_col", "author"), ("text_col", "text"), ("time_col", "time"))
_NA_TIME = ["", "NA", "N/A", "NaN", "nan", "null", "None"]


def check_columns(
    columns: Sequence[str], where: str, author_col: str, text_col: str, time_col: str | None
) -> None:
    """Raise a ValueError naming the first of the three columns that ``columns`` lacks."""
    for param, value in zip(("author_col", "text_col", "time_col"), (author_col, text_col, time_col)):
        if value is not None and value not in columns:
            hint = " (or time_col=None to keep the table order)" if param == "time_col" else ""
            raise ValueError(
                f"Column {value!r} (the {param} parameter) is not in {where}; its columns are "
                f"{list(columns)}: pass {param}=<one of them>{hint}."
            )


def csv_na_options(time_col: str | None) -> dict[str, Any]:
    """``read_csv`` options that keep texts and names such as ``NA`` or ``null`` as strings."""
    return {"keep_default_na": False, "na_values": {time_col: _NA_TIME} if time_col is not None else None}


def read_table(
    path: str | os.PathLike, fmt: str, author_col: str, text_col: str, time_col: str | None
) -> pd.DataFrame:
    """Read the author, text and time columns of a CSV, Parquet or NDJSON comment table.

    CSV text and author fields are read as strings, so a comment or user called ``NA`` or ``null``
    stays a string; empty fields are dropped later as blank.
    """
    where = f"'{path}'"
    wanted = [c for c in (author_col, text_col, time_col) if c is not None]
    if fmt == "csv":
        try:
            header = pd.read_csv(path, nrows=0).columns
            check_columns(header, where, author_col, text_col, time_col)
            return pd.read_csv(
                path,
                usecols=list(dict.fromkeys(wanted)),
                dtype={author_col: str, text_col: str},
                **csv_na_options(time_col),
            )
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
            raise ValueError(f"'{path}' could not be read as a CSV table: {e}") from None
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            names = pq.read_schema(path).names
        except Exception as e:  # pyarrow raises ArrowInvalid and friends
            raise ValueError(f"'{path}' could not be read as a Parquet table: {e}") from None
        check_columns(names, where, author_col, text_col, time_col)
        return pd.read_parquet(path, columns=list(dict.fromkeys(wanted)))
    if fmt == "ndjson":
        rows = [obj for _, obj in iter_json_lines(path)]
        columns = list(dict.fromkeys(k for row in rows for k in row))
        check_columns(columns, where, author_col, text_col, time_col)
        return pd.DataFrame.from_records(rows, columns=columns)[list(dict.fromkeys(wanted))]
    raise ValueError(f"Unknown table format {fmt!r}.")  # pragma: no cover - guarded by the reader


def _blank(values: pd.Series) -> np.ndarray:
    """True where a value is missing or only whitespace."""
    na = values.isna().to_numpy()
    text = values.where(~na, "").astype(str)
    return na | (text.str.strip() == "").to_numpy()


def _sort_times(col: pd.Series, where: str, time_col: str) -> tuple[np.ndarray, np.ndarray, list]:
    """Return (sort key, missing mask, ISO/original time strings) for a time column."""
    if pd.api.types.is_bool_dtype(col):
        raise ValueError(f"Column {time_col!r} of {where} holds booleans, not times.")
    if pd.api.types.is_datetime64_any_dtype(col):
        parsed = col
        iso = [None if pd.isna(p) else p.isoformat() for p in parsed]
    elif pd.api.types.is_numeric_dtype(col) or _all_numeric(col):
        secs = pd.to_numeric(col, errors="coerce").astype(float)
        parsed = pd.to_datetime(secs, unit="s", utc=True, errors="coerce")
        iso = [None if pd.isna(p) else p.isoformat() for p in parsed]
        na = secs.isna().to_numpy()
        return np.where(na, 0.0, secs.to_numpy()), na, iso
    else:
        missing = col.isna()
        parsed = pd.to_datetime(col, errors="coerce", utc=True, format="ISO8601")
        if (parsed.isna() & ~missing).any():
            parsed = pd.to_datetime(col, errors="coerce", utc=True, format="mixed")
        bad = parsed.isna() & ~missing
        if bad.any():
            example = col[bad].iloc[0]
            raise ValueError(
                f"Column {time_col!r} of {where} holds values that are neither UNIX timestamps nor "
                f"dates (e.g. {example!r}): pass time_col=None to keep the table order."
            )
        iso = [None if pd.isna(v) else str(v) for v in col]
    na = parsed.isna().to_numpy()
    key = parsed.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    return np.where(na, 0, key), na, iso


def _all_numeric(col: pd.Series) -> bool:
    """Whether every non-missing value of an object/string column is a number."""
    present = col.dropna()
    if present.empty:
        return True
    return bool(pd.to_numeric(present, errors="coerce").notna().all())


def table_records(
    df: pd.DataFrame, where: str, author_col: str, text_col: str, time_col: str | None
) -> list[Record]:
    """Group a comment table into per-user records (see the module docstring for the rules).

    Args:
        df: one row per comment.
        where: the table's name in error messages (e.g. ``"'comments.csv'"``).
        author_col: the column of user names or ids.
        text_col: the column of comment texts.
        time_col: the column of UNIX timestamps or dates, or None to keep the table order.

    Returns:
        ``(user_id, texts, times, meta)`` records, users in order of first appearance.
    """
    check_columns(list(df.columns), where, author_col, text_col, time_col)
    authors = df[author_col]
    author_text = authors.where(authors.notna(), "").astype(str)
    keep = ~_blank(df[text_col]) & ~_blank(authors) & ~author_text.isin(DELETED_AUTHORS).to_numpy()
    idx = np.flatnonzero(keep)
    if idx.size == 0:
        return []
    texts = df[text_col].to_numpy(dtype=object)[idx]
    codes, uniques = pd.factorize(author_text.to_numpy(dtype=object)[idx])
    if time_col is None:
        order = np.argsort(codes, kind="stable")
        times = None
    else:
        key, na, iso = _sort_times(df[time_col].iloc[idx].reset_index(drop=True), where, time_col)
        order = np.lexsort((key, na, codes))  # by user, then timed before untimed, then time
        times = np.asarray(iso, dtype=object)[order]
    texts, codes = texts[order], codes[order]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    ends = np.r_[starts[1:], codes.size]
    records: list[Record] = []
    for s, e in zip(starts, ends):
        user = str(uniques[codes[s]])
        posts = [t if isinstance(t, str) else str(t) for t in texts[s:e]]
        records.append((user, posts, None if times is None else list(times[s:e]), {}))
    return records

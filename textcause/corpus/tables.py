"""Flat comment tables (CSV, Parquet, NDJSON, or a DataFrame): one row per comment -> user records.

Rows with a missing, empty or blank text are dropped; so are rows whose author is missing, blank or
a deleted account (:data:`DELETED_AUTHORS`, Reddit's ``[deleted]`` / ``[removed]``: such rows belong
to many different people, so they cannot form one history). The remaining rows are grouped by
author, users in the order of their first row in the table, and each user's posts are ordered by
time (stable: ties keep the table order; rows without a time go last). Numeric times are UNIX
seconds and become ISO 8601 UTC strings; text times are kept as written and parsed only to sort (in
a column that mixes both, numbers are UNIX seconds and the rest dates).

Types are checked, never coerced: an author is a string or an integer (an integer becomes its
decimal string; a table that writes one id both ways, ``1`` and ``"1"``, is refused; a CSV has no
types, so there both are the text ``1``), a text is a string, a time is a number or a date; every row of a CSV has one
field per column. A table that breaks a rule is refused in one sentence naming the file and the
line (CSV, NDJSON: the line in the file) or row (Parquet, DataFrames: the 0-based row), never the
text of a post.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from datetime import date
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd

from textcause.corpus.csvfile import csv_lines, csv_na_options
from textcause.corpus.jsonl import IdSpellings, Record, is_integer_id, iter_json_lines, type_name
from textcause.corpus.types import DELETED_AUTHORS

__all__ = [
    "check_columns",
    "check_texts",
    "read_table",
    "table_records",
]

#: The key of ``DataFrame.attrs`` holding each row's line in its file (CSV, NDJSON).
_LINES = "textcause_line_numbers"
#: Longer time fields are not shown in messages (they are not times, and could be a post's text).
_SHOWN_TIME_CHARS = 40
#: The range of UNIX timestamps a table's numeric times may take (pandas' nanosecond timestamps).
_TIME_RANGE = "1677-09-21 to 2262-04-11"


def check_columns(columns: Collection[str], where: str, author_col: str, text_col: str, time_col: str | None) -> None:
    """Raise a ValueError naming the first of the three columns that ``columns`` lacks."""
    for param, value in zip(("author_col", "text_col", "time_col"), (author_col, text_col, time_col)):
        if value is not None and value not in columns:
            hint = " (or time_col=None to keep the table order)" if param == "time_col" else ""
            raise ValueError(
                f"Column {value!r} (the {param} parameter) is not in {where}; its columns are "
                f"{list(columns)}: pass {param}=<one of them>{hint}."
            )


def read_table(
    path: str | os.PathLike[str], fmt: str, author_col: str, text_col: str, time_col: str | None
) -> pd.DataFrame:
    """Read the author, text and time columns of a CSV, Parquet or NDJSON comment table.

    CSV text and author fields are read as strings, so a comment or user called ``NA`` or ``null``
    stays a string; empty fields are dropped later as blank. For CSV and NDJSON, each row's line in
    the file is kept in ``df.attrs[LINES]`` for messages.

    Raises:
        ValueError: a missing column, a ragged CSV row, a value of the wrong type or an author
            written both as an integer and as a string (NDJSON), or a file that cannot be read as
            its format.
    """
    where = f"'{path}'"
    wanted = [c for c in (author_col, text_col, time_col) if c is not None]
    if fmt == "csv":
        lines = csv_lines(path, wanted)
        try:
            header = pd.read_csv(path, nrows=0).columns
            check_columns(header, where, author_col, text_col, time_col)
            df: pd.DataFrame = pd.read_csv(
                path,
                usecols=list(dict.fromkeys(wanted)),
                dtype={author_col: str, text_col: str},
                **csv_na_options(time_col),
            )
        except (
            pd.errors.ParserError,
            pd.errors.EmptyDataError,
            UnicodeDecodeError,
            OSError,
            EOFError,
            OverflowError,
        ) as e:
            raise ValueError(
                f"'{path}' could not be read as a CSV table ({type(e).__name__}: {_first_line(e)})."
            ) from None
        if len(lines) == len(df):
            df.attrs[_LINES] = np.frombuffer(lines, dtype=np.int64) if len(lines) else np.empty(0, np.int64)
        return df
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            names = pq.read_schema(path).names
        except Exception as e:  # pyarrow raises ArrowInvalid and friends
            raise ValueError(f"'{path}' could not be read as a Parquet table ({type(e).__name__}).") from None
        check_columns(names, where, author_col, text_col, time_col)
        try:
            table: pd.DataFrame = pd.read_parquet(path, columns=list(dict.fromkeys(wanted)))
            return table
        except Exception as e:  # pyarrow and pandas errors on damaged data or unsupported types
            raise ValueError(f"'{path}' could not be read as a Parquet table ({type(e).__name__}).") from None
    if fmt == "ndjson":
        numbers, rows = [], []
        spellings = IdSpellings(where)
        for n, obj in iter_json_lines(path):
            author = obj.get(author_col)
            if isinstance(author, str) or is_integer_id(author):
                spellings.see(str(author), is_integer_id(author), f"line {n}")
            rows.append(_ndjson_row(obj, f"Line {n} of {where}", author_col, text_col, time_col))
            numbers.append(n)
        columns = list(dict.fromkeys(k for row in rows for k in row))
        check_columns(columns, where, author_col, text_col, time_col)
        df = pd.DataFrame.from_records(rows, columns=columns)[list(dict.fromkeys(wanted))]
        df.attrs[_LINES] = np.asarray(numbers, dtype=np.int64)
        return df
    raise ValueError(f"Unknown table format {fmt!r}.")  # pragma: no cover - guarded by the reader


def _first_line(e: BaseException) -> str:
    """The first line of a parser's message (pandas' say where, never what)."""
    text = str(e).strip().splitlines()
    return text[0][:200] if text else type(e).__name__


def _ndjson_row(
    obj: dict[str, Any], where: str, author_col: str, text_col: str, time_col: str | None
) -> dict[str, Any]:
    """Check one NDJSON comment's author, text and time types; integer authors become strings."""
    author = obj.get(author_col)
    if author is not None:
        if isinstance(author, Integral) and not isinstance(author, bool):
            obj = {**obj, author_col: str(int(author))}
        elif not isinstance(author, str):
            raise ValueError(
                f"{where} has a {author_col!r} of type {type_name(author)}: authors must be strings or integers."
            )
    text = obj.get(text_col)
    if text is not None and not isinstance(text, str):
        raise ValueError(f"{where} has a {text_col!r} of type {type_name(text)}: comment texts must be strings.")
    if time_col is not None:
        t = obj.get(time_col)
        if t is not None and (isinstance(t, bool) or not isinstance(t, (str, Real))):
            raise ValueError(
                f"{where} has a {time_col!r} of type {type_name(t)}: times must be UNIX seconds, date strings or null."
            )
    return obj


def _place(df: pd.DataFrame, row: int) -> str:
    """How a message names row ``row`` of ``df``: its line in the file ("line 7"), else its 0-based row."""
    lines = df.attrs.get(_LINES)
    if lines is not None and row < len(lines):
        return f"line {int(lines[row])}"
    return f"row {row}"


def _position(df: pd.DataFrame, row: int, where: str) -> str:
    """The start of a message about row ``row``: "Line 7 of 'x.csv'" or "Row 6 of 'x.parquet'"."""
    place = _place(df, row)
    return f"{place[0].upper()}{place[1:]} of {where}"


def _present(values: pd.Series) -> np.ndarray:
    """True where a value is present (not None, NaN or NA)."""
    return ~values.isna().to_numpy()


def _is_object(dtype: Any) -> bool:
    """Whether ``dtype`` is numpy's object dtype (any Python objects), not a typed column."""
    return isinstance(dtype, np.dtype) and dtype.kind == "O"


def _object_values(col: pd.Series) -> np.ndarray:
    return col.to_numpy(dtype=object)


def _author_strings(col: pd.Series, df: pd.DataFrame, where: str, author_col: str) -> pd.Series:
    """The author column as strings ("" where missing); integers become their decimal strings.

    Raises:
        ValueError: an author that is neither a string nor an integer (named by line or row), or an
            id written both as an integer and as a string (:class:`~textcause.corpus.jsonl.IdSpellings`).
    """
    present = _present(col)
    dtype = col.dtype
    if pd.api.types.is_bool_dtype(dtype):
        bad = int(np.flatnonzero(present)[0]) if present.any() else None
    elif pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_string_dtype(dtype) and not _is_object(dtype):
        spelled: pd.Series = col.where(col.notna(), "").astype(str)
        return spelled
    elif pd.api.types.is_float_dtype(dtype):  # integers with missing values, as pandas stores them
        values = col.to_numpy(dtype=np.float64, na_value=np.nan)
        whole = present & np.isfinite(values)
        whole[whole] = values[whole] % 1.0 == 0.0
        if np.all(whole | ~present):
            return pd.Series(
                [str(int(v)) if ok else "" for v, ok in zip(values, present)], index=col.index, dtype=object
            )
        bad = int(np.flatnonzero(present & ~whole)[0])
    else:
        values = _object_values(col)
        out = np.empty(values.size, dtype=object)
        bad = None
        spellings = IdSpellings(where)
        for i, (v, ok) in enumerate(zip(values, present)):
            if not ok:
                out[i] = ""
            elif isinstance(v, str):
                out[i] = v
                spellings.see(v, False, _place(df, i))
            elif isinstance(v, Integral) and not isinstance(v, bool):
                out[i] = str(int(v))
                spellings.see(out[i], True, _place(df, i))
            else:
                bad = i
                break
        if bad is None:
            authors: pd.Series = pd.Series(out, index=col.index, dtype=object)
            return authors
    if bad is None:  # each branch above returned or found a bad row
        raise RuntimeError("Internal error: an author column was refused without a bad row to name.")
    value = col.iloc[bad]
    raise ValueError(
        f"{_position(df, bad, where)} has an author ({author_col!r}) of type {type_name(value)}: authors must be "
        "strings or integers."
    )


def check_texts(col: pd.Series, df: pd.DataFrame, where: str, text_col: str) -> None:
    """Refuse a present text that is not a string (named by line or row, never shown)."""
    dtype = col.dtype
    if pd.api.types.is_string_dtype(dtype) and not _is_object(dtype):
        return
    present = _present(col)
    if _is_object(dtype):
        values = _object_values(col)
        bad = next((i for i, (v, ok) in enumerate(zip(values, present)) if ok and not isinstance(v, str)), None)
    else:
        bad = int(np.flatnonzero(present)[0]) if present.any() else None
    if bad is not None:
        raise ValueError(
            f"{_position(df, bad, where)} has a text ({text_col!r}) of type {type_name(col.iloc[bad])}: comment texts "
            "must be strings."
        )


def _blank(values: pd.Series) -> np.ndarray:
    """True where a value is missing or only whitespace."""
    na = values.isna().to_numpy()
    text = values.where(~na, "").astype(str)
    blank: np.ndarray = na | (text.str.strip() == "").to_numpy()
    return blank


def _shown(value: Any) -> str:
    """A bad time value for a message: itself if short, else only its length (it may be a post's text)."""
    if isinstance(value, np.generic):
        value = value.item()
    text = value if isinstance(value, str) else repr(value)
    if len(text) > _SHOWN_TIME_CHARS:
        return f"a {len(text)}-character text"
    return repr(value)


def _bad_time(
    df: pd.DataFrame, rows: np.ndarray, j: int, value: Any, where: str, time_col: str, why: str
) -> ValueError:
    """The one-sentence error for a time that does not parse: file, line or row, and the value."""
    return ValueError(
        f"Column {time_col!r} of {where} holds values that are {why} (e.g. {_shown(value)}), first on "
        f"{_place(df, int(rows[j]))}: fix them, or pass time_col=None to keep the table order."
    )


def _int_key(parsed: pd.Series) -> np.ndarray:
    """Sortable int64 keys of a datetime series, exact in its own unit (never wrapped around)."""
    return parsed.to_numpy(dtype=f"datetime64[{parsed.dt.unit}]").astype(np.int64)


def _us_key(parsed: pd.Series) -> np.ndarray:
    """Sortable int64 keys in microseconds (to compare series of different units)."""
    return _int_key(parsed.dt.as_unit("us"))


def _numbers(col: pd.Series) -> pd.Series:
    """The values as float seconds (NaN where a value is missing or not a number)."""
    try:
        seconds: pd.Series = pd.to_numeric(col, errors="coerce").astype(float)
        return seconds
    except (TypeError, ValueError):  # an object pandas cannot even coerce (e.g. a date): one by one
        seconds = pd.Series([_number(v) for v in col], index=col.index, dtype=float)
        return seconds


def _number(value: Any) -> float:
    if isinstance(value, Real) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(pd.to_numeric(value))
        except (TypeError, ValueError):
            return float("nan")
    return float("nan")


def _parse_dates(col: pd.Series) -> pd.Series:
    """Date strings as UTC timestamps (NaT where a value is not a date)."""
    try:
        parsed: pd.Series = pd.to_datetime(col, errors="coerce", utc=True, format="ISO8601")
        if (parsed.isna() & col.notna()).any():
            parsed = pd.to_datetime(col, errors="coerce", utc=True, format="mixed")
        return parsed
    except (ValueError, TypeError, OverflowError):  # a value pandas cannot even coerce: one by one
        parsed = pd.Series([_parse_one(v) for v in col], index=col.index, dtype="datetime64[us, UTC]")
        return parsed


def _parse_one(value: Any) -> Any:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return pd.NaT
    try:
        return pd.to_datetime(value, errors="coerce", utc=True, format="mixed")
    except (ValueError, TypeError, OverflowError):
        return pd.NaT


def _iso(stamp: Any) -> str | None:
    """A timestamp as ISO 8601, None if missing; a date Python cannot print (year > 9999) raises ValueError."""
    if pd.isna(stamp):
        return None
    try:
        return str(stamp.isoformat())
    except (ValueError, NotImplementedError, OverflowError):
        raise ValueError("outside years 1 to 9999") from None


def _sort_times(
    col: pd.Series, where: str, time_col: str, df: pd.DataFrame, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[str | None]]:
    """Return (sort key, missing mask, ISO/original time strings) for a time column.

    ``rows`` maps each position of ``col`` to its row in ``df`` (for messages). Numbers are UNIX
    seconds (ISO strings in the result); text is a date (kept as written) or, failing that, a
    number.

    Raises:
        ValueError: a value that is neither a UNIX timestamp nor a date, or a timestamp outside the
            dates it can stand for (named with its line or row and the value itself).
    """
    if pd.api.types.is_datetime64_any_dtype(col):
        iso = []
        for j, stamp in enumerate(col):
            try:
                iso.append(_iso(stamp))
            except ValueError:
                raise _bad_time(
                    df, rows, j, str(stamp.year), where, time_col, "dates outside years 1 to 9999"
                ) from None
        na = col.isna().to_numpy()
        return np.where(na, 0, _int_key(col)), na, iso
    missing = col.isna().to_numpy()
    if pd.api.types.is_numeric_dtype(col) or _all_numeric(col):
        secs = _numbers(col)
        parsed = pd.to_datetime(secs, unit="s", utc=True, errors="coerce")
        out = (parsed.isna() & secs.notna()).to_numpy()
        if out.any():
            j = int(np.flatnonzero(out)[0])
            raise _bad_time(df, rows, j, col.iloc[j], where, time_col, f"UNIX timestamps outside {_TIME_RANGE}")
        iso = [None if pd.isna(p) else p.isoformat() for p in parsed]
        na = secs.isna().to_numpy()
        return np.where(na, 0.0, secs.to_numpy()), na, iso
    dates = _parse_dates(col)
    undated = dates.isna().to_numpy() & ~missing
    if not undated.any():  # every present value is a date: kept as written
        iso = [None if m else str(v) for v, m in zip(col, missing)]
        return np.where(missing, 0, _int_key(dates)), missing, iso
    # the values that are not dates must be UNIX seconds
    secs = _numbers(col.where(undated))
    numeric = secs.notna().to_numpy()
    neither = undated & ~numeric
    if neither.any():
        j = int(np.flatnonzero(neither)[0])
        raise _bad_time(df, rows, j, col.iloc[j], where, time_col, "neither UNIX timestamps nor dates")
    from_secs = pd.to_datetime(secs, unit="s", utc=True, errors="coerce")
    out = numeric & from_secs.isna().to_numpy()
    if out.any():
        j = int(np.flatnonzero(out)[0])
        raise _bad_time(df, rows, j, col.iloc[j], where, time_col, f"UNIX timestamps outside {_TIME_RANGE}")
    keys = np.where(numeric, _us_key(from_secs), _us_key(dates))
    iso = [
        None if m else (from_secs.iloc[j].isoformat() if numeric[j] else str(v))
        for j, (v, m) in enumerate(zip(col, missing))
    ]
    return np.where(missing, 0, keys), missing, iso


def _check_time_types(col: pd.Series, df: pd.DataFrame, where: str, time_col: str) -> None:
    """Refuse a time of the wrong type on any row, kept or not (as the NDJSON reader does)."""
    if pd.api.types.is_bool_dtype(col) and _present(col).any():
        raise ValueError(f"Column {time_col!r} of {where} holds booleans, not times.")
    if _is_object(col.dtype):
        for j, v in enumerate(_object_values(col)):
            if isinstance(v, bool) or not (v is None or isinstance(v, (str, Real, date))):
                raise ValueError(
                    f"{_position(df, j, where)} has a time ({time_col!r}) of type {type_name(v)}: times "
                    "must be UNIX seconds, dates or missing."
                )


def _all_numeric(col: pd.Series) -> bool:
    """Whether every non-missing value of an object/string column is a number."""
    present = col.dropna()
    if present.empty:
        return True
    return bool(pd.to_numeric(present, errors="coerce").notna().all())


def table_records(df: pd.DataFrame, where: str, author_col: str, text_col: str, time_col: str | None) -> list[Record]:
    """Group a comment table into per-user records (see the module docstring for the rules).

    Args:
        df: one row per comment (``df.attrs[LINES]``, if set, gives each row's line in its file).
        where: the table's name in error messages (e.g. ``"'comments.csv'"``).
        author_col: the column of user names or ids.
        text_col: the column of comment texts.
        time_col: the column of UNIX timestamps or dates, or None to keep the table order.

    Returns:
        ``(user_id, texts, times, meta)`` records, users in order of first appearance.

    Raises:
        ValueError: a missing column, an author that is neither a string nor an integer, a text
            that is not a string, or a time that does not parse (named by line or row).
    """
    check_columns(list(df.columns), where, author_col, text_col, time_col)
    author_text = _author_strings(df[author_col], df, where, author_col)
    check_texts(df[text_col], df, where, text_col)
    if time_col is not None:
        _check_time_types(df[time_col], df, where, time_col)
    keep = ~_blank(df[text_col]) & ~_blank(author_text) & ~author_text.isin(DELETED_AUTHORS).to_numpy()
    idx = np.flatnonzero(keep)
    if idx.size == 0:
        return []
    texts = df[text_col].to_numpy(dtype=object)[idx]
    codes, uniques = pd.factorize(author_text.to_numpy(dtype=object)[idx])
    if time_col is None:
        order = np.argsort(codes, kind="stable")
        times = None
    else:
        key, na, iso = _sort_times(df[time_col].iloc[idx].reset_index(drop=True), where, time_col, df, idx)
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

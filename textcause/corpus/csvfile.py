"""CSV files as comment tables: the ``read_csv`` options that keep texts as written, and the line of each row.

``pandas.read_csv`` reads a table's values; :func:`csv_lines` reads the same file once with
:mod:`csv` to refuse what pandas would quietly accept (a ragged row, a header naming a used column
twice) and to keep the line where each row starts, for messages.
"""

from __future__ import annotations

import csv
import os
from array import array
from collections.abc import Sequence
from typing import Any

from textcause.corpus.jsonl import bad_utf8_line

__all__ = ["csv_lines", "csv_na_options"]

#: The fields of a time column that mean "no time".
_NA_TIME = ["", "NA", "N/A", "NaN", "nan", "null", "None"]


def csv_na_options(time_col: str | None, as_written: Sequence[str] = ()) -> dict[str, Any]:
    """``read_csv`` options that keep texts and names such as ``NA`` or ``null`` as strings.

    The ``as_written`` columns (a builder's author and text) are read as the strings in the file,
    so the ids ``01``, ``1`` and ``1.0`` stay three users.
    """
    options = {"keep_default_na": False, "na_values": {time_col: _NA_TIME} if time_col is not None else None}
    return {**options, "converters": {c: str for c in as_written}} if as_written else options


def csv_lines(path: str | os.PathLike[str], columns: Sequence[str] = ()) -> array[int]:
    """The line (1-based, in the file) where each data row of a CSV starts; refuse ragged rows.

    Reads the file once with :mod:`csv` (the dialect ``pandas.read_csv`` uses by default, the same
    compression inferred from the name), skipping blank lines as pandas does.

    Raises:
        ValueError: a header that names one of ``columns`` twice (which one the reader took would be
            a guess), a row with more or fewer fields than the header, a malformed row, a file that
            is not UTF-8 or cannot be read.
    """
    from pandas.io.common import get_handle

    starts = array("q")
    limit = csv.field_size_limit()
    csv.field_size_limit(2**31 - 1)  # a long comment is one field; pandas has no such limit
    line = 0
    try:
        with get_handle(path, "r", encoding="utf-8", compression="infer") as handles:
            reader = csv.reader(handles.handle)
            width = None
            for record in reader:
                start, line = line + 1, reader.line_num
                if not record:
                    continue
                if width is None:
                    width = len(record)
                    twice = [c for c in dict.fromkeys(columns) if record.count(c) > 1]
                    if twice:
                        raise ValueError(
                            f"Column {twice[0]!r} is named {record.count(twice[0])} times in the header (line {start}) "
                            f"of '{path}': name each column once."
                        )
                elif len(record) != width:
                    raise ValueError(
                        f"Line {start} of '{path}' has {len(record)} fields but the header has {width}: every row "
                        "of a CSV table needs one field per column (quote fields that hold commas)."
                    )
                else:
                    starts.append(start)
    except csv.Error as e:
        raise ValueError(f"Line {line + 1} of '{path}' is not a well-formed CSV row ({e}).") from None
    except UnicodeDecodeError:
        bad = bad_utf8_line(path)
        where = f": line {bad} is not valid UTF-8" if bad else ""
        raise ValueError(f"'{path}' could not be read as a UTF-8 CSV table{where}.") from None
    except (OSError, EOFError) as e:
        raise ValueError(f"'{path}' could not be read as a CSV table ({type(e).__name__}).") from None
    finally:
        csv.field_size_limit(limit)
    return starts

"""JSON Lines input: streaming (gzip or plain) line by line, and history records.

A *record* is the raw material of a :class:`~textcause.corpus.types.History` before filtering:
``(user_id, texts, times, meta)`` where ``texts`` and ``times`` are parallel lists (``times`` is None
when the source has no times). Empty texts are kept here; the reader drops them.

Every value is checked for its type, never coerced: a user id is a string or an integer (an integer
becomes its decimal string; :class:`IdSpellings` refuses a source that writes one id both ways), a post text is a string (or null: an empty post), a time is UNIX seconds,
a date string or null, ``meta`` is a mapping. A file that breaks a rule is refused in one sentence
that names the file, the line and the field (never the text of a post).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from collections.abc import Iterable, Iterator
from datetime import date, datetime, timezone
from numbers import Integral, Real
from typing import Any

__all__ = [
    "IdSpellings",
    "Record",
    "bad_utf8_line",
    "first_json_line",
    "history_record",
    "is_integer_id",
    "iter_json_lines",
    "type_name",
    "unique_users",
]

#: (user_id, texts, times or None, meta)
Record = tuple[str, list[Any], "list[str | None] | None", dict[str, Any]]

_GZIP_MAGIC = b"\x1f\x8b"


def _is_gzip(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` starts with the gzip magic bytes (whatever its name)."""
    with open(path, "rb") as f:
        return f.read(2) == _GZIP_MAGIC


def iter_json_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every non-blank line of a (gzipped) JSON Lines file.

    Raises:
        ValueError: a line is not valid JSON or not a JSON object (the message gives the file and
            line number), or the file cannot be read, is not valid gzip or not UTF-8.
    """
    n = 0
    try:
        opener = gzip.open if _is_gzip(path) else open
        with opener(path, "rt", encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"Line {n} of '{path}' is not valid JSON ({e.msg} at column {e.colno}).") from None
                except (ValueError, RecursionError) as e:  # e.g. an integer of over 4300 digits, deep nesting
                    raise ValueError(
                        f"Line {n} of '{path}' is not JSON this reader can hold ({type(e).__name__}: nesting too "
                        "deep or a number too long)."
                    ) from None
                if not isinstance(obj, dict):
                    raise ValueError(f"Line {n} of '{path}' is not a JSON object: every line must be one record.")
                yield n, obj
    except UnicodeDecodeError:
        bad = bad_utf8_line(path)
        where = f" (line {bad} is not valid UTF-8)" if bad else ""
        raise ValueError(f"'{path}' could not be read as (gzipped) UTF-8 JSON Lines{where}.") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        where = f" after line {n}" if n else ""
        raise ValueError(
            f"'{path}' could not be read as (gzipped) UTF-8 JSON Lines: the gzip data is damaged{where} "
            f"({type(e).__name__})."
        ) from None
    except OSError as e:
        raise ValueError(f"'{path}' could not be read: {e.strerror or type(e).__name__}.") from None


def bad_utf8_line(path: str | os.PathLike[str]) -> int | None:
    """The number of the first line of a (gzipped) file that is not valid UTF-8, or None (error path only)."""
    try:
        opener = gzip.open if _is_gzip(path) else open
        with opener(path, "rb") as f:
            for n, raw in enumerate(f, 1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    return n
    except (OSError, EOFError, zlib.error):
        return None
    return None


def first_json_line(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The first record of a JSON Lines file, or None if it has no records."""
    for _, obj in iter_json_lines(path):
        return obj
    return None


def _unix_to_iso(value: float | Real) -> str:
    """A UNIX timestamp in seconds as an ISO 8601 UTC string, e.g. ``2016-02-17T04:22:47+00:00``.

    Raises:
        OverflowError, ValueError, OSError: a timestamp no date can hold (callers report it).
    """
    return datetime.fromtimestamp(float(value), tz=timezone.utc).isoformat()


def type_name(value: Any) -> str:
    """The JSON name of a value's type, for messages (never the value itself).

    Examples:
        >>> [type_name(v) for v in ({}, [1], "a", True, None, 3, 2.5)]
        ['object', 'array', 'string', 'boolean', 'null', 'integer', 'number']
    """
    names = {dict: "object", list: "array", tuple: "array", str: "string", bool: "boolean", type(None): "null"}
    for kind, name in names.items():
        if isinstance(value, kind):
            return name
    if isinstance(value, Integral):
        return "integer"
    if isinstance(value, Real):
        return "number"
    return type(value).__name__


def _user_id_text(value: Any, where: str, key: str) -> str:
    """A user id as a string: strings as they are, integers as their decimal string.

    Raises:
        ValueError: any other type (a list, an object, a float, a boolean), or an empty id.
    """
    if isinstance(value, str):
        if not value.strip():
            raise ValueError(f"{where} has an empty '{key}': every history needs a user id.")
        return value
    if isinstance(value, Integral) and not isinstance(value, bool):
        return str(int(value))
    raise ValueError(f"{where} has a '{key}' of type {type_name(value)}: user ids must be strings or integers.")


def _time_text(value: Any, where: str) -> str | None:
    """A post's time as stored: None, an ISO string from UNIX seconds, a date as written."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, Real) and not isinstance(value, bool):
        try:
            return _unix_to_iso(value)
        except (OverflowError, ValueError, OSError):
            raise ValueError(
                f"{where} has a 'time' of {value!r}, which is not a UNIX timestamp in seconds that a date can hold "
                "(years 1 to 9999): fix it, or write the date as a string."
            ) from None
    if isinstance(value, (datetime, date)):  # e.g. from a datasets builder that parsed the dates
        return value.isoformat()
    if isinstance(value, str):
        return value
    raise ValueError(
        f"{where} has a 'time' of type {type_name(value)}: times must be UNIX seconds, date strings or null."
    )


def history_record(obj: dict[str, Any], where: str, id_key: str = "user_id") -> Record:
    """Turn one history object ``{"user_id", "posts": [{"text", "time"}, ...], "meta"}`` into a record.

    Posts may also be plain strings (no time). Numeric times are UNIX seconds and become ISO strings;
    string times are kept as written.

    Args:
        obj: the parsed line or dataset row.
        where: where it came from, for error messages (e.g. ``"Line 3 of 'x.jsonl'"``).
        id_key: the key holding the user id.

    Raises:
        ValueError: the user id is missing, empty or neither a string nor an integer; the ``posts``
            list is missing; a post is neither an object nor a string; a post's text is not a string
            (or null); a time is not a number, a string or null, or a number no date can hold; or
            ``meta`` is not a mapping.
    """
    uid = obj.get(id_key)
    if uid is None:
        raise ValueError(f"{where} has no '{id_key}': every history needs a user id.")
    uid = _user_id_text(uid, where, id_key)
    posts = obj.get("posts")
    if not isinstance(posts, (list, tuple)):
        raise ValueError(
            f"{where} has no 'posts' list: a history JSONL holds one user per line with a 'posts' "
            "list (use format='ndjson' for a file of one comment per line)."
        )
    texts: list[Any] = []
    times: list[str | None] = []
    for k, post in enumerate(posts, 1):
        if isinstance(post, dict):
            text = post.get("text")
            if text is not None and not isinstance(text, str):
                raise ValueError(
                    f"{where} (post {k}) has a 'text' of type {type_name(text)}: post texts must be strings "
                    "(or null for an empty post)."
                )
            texts.append(text)
            times.append(_time_text(post.get("time"), f"{where} (post {k})"))
        elif isinstance(post, str) or post is None:
            texts.append(post)
            times.append(None)
        else:
            raise ValueError(
                f"{where} has a post of type {type(post).__name__}: posts must be "
                "{'text': ..., 'time': ...} objects or strings."
            )
    meta = obj.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise ValueError(
            f"{where} has a 'meta' of type {type_name(meta)}: meta must be a mapping (a JSON object) of user "
            "metadata, or absent."
        )
    return uid, texts, times, dict(meta) if meta is not None else {}


class IdSpellings:
    """The one rule of every reader for user ids written as integers and as strings.

    A source (a history file, a comment table, a dataset) that writes an id as the integer ``1`` in
    one place and as the string ``"1"`` in another is refused: both read as the id ``'1'``, yet they
    may be two users, and merging them would be silently wrong. A source that writes every id one
    way (or a CSV, which has no types) is never refused by this rule.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self._first: dict[str, tuple[bool, str]] = {}

    def see(self, text: str, as_integer: bool, position: str) -> None:
        """Note that ``position`` ("line 3", "row 2") writes the id ``text`` as an integer or a string.

        Raises:
            ValueError: the id was written the other way before (naming the id and both positions).
        """
        first = self._first.setdefault(text, (as_integer, position))
        if first[0] != as_integer:
            self.refuse(text, first[1] if first[0] else position, position if first[0] else first[1])

    def refuse(self, text: str, integer_at: str, string_at: str) -> None:
        """Raise the rule's one sentence for the id ``text`` written both ways."""
        raise ValueError(
            f"The user id {text!r} is written as an integer on {integer_at} and as a string on {string_at} of "
            f"{self.source}: write every id one way (all integers or all strings), since the two may be "
            "different users."
        )


def is_integer_id(value: Any) -> bool:
    """Whether a user id value is written as an integer (not a boolean)."""
    return isinstance(value, Integral) and not isinstance(value, bool)


def unique_users(records: Iterable[tuple[str, Record, bool]], source: str) -> Iterator[Record]:
    """Pass ``(position, record, as_integer)`` triples through as records, refusing a user id seen before.

    ``position`` names where a record came from ("line 3", "row 2"), for the message; ``as_integer``
    says whether the source wrote the id as an integer (see :class:`IdSpellings`).

    Raises:
        ValueError: an id written as an integer and as a string (:class:`IdSpellings`), or two
            records with the same user id (the message names the id and both positions).
    """
    seen: dict[str, str] = {}
    spellings = IdSpellings(source)
    for position, record, as_integer in records:
        spellings.see(record[0], as_integer, position)
        first = seen.setdefault(record[0], position)
        if first != position:
            raise ValueError(
                f"The user id {record[0]!r} is on both {first} and {position} of {source}: a history file holds "
                "one entry per user, so merge the two histories or give them distinct ids."
            )
        yield record

"""JSON Lines input: streaming (gzip or plain) line by line, and history records.

A *record* is the raw material of a :class:`~textcause.corpus.types.History` before filtering:
``(user_id, texts, times, meta)`` where ``texts`` and ``times`` are parallel lists (``times`` is None
when the source has no times). Empty texts are kept here; the reader drops them.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from datetime import date, datetime, timezone
from typing import Any, Iterator

#: (user_id, texts, times or None, meta)
Record = tuple[str, list[Any], "list[str | None] | None", dict[str, Any]]

_GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: str | os.PathLike) -> bool:
    """Whether ``path`` starts with the gzip magic bytes (whatever its name)."""
    with open(path, "rb") as f:
        return f.read(2) == _GZIP_MAGIC


def iter_json_lines(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every non-blank line of a (gzipped) JSON Lines file.

    Raises:
        ValueError: a line is not valid JSON or not a JSON object (the message gives the file and
            line number), or the file is not valid gzip / UTF-8.
    """
    opener = gzip.open if is_gzip(path) else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(
                        f"Line {n} of '{path}' is not valid JSON ({e.msg} at column {e.colno})."
                    ) from None
                if not isinstance(obj, dict):
                    raise ValueError(
                        f"Line {n} of '{path}' is not a JSON object: every line must be one record."
                    )
                yield n, obj
    except (EOFError, gzip.BadGzipFile, UnicodeDecodeError) as e:
        raise ValueError(f"'{path}' could not be read as (gzipped) UTF-8 JSON Lines: {e}.") from None


def first_json_line(path: str | os.PathLike) -> dict[str, Any] | None:
    """The first record of a JSON Lines file, or None if it has no records."""
    for _, obj in iter_json_lines(path):
        return obj
    return None


def unix_to_iso(value: float) -> str:
    """A UNIX timestamp in seconds as an ISO 8601 UTC string, e.g. ``2016-02-17T04:22:47+00:00``."""
    return datetime.fromtimestamp(float(value), tz=timezone.utc).isoformat()


def _time_text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return unix_to_iso(value)
    if isinstance(value, (datetime, date)):  # e.g. from a datasets builder that parsed the dates
        return value.isoformat()
    return str(value)


def history_record(obj: dict[str, Any], where: str, id_key: str = "user_id") -> Record:
    """Turn one history object ``{"user_id", "posts": [{"text", "time"}, ...], "meta"}`` into a record.

    Posts may also be plain strings (no time). Numeric times are UNIX seconds and become ISO strings.

    Args:
        obj: the parsed line or dataset row.
        where: where it came from, for error messages (e.g. ``"Line 3 of 'x.jsonl'"``).
        id_key: the key holding the user id.

    Raises:
        ValueError: the user id or the ``posts`` list is missing, or a post is neither an object nor
            a string.
    """
    uid = obj.get(id_key)
    if uid is None:
        raise ValueError(f"{where} has no '{id_key}': every history needs a user id.")
    posts = obj.get("posts")
    if not isinstance(posts, (list, tuple)):
        raise ValueError(
            f"{where} has no 'posts' list: a history JSONL holds one user per line with a 'posts' "
            "list (use format='ndjson' for a file of one comment per line)."
        )
    texts: list[Any] = []
    times: list[str | None] = []
    for post in posts:
        if isinstance(post, dict):
            texts.append(post.get("text"))
            times.append(_time_text(post.get("time")))
        elif isinstance(post, str) or post is None:
            texts.append(post)
            times.append(None)
        else:
            raise ValueError(
                f"{where} has a post of type {type(post).__name__}: posts must be "
                "{'text': ..., 'time': ...} objects or strings."
            )
    meta = obj.get("meta")
    return str(uid), texts, times, dict(meta) if isinstance(meta, dict) else {}

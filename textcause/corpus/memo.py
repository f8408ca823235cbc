"""One memoised corpus reader for the whole process.

A benchmark worker, a sweep and an observational study build many tasks from the same corpus: the
corpus (an immutable :class:`~textcause.corpus.types.Corpus`) is read once per process and setting.
The memo is keyed by the resolved path, the file's modification time and the reading settings, so a
changed file or data root is read again.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Optional

from textcause.corpus.readers import load_histories
from textcause.corpus.types import Corpus
from textcause.paths import resolve_corpus


def read_corpus(
    source: str | os.PathLike,
    *,
    min_posts: int = 10,
    max_posts: Optional[int] = 60,
    n_users: Optional[int] = None,
    author_col: str = "author",
    text_col: str = "text",
    time_col: Optional[str] = "time",
    drop_duplicates: bool = False,
) -> Corpus:
    """:func:`~textcause.corpus.readers.load_histories` with the user sample fixed (seed 0), memoised.

    The sample does not depend on a task's seed, so that task seeds compare methods on the same users.

    Args:
        source: a short corpus name, a path or a Hugging Face dataset source.
        min_posts, max_posts, n_users: as for ``load_histories``.
        author_col, text_col, time_col, drop_duplicates: a flat table's columns and de-duplication,
            as for ``load_histories``.
    """
    settings = (min_posts, max_posts, n_users)
    columns = (author_col, text_col, time_col, drop_duplicates)
    hashable = all(isinstance(v, (str, bool, type(None))) for v in columns)
    if (
        not isinstance(source, (str, os.PathLike))
        or not all(isinstance(v, (int, type(None))) for v in settings)
        or not hashable
    ):
        # not a setting that can be memoised: load_histories refuses it in one sentence
        return _load(source, min_posts, max_posts, n_users, columns)
    path = resolve_corpus(source)
    try:
        stamp: Optional[int] = os.stat(path).st_mtime_ns
    except (OSError, ValueError):
        stamp = None  # not a local file (a Hugging Face name): load_histories reports problems
    return _read(path, stamp, min_posts, max_posts, n_users, columns)


def _load(source: Any, min_posts: Any, max_posts: Any, n_users: Any, columns: tuple[Any, ...]) -> Corpus:
    author_col, text_col, time_col, drop_duplicates = columns
    return load_histories(
        source,
        min_posts=min_posts,
        max_posts=max_posts,
        n_users=n_users,
        seed=0,
        author_col=author_col,
        text_col=text_col,
        time_col=time_col,
        drop_duplicates=drop_duplicates,
    )


@functools.lru_cache(maxsize=2)
def _read(
    path: str,
    stamp: Optional[int],
    min_posts: int,
    max_posts: Optional[int],
    n_users: Optional[int],
    columns: tuple[str, str, Optional[str], bool],
) -> Corpus:
    return _load(path, min_posts, max_posts, n_users, columns)

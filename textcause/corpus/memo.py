"""One memoised corpus reader for the whole process.

:func:`read_corpus` reads a corpus (an immutable :class:`~textcause.corpus.types.Corpus`) once per
process and setting, keyed by the resolved path, the file's modification time and the reading
settings, so a changed file or data root is read again.

What a local corpus file reads to (a sample of ``n_users`` users, or all of them) is also kept on
disk under the cache root's ``corpora/`` (:func:`textcause.paths.cache_root`), keyed the same way
plus the file's size and the reading code (this package's sources, the versions of numpy, pandas
and pyarrow). The file is written atomically and checked against its SHA-256 when read; one that
fails is reported in one warning and read anew from the corpus. A sample whose metadata JSON cannot
hold exactly is not cached, and without a cache root the corpus is read as before. Parse and cache
times: benchmarks/README.md, ``bench_startup.py``.
"""

from __future__ import annotations

import functools
import json
import os
import warnings
from pathlib import Path
from typing import Any, Optional

from textcause.corpus.readers import load_histories
from textcause.corpus.types import Corpus, History
from textcause.io import content_key, read_checked, write_checked
from textcause.paths import cache_root, resolve_corpus

__all__ = [
    "read_corpus",
    "sample_file",
]

_SAMPLE_CACHE = "corpus-sample/v1"  # the sample cache's format, part of its key


def read_corpus(
    source: str | os.PathLike[str],
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
        min_posts: as for ``load_histories``.
        max_posts: as for ``load_histories``.
        n_users: as for ``load_histories``.
        author_col: a flat table's author column, as for ``load_histories``.
        text_col: a flat table's text column, as for ``load_histories``.
        time_col: a flat table's time column, as for ``load_histories``.
        drop_duplicates: a flat table's de-duplication, as for ``load_histories``.
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
    if stamp is None or not os.path.isfile(path):
        return _load(path, min_posts, max_posts, n_users, columns)
    try:
        file: Optional[Path] = sample_file(path, min_posts, max_posts, n_users, columns)
    except OSError as err:  # no cache root to be had (a read-only home): read the corpus
        warnings.warn(f"No corpus sample cache ({err}); reading the corpus.", stacklevel=3)
        file = None
    corpus = _read_sample(file) if file is not None else None
    if corpus is None:
        corpus = _load(path, min_posts, max_posts, n_users, columns)
        if file is not None:
            _write_sample(file, corpus)
    return corpus


@functools.lru_cache(maxsize=1)
def _reader_version() -> str:
    """A key of the code that reads and samples corpora: this package's sources and the versions of
    numpy (the sample is drawn with ``numpy.random.default_rng(0)``), pandas and pyarrow (CSV and
    parquet tables), so new reading code reads anew."""
    import importlib.metadata

    versions = []
    for package in ("numpy", "pandas", "pyarrow"):  # the sampler; the CSV and parquet readers
        try:
            versions.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{package} -")
    sources = [p.read_bytes() for p in sorted(Path(__file__).parent.glob("*.py"))]
    return content_key(_SAMPLE_CACHE, versions, *sources)


def sample_file(
    path: str, min_posts: int, max_posts: Optional[int], n_users: Optional[int], columns: tuple[Any, ...]
) -> Path:
    """Where the reading of the corpus file ``path`` (a sample of ``n_users`` users, or all of them
    when it is None) is cached: keyed by the file's real path, size and modification time, every
    reading setting and the reading code (:func:`_reader_version`)."""
    st = os.stat(path)
    key = content_key(
        _reader_version(),
        os.path.realpath(path),
        st.st_size,
        st.st_mtime_ns,
        [min_posts, max_posts, n_users, *columns],
    )
    return cache_root() / "corpora" / f"{key}.json"


def _read_sample(file: Path) -> Optional[Corpus]:
    def parse(body: bytes) -> Corpus:
        data = json.loads(body)
        histories = tuple(
            History(str(u), tuple(posts), None if times is None else tuple(times), dict(meta))
            for u, posts, times, meta in data["histories"]
        )
        return Corpus(histories, str(data["source"]))

    return read_checked(file, parse, what="corpus sample cache", redo="reading the corpus", stacklevel=4)


def _same(a: Any, b: Any) -> bool:
    """Whether ``a`` (read back from JSON) is ``b`` exactly: the same types all the way down, NaN
    equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and a != a:
        return bool(b != b)
    return bool(a == b)


def _write_sample(file: Path, corpus: Corpus) -> None:
    rows = [[h.user_id, list(h.posts), None if h.times is None else list(h.times), h.meta] for h in corpus]
    payload = {"source": corpus.source, "histories": rows}
    try:  # ASCII escapes: lone surrogates (half an emoji in a tweet dump) round-trip too
        data = json.dumps(payload, separators=(",", ":")).encode("ascii")
    except (TypeError, ValueError):  # metadata that JSON cannot hold: no cache, read the corpus each time
        return
    if not _same(json.loads(data), payload):  # not exactly (tuples, numpy numbers, non-string keys): no cache
        return
    try:
        write_checked(file, data)
    except OSError as err:
        warnings.warn(f"Could not write the corpus sample cache '{file}' ({err}).", stacklevel=4)

"""One build of masked-gender examples, a pure function of :class:`GenderDataSettings`.

The build reads the documents (:func:`textcause.gender.sentences.read_documents`), splits them into
sentences, keeps those that hold a gendered word, draws up to ``n_sentences`` of them in a seeded
random order (the same seed gives the same sentences, with or without a prefix), masks and labels
every gendered word with the encoder's tokenizer (:mod:`textcause.gender.masking`), cuts each
sentence to ``max_tokens`` tokens, and splits the examples into train / validation / test by
author: no author has sentences in two splits. Results are memoised per process (the data module,
its DDP ranks under ``ddp_fork`` and a probe after a fit share one build). The sentence
screen of the whole corpus, the bulk of a build, is cached on disk (:mod:`textcause.gender.candidates`).

A prefix writes W before each sentence: the value of a metadata field (``prefix="age"`` gives
``"age: 23. "``), taken from the documents' metadata or, for a W of your own (say drawn at random
per author), from ``w_file``: a CSV with an ``author`` column and a column named like ``prefix``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Optional

import numpy as np

from textcause.corpus.splits import split_users
from textcause.corpus.types import Split
from textcause.gender.candidates import all_candidates
from textcause.gender.masking import (
    FEMALE,
    IGNORE,
    candidate_pattern,
    encode_masked,
    mask_sentences,
    word_labels,
)
from textcause.gender.sentences import Document, read_documents
from textcause.gender.words import load_gendered_words
from textcause.io import content_key
from textcause.paths import resolve_corpus
from textcause.validation import check_int, check_that

log = logging.getLogger(__name__)
#: Sentences masked per tokenizer call.
CHUNK = 2048
_MEMO_SIZE = 4


@dataclasses.dataclass(frozen=True)
class GenderDataSettings:
    """Everything that decides the examples (how they are batched is the data module's business).

    Attributes:
        source: a short corpus name (``blogs``), a history JSONL or a CSV / Parquet / NDJSON table.
        text_col: a table's text column.
        author_col: a table's author column (None: each row is its own author).
        prefix: the metadata field written before each sentence (None: no prefix).
        w_file: a CSV of W per author (an ``author`` column and one named like ``prefix``), used
            instead of the documents' metadata.
        prefix_format: how the prefix is written, from ``{name}`` (the field) and ``{value}``.
        encoder: the encoder whose tokenizer masks the text (None: the packaged all-MiniLM-L6-v2).
        words: a gendered word YAML (None: table 3).
        max_tokens: a sentence's tokens kept (the prefix and special tokens come on top).
        n_sentences: how many masked sentences to draw (None: all).
        seed: the draw's and the author split's seed.
        fractions: the train, validation and test fractions of the authors.
    """

    source: str = "blogs"
    text_col: str = "text"
    author_col: Optional[str] = "author"
    prefix: Optional[str] = None
    w_file: Optional[str] = None
    prefix_format: str = "{name}: {value}. "
    encoder: Optional[str] = None
    words: Optional[str] = None
    max_tokens: int = 64
    n_sentences: Optional[int] = 20_000
    seed: int = 0
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)

    def __post_init__(self) -> None:
        owner = "GenderDataSettings"
        check_int(self.max_tokens, "max_tokens", owner, low=1)
        if self.n_sentences is not None:
            check_int(self.n_sentences, "n_sentences", owner, low=3)
        check_int(self.seed, "seed", owner, low=0)
        object.__setattr__(self, "fractions", tuple(float(f) for f in self.fractions))
        check_that(
            len(self.fractions) == 3 and all(f > 0 for f in self.fractions) and math.isclose(sum(self.fractions), 1),
            self.fractions,
            "fractions",
            owner,
            "three positive fractions (train, val, test) that sum to 1",
        )
        check_that(
            self.w_file is None or self.prefix is not None,
            self.w_file,
            "w_file",
            owner,
            "None unless 'prefix' names the column of W it holds",
        )
        check_that(
            "{value}" in self.prefix_format,
            self.prefix_format,
            "prefix_format",
            owner,
            "a format holding '{value}' (and optionally '{name}')",
        )

    def key(self) -> str:
        """A key of everything that decides the build (files count by path, size and time)."""
        stamps = []
        for path in (resolve_corpus(self.source), self.w_file, self.words):
            p = Path(str(path)) if path else None
            stamps.append([str(p), p.stat().st_size, p.stat().st_mtime_ns] if p is not None and p.is_file() else None)
        return content_key(dataclasses.asdict(self), stamps)


@dataclasses.dataclass(frozen=True, eq=False)
class GenderData:
    """Masked-gender examples and their split.

    Attributes:
        input_ids: per example, the token ids (special tokens, prefix, masked sentence).
        labels: per example, :data:`~textcause.gender.masking.FEMALE` / ``MALE`` at the masks, -100 elsewhere.
        authors: the author of each example.
        sentences: the original (unmasked) sentence of each example.
        prefixes: the prefix of each example (empty without one).
        split: example indices of the train / validation / test authors.
        pad_token_id: the tokenizer's padding id.
        info: counts (documents, sentences, candidates, examples, masks, female share, split sizes) and seconds.
    """

    input_ids: tuple[np.ndarray, ...]
    labels: tuple[np.ndarray, ...]
    authors: np.ndarray
    sentences: tuple[str, ...]
    prefixes: tuple[str, ...]
    split: Split
    pad_token_id: int
    info: dict[str, Any]

    def __len__(self) -> int:
        return len(self.input_ids)


def load_tokenizer(encoder: Optional[str]) -> Any:
    """The fast tokenizer of an encoder (None: the packaged all-MiniLM-L6-v2), from local files."""
    from transformers import AutoTokenizer

    from textcause.features.encoder_spec import resolve_encoder

    return AutoTokenizer.from_pretrained(str(resolve_encoder(encoder).path), use_fast=True)


def value_text(value: Any) -> str:
    """A metadata value as written in a prefix (``23.0`` -> ``23``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def read_w_csv(path: Path, dtype: Any, **kwargs: Any) -> Any:
    """``pandas.read_csv`` of a W file (every column as text unless ``dtype`` says), one sentence when it cannot.

    Raises:
        ValueError: bytes that are not UTF-8, a malformed CSV, an empty file, rows longer than
            the header or a column named twice.
    """
    import pandas as pd

    try:
        frame = pd.read_csv(path, dtype=dtype or str, encoding="utf-8", **kwargs)
        header = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False, encoding="utf-8")
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise ValueError(f"The W file {str(path)!r} is not a readable UTF-8 CSV file ({type(err).__name__}).") from None
    names = header.iloc[0].tolist()
    if not isinstance(frame.index, pd.RangeIndex):  # pandas made the extra leading fields an index
        raise ValueError(
            f"The W file {str(path)!r} has rows with more fields than its header's {len(names)} columns: "
            "give every row one value per column."
        )
    twice = sorted({c for c in names if names.count(c) > 1})
    if twice:
        raise ValueError(f"The W file {str(path)!r} names the column {twice[0]!r} {names.count(twice[0])} times.")
    return frame


def check_one_row_per_author(frame: Any, path: Path) -> None:
    """Refuse a W file that gives an author two rows (which value would be W is not said)."""
    authors = frame["author"].astype(str)
    repeated = authors[authors.duplicated()]
    if len(repeated):
        first = repeated.iloc[0]
        rows = [int(i) + 1 for i in authors.index[authors == first][:2]]  # 1 = the first row after the header
        raise ValueError(
            f"The W file {str(path)!r} gives the author {first[:40]!r} two rows (rows {rows[0]} and {rows[1]} after the header): "
            "give each author one row."
        )


def _w_values(settings: GenderDataSettings) -> dict[str, Any]:
    path = Path(str(settings.w_file))
    if not path.is_file():
        raise ValueError(f"The W file {str(path)!r} does not exist.")
    frame = read_w_csv(path, {"author": str}, keep_default_na=False, na_values=[""])
    if "author" not in frame.columns or settings.prefix not in frame.columns:
        raise ValueError(f"The W file {str(path)!r} needs the columns 'author' and {settings.prefix!r}.")
    check_one_row_per_author(frame, path)
    return dict(zip(frame["author"], frame[settings.prefix]))


def _prefixes(docs: list[Document], settings: GenderDataSettings) -> list[Optional[str]]:
    """The prefix of each document ('' without a prefix; None where the document has no value of W)."""
    if settings.prefix is None:
        return [""] * len(docs)
    values = _w_values(settings) if settings.w_file else None
    out: list[Optional[str]] = []
    for d in docs:
        value = values.get(d.author) if values is not None else d.meta.get(settings.prefix)
        missing = value is None or (isinstance(value, float) and math.isnan(value)) or not str(value).strip()
        out.append(None if missing else settings.prefix_format.format(name=settings.prefix, value=value_text(value)))
    return out


def _candidates(docs: list[Document], prefixes: list[Optional[str]], pattern: Any) -> tuple[list[tuple[int, str]], int]:
    """``(document, sentence)`` of every sentence that may hold a gendered word, and the sentence count
    (of the documents with a prefix). The screen of the whole corpus is cached on disk
    (:func:`textcause.gender.candidates.all_candidates`)."""
    index, sentences, counts = all_candidates(docs, pattern)
    out = [(i, s) for i, s in zip(index, sentences) if prefixes[i] is not None]
    return out, sum(c for c, p in zip(counts, prefixes) if p is not None)


def split_by_author(codes: np.ndarray, n_authors: int, seed: int, fractions: tuple[float, float, float]) -> Split:
    """The examples split by author: ``codes`` is each example's author (0 .. ``n_authors`` - 1),
    the authors are split by :func:`~textcause.corpus.splits.split_users` with ``seed`` and ``fractions``."""
    by_author = split_users(n_authors, seed=seed, fractions=fractions)
    return Split(*(np.flatnonzero(np.isin(codes, by_author[s])) for s in ("train", "val", "test")))


def example_counts(
    input_ids: list[np.ndarray], labels: list[np.ndarray], n_authors: int, split: Split
) -> dict[str, Any]:
    """What a build's ``info`` says of its examples: how many, their masks, the female share of the
    masks, the authors, the split sizes and the mean tokens of an example."""
    masks = np.concatenate([lab[lab != IGNORE] for lab in labels])
    return {
        "n_examples": len(input_ids),
        "n_masks": int(masks.size),
        "female_share": float(np.mean(masks == FEMALE)),
        "n_authors": n_authors,
        "split_sizes": list(split.sizes()),
        "mean_tokens": float(np.mean([len(ids) for ids in input_ids])),
    }


def build_gender_data(settings: GenderDataSettings) -> GenderData:
    """The examples of ``settings`` (memoised per process; see the module docstring).

    Raises:
        ValueError: no document has the prefix's field, no sentence holds a gendered word, or
            the examples' authors are too few to split.
    """
    key = settings.key()
    if key in _BUILT:
        _BUILT.move_to_end(key)
        return _BUILT[key]
    started = time.perf_counter()
    tokenizer = load_tokenizer(settings.encoder)
    labels = word_labels(load_gendered_words(settings.words))
    docs = read_documents(settings.source, text_col=settings.text_col, author_col=settings.author_col)
    prefixes = _prefixes(docs, settings)
    n_without = sum(p is None for p in prefixes)
    if n_without == len(docs):
        raise ValueError(f"No document of {settings.source!r} has a value of {settings.prefix!r} for the prefix.")
    pool, n_seen = _candidates(docs, prefixes, candidate_pattern(labels))
    order = np.random.default_rng(settings.seed).permutation(len(pool))
    want = len(pool) if settings.n_sentences is None else settings.n_sentences
    picked: list[tuple[int, str, np.ndarray, np.ndarray]] = []
    for start in range(0, len(order), CHUNK):
        chunk = [pool[j] for j in order[start : start + CHUNK]]
        masked = mask_sentences([s for _, s in chunk], tokenizer, labels, settings.max_tokens)
        hits = [(c, m) for c, m in zip(chunk, masked) if m is not None]
        encoded = encode_masked([m for _, m in hits], [prefixes[c[0]] for c, _ in hits], tokenizer, settings.max_tokens)
        for (c, _), e in zip(hits, encoded):
            if e is not None and len(picked) < want:
                picked.append((c[0], c[1], e[0], e[1]))
        if len(picked) >= want:
            break
    if not picked:
        raise ValueError(f"No sentence of {settings.source!r} holds a gendered word of the list: nothing to learn.")
    authors = np.array([docs[i].author for i, *_ in picked], dtype=object)
    unique, codes = np.unique(authors.astype(str), return_inverse=True)
    if len(unique) < 3:
        raise ValueError(
            f"The {len(picked)} masked sentences come from {len(unique)} authors: a split by author needs at least 3."
        )
    split = split_by_author(codes, len(unique), settings.seed, settings.fractions)
    built = GenderData(
        input_ids=tuple(p[2] for p in picked),
        labels=tuple(p[3] for p in picked),
        authors=authors,
        sentences=tuple(p[1] for p in picked),
        prefixes=tuple(str(prefixes[p[0]]) for p in picked),
        split=split,
        pad_token_id=int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0),
        info={
            "n_documents": len(docs),
            "n_documents_without_prefix": n_without,
            "n_sentences_seen": n_seen,
            "n_candidates": len(pool),
            **example_counts([p[2] for p in picked], [p[3] for p in picked], len(unique), split),
            "seconds": time.perf_counter() - started,
        },
    )
    if len(picked) < want and settings.n_sentences is not None:
        log.warning("Only %d masked sentences were found, fewer than n_sentences=%d.", len(picked), want)
    _BUILT[key] = built
    while len(_BUILT) > _MEMO_SIZE:
        _BUILT.popitem(last=False)
    return built


_BUILT: OrderedDict[str, GenderData] = OrderedDict()


def clear_gender_data() -> None:
    """Forget the examples built in this process."""
    _BUILT.clear()

"""Real user histories in, nothing random but a seeded user sample: readers, types and splits.

``load_histories`` reads history JSONL(.gz), flat comment tables (CSV / Parquet / NDJSON) and
Hugging Face datasets into a :class:`Corpus`; ``read_corpus`` is the same, memoised per process
(every task of a grid reads its corpus once); ``filter_meta`` keeps the users whose metadata match;
``split_users`` makes seeded train/val/test splits.
"""

from textcause.corpus.filters import filter_meta, sample_indices
from textcause.corpus.memo import read_corpus
from textcause.corpus.readers import FORMATS, corpus_summary, load_histories
from textcause.corpus.splits import PAPER_FRACTIONS, split_users
from textcause.corpus.types import DELETED_AUTHORS, Corpus, History, Split

__all__ = [
    "DELETED_AUTHORS",
    "FORMATS",
    "PAPER_FRACTIONS",
    "Corpus",
    "History",
    "Split",
    "corpus_summary",
    "filter_meta",
    "load_histories",
    "read_corpus",
    "sample_indices",
    "split_users",
]

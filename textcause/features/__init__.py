"""Text representations of user histories: the paper's n-gram and LDA features.

``build_representation(kind, texts, train_idx)`` fits one of :data:`KINDS` (``unigram_binary``,
``bigram_binary``, ``bigram_counts``, ``lda``) on the training users and returns every user's
row, cached on disk; :class:`NgramFeaturizer` is the fit/transform object behind it;
:func:`tokenize` is the data-free Treebank-like tokenizer. ``to_torch_sparse`` and
``collate_sparse_rows`` (in :mod:`textcause.features.torch_sparse`, imported on first use so that
this package does not import torch) turn sparse rows into torch batches.
"""

from typing import Any

from textcause.features.ngrams import KINDS, NgramFeaturizer, Representation, build_representation, texts_digest
from textcause.features.tokenize import TOKENIZER_VERSION, tokenize

_TORCH_NAMES = ("to_torch_sparse", "collate_sparse_rows")

__all__ = [
    "KINDS",
    "TOKENIZER_VERSION",
    "NgramFeaturizer",
    "Representation",
    "build_representation",
    "collate_sparse_rows",
    "texts_digest",
    "to_torch_sparse",
    "tokenize",
]


def __getattr__(name: str) -> Any:
    if name in _TORCH_NAMES:
        from textcause.features import torch_sparse

        return getattr(torch_sparse, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

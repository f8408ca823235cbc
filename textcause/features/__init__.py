"""Text representations of user histories: the paper's n-gram and LDA features.

``build_representation(kind, texts, train_idx)`` fits one of :data:`KINDS` (``unigram_binary``,
``bigram_binary``, ``bigram_counts``, ``lda``) on the training users and returns every user's
row, cached on disk; :class:`NgramFeaturizer` is the fit/transform object behind it;
:func:`tokenize` is the data-free Treebank-like tokenizer. ``to_torch_sparse`` and
``collate_sparse_rows`` (in :mod:`textcause.features.torch_sparse`, imported on first use so that
this package does not import torch) turn sparse rows into torch batches. ``PostEmbeddingCache``
keeps frozen-encoder post embeddings on disk, computed once per corpus (also imported on first use).
"""

from typing import Any

from textcause.features.ngrams import KINDS, NgramFeaturizer
from textcause.features.representation import Representation, build_representation, texts_digest
from textcause.features.tokenize import TOKENIZER_VERSION, tokenize

_TORCH_NAMES = ("to_torch_sparse", "collate_sparse_rows")
# The frozen-encoder post-embedding cache imports torch/transformers: loaded on first use too.
_EMBEDDING_NAMES = {
    "PostEmbeddingCache": "embeddings", "HistoryEmbeddings": "embeddings",
    "Encoder": "encoder", "EncoderSpec": "encoder", "EncodedPosts": "encoder", "resolve_encoder": "encoder",
}

__all__ = [
    "KINDS",
    "Encoder",
    "EncodedPosts",
    "EncoderSpec",
    "HistoryEmbeddings",
    "PostEmbeddingCache",
    "resolve_encoder",
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
    if name in _EMBEDDING_NAMES:
        import importlib

        return getattr(importlib.import_module(f"textcause.features.{_EMBEDDING_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

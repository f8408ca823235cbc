"""Text representations of user histories: the paper's n-gram and LDA features, frozen-encoder embeddings.

``build_representation(kind, texts, train_idx)`` fits one of the n-gram kinds (``unigram_binary``,
``bigram_binary``, ``bigram_counts``, ``lda``) on the training users and returns every user's
row, cached on disk; :class:`NgramFeaturizer` is the fit/transform object behind it;
:func:`tokenize` is the data-free Treebank-like tokenizer. ``to_torch_sparse`` and
``collate_sparse_rows`` (in :mod:`textcause.features.torch_sparse`) turn sparse rows into torch
batches. ``PostEmbeddingCache`` keeps frozen-encoder post embeddings on disk, computed once per
corpus. :mod:`textcause.features.kinds` names every representation (the registry).

Every name is loaded on first use, so importing this package (or :mod:`textcause.features.kinds`)
imports neither scikit-learn, pandas nor torch.
"""

import importlib
from typing import Any

# Eager: the function shares its submodule's name, so it must be bound before anything imports the
# submodule (which would otherwise shadow it). numpy only.
from textcause.features.tokenize import TOKENIZER_VERSION as TOKENIZER_VERSION
from textcause.features.tokenize import tokenize as tokenize

#: Public name -> the submodule defining it.
_NAMES = {
    "KINDS": "ngrams",
    "NgramFeaturizer": "ngrams",
    "Representation": "representation",
    "build_representation": "representation",
    "texts_digest": "representation",
    "to_torch_sparse": "torch_sparse",
    "collate_sparse_rows": "torch_sparse",
    "PostEmbeddingCache": "embeddings",
    "HistoryEmbeddings": "embeddings",
    "Encoder": "encoder",
    "EncoderSpec": "encoder_spec",
    "EncodedPosts": "encoder",
    "resolve_encoder": "encoder_spec",
}

__all__ = sorted([*_NAMES, "TOKENIZER_VERSION", "tokenize"])


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        return getattr(importlib.import_module(f"textcause.features.{_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

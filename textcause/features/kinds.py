"""The representation registry: every name a data module, a method or a config may ask for.

=====================  ==================================================================
``none``               no text (the oracle and the unadjusted baseline read none)
``unigram_binary``,    the paper's n-gram features (:func:`textcause.features.build_representation`)
``bigram_binary``,
``bigram_counts``,
``lda``
``post_embeddings``    each post's pooled frozen-encoder vector (hierarchical models)
``post_tokens``        post vectors and each post's token states (SHERBERT's token attention)
=====================  ==================================================================

Importing this module is cheap (no numpy, scikit-learn or torch).
"""

from __future__ import annotations

__all__ = [
    "EMBEDDING_KINDS",
    "NGRAM_KINDS",
    "REPRESENTATIONS",
]

#: The paper's n-gram and topic representations (fitted by :class:`textcause.features.NgramFeaturizer`).
NGRAM_KINDS = ("unigram_binary", "bigram_binary", "bigram_counts", "lda")
#: Frozen-encoder representations served as post-embedding tables.
EMBEDDING_KINDS = ("post_embeddings", "post_tokens")
#: Every representation, in this order.
REPRESENTATIONS = ("none", *NGRAM_KINDS, *EMBEDDING_KINDS)

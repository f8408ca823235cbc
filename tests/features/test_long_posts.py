"""Long posts through the encoder: only what its window can use reaches the tokenizer.

A post is encoded from its first ``max_tokens`` tokens; tokenising all of a 50 MB post to keep 64
tokens took 82 s and 7.1 GB. The ids (so the vectors) of every post are the same as when the whole
post is tokenised.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from peak_memory import peak_growth
from transformers import AutoTokenizer

from textcause.features.embeddings import PostEmbeddingCache
from textcause.features.encoder import Encoder
from textcause.features.encoder_inputs import CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN, cut_post

WORDS = "coffee morning train rain music game city park dog cat unbelievably, #weekend! ".split(" ")
POSTS = [
    "I love the weather today",
    "a much longer post about the weather, the trains and what we ate for dinner yesterday evening",
    "ok",
    "",
    "Anyone else watching the game tonight? #sports",
    "\ud83d half an emoji",
]


def long_post(n_words: int, seed: int = 0, sep: str = " ") -> str:
    rng = np.random.default_rng(seed)
    return sep.join(rng.choice(WORDS, size=n_words))


def whole_post_ids(path: str, posts: list[str], max_tokens: int) -> list[list[int]]:
    """What the tokenizer gives for the whole posts (the encoder before posts were cut)."""
    tok = AutoTokenizer.from_pretrained(path)
    posts = [p.replace("\ud83d", "\ufffd") for p in posts]
    return tok(posts, truncation=True, max_length=max_tokens, return_attention_mask=False)["input_ids"]


@pytest.mark.parametrize(
    ("text", "chars", "expected"),
    [
        ("the weather today", 12, "the weather"),  # "today" would be cut in two: dropped
        ("the weather today", 11, "the weather"),  # the cut falls on a space
        ("the weather  \n today", 13, "the weather"),  # spaces before the cut word go too
        ("ok", 12, "ok"),
        ("unbelievable", 5, "unbel"),  # no space: cut inside the word
        ("   unbelievable", 6, "   unb"),  # nothing but spaces before the cut word
    ],
)
def test_cut_post(text, chars, expected):
    assert cut_post(text, chars) == expected


@pytest.mark.parametrize("max_tokens", [8, 64])
def test_ids_are_those_of_the_whole_post(tiny_encoder, max_tokens):
    chars = max_tokens * CHARS_PER_TOKEN
    posts = [
        *POSTS,
        long_post(5_000),  # cut at the first try
        long_post(5_000, seed=1, sep="\n"),
        " " * (chars + 10) + long_post(200),  # the first cut holds nothing but spaces: cut longer
        " " * (5 * chars) + long_post(200),  # ... twice
        "x" * (chars + 5) + " " + long_post(200),  # one long word (one unknown token) past the first cut
        long_post(chars // 8)[: chars + 1],  # one character over the cut
    ]
    enc = Encoder(tiny_encoder, max_tokens=max_tokens, precision="fp32")
    got = enc.tokenize(posts)
    assert got == whole_post_ids(tiny_encoder, posts, max_tokens)
    assert all(len(ids) == max_tokens for ids in got[len(POSTS) :])


def test_beyond_the_last_cut_nothing_is_read(tiny_encoder):
    enc = Encoder(tiny_encoder, max_tokens=8, precision="fp32")
    post = " " * (8 * MAX_CHARS_PER_TOKEN) + "coffee"
    assert enc.tokenize([post]) == [[enc.tokenizer.cls_token_id, enc.tokenizer.sep_token_id]]


def test_the_tokenizer_sees_at_most_the_cut(tiny_encoder, monkeypatch):
    enc = Encoder(tiny_encoder, max_tokens=16, precision="fp32")
    seen: list[int] = []
    real = enc._tokenize
    monkeypatch.setattr(enc, "_tokenize", lambda posts: seen.extend(map(len, posts)) or real(posts))
    enc.tokenize(["short post", long_post(100_000)])
    assert max(seen) <= 16 * CHARS_PER_TOKEN and seen[0] == len("short post")


def test_vectors_of_posts_are_unchanged_by_the_cut(tiny_encoder):
    posts = [*POSTS, long_post(3_000), long_post(3_000, seed=2)]
    enc = Encoder(tiny_encoder, max_tokens=32, precision="fp32", processes=1)
    reference = enc.encode_ids(whole_post_ids(tiny_encoder, posts, 32)).vectors
    np.testing.assert_array_equal(enc.encode(posts).vectors, reference)


def test_a_50_mb_post_costs_what_a_short_one_does(tiny_encoder, tmp_path):
    """One 50 MB post in a history, through the embedding path: the issue measured 82 s and 7.1 GB."""
    cache = PostEmbeddingCache(tiny_encoder, precision="fp32", progress=False, cache_dir=tmp_path)
    cache.embed_histories([["warm up"]])  # the weights loaded
    post = "coffee morning train rain music game city park dog cat " * 910_000
    assert len(post) > 50e6
    start = time.perf_counter()
    table, grown = peak_growth(lambda: cache.embed_histories([["hello there", post, "ok"]]))
    seconds = time.perf_counter() - start
    assert table.vectors.shape == (3, 32) and np.isfinite(table.vectors).all()
    # The post and its UTF-8 bytes (hashed for its cache key) are 100 MB.
    assert grown < 300e6, f"{grown / 1e6:.0f} MB"
    assert seconds < 10, f"{seconds:.1f} s"
    assert cache.last_stats["n_encoded"] == 3

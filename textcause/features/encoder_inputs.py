"""A frozen encoder's inputs: posts cut to what its window can use, and length-sorted padded batches.

:func:`cut_post` keeps the start of a long post that a tokenizer window can use, so tokenising a
post costs the same whatever its length; :func:`without_lone_surrogates` makes a post the fast
tokenizer accepts. :func:`length_batches` groups posts sorted by length under a post and a token
budget, and :func:`pad_batch` pads one group to its longest post.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = [
    "CHARS_PER_TOKEN",
    "MAX_CHARS_PER_TOKEN",
    "cut_post",
    "length_batches",
    "pad_batch",
    "torch_threads",
    "window_texts",
    "without_lone_surrogates",
]

#: A post is cut to its first ``max_tokens * CHARS_PER_TOKEN`` characters (at a space) before it is
#: tokenised: a token of English text covers about 4-5 characters, so the cut keeps several times
#: what the window can hold, and a 50 MB post costs what a 2,000-character one does.
CHARS_PER_TOKEN = 32
#: A cut post whose characters give fewer tokens than the window (long runs of spaces, characters the
#: tokenizer drops, words it maps to one unknown token) is cut again four times longer, up to
#: ``max_tokens * MAX_CHARS_PER_TOKEN`` characters; what lies beyond is never read.
MAX_CHARS_PER_TOKEN = 2048
_SPACES = " \t\n\r"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> str:
    """``text`` with every lone surrogate code point replaced by U+FFFD (a no-op on well-formed text).

    A lone surrogate (half an emoji in a tweet dump, which the corpus readers keep) makes the fast
    tokenizer refuse the whole string.

    >>> without_lone_surrogates("\\ud83d ok") == "\\ufffd ok"
    True
    """
    return _LONE_SURROGATE.sub("\ufffd", text) if _LONE_SURROGATE.search(text) else text


def cut_post(text: str, chars: int) -> str:
    """The start of ``text`` that a tokenizer window can use: ``text`` itself when it has at most
    ``chars`` characters, else its first ``chars`` characters less the word cut in two and the spaces
    before it (a tokenizer that splits words at spaces gives this start the same first tokens as the
    whole text). A text whose first ``chars`` characters hold no space is cut at ``chars``.

    >>> cut_post("the weather today", 12)
    'the weather'
    >>> cut_post("ok", 12)
    'ok'
    """
    if len(text) <= chars:
        return text
    head = text[: chars + 1]  # the character after the cut tells whether a word was cut in two
    at = max(head.rfind(c) for c in _SPACES)
    start = head[:at].rstrip(_SPACES) if at > 0 else ""
    return start or text[:chars]


def window_texts(
    tokenizer: Any, texts: Sequence[str], max_tokens: int, *, add_special_tokens: bool = True
) -> list[str]:
    """The start of each text that a window of ``max_tokens`` tokens can use (the text itself when short).

    Args:
        tokenizer: a Hugging Face tokenizer.
        texts: the texts.
        max_tokens: the window, in tokens (special tokens included when ``add_special_tokens``).
        add_special_tokens: whether the window's tokens include the special tokens.

    Returns:
        Each text, or its start: tokenised and truncated to ``max_tokens``, it gives the tokens of the
        whole text truncated the same way.
    """
    chars = max_tokens * CHARS_PER_TOKEN
    out = [cut_post(t, chars) for t in texts]
    todo = [i for i, t in enumerate(texts) if len(t) > chars]  # the texts that were cut
    while todo and chars < max_tokens * MAX_CHARS_PER_TOKEN:
        ids = tokenizer(
            [out[i] for i in todo],
            truncation=True,
            max_length=max_tokens,
            add_special_tokens=add_special_tokens,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,
        )["input_ids"]
        todo = [i for i, row in zip(todo, ids) if len(row) < max_tokens]  # the window is not full: cut longer
        chars = min(4 * chars, max_tokens * MAX_CHARS_PER_TOKEN)
        for i in todo:
            out[i] = cut_post(texts[i], chars)
        todo = [i for i in todo if len(texts[i]) > chars]
    return out


def length_batches(
    order: np.ndarray, lengths: np.ndarray, max_posts: int, max_tokens: int | None
) -> Iterator[np.ndarray]:
    """Consecutive slices of ``order`` (posts sorted by length, shortest first) holding at most
    ``max_posts`` posts and, padded to their longest, at most ``max_tokens`` tokens (at least one post).

    Args:
        order: post indices sorted by length, shortest first.
        lengths: each post's token count (indexed by post).
        max_posts: the most posts in a batch.
        max_tokens: the most padded tokens in a batch (None: no token budget).

    Examples:
        >>> [b.tolist() for b in length_batches(np.arange(4), np.array([2, 3, 5, 9]), 3, 16)]
        [[0, 1, 2], [3]]
    """
    n, start = len(order), 0
    while start < n:
        end = min(start + max_posts, n)
        if max_tokens is not None:
            # the longest post of order[start:end] is the last: shrink until count x length fits
            fits = (np.arange(1, end - start + 1) * lengths[order[start:end]]) <= max_tokens
            end = start + max(1, int(np.argmin(fits)) if not fits.all() else len(fits))
        yield order[start:end]
        start = end


def pad_batch(ids: Sequence[Sequence[int]], lengths: np.ndarray, idx: np.ndarray, pad_id: int) -> tuple[Any, Any]:
    """Input ids and attention mask (int64 torch tensors) of the posts ``idx``, padded to the longest of them.

    Args:
        ids: every post's token ids.
        lengths: every post's token count.
        idx: the posts of the batch.
        pad_id: the tokenizer's padding id.
    """
    import torch

    width = int(lengths[idx].max())
    input_ids = np.full((len(idx), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(idx), width), dtype=np.int64)
    for row, i in enumerate(idx):
        input_ids[row, : lengths[i]] = ids[i]
        mask[row, : lengths[i]] = 1
    return torch.from_numpy(input_ids), torch.from_numpy(mask)


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` torch threads, restoring the number before it after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)

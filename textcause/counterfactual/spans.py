"""Character spans <-> token spans through a fast tokenizer's offsets, and valid-span decoding.

Character spans here are the release's: ``(start, end)`` with the END INCLUSIVE, ``(-1, -1)`` for
none. A fast tokenizer's ``offset_mapping`` gives each token ``(first, last + 1)`` (end exclusive)
in the sentence; special and padding tokens are outside the sentence (``context`` False).

* :func:`char_to_tokens`: the tokens covering a character span (the first token that ends after
  its start, the last that begins at or before its end);
* :func:`tokens_to_chars`: back to characters, ``(offsets[s][0], offsets[e][1] - 1)``, so a span
  whose ends fall on token boundaries makes the round trip exactly;
* :func:`best_span`: the highest ``start_logit[s] + end_logit[e]`` over VALID pairs only: both
  tokens inside the sentence, ``e >= s`` and at most ``max_tokens`` tokens;
* :func:`decode`: a sentence's four offsets from the four heads of
  :class:`~textcause.models.components.text_heads.SpanExtractor`: the best antecedent, and the
  best consequent unless the null answer (position 0) wins by the margin chosen on validation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: The target (and the position) of "no consequent": the first token, [CLS], as in SQuAD 2.0.
NULL = 0


def char_to_tokens(offsets: np.ndarray, context: np.ndarray, start: int, end: int) -> tuple[int, int] | None:
    """The token span ``(first, last)`` covering the END-INCLUSIVE character span ``[start, end]``.

    Args:
        offsets: (L, 2) token character offsets, end exclusive (a fast tokenizer's offset mapping).
        context: (L,) True for the sentence's tokens (not special, not padding).
        start: the span's first character.
        end: its last character (inclusive).

    Returns:
        The first and last token (inclusive), or None when the span lies outside the tokens kept
        (cut off by truncation) or is missing (``-1``).
    """
    if start < 0 or end < start:
        return None
    offsets, context = np.asarray(offsets), np.asarray(context, dtype=bool)
    first = np.flatnonzero(context & (offsets[:, 1] > start))
    last = np.flatnonzero(context & (offsets[:, 0] <= end))
    if first.size == 0 or last.size == 0 or last[-1] < first[0]:
        return None
    if end >= offsets[context][-1, 1]:  # the span runs past the last token kept (truncated)
        return None
    return int(first[0]), int(last[-1])


def tokens_to_chars(offsets: np.ndarray, first: int, last: int) -> tuple[int, int]:
    """The END-INCLUSIVE character span of tokens ``first..last`` (inclusive)."""
    return int(offsets[first][0]), int(offsets[last][1]) - 1


def best_span(
    start_logits: np.ndarray, end_logits: np.ndarray, context: np.ndarray, max_tokens: int
) -> tuple[int, int, float]:
    """The valid token span with the highest ``start_logits[s] + end_logits[e]``.

    Valid: ``context[s]`` and ``context[e]``, ``s <= e < s + max_tokens``.

    Returns:
        ``(s, e, score)``.

    Raises:
        ValueError: no token of the sentence is in ``context`` or ``max_tokens`` < 1.
    """
    context = np.asarray(context, dtype=bool)
    if max_tokens < 1:
        raise ValueError(f"The 'max_tokens' parameter of best_span must be an int >= 1. Got {max_tokens} instead.")
    if not context.any():
        raise ValueError("best_span needs at least one sentence token (context is all False).")
    length = context.size
    s = np.asarray(start_logits, dtype=np.float64)[:length]
    e = np.asarray(end_logits, dtype=np.float64)[:length]
    score = s[:, None] + e[None, :]
    i, j = np.indices((length, length))
    valid = (j >= i) & (j - i < max_tokens) & context[:, None] & context[None, :]
    score = np.where(valid, score, -np.inf)
    flat = int(np.argmax(score))
    first, last = divmod(flat, length)
    return first, last, float(score[first, last])


@dataclass(frozen=True)
class Decoded:
    """The decoded spans of a set of sentences, before the "no consequent" margin is applied.

    Attributes:
        antecedent: (n, 2) END-INCLUSIVE character spans.
        consequent: (n, 2) the best real consequent span of each sentence.
        gap: (n,) the best consequent's score minus the null answer's: "no consequent" is predicted
            where ``gap < margin``.
    """

    antecedent: np.ndarray
    consequent: np.ndarray
    gap: np.ndarray

    def offsets(self, margin: float = 0.0) -> np.ndarray:
        """(n, 4) offsets in the official column order, ``-1, -1`` where the null answer wins by ``margin``."""
        cons = np.where((self.gap < margin)[:, None], -1, self.consequent)
        return np.concatenate([self.antecedent, cons], axis=1).astype(np.int64)


def decode(
    logits: Sequence[np.ndarray], offsets: Sequence[np.ndarray], contexts: Sequence[np.ndarray], max_tokens: int
) -> Decoded:
    """Decode sentences from the span heads' logits.

    Args:
        logits: per sentence a (4, L) array: antecedent start / end, consequent start / end.
        offsets: per sentence its (L, 2) token offsets (end exclusive).
        contexts: per sentence its (L,) sentence-token mask.
        max_tokens: the longest span decoded, in tokens.
    """
    n = len(logits)
    ante, cons, gap = np.empty((n, 2), np.int64), np.empty((n, 2), np.int64), np.empty(n)
    for k, (z, off, ctx) in enumerate(zip(logits, offsets, contexts)):
        z = np.asarray(z, dtype=np.float64)
        s, e, _ = best_span(z[0], z[1], ctx, max_tokens)
        ante[k] = tokens_to_chars(off, s, e)
        s, e, score = best_span(z[2], z[3], ctx, max_tokens)
        cons[k] = tokens_to_chars(off, s, e)
        gap[k] = score - (z[2, NULL] + z[3, NULL])
    return Decoded(ante, cons, gap)

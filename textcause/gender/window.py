"""Texts cut to what a model's window can use before they are tokenised, so a long one costs little.

A masked LM reads at most its window of tokens (512 for BERT). Tokenising all of a 50 MB text to
keep 512 tokens costs seconds and gigabytes; :func:`window_texts` hands the tokenizer only the start
of each text that its window can use (:func:`textcause.features.encoder_inputs.cut_post`, first at
``max_tokens * CHARS_PER_TOKEN`` characters; a cut whose tokens do not fill the window is cut four
times longer, up to ``max_tokens * MAX_CHARS_PER_TOKEN``). A text shorter than the first cut reaches
the tokenizer whole, so short texts are tokenised exactly as before; for a long one, the tokens
kept are those of the whole text (for tokenizers that split words at spaces). :func:`window_batch`
is ``tokenizer(texts, padding=True, return_tensors="pt")`` on the cut texts, truncated to the window;
:func:`one_mask_batch` is that batch for texts of one mask token each (probes), checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textcause.features.encoder_inputs import window_texts

__all__ = ["model_window", "one_mask_batch", "text_head", "window_batch", "window_texts"]

#: Model types whose position ids start after the padding id (RoBERTa's ``pad_token_id + 1``).
_OFFSET_POSITIONS = ("roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text", "xmod")
#: A tokenizer's ``model_max_length`` above this is "no limit" (transformers writes 1e30).
_NO_LIMIT = 1_000_000


def model_window(tokenizer: Any, config: Any = None) -> int:
    """The most tokens (special tokens included) the model reads: the smaller of the tokenizer's
    ``model_max_length`` and the model's positions (less RoBERTa's offset); 512 when neither says.

    >>> class Tok: model_max_length = 10**30
    >>> class Config: max_position_embeddings, model_type, pad_token_id = 64, "roberta", 1
    >>> model_window(Tok(), Config())
    62
    """
    limits = []
    tok_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_limit, int) and 0 < tok_limit <= _NO_LIMIT:
        limits.append(tok_limit)
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        if getattr(config, "model_type", "") in _OFFSET_POSITIONS:
            positions -= int(getattr(config, "pad_token_id", None) or 1) + 1
        limits.append(positions)
    return max(1, min(limits)) if limits else 512


def window_batch(tokenizer: Any, texts: Sequence[str], max_tokens: int) -> Any:
    """``tokenizer(texts, padding=True, return_tensors="pt")`` with each text cut to the window first
    (:func:`window_texts`) and truncated to ``max_tokens`` tokens; the same tensors for short texts."""
    return tokenizer(
        window_texts(tokenizer, texts, max_tokens),
        padding=True,
        truncation=True,
        max_length=max_tokens,
        return_tensors="pt",
    )


def one_mask_batch(
    tokenizer: Any, texts: Sequence[str], window: int, device: Any, noun: str = "text"
) -> tuple[Any, Any]:
    """:func:`window_batch` of texts that hold one mask token each, on ``device``, and the (B, L) bool
    tensor of where the masks are (one True per row).

    Args:
        tokenizer: the masked LM's tokenizer (its ``mask_token_id`` marks the masks).
        texts: the batch's texts.
        window: the model's window (:func:`model_window`).
        device: where the tensors go.
        noun: what the message calls a text (``probe``, ``text``).

    Raises:
        ValueError: a text with no mask token, or several, within the window (named by
            :func:`text_head`, never quoted whole).
    """
    enc = window_batch(tokenizer, texts, window).to(device)
    at = enc["input_ids"] == tokenizer.mask_token_id
    counts = at.sum(dim=1)
    if bool((counts != 1).any()):
        i = int((counts != 1).nonzero()[0])
        raise ValueError(
            f"The {noun} {text_head(texts[i])} holds {int(counts[i])} mask tokens in the model's "
            f"window of {window} tokens: exactly one is needed."
        )
    return enc, at


def text_head(text: str, chars: int = 60) -> str:
    """How a message names a text: its first ``chars`` characters and its length, never all of it.

    >>> print(text_head("a" * 100, 3))
    'aaa'... (100 characters)
    >>> text_head("short")
    "'short'"
    """
    return repr(text) if len(text) <= chars else f"{text[:chars]!r}... ({len(text)} characters)"

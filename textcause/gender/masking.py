"""Masking every gendered word of a sentence with the model's own tokenizer, and labelling it.

A gendered word is a *word of the tokenizer* (its pre-tokenizer's unit: ``"She,"`` is the words
``She`` and ``,``; ``he's`` is ``he``, ``'``, ``s``) whose normalised, lower-cased text is in the
word list (table 3, :mod:`textcause.gender.words`): ``She``, ``HIS`` and ``sister`` all count. Each
such word, however many tokens it has, is replaced by one mask token and labelled
:data:`FEMALE` (1) or :data:`MALE` (0); every other position is :data:`IGNORE` (-100), the
positions a token-classification loss skips. A metadata prefix (``"age: 23. "``) goes before the
sentence and is never masked: it is W, the value the model may learn to associate with gender.

:func:`might_be_gendered` is a cheap regex pre-filter on a folded (lower-cased, accent-stripped)
text: every sentence the tokenizer would find a gendered word in passes it, so it only saves the
tokenizer work on sentences that cannot hold one.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from textcause.features.encoder_inputs import CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN, cut_post
from textcause.gender.words import GenderedWords

FEMALE, MALE, IGNORE = 1, 0, -100


def word_labels(words: GenderedWords) -> dict[str, int]:
    """Lower-cased gendered word -> :data:`FEMALE` / :data:`MALE`.

    Raises:
        ValueError: a word listed as both female and male (its label would be arbitrary).
    """
    out: dict[str, int] = {}
    for gender, label in (("female", FEMALE), ("male", MALE)):
        for word in words.words(gender):
            key = word.lower()
            if out.get(key, label) != label:
                raise ValueError(f"The gendered word {word!r} is listed as both female and male: list it once.")
            out[key] = label
    return out


def fold(text: str) -> str:
    """Lower case without accents (``Shé`` -> ``she``), as an uncased BERT tokenizer normalises."""
    text = text.lower()
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def candidate_pattern(labels: Mapping[str, int]) -> re.Pattern[str]:
    """A regex that finds a gendered word not glued to a letter or digit, in a :func:`fold`-ed text."""
    alternatives = "|".join(sorted((re.escape(fold(w)) for w in labels), key=len, reverse=True))
    return re.compile(rf"(?<![^\W_])(?:{alternatives})(?![^\W_])")


def might_be_gendered(text: str, pattern: re.Pattern[str]) -> bool:
    """Whether ``text`` may hold a gendered word (False: it certainly holds none)."""
    return pattern.search(fold(text)) is not None


@dataclasses.dataclass(frozen=True)
class Masked:
    """A sentence with its gendered words masked.

    Attributes:
        text: the sentence with each gendered word replaced by the tokenizer's mask token.
        labels: the label of each mask, in order (:data:`FEMALE` / :data:`MALE`).
        words: the words masked, in order.
    """

    text: str
    labels: tuple[int, ...]
    words: tuple[str, ...]


def _normaliser(tokenizer: Any) -> Any:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ValueError(
            f"Masking needs a fast tokenizer (word offsets). Got {type(tokenizer).__name__} instead: "
            "load it with AutoTokenizer.from_pretrained(..., use_fast=True)."
        )
    return backend.normalizer


def mask_sentences(
    sentences: Sequence[str], tokenizer: Any, labels: Mapping[str, int], max_tokens: Optional[int] = None
) -> list[Optional[Masked]]:
    """Mask every gendered word of each sentence (None for a sentence without one).

    Args:
        sentences: the sentences.
        tokenizer: a fast Hugging Face tokenizer (its words, offsets and normaliser decide).
        labels: :func:`word_labels`.
        max_tokens: mask only the start of a long sentence that gives this many tokens once masked
            (:func:`~textcause.features.encoder_inputs.cut_post`, cut longer while the masked start
            gives fewer), so a long sentence costs what a short one does and :func:`encode_masked`
            with the same ``max_tokens`` gives the tokens of the whole sentence; None: all of it.
    """
    if max_tokens is None:
        return _mask(list(sentences), tokenizer, labels)
    chars = max_tokens * CHARS_PER_TOKEN
    out = _mask([cut_post(s, chars) for s in sentences], tokenizer, labels)
    todo = [i for i, s in enumerate(sentences) if len(s) > chars]  # the sentences that were cut
    while todo and chars < max_tokens * MAX_CHARS_PER_TOKEN:
        texts = [out[i].text if out[i] is not None else cut_post(sentences[i], chars) for i in todo]
        ids = tokenizer(texts, add_special_tokens=False, truncation=True, max_length=max_tokens, verbose=False)
        todo = [i for i, row in zip(todo, ids["input_ids"]) if len(row) < max_tokens]  # not full: cut longer
        chars = min(4 * chars, max_tokens * MAX_CHARS_PER_TOKEN)
        for i, m in zip(todo, _mask([cut_post(sentences[i], chars) for i in todo], tokenizer, labels)):
            out[i] = m
        todo = [i for i in todo if len(sentences[i]) > chars]
    return out


def _mask(sentences: list[str], tokenizer: Any, labels: Mapping[str, int]) -> list[Optional[Masked]]:
    normaliser = _normaliser(tokenizer)
    if not sentences:
        return []
    enc = tokenizer(sentences, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    out: list[Optional[Masked]] = []
    for i, text in enumerate(sentences):
        spans: dict[int, list[int]] = {}
        for (start, end), word in zip(enc["offset_mapping"][i], enc.word_ids(i)):
            if word is None:
                continue
            if word in spans:
                spans[word][1] = end
            else:
                spans[word] = [start, end]
        found = []
        for start, end in spans.values():
            piece = text[start:end]
            key = (normaliser.normalize_str(piece) if normaliser is not None else piece).lower().strip()
            if key in labels:
                found.append((start, end, labels[key], piece))
        if not found:
            out.append(None)
            continue
        parts, last = [], 0
        for start, end, _, _ in found:
            parts += [text[last:start], tokenizer.mask_token]
            last = end
        parts.append(text[last:])
        out.append(Masked("".join(parts), tuple(f[2] for f in found), tuple(f[3] for f in found)))
    return out


def special_tokens(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The special token ids the tokenizer puts before and after one sequence (``[CLS]``, ``[SEP]``)."""
    ids = list(tokenizer(tokenizer.mask_token, add_special_tokens=True)["input_ids"])
    at = ids.index(tokenizer.mask_token_id)
    return ids[:at], ids[at + 1 :]


def encode_masked(
    masked: Sequence[Masked], prefixes: Sequence[str], tokenizer: Any, max_tokens: int
) -> list[Optional[tuple[np.ndarray, np.ndarray]]]:
    """Token ids and labels of each masked sentence with its prefix (None when no mask survives).

    The sentence is cut to its first ``max_tokens`` tokens; the prefix and the tokenizer's special
    tokens come on top, so a sentence gives the same tokens with and without a prefix. A sentence
    that holds the mask token's text itself (more masks than gendered words) gives None. The masked
    texts are tokenised whole: mask long sentences with :func:`mask_sentences`' ``max_tokens``.

    Raises:
        ValueError: a prefix that holds the mask token.
    """
    mask_id = tokenizer.mask_token_id
    head, tail = special_tokens(tokenizer)
    ids = tokenizer([m.text for m in masked], add_special_tokens=False, verbose=False)["input_ids"]
    prefix_ids: dict[str, list[int]] = {}
    out: list[Optional[tuple[np.ndarray, np.ndarray]]] = []
    for m, sentence, prefix in zip(masked, ids, prefixes):
        if prefix not in prefix_ids:
            pid = tokenizer(prefix, add_special_tokens=False)["input_ids"] if prefix else []
            if mask_id in pid:
                raise ValueError(f"The prefix {prefix!r} holds the mask token {tokenizer.mask_token!r}.")
            prefix_ids[prefix] = pid
        if sentence.count(mask_id) != len(m.labels):
            out.append(None)
            continue
        sentence = sentence[:max_tokens]
        kept = sentence.count(mask_id)
        if not kept:
            out.append(None)
            continue
        full = np.asarray(head + prefix_ids[prefix] + sentence + tail, dtype=np.int32)
        label = np.full(full.shape, IGNORE, dtype=np.int16)
        label[full == mask_id] = m.labels[:kept]
        out.append((full, label))
    return out

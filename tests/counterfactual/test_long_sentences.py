"""Long sentences through the SemEval tokenisation: only what ``max_length`` tokens can use is tokenised.

Before, :func:`tokenise` tokenised whole sentences and then truncated: a 50 MB sentence took tens of
seconds and gigabytes. Now it is cut first (``cut_post``); the ids, the character offsets (into the
whole sentence: the cut is a prefix), the sentence masks and so the span labels are those of the
whole sentence truncated, and exactly those of before for sentences of ordinary length.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from peak_memory import peak_growth

from textcause.counterfactual.datamodule import load_tokenizer, span_labels, tokenise, window_sentences
from textcause.features.encoder_inputs import CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN

WORDS = "if it had rained , the crops would have grown ; unbelievably wet weekend ! costs".split()


@pytest.fixture(scope="module")
def tok(tiny_encoder):
    return load_tokenizer(tiny_encoder)


def words(n: int, seed: int = 0, sep: str = " ") -> str:
    return sep.join(np.random.default_rng(seed).choice(WORDS, size=n))


def whole(tok, sentences: list[str], max_length: int) -> tuple[list, list, list]:
    """What tokenise gave before: the whole sentences tokenised, then truncated."""
    enc = tok(sentences, truncation=True, max_length=max_length, return_offsets_mapping=True)
    return (
        [np.asarray(r, dtype=np.int32) for r in enc["input_ids"]],
        [np.asarray(r, dtype=np.int64).reshape(-1, 2) for r in enc["offset_mapping"]],
        [np.array([s == 0 for s in enc.sequence_ids(i)], dtype=bool) for i in range(len(sentences))],
    )


def assert_same(a: tuple[list, list, list], b: tuple[list, list, list]) -> None:
    for got, want in zip(a, b):
        assert len(got) == len(want)
        for x, y in zip(got, want):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("max_length", [8, 32, 128])
def test_tokens_offsets_and_masks_are_those_of_the_whole_sentence(tok, max_length):
    chars = max_length * CHARS_PER_TOKEN
    sentences = [
        "If it had rained, the crops would have grown.",
        "I wish the rate had been cut sooner.",
        "x",
        words(5_000),  # cut at the first try
        words(5_000, seed=1, sep="\n"),
        " " * (chars + 10) + words(300),  # the first cut holds nothing but spaces: cut longer
        " " * (5 * chars) + words(300),  # ... twice
        "z" * (chars + 5) + " " + words(300),  # one long word past the first cut
        words(chars // 4)[: chars + 1],  # one character over the cut
    ]
    assert_same(tokenise(tok, sentences, max_length), whole(tok, sentences, max_length))


def test_short_sentences_reach_the_tokenizer_whole(tok):
    sentences = ["If it had rained, the crops would have grown.", "ok", words(100)]
    assert window_sentences(tok, sentences, 128) == sentences


def test_beyond_the_last_cut_nothing_is_read(tok):
    sentence = " " * (8 * MAX_CHARS_PER_TOKEN) + "rained"
    (ids,), _, (context,) = tokenise(tok, [sentence], 8)
    assert ids.tolist() == [tok.cls_token_id, tok.sep_token_id] and not context.any()


def test_span_labels_of_a_long_sentence_are_those_of_the_whole(tok):
    tail = words(20_000)
    sentence = "If it had rained, the crops would have grown " + tail
    frame = pd.DataFrame(
        {
            "antecedent_startid": [0, 0],
            "antecedent_endid": [15, 15],
            "consequent_startid": [18, len(sentence) - 6],  # the second lies far past the window: IGNORE
            "consequent_endid": [43, len(sentence) - 1],
        }
    )
    got = span_labels(frame, *tokenise(tok, [sentence, sentence], 32)[1:])
    want = span_labels(frame, *whole(tok, [sentence, sentence], 32)[1:])
    np.testing.assert_array_equal(got, want)
    assert got[0].tolist() == [1, 4, 6, 10] and got[1, 2:].tolist() == [-100, -100]


def test_a_50_mb_sentence_costs_what_a_short_one_does(tok):
    sentence = "If it had rained , the crops would have grown ; " * 1_050_000
    assert len(sentence) > 50e6
    start = time.perf_counter()
    (ids, offsets, context), grown = peak_growth(lambda: tokenise(tok, ["ok", sentence], 128))
    seconds = time.perf_counter() - start
    assert [len(r) for r in ids] == [3, 128] and offsets[1][-2, 1] < 1_000 and context[1].sum() == 126
    assert grown < 200e6, f"{grown / 1e6:.0f} MB"
    assert seconds < 5, f"{seconds:.1f} s"

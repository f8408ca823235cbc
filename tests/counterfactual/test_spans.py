"""Offsets <-> tokens through the fast tokenizer (END INCLUSIVE), valid-span and "no consequent" decoding."""

from __future__ import annotations

import numpy as np
import pytest

from textcause.counterfactual.datamodule import IGNORE, load_tokenizer, span_labels, tokenise
from textcause.counterfactual.spans import NULL, best_span, char_to_tokens, decode, tokens_to_chars

from .conftest import S1, S2, S3, span, subtask2_rows

HAND_MADE = [
    (S1, "If it had rained"),
    (S1, "the crops would have grown"),
    (S1, "the crops would have grown."),
    (S3, "Had we known"),
    (S2, "I wish the rate had been cut sooner"),
    ("If I hadn't gone, we'd've won $5,000.", "we'd've won $5,000"),
    ("I", "I"),  # a one-character span
    ("Had the Fed cut rates in 2008-09, GDP would've grown.", "Had the Fed cut rates in 2008-09"),
]


@pytest.fixture(scope="module")
def tok(tiny_encoder):
    return load_tokenizer(tiny_encoder)  # the real MiniLM WordPiece tokenizer, saved beside the tiny BERT


@pytest.mark.parametrize("sentence, text", HAND_MADE)
def test_a_token_span_maps_back_to_the_exact_gold_characters_end_inclusive(tok, sentence, text):
    start, end = span(sentence, text)
    (ids,), (offsets,), (context,) = tokenise(tok, [sentence], 128)
    first, last = char_to_tokens(offsets, context, start, end)
    assert context[first] and context[last] and first <= last
    assert tokens_to_chars(offsets, first, last) == (start, end)
    got_start, got_end = tokens_to_chars(offsets, first, last)
    assert sentence[got_start : got_end + 1] == text  # END INCLUSIVE, not sentence[start:end]


def test_a_span_cut_off_by_truncation_or_missing_maps_to_no_tokens(tok):
    sentence = "If it had rained " + "and rained " * 40 + "the crops would have grown."
    (_,), (offsets,), (context,) = tokenise(tok, [sentence], 16)
    assert char_to_tokens(offsets, context, *span(sentence, "the crops would have grown")) is None
    assert char_to_tokens(offsets, context, *span(sentence, "If it had rained")) is not None
    assert char_to_tokens(offsets, context, -1, -1) is None


def test_span_labels_point_at_tokens_and_at_the_null_answer_for_no_consequent(tok):
    import pandas as pd

    frame = pd.DataFrame(subtask2_rows())
    _, offsets, contexts = tokenise(tok, frame["sentence"].tolist(), 128)
    labels = span_labels(frame, offsets, contexts)
    assert labels[2, 2] == labels[2, 3] == NULL  # sentence 3 has no consequent
    for k in range(2):
        for j in (0, 2):
            chars = tokens_to_chars(offsets[k], labels[k, j], labels[k, j + 1])
            assert chars == tuple(frame.iloc[k, [4 + j, 5 + j]])
    assert (labels != IGNORE).all()


def test_best_span_decodes_valid_spans_only():
    context = np.array([False, True, True, True, True, True, False, False])
    start = np.array([50.0, 0, 0, 0, 9, 0, 99, 99])  # the best start (4) lies after the best end (2)
    end = np.array([50.0, 0, 9, 0, 0, 1, 99, 99])  # and positions outside the sentence are huge
    s, e, score = best_span(start, end, context, max_tokens=8)
    assert context[s] and context[e] and e >= s
    assert (s, e) == (4, 5) and score == 10.0  # not (4, 2), not [CLS], not padding
    s, e, _ = best_span(np.array([0.0, 5, 0, 0, 0, 0]), np.array([0.0, 0, 0, 0, 0, 5]), context[:6], max_tokens=3)
    assert e - s + 1 <= 3  # the maximum length
    with pytest.raises(ValueError, match="needs at least one sentence token"):
        best_span(start, end, np.zeros(8, dtype=bool), 8)
    with pytest.raises(ValueError, match="'max_tokens' parameter of best_span must be an int >= 1"):
        best_span(start, end, context, 0)


def test_no_consequent_is_decoded_when_the_null_answer_wins():
    offsets = np.array([[0, 0], [0, 2], [3, 5], [6, 8], [0, 0]])
    context = np.array([False, True, True, True, False])
    z = np.zeros((2, 4, 5))
    z[:, 0, 1] = z[:, 1, 1] = 5.0  # antecedent: token 1, characters 0..1
    z[:, 2, 3] = z[:, 3, 3] = 2.0  # best real consequent: token 3 (score 4)
    z[0, 2, NULL] = z[0, 3, NULL] = 3.0  # sentence 0: "none" scores 6 > 4
    dec = decode(list(z), [offsets] * 2, [context] * 2, max_tokens=4)
    np.testing.assert_array_equal(dec.offsets(), [[0, 1, -1, -1], [0, 1, 6, 7]])
    assert dec.gap.tolist() == [-2.0, 4.0]
    np.testing.assert_array_equal(dec.offsets(margin=5.0)[:, 2:], [[-1, -1], [-1, -1]])  # a margin favours none


@pytest.mark.slow
def test_the_official_gold_spans_make_the_round_trip(tok):
    from textcause.counterfactual.data import default_path
    from textcause.counterfactual.datamodule import SemEvalSettings, build_splits, round_trip

    if not default_path("subtask2_train").is_file():
        pytest.skip("the SemEval-2020 Task 5 release is not under the data root")
    splits = build_splits(SemEvalSettings(subtask=2, encoder=None))
    counts = {name: round_trip(split) for name, split in splits.items()}
    for c in counts.values():
        # measured (max_length 128): train 5,585 / 5,594 exact (4 cut off by truncation), val 986 / 988,
        # test 3,623 / 3,632; the misses are gold spans that start or end on a space, or inside a word
        assert c["spans_in_window"] >= 0.999 * c["spans"]
        assert c["spans_exact_round_trip"] >= 0.995 * c["spans"]

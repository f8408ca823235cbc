"""Long texts through the gender task's tokenizers: only what the model's window can use is tokenised.

Before, probes (:func:`score_probes`), texts (:meth:`GenderMaskedModel.female_probability`) and
fine-tuning sentences (:func:`mask_sentences`) were tokenised whole: a 50 MB W value or sentence took
tens of seconds and gigabytes, and a probe longer than the model's positions failed inside the model
with a raw IndexError. Now each is cut to the window first (``cut_post``), short inputs give exactly
what they gave before, and a mask beyond the window is one sentence that never quotes the whole text.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from peak_memory import peak_growth

from textcause.gender.build import load_tokenizer
from textcause.gender.masking import encode_masked, mask_sentences, word_labels
from textcause.gender.probes import Probe, load_w_list, make_probes
from textcause.gender.scoring import score_probes
from textcause.gender.window import model_window, text_head, window_batch, window_texts
from textcause.gender.words import load_gendered_words

LABELS = word_labels(load_gendered_words())
WORDS = "she said he was a child in the city , and his sister met her brother ! unbelievably".split()


def words(n: int, seed: int = 0, sep: str = " ") -> str:
    return sep.join(np.random.default_rng(seed).choice(WORDS, size=n))


@pytest.fixture(scope="module")
def tok(tiny_encoder):
    return load_tokenizer(tiny_encoder)


def test_model_window(bert, roberta):
    assert model_window(bert.tokenizer, bert.model.config) == 512
    assert model_window(roberta.tokenizer, roberta.model.config) == 62  # 64 positions less RoBERTa's offset 2
    assert model_window(object()) == 512


def test_text_head_never_quotes_a_long_text():
    assert text_head("short") == "'short'"
    assert text_head("x" * 1000) == repr("x" * 60) + "... (1000 characters)"


@pytest.mark.parametrize("lm", ["bert", "roberta"])
def test_short_texts_give_exactly_the_tensors_of_before(lm, request):
    model = request.getfixturevalue(lm)
    texts = [p.render(model.tokenizer.mask_token) for p in make_probes(load_w_list(["1801", "Paris, France"]))]
    assert window_texts(model.tokenizer, texts, 62) == texts
    got = window_batch(model.tokenizer, texts, model_window(model.tokenizer, model.model.config))
    want = model.tokenizer(texts, padding=True, return_tensors="pt")
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key].dtype == want[key].dtype and got[key].equal(want[key])


@pytest.mark.parametrize("lm", ["bert", "roberta"])
def test_probe_scores_are_bit_identical_for_normal_probes(lm, request, monkeypatch):
    import textcause.gender.window as window

    model = request.getfixturevalue(lm)
    probes = make_probes(load_w_list(["1801", "1901", "2001"]))
    got = score_probes(probes, model, batch_size=7)
    monkeypatch.setattr(window, "window_batch", lambda tok, batch, _: tok(batch, padding=True, return_tensors="pt"))
    pd.testing.assert_frame_equal(got, score_probes(probes, model, batch_size=7), check_exact=True)


@pytest.mark.parametrize("max_tokens", [8, 64])
def test_window_texts_keep_the_tokens_of_the_whole_text(bert, max_tokens):
    chars = max_tokens * 32
    texts = [words(5_000), words(5_000, 1, "\n"), " " * (5 * chars) + words(300), "q" * (chars + 5) + " " + words(99)]
    tok = bert.tokenizer
    cut = window_texts(tok, texts, max_tokens)
    assert all(len(c) <= len(t) for c, t in zip(cut, texts)) and len(cut[0]) <= max_tokens * 32
    kw = {"truncation": True, "max_length": max_tokens}
    assert tok(cut, **kw)["input_ids"] == tok(texts, **kw)["input_ids"]


def probe(text: str) -> Probe:
    return Probe(text, "place", "w", "v", 0, None, 0, "was", "a child")


def test_a_probe_with_a_50_mb_w_value_is_scored_in_bounded_time_and_memory(bert):
    huge = "she said he was a child in the city , and his sister met her brother ! " * 720_000
    assert len(huge) > 50e6
    short = probe("{mask} was a child in 1801.")
    probes = [short, probe("{mask} was a child in " + huge + ".")]
    want = score_probes([short], bert)
    start = time.perf_counter()
    scores, grown = peak_growth(lambda: score_probes(probes, bert, batch_size=2))
    seconds = time.perf_counter() - start
    assert np.isfinite(scores["female_softmax"]).all()
    # batched beside a longer probe, the short one is padded further: equal up to the order of float sums
    assert scores["female_softmax"].iloc[0] == pytest.approx(want["female_softmax"].iloc[0], rel=1e-6)
    assert grown < 300e6, f"{grown / 1e6:.0f} MB"  # the rendered probe alone is 50 MB
    assert seconds < 10, f"{seconds:.1f} s"


@pytest.mark.parametrize(("lm", "window"), [("bert", 512), ("roberta", 62)])
def test_a_mask_beyond_the_window_is_one_sentence_that_does_not_quote_the_text(lm, window, request):
    model = request.getfixturevalue(lm)
    late = probe(words(3_000) + " {mask} was a child.")
    rule = rf"^The probe '.*'\.\.\. \(\d+ characters\) holds 0 mask tokens in the model's window of {window} tokens"
    with pytest.raises(ValueError, match=rule) as info:
        score_probes([late], model)
    assert type(info.value) is ValueError and len(str(info.value)) < 300


def test_female_probability_of_a_50_mb_text(tiny_encoder):
    from textcause.gender.components import GenderTagger
    from textcause.gender.model import GenderMaskedModel

    model = GenderMaskedModel(GenderTagger(encoder=tiny_encoder))
    mask = model.tokenizer.mask_token
    short = f"{mask} said it was fine."
    huge = short + " and his sister met her brother in the city ! " * 1_100_000
    want = model.female_probability([short])
    (p_huge, p_short), grown = peak_growth(lambda: model.female_probability([huge, short], batch_size=2))
    assert p_short == pytest.approx(want[0], rel=1e-6) and np.isfinite(p_huge)  # padded further: float sums
    assert grown < 400e6, f"{grown / 1e6:.0f} MB"
    rule = r"^The text '.*'\.\.\. \(\d+ characters\) holds 0 mask tokens in the model's window of 512 tokens"
    with pytest.raises(ValueError, match=rule):
        model.female_probability([words(3_000) + " " + mask])


@pytest.mark.parametrize("max_tokens", [5, 64])
def test_masking_a_cut_sentence_gives_the_examples_of_the_whole(tok, max_tokens):
    sentences = [
        "She, said HIS name was Bob.",
        "him/her and the actress (Shé) he's",
        "Shells, heroes, the mensa.",
        words(6_000),
        " " * 3_000 + words(400),  # cut longer, and longer again
        "and " * 3_000 + "she",  # the gendered word lies past the window: no example
        "[MASK] met her " + words(4_000),  # a literal mask token inside the window: no example
    ]
    prefixes = ["age: 23. "] * len(sentences)
    whole = mask_sentences(sentences, tok, LABELS)
    cut = mask_sentences(sentences, tok, LABELS, max_tokens)
    assert cut[:3] == whole[:3]  # short sentences: the very same masks
    got = encode_masked([m for m in cut if m], [p for m, p in zip(cut, prefixes) if m], tok, max_tokens)
    want = encode_masked([m for m in whole if m], [p for m, p in zip(whole, prefixes) if m], tok, max_tokens)
    got_by = dict(zip([i for i, m in enumerate(cut) if m], got))
    want_by = dict(zip([i for i, m in enumerate(whole) if m], want))
    for i in range(len(sentences)):
        g, w = got_by.get(i), want_by.get(i)
        assert (g is None) == (w is None), i
        if g is not None:
            np.testing.assert_array_equal(g[0], w[0])
            np.testing.assert_array_equal(g[1], w[1])


def test_masking_a_50_mb_sentence_costs_what_a_short_one_does(tok):
    sentence = "She said his sister met her brother in the city , and " * 1_010_000
    assert len(sentence) > 50e6
    start = time.perf_counter()
    (masked,), grown = peak_growth(lambda: mask_sentences([sentence], tok, LABELS, 64))
    seconds = time.perf_counter() - start
    ((ids, labels),) = encode_masked([masked], [""], tok, 64)
    assert len(ids) == 66 and len(masked.words) < 64 * 32
    assert grown < 200e6, f"{grown / 1e6:.0f} MB"
    assert seconds < 5, f"{seconds:.1f} s"

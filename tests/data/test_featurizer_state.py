"""The featurizer state a checkpoint carries: packed n-grams, the same content key as a list, damage refused."""

from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from textcause.data.featurizer import (
    check_same,
    featurize,
    featurizer_state,
    pack_terms,
    state_key,
    unpack_terms,
)
from textcause.features.ngrams import NgramFeaturizer

TERMS = ["", "a", "a b", "café", "naïve résumé", "🙂 ok", "zz"]
SETTINGS = SimpleNamespace(representation="bigram_binary", min_posts=1, max_posts=None, scale=None)


def test_pack_terms_round_trips_any_unicode_and_the_empty_list():
    packed = pack_terms(TERMS)
    assert packed["utf8"].dtype == np.uint8 and packed["ends"].dtype == np.int64
    assert packed["ends"].tolist() == np.cumsum([len(t.encode("utf-8")) for t in TERMS]).tolist()
    assert unpack_terms(packed) == TERMS
    assert unpack_terms({k: torch.from_numpy(v) for k, v in packed.items()}) == TERMS
    assert unpack_terms(pack_terms([])) == []
    assert unpack_terms(("x", "y z")) == ["x", "y z"]  # the list form of earlier checkpoints


@pytest.mark.parametrize(
    "damage, match",
    [
        (lambda p: {"utf8": p["utf8"]}, "lack their 'ends' array"),
        (lambda p: {**p, "utf8": p["utf8"].astype(np.int32)}, "wrong type or shape"),
        (lambda p: {**p, "ends": p["ends"] + 1}, "offsets do not fit"),
        (lambda p: {**p, "ends": p["ends"][::-1].copy()}, "offsets do not fit"),
        (lambda p: {"utf8": np.array([0xFF, 0xFE], np.uint8), "ends": np.array([2])}, "not UTF-8"),
        (lambda p: {"utf8": np.array([97], np.uint8), "ends": np.array([], np.int64)}, "offsets do not fit"),
        (lambda p: "a b", "a str, not a list"),
    ],
)
def test_damaged_packed_terms_are_one_clear_error(damage, match):
    with pytest.raises(ValueError, match=match):
        unpack_terms(damage(pack_terms(TERMS)))


def _fitted_state():
    texts = [["the cat sat", "a dog"], ["the dog sat", "the cat"], ["a cat", "the end"]]
    featurizer = NgramFeaturizer(kind="bigram_binary", min_users=1).fit(texts)
    return featurizer, featurizer.state_dict(), texts


def test_the_state_packs_its_terms_and_keeps_the_key_of_the_list_form():
    featurizer, ngram, texts = _fitted_state()
    state = featurizer_state(SETTINGS, ngram=ngram)
    packed = state["ngram"]["terms"]
    assert set(packed) == {"utf8", "ends"} and all(isinstance(v, torch.Tensor) for v in packed.values())
    assert unpack_terms(packed) == list(ngram["terms"])
    # an earlier version's state held the terms as a list: its key is the same, so its checkpoints still load
    earlier = {**state, "ngram": {**state["ngram"], "terms": list(ngram["terms"])}}
    assert state_key(earlier) == state_key(state) == state["key"]
    check_same(earlier, state)
    # a different vocabulary is a different key
    other = {**earlier, "ngram": {**earlier["ngram"], "terms": list(ngram["terms"])[:-1]}}
    assert state_key(other) != state["key"]
    with pytest.raises(ValueError, match="featurizer .* differs"):
        check_same({**other, "key": state_key(other)}, state)
    # both forms featurize new text the same way, as the fitted featurizer does
    new = [["the cat", "a dog sat"]]
    expected = featurizer.transform(new).toarray()
    assert np.array_equal(featurize(state, new).toarray(), expected)
    assert np.array_equal(featurize(earlier, new).toarray(), expected)


def test_a_saved_state_loads_with_weights_only_as_two_tensors():
    _, ngram, _ = _fitted_state()
    state = featurizer_state(SETTINGS, ngram=ngram)
    buf = io.BytesIO()
    torch.save({"featurizer": state}, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=True)["featurizer"]
    assert unpack_terms(loaded["ngram"]["terms"]) == list(ngram["terms"])
    assert state_key(loaded) == state["key"]

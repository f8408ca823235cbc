"""The n-gram / LDA feature cache: every byte of an entry checked (matrix and metadata, vocabulary
included), damage reported and rebuilt, old entries without a metadata checksum rebuilt."""

from __future__ import annotations

import json

import numpy as np
import pytest

from textcause.features.representation import build_representation

WORDS = "rain coffee train music game city park dog cat movie book friend".split()


def texts(n=30, seed=0):
    rng = np.random.default_rng(seed)
    return [[" ".join(rng.choice(WORDS, size=5)) for _ in range(4)] for _ in range(n)]


def build(tmp_path, kind="bigram_counts", **kw):
    return build_representation(kind, texts(), np.arange(20), min_users=2, cache_dir=tmp_path, **kw)


def dense(rep):
    return rep.matrix.toarray() if hasattr(rep.matrix, "toarray") else rep.matrix


def test_an_entry_records_its_size_and_checksum(tmp_path):
    import hashlib

    rep = build(tmp_path)
    meta = json.loads((tmp_path / f"{rep.key}.json").read_text())["entry"]
    blob = (tmp_path / f"{rep.key}.npz").read_bytes()
    assert meta["file"] == {"bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}


@pytest.mark.parametrize("kind", ["bigram_counts", "lda"])
def test_flipped_bytes_are_caught_named_and_rebuilt(tmp_path, kind):
    kw = {"lda_max_iter": 2} if kind == "lda" else {}
    first = build(tmp_path, kind, **kw)
    npz = tmp_path / f"{first.key}.npz"
    data = bytearray(npz.read_bytes())
    data[len(data) // 2] ^= 0x01
    npz.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match=rf"damaged feature cache entry {npz} \(it does not match the checksum"):
        again = build(tmp_path, kind, **kw)
    assert not again.from_cache
    np.testing.assert_array_equal(dense(again), dense(first))
    assert build(tmp_path, kind, **kw).from_cache  # rewritten whole


def test_an_old_entry_whose_metadata_has_no_checksum_is_rebuilt(tmp_path):
    """The old code's metadata (plain JSON, no checksum of its own): nothing vouches for its vocabulary,
    so it is a miss and is rewritten in the checked form."""
    first = build(tmp_path, "lda", lda_max_iter=2)
    meta_path = tmp_path / f"{first.key}.json"
    old = json.loads(meta_path.read_text())["entry"]
    old["terms"] = ["planted"] + old["terms"][1:]  # as a hand edit of an old entry would
    meta_path.write_text(json.dumps(old))
    again = build(tmp_path, "lda", lda_max_iter=2)
    assert not again.from_cache and again.terms == first.terms
    np.testing.assert_array_equal(again.matrix, first.matrix)
    assert json.loads(meta_path.read_text())["entry"]["terms"] == list(first.terms)  # rewritten
    assert build(tmp_path, "lda", lda_max_iter=2).from_cache


@pytest.mark.parametrize("kind", ["bigram_counts", "lda"])
def test_a_changed_term_in_the_metadata_is_caught_and_rebuilt(tmp_path, kind):
    """The vocabulary lives in the entry's JSON: one changed term must not reach a model's featuriser."""
    kw = {"lda_max_iter": 2} if kind == "lda" else {}
    first = build(tmp_path, kind, **kw)
    meta_path = tmp_path / f"{first.key}.json"
    raw = meta_path.read_text(encoding="utf-8")
    term = first.terms[0]
    assert json.dumps(term) in raw
    meta_path.write_text(raw.replace(json.dumps(term), json.dumps(term + "x"), 1), encoding="utf-8")
    with pytest.warns(RuntimeWarning, match=r"damaged feature cache entry .*metadata does not match its checksum"):
        again = build(tmp_path, kind, **kw)
    assert not again.from_cache and again.terms == first.terms
    hit = build(tmp_path, kind, **kw)
    assert hit.from_cache and hit.terms == first.terms and hit.state["terms"] == list(first.terms)


def test_every_byte_of_the_metadata_is_checked(tmp_path):
    first = build(tmp_path)
    meta_path = tmp_path / f"{first.key}.json"
    raw = meta_path.read_bytes()
    for i in range(0, len(raw), max(1, len(raw) // 40)):  # about 40 single-byte changes across the file
        data = bytearray(raw)
        data[i] ^= 0x01
        meta_path.write_bytes(bytes(data))
        with pytest.warns(RuntimeWarning, match="damaged feature cache entry"):
            again = build(tmp_path)
        assert not again.from_cache, f"a change of byte {i} went unnoticed"
        assert again.terms == first.terms

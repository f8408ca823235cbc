"""The n-gram / LDA feature cache: a checksum per entry, damage reported and rebuilt, old entries adopted."""

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
    meta = json.loads((tmp_path / f"{rep.key}.json").read_text())
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


def test_an_old_entry_without_a_checksum_is_adopted_or_rebuilt_when_not_finite(tmp_path):
    first = build(tmp_path, "lda", lda_max_iter=2)
    meta_path = tmp_path / f"{first.key}.json"
    meta = json.loads(meta_path.read_text())
    del meta["file"]  # as the old code wrote it
    meta_path.write_text(json.dumps(meta))
    hit = build(tmp_path, "lda", lda_max_iter=2)
    assert hit.from_cache and np.array_equal(hit.matrix, first.matrix)
    assert "file" in json.loads(meta_path.read_text())  # adopted: its checksum recorded
    # an old entry holding NaN (no checksum to catch it) is refused by the finite check
    bad = first.matrix.copy()
    bad[0, 0] = np.nan
    np.savez(tmp_path / f"{first.key}.npz", matrix=bad)
    meta_path.write_text(json.dumps(meta))
    with pytest.warns(RuntimeWarning, match="damaged feature cache entry .*NaN or infinite"):
        again = build(tmp_path, "lda", lda_max_iter=2)
    assert not again.from_cache and np.isfinite(again.matrix).all()
    np.testing.assert_array_equal(again.matrix, first.matrix)

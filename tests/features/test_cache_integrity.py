"""Verified embedding shards: manifests, damage reported and rebuilt (never used), old shards
adopted, one encode when two processes fill the same cache at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from textcause.features import shard_checks
from textcause.features.embed_cache import ShardStore, post_key
from textcause.features.embeddings import PostEmbeddingCache

ROOT = Path(__file__).resolve().parents[2]
POSTS = [f"post {i} about the weather and trains number {i * 7}" for i in range(10)]


def make(tiny_encoder: str, **kw) -> PostEmbeddingCache:
    kw.setdefault("precision", "fp32")
    kw.setdefault("progress", False)
    kw.setdefault("shard_size", 4)
    return PostEmbeddingCache(tiny_encoder, **kw)


def shards(folder: Path) -> list[str]:
    return sorted(p.name[: -len(".keys.npy")] for p in folder.glob("*.keys.npy"))


def new_process() -> None:
    """Forget which files this process has hashed, as a new process would."""
    getattr(shard_checks, "HASHED", set()).clear()


def flip_byte(path: Path, offset_from_end: int = 3) -> None:
    data = bytearray(path.read_bytes())
    data[-offset_from_end] ^= 0x01  # a mantissa bit of a float16: still finite, silently different
    path.write_bytes(bytes(data))


@pytest.fixture
def filled(tiny_encoder):
    cache = make(tiny_encoder)
    vectors = cache.embed(POSTS)
    return cache, vectors


def test_every_shard_has_a_manifest_with_sizes_and_checksums(filled):
    cache, _ = filled
    folder = cache.pooled.folder
    names = shards(folder)
    assert len(names) == 3  # 10 posts, shards of 4
    for name in names:
        manifest = json.loads((folder / f"{name}.manifest.json").read_text())
        assert manifest["rows"] == len(np.load(folder / f"{name}.keys.npy"))
        for suffix in ("keys", "vec"):
            path = folder / f"{name}.{suffix}.npy"
            assert manifest["files"][suffix] == {"bytes": path.stat().st_size, "sha256": shard_checks.file_sha256(path)}


@pytest.mark.parametrize("damage", ["flipped", "nan", "truncated", "truncated_old", "keys_truncated", "manifest_size"])
def test_a_damaged_shard_is_reported_naming_the_file_and_rebuilt_never_used(tiny_encoder, filled, damage):
    cache, vectors = filled
    folder = cache.pooled.folder
    victim = shards(folder)[1]
    vec = folder / f"{victim}.vec.npy"
    if damage == "flipped":
        flip_byte(vec)
    elif damage == "nan":
        arr = np.load(vec)
        arr[0, :] = np.nan
        np.save(vec, arr)
    elif damage in ("truncated", "truncated_old"):
        if damage == "truncated_old":  # the old code's shard: before, "mmap length is greater than file size"
            (folder / f"{victim}.manifest.json").unlink()
        vec.write_bytes(vec.read_bytes()[:-40])
    elif damage == "keys_truncated":
        keys = folder / f"{victim}.keys.npy"
        keys.write_bytes(keys.read_bytes()[:-5])
    else:
        manifest = folder / f"{victim}.manifest.json"
        m = json.loads(manifest.read_text())
        m["files"]["vec"]["bytes"] += 1
        manifest.write_text(json.dumps(m))
    new_process()
    with pytest.warns(
        RuntimeWarning, match=r"The embedding cache file .*shard-\d+-[0-9a-f]+\.\w+\.(npy|json) .*set aside"
    ):
        fresh = make(tiny_encoder)
        got = fresh.embed(POSTS)
    np.testing.assert_array_equal(got, vectors)  # rebuilt: the same bits as the intact cache
    assert fresh.last_stats["n_encoded"] == 4  # exactly the damaged shard's posts
    assert victim not in shards(folder) and (folder / "damaged" / f"{victim}.keys.npy").exists()
    again = make(tiny_encoder)  # the rebuilt cache is whole: no warning, nothing encoded
    np.testing.assert_array_equal(again.embed(POSTS), vectors)
    assert again.last_stats["n_encoded"] == 0


def test_the_warning_is_one_sentence_and_names_the_file(tiny_encoder, filled):
    cache, _ = filled
    folder = cache.pooled.folder
    vec = folder / f"{shards(folder)[0]}.vec.npy"
    flip_byte(vec)
    new_process()
    with pytest.warns(RuntimeWarning) as record:
        make(tiny_encoder).embed(POSTS)
    (message,) = [str(w.message) for w in record if "embedding cache" in str(w.message)]
    assert message.startswith(f"The embedding cache file {vec} does not match the checksum in its manifest")
    assert message.count(". ") == 0 and message.endswith("encoded again.")


def test_nan_vectors_are_caught_without_hashes_and_in_old_shards(tiny_encoder, filled):
    cache, vectors = filled
    folder = cache.pooled.folder
    victim = shards(folder)[2]
    (folder / f"{victim}.manifest.json").unlink()  # a shard written by the old code
    vec = folder / f"{victim}.vec.npy"
    arr = np.load(vec)
    arr[1, 3] = np.inf
    np.save(vec, arr)
    new_process()
    with pytest.warns(RuntimeWarning, match="holds NaN or infinite values"):
        got = make(tiny_encoder, verify="fast").embed(POSTS)
    np.testing.assert_array_equal(got, vectors)


def test_old_shards_without_a_manifest_are_adopted_after_the_checks(tiny_encoder, filled):
    cache, vectors = filled
    folder = cache.pooled.folder
    for manifest in folder.glob("*.manifest.json"):
        manifest.unlink()
    new_process()
    old = make(tiny_encoder)
    got = old.embed(POSTS)
    np.testing.assert_array_equal(got, vectors)
    assert old.last_stats["n_encoded"] == 0  # nothing re-encoded
    names = shards(folder)
    assert all(json.loads((folder / f"{n}.manifest.json").read_text())["adopted"] for n in names)
    flip_byte(folder / f"{names[0]}.vec.npy")  # once adopted, a later change is caught
    new_process()
    with pytest.warns(RuntimeWarning, match="does not match the checksum"):
        make(tiny_encoder).embed(POSTS)


def test_hashes_are_checked_once_per_process_and_verify_checks_on_demand(tiny_encoder, filled, monkeypatch):
    cache, _ = filled
    new_process()
    calls = []
    real = shard_checks.file_sha256
    monkeypatch.setattr(shard_checks, "file_sha256", lambda p: calls.append(p) or real(p))
    make(tiny_encoder).embed(POSTS)
    assert len(calls) == 6  # 3 shards x (keys, vec)
    make(tiny_encoder).embed(POSTS)
    assert len(calls) == 6  # a second open in the same process trusts the first check
    make(tiny_encoder, verify="fast").embed(POSTS)
    assert len(calls) == 6
    folder = cache.pooled.folder
    flip_byte(folder / f"{shards(folder)[0]}.vec.npy")  # changed after this process checked it
    opened = make(tiny_encoder)
    victim = shards(folder)[0]
    with pytest.warns(RuntimeWarning, match="does not match the checksum"):
        assert opened.verify()["pooled"] == [victim]


def test_damaged_token_offsets_are_caught(tiny_encoder):
    cache = make(tiny_encoder, store_tokens=True, token_cap=4)
    values, offsets = cache.token_states(POSTS)
    folder = cache.tokens.folder
    off = folder / f"{shards(folder)[0]}.off.npy"
    (folder / f"{shards(folder)[0]}.manifest.json").unlink()
    arr = np.load(off)
    arr[2] = arr[-1] + 5
    np.save(off, arr)
    new_process()
    with pytest.warns(RuntimeWarning, match=r"\.off\.npy has offsets that do not index"):
        got_values, got_offsets = make(tiny_encoder, store_tokens=True, token_cap=4).token_states(POSTS)
    np.testing.assert_array_equal(got_offsets, offsets)
    np.testing.assert_array_equal(got_values, values)


def test_a_post_in_two_shards_is_read_from_the_smallest_name_by_every_reader(tmp_path):
    store = ShardStore(tmp_path, "pooled")
    key = post_key("shared")
    late = store.write([key], vec=np.full((1, 2), 2.0, np.float16))  # this process writes shard 00000 first
    other = ShardStore(tmp_path, "pooled")
    early = "shard-00000-00000000"  # another writer's shard with a smaller name, found later
    assert early < late
    np.save(tmp_path / f"{early}.vec.npy", np.full((1, 2), 1.0, np.float16))
    np.save(tmp_path / f"{early}.keys.npy", np.frombuffer(key, np.uint8).reshape(1, 16))
    store.refresh()
    fresh = ShardStore(tmp_path, "pooled")
    for s in (store, other, fresh):
        s.refresh()
        s.check([key])
        assert s.read_vectors([key]).tolist() == [[1.0, 1.0]]


def test_a_non_finite_encode_is_refused_and_writes_nothing(tiny_encoder, monkeypatch):
    cache = make(tiny_encoder)
    real = cache.encoder.encode_ids

    def broken(*a, **kw):
        out = real(*a, **kw)
        out.vectors[0, 0] = np.nan
        return out

    monkeypatch.setattr(cache.encoder, "encode_ids", broken)
    with pytest.raises(ValueError, match="produced vectors that are NaN or infinite in float16; nothing was written"):
        cache.embed(POSTS)
    assert shards(cache.pooled.folder) == []


def test_two_processes_encoding_the_same_posts_at_once_encode_once_and_agree(tiny_encoder, tmp_path):
    """Before the lock both processes encoded every post and wrote shards of their own."""
    start = time.time() + 8.0
    script = textwrap.dedent(f"""
        import json, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        import numpy as np
        from textcause.features.embeddings import PostEmbeddingCache
        from textcause.features.encoder import Encoder
        real = Encoder.encode_ids
        def slow(self, *a, **kw):  # a slow encoder: the two processes overlap
            time.sleep(0.5)
            return real(self, *a, **kw)
        Encoder.encode_ids = slow
        cache = PostEmbeddingCache({tiny_encoder!r}, precision="fp32", progress=False, shard_size=4)
        time.sleep(max(0.0, {start!r} - time.time()))
        vec = cache.embed({POSTS!r} if sys.argv[1] == "a" else {POSTS[::-1]!r})
        np.save(sys.argv[2], vec if sys.argv[1] == "a" else vec[::-1])
        print(json.dumps({{"n_encoded": cache.last_stats["n_encoded"], "t": time.time()}}))
    """)
    env = {**os.environ, "TEXTCAUSE_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, who, str(tmp_path / f"{who}.npy")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for who in ("a", "b")
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
    stats = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    assert sorted(s["n_encoded"] for s in stats) == [0, len(POSTS)]  # one encode, the other waited and read
    a, b = np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy")
    np.testing.assert_array_equal(a, b)  # every reader sees the same vectors
    folder = next((tmp_path / "cache" / "embeddings").glob("*/pooled"))
    assert len(shards(folder)) == 3  # one set of shards, not two

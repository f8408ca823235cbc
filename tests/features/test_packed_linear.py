"""Linear weights packed once for oneDNN (textcause.features.packed_linear): same vectors, or left alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from textcause.features import packed_linear
from textcause.features.encoder import Encoder
from textcause.features.packed_linear import PackedLinear, can_pack, pack_linears

POSTS = ["I love the weather today", "a longer post about the trains and what we ate", "ok", "", "lol same"] * 3
needs_onednn = pytest.mark.skipif(not can_pack(), reason="this torch or CPU has no oneDNN bf16 products")


def _linears(model):
    return [m for m in model.modules() if type(m) is torch.nn.Linear]


@needs_onednn
def test_packed_layers_give_the_plain_vectors_to_the_bit(tiny_encoder):
    packed = Encoder(tiny_encoder, precision="bf16-full")
    plain = Encoder(tiny_encoder, precision="bf16-full", packed=False)
    np.testing.assert_array_equal(packed.encode(POSTS).vectors, plain.encode(POSTS).vectors)
    tokens = packed.encode(POSTS, token_cap=4)
    np.testing.assert_array_equal(tokens.token_values, plain.encode(POSTS, token_cap=4).token_values)
    n = len(_linears(plain.model))  # 2 layers x 6 products + the pooler
    assert n == 13 and packed.packed_layers == n and plain.packed_layers is None
    assert not _linears(packed.model) and sum(isinstance(m, PackedLinear) for m in packed.model.modules()) == n


@needs_onednn
def test_the_embedding_cache_passes_packed_through_and_keeps_one_key(tiny_encoder, tmp_path):
    from textcause.features.embeddings import PostEmbeddingCache

    kw = dict(precision="bf16-full", progress=False, processes=1)
    packed = PostEmbeddingCache(tiny_encoder, cache_dir=tmp_path / "a", **kw)
    plain = PostEmbeddingCache(tiny_encoder, cache_dir=tmp_path / "b", packed=False, **kw)
    np.testing.assert_array_equal(packed.embed(POSTS), plain.embed(POSTS))
    assert packed.encoder.packed_layers == 13 and plain.encoder.packed_layers is None
    assert packed.key == plain.key  # the same vectors to the bit: one cache entry
    with pytest.raises(ValueError, match=r"The 'packed' parameter of Encoder must be a bool\. Got 'no' instead"):
        PostEmbeddingCache(tiny_encoder, cache_dir=tmp_path / "c", packed="no")


@needs_onednn
def test_only_full_bf16_is_packed(tiny_encoder):
    for precision in ("fp32", "bf16"):  # fp32 weights; autocast feeds fp32 inputs to bf16 weights
        enc = Encoder(tiny_encoder, precision=precision)
        enc.encode(POSTS)
        assert enc.packed_layers is None and len(_linears(enc.model)) == 13


@needs_onednn
def test_a_packed_layer_falls_back_to_the_plain_product_outside_bf16_inference():
    plain = torch.nn.Linear(8, 3).to(torch.bfloat16)
    layer = PackedLinear(plain)
    x = torch.randn(2, 8).to(torch.bfloat16)
    with torch.inference_mode():
        assert torch.equal(layer(x), plain(x)) and layer._packed is not None
    assert layer(x).requires_grad is False and torch.equal(layer(x), plain(x))  # gradients on: F.linear
    layer.float()  # cast: the product follows the fp32 weight
    assert layer.weight.dtype == torch.float32
    with torch.inference_mode():
        torch.testing.assert_close(layer(x.float()), plain.float()(x.float()))
    layer.to(torch.bfloat16)  # a new weight tensor: packed again at the next bf16 product
    with torch.inference_mode():
        assert torch.equal(layer(x), plain.to(torch.bfloat16)(x)) and layer._packed_for == layer._state()
    assert set(layer.state_dict()) == {"weight", "bias"}


@needs_onednn
def test_the_packed_copy_is_kept_across_calls_and_made_again_for_new_weights(tiny_encoder):
    enc = Encoder(tiny_encoder, precision="bf16-full")
    enc.encode(POSTS)
    layer = enc.model.encoder.layer[0].intermediate.dense
    packed = layer._packed
    enc.encode(POSTS)  # casts the model to bf16 again: nothing changed, nothing packed again
    assert layer._packed is packed
    x = torch.randn(3, layer.in_features).to(torch.bfloat16)
    new = torch.nn.Linear(layer.in_features, layer.out_features).to(torch.bfloat16)
    layer.load_state_dict(new.state_dict())  # an in-place copy into the buffers
    with torch.inference_mode():
        assert torch.equal(layer(x), new(x)) and layer._packed is not packed


@needs_onednn
def test_a_packed_model_copies_pickles_and_saves(tiny_encoder, tmp_path):
    import copy
    import pickle

    enc = Encoder(tiny_encoder, precision="bf16-full")
    vectors = enc.encode(POSTS).vectors
    for twin in (copy.deepcopy(enc.model), pickle.loads(pickle.dumps(enc.model))):
        enc._model = twin
        np.testing.assert_array_equal(enc.encode(POSTS).vectors, vectors)
    torch.save(enc.model.state_dict(), tmp_path / "state.pt")
    assert "encoder.layer.0.attention.self.query.weight" in torch.load(tmp_path / "state.pt")


def test_nothing_is_packed_where_onednn_cannot(tiny_encoder, monkeypatch):
    monkeypatch.setattr(packed_linear, "can_pack", lambda: False)
    enc = Encoder(tiny_encoder, precision="bf16-full")
    vectors = enc.encode(POSTS).vectors
    assert enc.packed_layers == 0 and len(_linears(enc.model)) == 13 and np.isfinite(vectors).all()


@needs_onednn
def test_a_probe_that_differs_packs_nothing(monkeypatch):
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).to(torch.bfloat16)
    monkeypatch.setattr(PackedLinear, "forward", lambda self, x: torch.zeros(x.shape[0], self.out_features))
    assert pack_linears(model) == 0 and len(_linears(model)) == 2
    monkeypatch.undo()
    assert pack_linears(model) == 2 and not _linears(model)


def test_packed_must_be_a_bool(tiny_encoder):
    with pytest.raises(ValueError, match=r"^The 'packed' parameter of Encoder must be a bool\. Got 'no' instead\.$"):
        Encoder(tiny_encoder, packed="no")

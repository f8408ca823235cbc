"""SHERBERT with unfrozen top encoder layers, and the intermediate-layer token cache (tiny random BERT)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from cliargs import fit_args, quiet_trainer
from torch import nn

from textcause.features.embeddings import PostEmbeddingCache
from textcause.models.components import SHERBERT
from textcause.run.lightning_cli import make_cli

POSTS = ["the cat sat on the mat", "a much longer post about nothing in particular at all", "hi"]


def reference_states(encoder: str, posts: list[str], max_tokens: int = 16) -> list[tuple]:
    """Each post's hidden states (one per layer, (L, D)) from a direct transformers forward."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(encoder)
    model = AutoModel.from_pretrained(encoder, attn_implementation="eager").eval()
    out = []
    with torch.no_grad():
        for post in posts:
            enc = tok(post, truncation=True, max_length=max_tokens, return_tensors="pt")
            out.append(tuple(h[0] for h in model(**enc, output_hidden_states=True).hidden_states))
    return out


def test_cache_stores_the_requested_layer(tiny_encoder, tmp_path):
    ref = reference_states(tiny_encoder, POSTS)
    kw = dict(max_tokens=16, store_tokens=True, token_cap=8, precision="fp32", cache_dir=tmp_path)
    mid = PostEmbeddingCache(tiny_encoder, layer=1, **kw)
    values, offsets = mid.token_states(POSTS)
    for i, states in enumerate(ref):
        n = min(len(states[1]), 8)
        assert offsets[i + 1] - offsets[i] == n
        got = values[offsets[i] : offsets[i + 1]]
        assert np.abs(got - states[1][:n].numpy()).max() < 3e-3  # float16 storage
        assert np.abs(got - states[2][:n].numpy()).max() > 0.01  # not the last layer (they differ by ~0.03)
    last = PostEmbeddingCache(tiny_encoder, **kw)
    default = PostEmbeddingCache(tiny_encoder, layer=None, **kw)
    explicit_last = PostEmbeddingCache(tiny_encoder, layer=2, **kw)  # the last layer is None
    assert mid.key == last.key == default.key == explicit_last.key  # pooled vectors are shared
    assert last.tokens_folder.name == default.tokens_folder.name == explicit_last.tokens_folder.name == "tokens-cap8"
    assert mid.tokens_folder.name == "tokens-cap8-layer1"
    lv, lo = last.token_states(POSTS)
    assert np.abs(lv[lo[0] : lo[1]] - ref[0][2][: lo[1]].numpy()).max() < 3e-3
    assert np.allclose(mid.embed(POSTS), last.embed(POSTS))  # pooled: always the last layer
    assert last.last_stats["n_encoded"] == 0  # the pooled vectors came from the layer-1 run
    with pytest.raises(ValueError, match="'layer' parameter of Encoder must be an int in"):
        PostEmbeddingCache(tiny_encoder, layer=3, **kw)


def token_batch(states: list[torch.Tensor], cap: int) -> dict[str, torch.Tensor]:
    """One user whose posts have the given (L, D) token states, padded to ``cap`` tokens."""
    p, d = len(states), states[0].shape[1]
    tokens = torch.zeros(1, p, cap, d)
    mask = torch.zeros(1, p, cap, dtype=torch.bool)
    for j, s in enumerate(states):
        n = min(len(s), cap)
        tokens[0, j, :n], mask[0, j, :n] = s[:n], True
    return {
        "posts": torch.randn(1, p, d),
        "post_mask": torch.ones(1, p, dtype=torch.bool),
        "tokens": tokens,
        "token_mask": mask,
    }


def test_unfrozen_layer_reproduces_the_encoder_and_trains(tiny_encoder):
    ref = reference_states(tiny_encoder, POSTS)
    torch.manual_seed(0)
    net = SHERBERT(input_dim=32, hidden_size=8, unfreeze_top=1, encoder=tiny_encoder).eval()
    x = token_batch([s[1] for s in ref], cap=16)  # cap >= every post's length: exact
    out = net.encode_tokens(x["tokens"], x["token_mask"])
    for j, s in enumerate(ref):
        n = len(s[2])
        assert torch.allclose(out[0, j, :n], s[2], atol=1e-4)
        assert not out[0, j, n:].any()  # padded tokens stay zero
    frozen = SHERBERT(input_dim=32, hidden_size=8)
    assert torch.equal(frozen.encode_tokens(x["tokens"], x["token_mask"]), x["tokens"])  # default: unchanged
    net.train()
    net(x).sum().backward()
    grads = [p.grad for p in net.top_layers.parameters()]
    assert all(g is not None for g in grads) and sum(float(g.abs().sum()) for g in grads) > 0
    assert sum(p.numel() for p in frozen.parameters()) < sum(p.numel() for p in net.parameters())


def test_unfrozen_padding_invariance_and_no_nan(tiny_encoder):
    torch.manual_seed(1)
    net = SHERBERT(input_dim=32, hidden_size=8, unfreeze_top=1, encoder=tiny_encoder).eval()
    lengths = [5, 3, 7]
    x = token_batch([torch.randn(n, 32) for n in lengths], cap=7)
    ref = net(x)
    # more padded tokens, a padded post (no valid token) and garbage in every padded slot
    b, p, cap, d = 1, 4, 10, 32
    tokens = torch.full((b, p, cap, d), float("nan"))
    tokens[:, :3, :7] = x["tokens"]
    mask = torch.zeros(b, p, cap, dtype=torch.bool)
    mask[:, :3, :7] = x["token_mask"]
    posts = torch.full((b, p, d), float("nan"))
    posts[:, :3] = x["posts"]
    post_mask = torch.tensor([[True, True, True, False]])
    padded = {"posts": posts, "post_mask": post_mask, "tokens": tokens, "token_mask": mask}
    logits, att = net(padded, return_attention=True)
    assert torch.isfinite(logits).all() and torch.allclose(logits, ref, atol=1e-5)
    assert float(att["posts"][0, 3].detach()) == 0.0
    # a real post whose tokens are all masked gives no NaN either
    empty = dict(padded, post_mask=torch.ones(1, 4, dtype=torch.bool))
    assert torch.isfinite(net(empty)).all()


def test_unfreeze_errors(tiny_encoder):
    with pytest.raises(ValueError, match="'unfreeze_top' parameter of SHERBERT must be an int in \\[0, 2\\]"):
        SHERBERT(input_dim=32, unfreeze_top=3, encoder=tiny_encoder)
    with pytest.raises(ValueError, match="'unfreeze_top' parameter of SHERBERT must be an int >= 0"):
        SHERBERT(input_dim=32, unfreeze_top=-1, encoder=tiny_encoder)
    with pytest.raises(ValueError, match="needs use_tokens=True"):
        SHERBERT(input_dim=32, unfreeze_top=1, use_tokens=False, encoder=tiny_encoder)
    with pytest.raises(ValueError, match="does not match SHERBERT's input_dim 16"):
        SHERBERT(input_dim=16, unfreeze_top=1, encoder=tiny_encoder)
    net = SHERBERT(input_dim=32, unfreeze_top=1, encoder=tiny_encoder)
    with pytest.raises(ValueError, match="needs token states"):
        net({"posts": torch.randn(2, 3, 32)})
    with pytest.raises(ValueError, match="Expected 'tokens' of shape"):
        net({"posts": torch.randn(2, 3, 32), "tokens": torch.randn(2, 3, 4, 16)})


def test_unfreeze_config_trains_through_the_cli(tiny_corpus, tiny_encoder, tmp_path):
    data = ["--data.encoder", tiny_encoder, "--data.encoder_layer", "1", "--data.max_tokens", "16"]
    data += ["--data.token_cap", "8", "--data.task", "order_of_text"]
    net = "--model.init_args.net.init_args."
    model = [net + "encoder", tiny_encoder, net + "hidden_size", "16", "--trainer.max_epochs", "1"]
    cli = make_cli(fit_args("sherbert_unfreeze1.yaml", tiny_corpus, *data, *model, *quiet_trainer(tmp_path, "u")))
    net = cli.model.net
    assert net.unfreeze_top == 1 and len(net.top_layers) == 1
    assert cli.datamodule.hparams.encoder_layer == 1
    assert (Path(cli.datamodule.representation_info["cache"]) / "tokens-cap8-layer1").is_dir()
    assert torch.isfinite(cli.trainer.callback_metrics["val_loss"])


def test_unfrozen_layers_declare_the_data_they_need(tiny_encoder):
    """A wrong data.encoder_layer, representation or encoder is refused before training starts."""
    from types import SimpleNamespace

    from textcause.data.build import DataSettings
    from textcause.models import PropensityModel
    from textcause.models.nets import check_data_requirements

    net = SHERBERT(input_dim=32, hidden_size=8, unfreeze_top=1, encoder=tiny_encoder)
    assert net.n_encoder_layers == 2
    # layer 1 = 2 layers - 1 unfrozen; the net names its encoder, it never looks at a data module
    assert net.data_requirements() == {"representation": "post_tokens", "encoder": tiny_encoder, "encoder_layer": 1}
    frozen = SHERBERT(input_dim=32, hidden_size=8)
    assert frozen.data_requirements() is None

    def settings(**kw):
        return DataSettings(**{"representation": "post_tokens", "encoder": tiny_encoder, "encoder_layer": 1, **kw})

    check_data_requirements(net, settings())  # accepted
    check_data_requirements(net, settings(encoder=str(Path(tiny_encoder)) + "/"))  # the same encoder, another path
    with pytest.raises(
        ValueError,
        match=r"SHERBERT\(.*unfreeze_top=1, n_encoder_layers=2\) needs data.encoder_layer=1. "
        r"Got None instead",
    ):
        check_data_requirements(net, settings(encoder_layer=None))
    with pytest.raises(ValueError, match="needs data.representation='post_tokens'. Got 'post_embeddings' instead"):
        check_data_requirements(net, settings(representation="post_embeddings"))
    with pytest.raises(ValueError, match="not of the data module's encoder None: set data.encoder"):
        check_data_requirements(net, settings(encoder=None))  # the packaged MiniLM, not the tiny BERT
    check_data_requirements(frozen, settings(encoder_layer=None))  # frozen: anything goes
    check_data_requirements(nn.Linear(2, 1), settings())  # a net that declares nothing

    class Odd(nn.Module):
        def data_requirements(self):
            return {"no_such_setting": 1}

    with pytest.raises(ValueError, match="Odd requires the data setting 'no_such_setting'"):
        check_data_requirements(Odd(), settings())

    # PropensityModel.setup compares the net's requirements with the data module's typed settings
    model = PropensityModel(net)
    model._trainer = SimpleNamespace(datamodule=SimpleNamespace(settings=settings(encoder_layer=2)))
    with pytest.raises(ValueError, match="needs data.encoder_layer=1. Got 2 instead"):
        model.setup("fit")
    model._trainer = SimpleNamespace(datamodule=SimpleNamespace(settings=settings()))
    model.setup("fit")
    model._trainer = SimpleNamespace(datamodule=SimpleNamespace())  # no typed settings (a toy data module)
    model.setup("fit")

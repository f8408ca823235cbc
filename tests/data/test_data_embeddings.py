"""The post-embedding path of the data module, and hierarchical models through the CLI (tiny random BERT)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from cliargs import fit_args, quiet_trainer

from textcause.data import CausalTextDataModule
from textcause.features.embeddings import PostEmbeddingCache
from textcause.run.lightning_cli import make_cli


def make_dm(corpus: str, encoder: str, representation: str, **kw) -> CausalTextDataModule:
    return CausalTextDataModule(
        corpus=corpus,
        task="order_of_text",
        level=2,
        seed=1,
        representation=representation,
        encoder=encoder,
        max_tokens=16,
        token_cap=8,
        batch_size=8,
        **kw,
    )


def test_post_embedding_batches_match_the_cache(tiny_corpus, tiny_encoder):
    dm = make_dm(tiny_corpus, tiny_encoder, "post_tokens")
    assert dm.input_dim == 32
    batch = next(iter(dm.test_dataloader()))
    x, idx = batch["x"], batch["index"].numpy()
    lengths = [len(dm.task.texts[i]) for i in idx]
    assert x["posts"].shape[:2] == (8, max(lengths))
    assert x["post_mask"].sum(1).tolist() == lengths
    cache = PostEmbeddingCache(tiny_encoder, max_tokens=16, store_tokens=True, token_cap=8)
    first = dm.task.texts[idx[0]]
    expected = cache.embed(first)
    assert np.allclose(x["posts"][0, : len(first)].numpy(), expected, atol=1e-3)
    assert not x["posts"][0, len(first) :].any()  # padding stays zero
    values, offsets = cache.token_states(first[:1])
    n_tok = int(offsets[1] - offsets[0])
    assert int(x["token_mask"][0, 0].sum()) == n_tok <= 8
    assert np.allclose(x["tokens"][0, 0, :n_tok].numpy(), values[:n_tok], atol=1e-2)
    # order_of_text-2: class 2 users had a synthetic post prepended, class 1 appended
    assert dm.task.n_inserted[idx].min() >= 0


def test_pooled_only_has_no_tokens(tiny_corpus, tiny_encoder):
    dm = make_dm(tiny_corpus, tiny_encoder, "post_embeddings")
    x = next(iter(dm.val_dataloader()))["x"]
    assert set(x) == {"posts", "post_mask"}


@pytest.mark.parametrize("config", ["sherbert.yaml", "order_count.yaml"])
def test_hierarchical_models_train_through_the_cli(config, tiny_corpus, tiny_encoder, tmp_path):
    data = ["--data.encoder", tiny_encoder, "--data.max_tokens", "16", "--data.token_cap", "8"]
    data += ["--data.task", "order_of_text"]
    model = ["--model.init_args.net.init_args.hidden_size", "16", "--trainer.max_epochs", "1"]
    cli = make_cli(fit_args(config, tiny_corpus, *data, *model, *quiet_trainer(tmp_path, "h")))
    assert cli.model.net.input_dim == 32  # sized from the data module, not the 384 default
    metrics = cli.trainer.callback_metrics
    assert torch.isfinite(metrics["val_loss"]) and "val/ate_stratified" in metrics


def test_bf16_token_batches_under_bf16_training(tiny_corpus, tiny_encoder):
    """Under bf16-mixed the token tensor comes as bfloat16 (the same values, rounded); SHERBERT takes
    bf16 tokens in float32 training too, with nearly the float32 logits."""
    from types import SimpleNamespace

    from textcause.data.memory import keep_freed_memory
    from textcause.models.components import SHERBERT

    dm = make_dm(tiny_corpus, tiny_encoder, "post_tokens")
    fp32 = next(iter(dm.test_dataloader()))["x"]
    dm.trainer = SimpleNamespace(precision="bf16-mixed")
    bf16 = next(iter(dm.test_dataloader()))["x"]
    assert fp32["tokens"].dtype == torch.float32 and bf16["tokens"].dtype == torch.bfloat16
    assert torch.equal(bf16["tokens"], fp32["tokens"].to(torch.bfloat16))
    assert torch.equal(bf16["token_mask"], fp32["token_mask"]) and torch.equal(bf16["posts"], fp32["posts"])
    torch.manual_seed(0)
    net = SHERBERT(input_dim=32, hidden_size=16).eval()
    with torch.no_grad():
        ref, low = net(fp32), net(bf16)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            mixed = net(bf16).float()
    assert low.dtype == torch.float32 and torch.allclose(low, ref, atol=2e-2)
    assert torch.allclose(mixed, ref, atol=5e-2)
    assert keep_freed_memory() is True and keep_freed_memory() is True  # glibc on Linux; idempotent

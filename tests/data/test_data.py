"""The data module: task truth, sparse batches, splits, workers, memoised builds."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from textcause.data import CausalTextDataModule


def make_dm(corpus: str, **kw) -> CausalTextDataModule:
    kw.setdefault("min_users", 2)
    kw.setdefault("batch_size", 16)
    return CausalTextDataModule(corpus=corpus, task="linguistic_complexity", level=2, seed=3, **kw)


def test_batches_carry_features_and_truth(tiny_corpus):
    dm = make_dm(tiny_corpus)
    dm.setup("fit")
    batch = next(iter(dm.val_dataloader()))
    task = dm.task
    idx = batch["index"].numpy()
    assert np.array_equal(idx, task.split.val[:16])
    assert batch["x"].layout == torch.sparse_csr  # the layout the sparse products take
    assert tuple(batch["x"].shape) == (16, dm.input_dim)
    dense = batch["x"].to_dense().numpy()
    assert np.array_equal(dense, dm.features[idx].toarray())
    assert np.array_equal(batch["t"].numpy(), task.treatment[idx].astype(np.float32))
    assert np.array_equal(batch["p_true"].numpy(), task.propensity[idx].astype(np.float32))
    truth = dm.truth("test")
    assert np.array_equal(truth["index"], task.split.test)
    assert dm.true_ate == pytest.approx(0.4)


def test_train_loader_covers_the_train_split_and_workers_agree(tiny_corpus):
    dm = make_dm(tiny_corpus, num_workers=2)
    seen = np.concatenate([b["index"].numpy() for b in dm.train_dataloader()])
    assert np.array_equal(np.sort(seen), dm.task.split.train)
    dm0 = make_dm(tiny_corpus, num_workers=0)
    a = torch.cat([b["x"].to_dense() for b in dm.test_dataloader()])
    b = torch.cat([b["x"].to_dense() for b in dm0.test_dataloader()])
    assert torch.equal(a, b)


def test_lda_and_none_representations(tiny_corpus):
    lda = make_dm(tiny_corpus, representation="lda")
    batch = next(iter(lda.test_dataloader()))
    assert batch["x"].layout == torch.strided and batch["x"].shape[1] == 20
    assert torch.allclose(batch["x"].sum(1), torch.ones(batch["x"].shape[0]), atol=1e-4)
    none = make_dm(tiny_corpus, representation="none")
    assert none.input_dim == 0


def test_same_settings_reuse_the_build_and_seed_changes_the_task(tiny_corpus):
    a, b = make_dm(tiny_corpus), make_dm(tiny_corpus, batch_size=8)
    assert a.task is b.task  # memoised: batch size does not change what is built
    c = CausalTextDataModule(corpus=tiny_corpus, seed=4, min_users=2)
    assert not np.array_equal(a.task.treatment, c.task.treatment)


def test_bad_settings_raise_clear_errors(tiny_corpus):
    with pytest.raises(ValueError, match="predict_split"):
        CausalTextDataModule(corpus=tiny_corpus, predict_split="dev")
    with pytest.raises(ValueError, match="batch_size"):
        CausalTextDataModule(corpus=tiny_corpus, batch_size=0)
    with pytest.raises(ValueError, match="no_such_task|Unknown task"):
        CausalTextDataModule(corpus=tiny_corpus, task="no_such_task").setup()


def test_maxabs_scaling_uses_training_rows_and_keeps_count_ratios(tiny_corpus):
    raw = make_dm(tiny_corpus, representation="bigram_counts")
    scaled = make_dm(tiny_corpus, representation="bigram_counts", scale="maxabs")
    x, z = raw.features.toarray(), scaled.features.toarray()
    train = raw.task.split.train
    col_max = x[train].max(axis=0)
    used = col_max > 0
    assert np.allclose(z[:, used], x[:, used] / col_max[used], atol=1e-6)
    assert np.allclose(z[train].max(axis=0)[used], 1.0)
    # canonical (each row's columns sorted), so that no batch is sorted again on its way to torch
    assert scaled.features.has_sorted_indices and scaled.features.has_canonical_format
    logged = make_dm(tiny_corpus, representation="bigram_counts", scale="log1p")
    assert np.allclose(logged.features.toarray(), np.log1p(x), atol=1e-6)
    with pytest.raises(ValueError, match="'scale' parameter"):
        CausalTextDataModule(corpus=tiny_corpus, scale="zscore")


def test_maxabs_scaling_of_a_sparse_matrix_keeps_every_entry_and_sorts_each_row():
    import scipy.sparse as sp

    from textcause.data.featurizer import apply_scale, maxabs_factor

    rng = np.random.default_rng(3)
    x = sp.random(40, 300, density=0.05, format="csr", random_state=3, dtype=np.float32)
    x.data = rng.integers(1, 9, x.nnz).astype(np.float32)
    factor = maxabs_factor(x, np.arange(30))
    scaled = apply_scale(x, "maxabs", factor)
    before = (x @ sp.diags(factor)).tocsr().astype(np.float32)  # the product as it was, rows unsorted
    assert not before.has_sorted_indices
    assert scaled.has_sorted_indices and scaled.dtype == np.float32
    assert (scaled != before).nnz == 0 and scaled.nnz == before.nnz
    np.testing.assert_array_equal(scaled.toarray(), before.toarray())

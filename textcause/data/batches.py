"""Collate functions: unit indices -> a batch dict of features and causal labels.

A batch is ``{"x": features, "t": T, "y": Y, "p_true": true propensity, "index": unit index}``.
Sparse feature matrices stay sparse (a torch sparse tensor per batch); dense ones (LDA topic
proportions) become float32 tensors. The collate object is picklable, so ``num_workers > 0`` works.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch.utils.data import Dataset

__all__ = [
    "FeatureCollate",
    "HistoryCollate",
    "IndexDataset",
]


class IndexDataset(Dataset[int]):
    """A dataset of unit (or example) indices; a collate function turns a list of them into a batch."""

    def __init__(self, indices: np.ndarray) -> None:
        self.indices = np.asarray(indices, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i: int) -> int:
        return int(self.indices[i])


class FeatureCollate:
    """Build batches from rows of a feature matrix and per-unit arrays.

    Args:
        features: an (n_units, dim) scipy sparse matrix or numpy array.
        treatment: T per unit.
        outcome: Y per unit.
        propensity: the true propensity per unit.
    """

    def __init__(self, features: Any, treatment: np.ndarray, outcome: np.ndarray, propensity: np.ndarray) -> None:
        # scipy-stubs narrow issparse() to SparseABC, which declares no tocsr()
        self.features = features.tocsr() if sp.issparse(features) else np.asarray(features, dtype=np.float32)  # type: ignore[attr-defined]
        self.t = torch.as_tensor(np.asarray(treatment, dtype=np.float32))
        self.y = torch.as_tensor(np.asarray(outcome, dtype=np.float32))
        self.p = torch.as_tensor(np.asarray(propensity, dtype=np.float32))

    def rows(self, idx: np.ndarray) -> torch.Tensor:
        if sp.issparse(self.features):
            from textcause.features.torch_sparse import collate_sparse_rows

            return collate_sparse_rows(self.features, idx, layout="csr")  # the sparse products' own layout
        return torch.from_numpy(self.features[idx])

    def __call__(self, indices: Sequence[int]) -> dict[str, torch.Tensor]:
        idx = np.asarray(indices, dtype=np.int64)
        i = torch.from_numpy(idx)
        return {"x": self.rows(idx), "t": self.t[i], "y": self.y[i], "p_true": self.p[i], "index": i}


class HistoryCollate:
    """Build batches of padded post-embedding histories from a frozen-encoder cache.

    ``x`` is ``{"posts": (B, P, D), "post_mask": (B, P)}`` with histories padded on the right to the
    longest in the batch, and with ``use_tokens`` also ``{"tokens": (B, P, L, D), "token_mask":
    (B, P, L)}`` padded to the longest post in the batch.

    Args:
        histories: a :class:`~textcause.features.embeddings.HistoryEmbeddings` (unique-post table
            and each user's rows in it).
        treatment: per-unit treatments, as for :class:`FeatureCollate`.
        outcome: per-unit outcomes.
        propensity: per-unit true propensities.
        use_tokens: also serve token states (the cache must hold them).
        token_dtype: the dtype of ``tokens`` (float32, or bfloat16 for bf16-mixed training: the
            (B, P, L, D) token tensor is most of a batch's bytes, and autocast would cast it anyway).
    """

    def __init__(
        self,
        histories: Any,
        treatment: np.ndarray,
        outcome: np.ndarray,
        propensity: np.ndarray,
        *,
        use_tokens: bool = False,
        token_dtype: torch.dtype = torch.float32,
    ) -> None:
        if use_tokens and histories.token_values is None:
            raise ValueError(
                "Token states were requested but the embedding cache holds none: build it with store_tokens=True."
            )
        self.h = histories
        self.use_tokens = use_tokens
        self.token_dtype = token_dtype
        self.t = torch.as_tensor(np.asarray(treatment, dtype=np.float32))
        self.y = torch.as_tensor(np.asarray(outcome, dtype=np.float32))
        self.p = torch.as_tensor(np.asarray(propensity, dtype=np.float32))

    def inputs(self, idx: np.ndarray) -> dict[str, torch.Tensor]:
        ids = [self.h.post_ids[i] for i in idx]
        lengths = np.array([len(a) for a in ids])
        b, p = len(ids), int(lengths.max())
        rows = np.repeat(np.arange(b), lengths)
        cols = np.concatenate([np.arange(n) for n in lengths])
        flat = np.concatenate(ids)
        vectors = self.h.vectors
        posts = np.zeros((b, p, vectors.shape[1]), dtype=np.float32)
        posts[rows, cols] = vectors[flat]
        mask = np.zeros((b, p), dtype=bool)
        mask[rows, cols] = True
        x = {"posts": torch.from_numpy(posts), "post_mask": torch.from_numpy(mask)}
        if self.use_tokens:
            off = self.h.token_offsets
            n_tok = off[flat + 1] - off[flat]
            cap = int(n_tok.max()) if len(n_tok) else 1
            post_of_tok = np.repeat(np.arange(len(flat)), n_tok)
            pos_in_post = np.arange(int(n_tok.sum())) - np.repeat(np.cumsum(n_tok) - n_tok, n_tok)
            src = np.repeat(off[flat], n_tok) + pos_in_post
            at = (
                torch.from_numpy(rows[post_of_tok]),
                torch.from_numpy(cols[post_of_tok]),
                torch.from_numpy(pos_in_post),
            )
            tokens = torch.zeros((b, p, cap, vectors.shape[1]), dtype=self.token_dtype)
            tokens[at] = torch.from_numpy(np.ascontiguousarray(self.h.token_values[src])).to(self.token_dtype)
            tmask = torch.zeros((b, p, cap), dtype=torch.bool)
            tmask[at] = True
            x["tokens"], x["token_mask"] = tokens, tmask
        return x

    def __call__(self, indices: Sequence[int]) -> dict[str, Any]:
        idx = np.asarray(indices, dtype=np.int64)
        i = torch.from_numpy(idx)
        return {"x": self.inputs(idx), "t": self.t[i], "y": self.y[i], "p_true": self.p[i], "index": i}

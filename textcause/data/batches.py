"""Collate functions: unit indices -> a batch dict of features and causal labels.

A batch is ``{"x": features, "t": T, "y": Y, "p_true": true propensity, "index": unit index}``.
Sparse feature matrices stay sparse (a torch sparse tensor per batch); dense ones (LDA topic
proportions) become float32 tensors. The collate object is picklable, so ``num_workers > 0`` works.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp
import torch


class FeatureCollate:
    """Build batches from rows of a feature matrix and per-unit arrays.

    Args:
        features: an (n_units, dim) scipy sparse matrix or numpy array.
        treatment: T per unit.
        outcome: Y per unit.
        propensity: the true propensity per unit.
    """

    def __init__(self, features: Any, treatment: np.ndarray, outcome: np.ndarray, propensity: np.ndarray) -> None:
        self.features = features.tocsr() if sp.issparse(features) else np.asarray(features, dtype=np.float32)
        self.t = torch.as_tensor(np.asarray(treatment, dtype=np.float32))
        self.y = torch.as_tensor(np.asarray(outcome, dtype=np.float32))
        self.p = torch.as_tensor(np.asarray(propensity, dtype=np.float32))

    def rows(self, idx: np.ndarray) -> torch.Tensor:
        if sp.issparse(self.features):
            from textcause.features.torch_sparse import collate_sparse_rows

            return collate_sparse_rows(self.features, idx)
        return torch.from_numpy(self.features[idx])

    def __call__(self, indices: Sequence[int]) -> dict[str, torch.Tensor]:
        idx = np.asarray(indices, dtype=np.int64)
        i = torch.from_numpy(idx)
        return {"x": self.rows(idx), "t": self.t[i], "y": self.y[i], "p_true": self.p[i], "index": i}

"""A tiny LightningDataModule with a known treatment signal, shared by the model and callback tests."""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import DataLoader

from textcause.data.serving import SplitServing


class ToyData(SplitServing):
    """Sparse random features with a real treatment signal in feature 0.

    Args:
        n: number of units.
        dim: number of features.
        n_val: units in the validation split (the last ``n_val``).
        batch_size: units per batch.
        seed: the data seed.
        layout: ``coo``, ``csr`` or ``dense`` feature batches.
    """

    def __init__(
        self, n: int = 300, dim: int = 20, n_val: int = 101, batch_size: int = 32, seed: int = 0, layout: str = "coo"
    ) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        self.x = (rng.random((n, dim)) < 0.3).astype(np.float32)
        self.p = 1.0 / (1.0 + np.exp(-(4.0 * self.x[:, 0] - 2.0)))
        self.t = (rng.random(n) < self.p).astype(np.float32)
        self.y = (rng.random(n) < 0.1 + 0.3 * self.t + 0.4 * self.x[:, 0]).astype(np.float32)
        self.split = {"train": np.arange(n - n_val), "val": np.arange(n - n_val, n)}
        self.batch_size, self.layout = batch_size, layout
        self.true_ate = 0.3

    @property
    def input_dim(self) -> int:
        return int(self.x.shape[1])

    def truth(self, split: str) -> dict[str, np.ndarray]:
        idx = self.split[split]
        return {"index": idx, "t": self.t[idx], "y": self.y[idx], "p_true": self.p[idx]}

    def collate(self, idx: list[int]) -> dict[str, torch.Tensor]:
        i = np.asarray(idx, dtype=np.int64)
        x = torch.from_numpy(self.x[i])
        x = x.to_sparse_coo() if self.layout == "coo" else x.to_sparse_csr() if self.layout == "csr" else x
        as_t = lambda a: torch.from_numpy(np.asarray(a[i], dtype=np.float32))  # noqa: E731
        return {"x": x, "t": as_t(self.t), "y": as_t(self.y), "p_true": as_t(self.p), "index": torch.from_numpy(i)}

    def loader(self, split: str, *, shuffle: bool = False) -> DataLoader:
        return DataLoader(
            self.split[split].tolist(),
            batch_size=self.batch_size,
            shuffle=shuffle,
            collate_fn=self.collate,
            generator=torch.Generator().manual_seed(0) if shuffle else None,
        )

    def predict_dataloader(self) -> DataLoader:
        return self.loader("val")

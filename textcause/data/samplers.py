"""Training orders for examples of unequal length: a seeded random order, bucketed by length.

:class:`LengthBucketSampler` serves the fine-tuning data modules (the masked-gender task's
``GenderDataModule`` and counterfactual recognition's ``SemEvalDataModule``): a batch padded to its
longest example pads little when its examples have similar lengths, and the order stays random
across batches.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from torch.utils.data import Sampler

__all__ = ["LengthBucketSampler"]


class LengthBucketSampler(Sampler[int]):
    """A seeded random order of example positions, bucketed by length, re-drawn every epoch.

    Each epoch draws a random permutation of the positions (generator seeded with
    ``seed + epoch``); with ``buckets`` > 0 it cuts the permutation into runs of
    ``batch_size * buckets`` positions, sorts each run by length (stable), cuts the runs into
    batches of ``batch_size`` (a run's last batch may be shorter) and shuffles the batches. With
    ``buckets`` 0 the permutation itself is the order.

    Args:
        lengths: the length of each example of the dataset.
        batch_size: the loader's batch size.
        buckets: batches per bucket (0: a plain random order).
        seed: the order's seed (epoch ``e`` uses ``seed + e``).

    Example:
        >>> sampler = LengthBucketSampler([3, 1, 2, 5], batch_size=2, buckets=0, seed=0)
        >>> sorted(sampler)
        [0, 1, 2, 3]
    """

    def __init__(self, lengths: np.ndarray, batch_size: int, buckets: int, seed: int) -> None:
        self.lengths = np.asarray(lengths)
        self.batch_size, self.buckets, self.seed = batch_size, buckets, seed
        self.epoch = 0

    def __len__(self) -> int:
        return len(self.lengths)

    def __iter__(self) -> Iterator[int]:
        rng = np.random.default_rng(self.seed + self.epoch)
        self.epoch += 1
        order = rng.permutation(len(self.lengths))
        if not self.buckets:
            return iter(order.tolist())
        size = self.batch_size * self.buckets
        runs = [order[i : i + size] for i in range(0, len(order), size)]
        runs = [r[np.argsort(self.lengths[r], kind="stable")] for r in runs]
        batches = [b for r in runs for b in np.array_split(r, range(self.batch_size, len(r), self.batch_size))]
        return iter(np.concatenate([batches[i] for i in rng.permutation(len(batches))]).tolist())

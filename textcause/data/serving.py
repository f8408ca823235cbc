"""What the package's data modules share in serving their splits.

:class:`SplitServing` gives a data module the four dataloader hooks of Lightning from one
``loader(split, shuffle=...)``; :func:`check_serving` checks the serving options every data module
takes; :func:`length_ordered_loader` serves the fine-tuning data modules (the masked-gender task's
``GenderDataModule`` and counterfactual recognition's ``SemEvalDataModule``): training examples in
the seeded, length-bucketed random order of :class:`~textcause.data.samplers.LengthBucketSampler`,
evaluation examples sorted by length.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Optional, TypeVar

import lightning as L
import numpy as np
from torch.utils.data import DataLoader

from textcause.data.batches import IndexDataset
from textcause.data.samplers import LengthBucketSampler
from textcause.validation import check_int, check_options

__all__ = [
    "SplitServing",
    "check_serving",
    "length_ordered_loader",
]

_Settings = TypeVar("_Settings")


class SplitServing(L.LightningDataModule):
    """A data module whose train / val / test / predict loaders all come from :meth:`loader`.

    The training loader is ``loader("train", shuffle=True)``; validation and test are
    ``loader("val")`` and ``loader("test")``; prediction serves ``hparams.predict_split``.
    """

    def settings_from_hparams(self, kind: type[_Settings], owner: str, splits: Sequence[str]) -> _Settings:
        """The settings dataclass ``kind`` from the saved hyperparameters of its fields, after
        :func:`check_serving` of the serving options among them (``length_buckets`` where there is one).

        Args:
            kind: the settings dataclass (what is built).
            owner: the data module's name, for the messages.
            splits: the split names ``predict_split`` may take.

        Raises:
            ValueError: a serving option out of its range (or the settings' own checks).
        """
        hp = self.hparams
        check_serving(
            owner,
            batch_size=hp["batch_size"],
            num_workers=hp["num_workers"],
            predict_split=hp["predict_split"],
            splits=splits,
            length_buckets=hp.get("length_buckets"),
        )
        return kind(**{f.name: hp[f.name] for f in dataclasses.fields(kind)})  # type: ignore[arg-type]

    def loader(self, split: str, *, shuffle: bool = False) -> DataLoader[Any]:
        """The loader of one split (``shuffle``: the training order); a subclass defines it."""
        raise NotImplementedError

    def train_dataloader(self) -> DataLoader[Any]:
        return self.loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader[Any]:
        return self.loader("val")

    def test_dataloader(self) -> DataLoader[Any]:
        return self.loader("test")

    def predict_dataloader(self) -> DataLoader[Any]:
        return self.loader(self.hparams["predict_split"])


def check_serving(
    owner: str,
    *,
    batch_size: int,
    num_workers: int,
    predict_split: str,
    splits: Sequence[str],
    length_buckets: Optional[int] = None,
) -> None:
    """Check a data module's serving options (one ``ValueError`` sentence naming ``owner`` otherwise).

    Args:
        owner: the data module's name, for the message.
        batch_size: examples per batch (an int >= 1).
        num_workers: DataLoader worker processes (an int >= 0).
        predict_split: the split ``predict_dataloader`` serves (one of ``splits``).
        splits: the split names.
        length_buckets: training batches per length bucket (an int >= 0; None: not an option).

    Raises:
        ValueError: an option out of its range.

    Examples:
        >>> check_serving("M", batch_size=0, num_workers=0, predict_split="test", splits=("test",))
        Traceback (most recent call last):
        ...
        ValueError: The 'batch_size' parameter of M must be an int >= 1. Got 0 instead.
    """
    check_int(batch_size, "batch_size", owner, low=1)
    if length_buckets is not None:
        check_int(length_buckets, "length_buckets", owner, low=0)
    check_int(num_workers, "num_workers", owner, low=0)
    check_options(predict_split, "predict_split", owner, splits)


def length_ordered_loader(
    indices: np.ndarray,
    lengths: np.ndarray,
    collate_fn: Callable[[list[int]], Any],
    *,
    shuffle: bool,
    batch_size: int,
    length_buckets: int,
    seed: int,
    num_workers: int,
    trainer: Any = None,
) -> DataLoader[Any]:
    """A loader over the examples ``indices`` of one split, whose lengths are ``lengths``.

    With ``shuffle`` the order is :class:`~textcause.data.samplers.LengthBucketSampler`'s (seeded,
    re-drawn every epoch); otherwise the examples are sorted by length (stable), and under DDP
    (``trainer.world_size`` > 1) Lightning's ``UnrepeatedDistributedSampler`` gives each example to
    exactly one rank. A batch is ``collate_fn`` of the example indices it holds.

    Args:
        indices: the split's example indices (what ``collate_fn`` receives).
        lengths: the length of each of them, in the same order.
        collate_fn: example indices -> a batch.
        shuffle: the training order (else: sorted by length).
        batch_size: examples per batch.
        length_buckets: training batches per length bucket (0: plain random batches).
        seed: the training order's seed.
        num_workers: DataLoader worker processes (persistent when > 0).
        trainer: the attached trainer, for DDP (None: one process).
    """
    indices, lengths = np.asarray(indices), np.asarray(lengths)
    sampler: Any = None
    if shuffle:
        sampler = LengthBucketSampler(lengths, batch_size, length_buckets, seed)
    else:
        indices = indices[np.argsort(lengths, kind="stable")]
    dataset = IndexDataset(indices)
    if not shuffle and trainer is not None and trainer.world_size > 1:
        from lightning.pytorch.overrides.distributed import UnrepeatedDistributedSampler

        sampler = UnrepeatedDistributedSampler(
            dataset, num_replicas=trainer.world_size, rank=trainer.global_rank, shuffle=False
        )
    return DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        num_workers=num_workers,
        collate_fn=collate_fn,
        persistent_workers=num_workers > 0,
    )

"""A training loader whose position survives a checkpoint, so a killed run resumes exactly.

Lightning saves and restores any training loader that has ``state_dict`` / ``load_state_dict``
(its "stateful" protocol) with the fit loop's progress. :class:`ResumableLoader` is a plain
:class:`~torch.utils.data.DataLoader` that adds them:

- its shuffle is a :class:`ResumableRandomSampler` drawing from the loader's own seeded generator
  (the same draws, in the same order, as ``DataLoader(shuffle=True, generator=g)``, so uninterrupted
  runs are unchanged);
- ``state_dict()`` records the generator's state at the start of the current epoch (before the
  iterator's base-seed draw and the epoch's permutation) and how many of the epoch's batches the
  fit loop has processed, or, once the epoch is done, the generator's state for the next epoch;
- ``load_state_dict()`` restores that state at once (Lightning calls it before the epoch's iterator
  is made) and makes the next epoch skip the batches already trained on.

A resumed run therefore sees the same permutation and continues from the next unseen batch. Under
DDP Lightning swaps the sampler for its distributed one; the loader then reports no state and a
mid-epoch resume is only approximate (Lightning warns).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Optional

import torch
from torch.utils.data import DataLoader, RandomSampler

__all__ = [
    "ResumableLoader",
    "ResumableRandomSampler",
    "resumable_loader",
]


class ResumableRandomSampler(RandomSampler):
    """:class:`~torch.utils.data.RandomSampler` (with a generator) that can skip the start of one epoch."""

    def __init__(self, data_source: Any, generator: torch.Generator) -> None:
        super().__init__(data_source, generator=generator)
        self.skip = 0  # indices to drop at the start of the next epoch (set by a restore)

    def __iter__(self) -> Iterator[int]:
        skip, self.skip = self.skip, 0
        for i, index in enumerate(super().__iter__()):
            if i >= skip:
                yield index


class ResumableLoader(DataLoader[Any]):
    """A shuffling ``DataLoader`` with Lightning's stateful-loader protocol (see the module docstring).

    Build it with ``sampler=ResumableRandomSampler(dataset, generator=g)`` and ``generator=g``, then set
    :attr:`progress` to a function returning the fit loop's processed batches in the current epoch.
    """

    progress: Optional[Callable[[], int]] = None
    _epoch_state: Optional[torch.Tensor] = None

    def __iter__(self) -> Any:
        if self.generator is not None:
            self._epoch_state = self.generator.get_state().clone()
        return super().__iter__()

    def _resumable(self) -> bool:
        return isinstance(self.sampler, ResumableRandomSampler) and self.generator is not None

    def state_dict(self) -> dict[str, Any]:
        if not self._resumable() or self._epoch_state is None:
            return {"resumable": False}
        done = int(self.progress()) if self.progress is not None else 0
        if done >= len(self):  # the epoch is over: the next one starts from the generator as it is now
            return {"resumable": True, "generator": self.generator.get_state().clone(), "skip": 0}
        return {"resumable": True, "generator": self._epoch_state.clone(), "skip": done * int(self.batch_size or 1)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if not state.get("resumable") or not self._resumable():
            return
        self.generator.set_state(state["generator"])
        sampler = self.sampler
        if not isinstance(sampler, ResumableRandomSampler):  # _resumable() checked it
            raise RuntimeError("Internal error: a resumable loader without its resumable sampler.")
        sampler.skip = int(state["skip"])


def resumable_loader(module: Any, dataset: Any, batch_size: int, seed: int, **kwargs: Any) -> ResumableLoader:
    """The shuffled training loader of a data module: a :class:`ResumableLoader` seeded by ``seed`` whose
    progress is read from ``module``'s trainer (the batches its fit loop has processed this epoch)."""
    generator = torch.Generator().manual_seed(seed)
    loader = ResumableLoader(
        dataset,
        batch_size=batch_size,
        sampler=ResumableRandomSampler(dataset, generator=generator),
        generator=generator,
        persistent_workers=kwargs.get("num_workers", 0) > 0,
        **kwargs,
    )

    def progress() -> int:
        trainer = getattr(module, "trainer", None)
        return int(trainer.fit_loop.epoch_loop.batch_progress.current.processed) if trainer is not None else 0

    loader.progress = progress
    return loader

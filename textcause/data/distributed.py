"""Distributed runs: one build of the caches per machine, and evaluation samplers that never repeat a unit.

Under ``torchrun`` or SLURM's ``srun`` every rank runs ``train.py`` from the start, and each one
builds its data when the CLI instantiates the data module (the network's ``input_dim`` comes from
it), before Lightning has a process group. Without coordination every rank would fit the same
n-grams and encode the same posts into the same cache. :func:`one_build_at_a_time` makes the ranks
of a machine take turns on a file lock in the cache root, keyed by the data settings: the first
rank through builds and fills the caches, then leaves a marker; every later rank finds the marker,
lets go of the lock at once and reads the caches, all of them at the same time.

Correctness never depends on the lock or the marker (cache entries are written atomically and keyed
by content; a stale marker only means a rank builds what is missing itself), only the work does.
The lock is taken only in a process that belongs to a multi-process job (``WORLD_SIZE`` or
``SLURM_NTASKS`` above 1), so a one-process run does exactly what it always did. Lightning's own
launchers need nothing from it: its subprocess launcher starts ranks 1.. after rank 0 has built the
data, ``ddp_fork`` children share the parent's build, and a data module built later (in ``setup``)
is built on local rank 0 first, in ``prepare_data``, behind Lightning's barrier.

:func:`evaluation_sampler` serves the validation, test and predict splits under DDP.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

from torch.utils.data import Sampler

__all__ = [
    "evaluation_sampler",
    "launched_world_size",
    "one_build_at_a_time",
]


def launched_world_size() -> int:
    """The number of processes of the job this process was launched in (1 outside a distributed launch).

    Read from the environment that ``torchrun`` and Lightning's launchers (``WORLD_SIZE``) or SLURM
    (``SLURM_NTASKS``) set; a process group need not exist yet.
    """
    sizes = []
    for name in ("WORLD_SIZE", "SLURM_NTASKS"):
        try:
            sizes.append(int(os.environ.get(name, "1")))
        except ValueError:
            sizes.append(1)
    return max(sizes)


def _lock_dir() -> Path:
    from textcause.paths import cache_root

    return Path(cache_root()) / "locks"


@contextlib.contextmanager
def one_build_at_a_time(key: str) -> Iterator[None]:
    """Take turns with the other ranks of this machine on the build of ``key`` (see the module docstring).

    The body is the build. The first rank runs it holding the lock and leaves the marker when it
    ends without an error; a rank that finds the marker runs it without the lock (cache hits). In a
    one-process run this does nothing.
    """
    if launched_world_size() <= 1:
        yield
        return
    folder = _lock_dir()
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / f"build-{key}.done"
    if marker.exists():
        yield
        return
    with open(folder / f"build-{key}.lock", "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file is closed, even if this process dies
        try:
            first = not marker.exists()
            if not first:
                fcntl.flock(fh, fcntl.LOCK_UN)  # done by another rank: read the caches concurrently
            yield
            if first:
                marker.touch()
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def evaluation_sampler(dataset: Any, trainer: Any, split: str) -> Optional[Sampler[int]]:
    """The sampler of an evaluation split: each unit on exactly one rank under DDP, None otherwise.

    Lightning's default distributed sampler pads a split whose size the world size does not divide
    with repeated units, which would count twice in a loss or an estimate. This one
    (Lightning's ``UnrepeatedDistributedSampler``) gives rank ``r`` the units ``r, r + W, ...`` in
    order, so the ranks together see every unit once; a rank may get one unit fewer.

    Args:
        dataset: the split's dataset.
        trainer: the attached trainer (None or a one-process trainer: no sampler, the loader's own order).
        split: the split's name, for the error message.

    Raises:
        ValueError: the split has fewer units than there are processes: a rank without a batch would
            wait forever for the others at the end of the epoch.
    """
    world = int(getattr(trainer, "world_size", 1) or 1) if trainer is not None else 1
    if world <= 1:
        return None
    if len(dataset) < world:
        raise ValueError(
            f"The {split} split has {len(dataset)} units, fewer than the {world} processes: every process "
            "needs at least one; use fewer devices or a larger split."
        )
    from lightning.pytorch.overrides.distributed import UnrepeatedDistributedSampler

    return UnrepeatedDistributedSampler(dataset, num_replicas=world, rank=int(trainer.global_rank), shuffle=False)

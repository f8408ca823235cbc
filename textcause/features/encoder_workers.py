"""A frozen encoder's worker processes: one torch thread each, one per core, the batches shared out.

Small matmuls of short posts do not keep two threads of one forward pass busy, so a large encode runs
in worker processes of one torch thread each, one per core (:func:`workers_for` decides how many;
measured in ``benchmarks/README.md``). A task is a run of :data:`BATCHES_PER_TASK` consecutive
length-sorted batches; the vectors are gathered back in order in the parent, which alone writes the
cache. On Linux the workers are forked and inherit the loaded (and cast) weights, as DataLoader
workers do; elsewhere they are spawned and load the weights themselves.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["BATCHES_PER_TASK", "PARALLEL_MIN_POSTS", "WorkerPool", "can_fork", "workers_for"]

#: ``processes=None`` uses worker processes only for a call with at least this many posts (a few
#: seconds of work on 2 cores): smaller calls gain less than forking the workers and their last
#: unbalanced task cost.
PARALLEL_MIN_POSTS = 2048
#: Batches per task sent to a worker process (enough to amortise the pickling, few enough to balance).
BATCHES_PER_TASK = 8


def can_fork() -> bool:
    """Whether worker processes can be forked (Linux): no re-import of the caller's main script."""
    import multiprocessing
    import sys

    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def workers_for(n: int, processes: int | None, num_threads: int | None) -> int:
    """How many worker processes a call with ``n`` posts uses (1: none).

    Never from a daemonic process (a pool's worker may not start processes of its own). In auto mode
    (``processes`` None), one per core when forking is possible, ``num_threads`` is not set and
    ``n >= PARALLEL_MIN_POSTS``, and at most this process's torch thread budget: a grid worker given
    one thread (``textcause benchmark --workers 2`` on 2 cores) encodes in its own process.

    Args:
        n: the posts of the call.
        processes: the encoder's ``processes`` setting.
        num_threads: the encoder's ``num_threads`` setting.
    """
    import multiprocessing
    import os

    import torch

    if multiprocessing.current_process().daemon:
        return 1
    if processes is not None:
        return processes
    cores = min(os.cpu_count() or 1, torch.get_num_threads())
    if num_threads is not None or cores < 2 or n < PARALLEL_MIN_POSTS or not can_fork():
        return 1
    return cores


class WorkerPool:
    """The worker processes of one encoder: started on first use, stopped by :meth:`close` or when
    the encoder is garbage-collected.

    Attributes:
        executor: the ``ProcessPoolExecutor``, or None before the first start and after :meth:`close`.
        workers: its number of processes.
    """

    def __init__(self) -> None:
        self.executor: Any = None
        self.workers = 0
        self._finalizer: Any = None

    def start(self, encoder: Any, workers: int) -> Any:
        """The executor of ``workers`` processes for ``encoder``, started once (again after a break).

        Forked on Linux (they inherit ``encoder``'s loaded weights, cast for its precision first, and
        run one thread each), spawned elsewhere (they build an encoder of the same settings).
        """
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing.context import BaseContext

        if self.executor is not None and self.workers == workers and not getattr(self.executor, "_broken", False):
            return self.executor
        self.close()
        context: BaseContext
        init: weakref.ref[Any] | tuple[type, dict[str, Any]]
        if can_fork():
            # a weak reference: a forked child resolves it to its copy of the encoder, and the pool
            # (which keeps its initargs) does not keep the encoder alive
            context, init = multiprocessing.get_context("fork"), weakref.ref(encoder)
        else:
            context = multiprocessing.get_context("spawn")
            init = (
                type(encoder),
                {
                    "encoder": encoder.spec,
                    "max_tokens": encoder.max_tokens,
                    "pooling": encoder.pooling,
                    "normalize": encoder.normalize,
                    "precision": encoder.precision_used,
                    "batch_size": encoder.batch_size,
                    "batch_tokens": encoder.batch_tokens,
                    "layer": encoder.layer,
                    "attention": encoder.attention,
                    "packed": encoder.packed,
                },
            )
        encoder._set_precision(encoder.precision_used)  # forked workers inherit the cast weights
        self.executor = ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker, initargs=(init,))
        self.workers = workers
        self._finalizer = weakref.finalize(encoder, self.executor.shutdown, wait=False, cancel_futures=True)
        return self.executor

    def close(self) -> None:
        """Stop the worker processes, if any."""
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)
            self.executor = None

    def encode(
        self,
        encoder: Any,
        ids: Sequence[Sequence[int]],
        batches: list[np.ndarray],
        workers: int,
        token_cap: int | None,
        vectors: np.ndarray,
        values: np.ndarray | None,
        offsets: np.ndarray | None,
        progress: Callable[[int], Any] | None,
        meanwhile: Callable[[], Any] | None,
    ) -> None:
        """Encode ``batches`` (index arrays into ``ids``) in the worker processes, filling ``vectors``
        (and the token ``values`` at ``offsets``) in place.

        The worker batches a task's posts exactly as ``encoder`` would (they arrive sorted by length),
        so each post is padded with the same neighbours. The longest tasks go first, so the workers
        finish together (the last tasks are the shortest). ``meanwhile`` is called once while they work.

        Raises:
            RuntimeError: a worker died (out of memory, killed); the pool is closed.
        """
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        pool = self.start(encoder, workers)
        tasks = [np.concatenate(batches[i : i + BATCHES_PER_TASK]) for i in range(0, len(batches), BATCHES_PER_TASK)]
        pending: dict[Any, np.ndarray] = {}
        try:
            for idx in tasks[::-1]:
                pending[pool.submit(_encode_task, [list(ids[i]) for i in idx], token_cap)] = idx
            if meanwhile is not None:
                meanwhile()
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    idx = pending.pop(future)
                    part = future.result()
                    vectors[idx] = part.vectors
                    if token_cap:
                        if values is None or offsets is None:  # given with token_cap
                            raise RuntimeError("Internal error: token states asked for without their buffers.")
                        for row, i in enumerate(idx):
                            values[offsets[i] : offsets[i + 1]] = part.token_values[
                                part.token_offsets[row] : part.token_offsets[row + 1]
                            ]
                    encoder.forward_calls += part.forward_calls
                    if progress is not None:
                        progress(len(idx))
        except BrokenProcessPool as err:
            self.close()
            raise RuntimeError(
                f"An encoding worker process of {encoder.spec.name!r} died (out of memory or killed); "
                "nothing of this call was kept. Rerun with processes=1 to encode in this process."
            ) from err
        finally:
            for future in pending:
                future.cancel()


@dataclass
class _TaskResult:
    vectors: np.ndarray
    token_values: np.ndarray | None
    token_offsets: np.ndarray | None
    forward_calls: int


_ENCODER: Any = None  # this worker process's encoder


def _init_worker(encoder: weakref.ref[Any] | tuple[type, dict[str, Any]]) -> None:
    """Set up this worker process's encoder with one torch thread: the forked parent's own (weights
    already loaded and cast), or a new one built from the parent's settings (spawned)."""
    global _ENCODER
    import torch

    torch.set_num_threads(1)
    if isinstance(encoder, weakref.ref):
        own = encoder()
        if own is None:  # the parent's encoder, alive while its pool is
            raise RuntimeError("Internal error: the encoder of a worker pool is gone.")
        own._workers = WorkerPool()  # the parent's workers are not this process's
        own.num_threads, own.processes = 1, 1
        _ENCODER = own
    else:
        factory, settings = encoder
        _ENCODER = factory(**settings, num_threads=1, processes=1)
        _ENCODER._set_precision(_ENCODER.precision_used)


def _encode_task(ids: list[list[int]], token_cap: int | None) -> _TaskResult:
    """Encode one task's posts (sorted by length) in a worker process."""
    enc = _ENCODER
    before = enc.forward_calls
    out = enc.encode_ids(ids, token_cap=token_cap)
    return _TaskResult(out.vectors, out.token_values, out.token_offsets, enc.forward_calls - before)

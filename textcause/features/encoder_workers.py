"""A frozen encoder's worker processes: one torch thread each, one per core, the batches shared out.

Small matmuls of short posts do not keep two threads of one forward pass busy, so a large encode runs
in worker processes of one torch thread each, one per core (:func:`workers_for` decides how many;
measured in ``benchmarks/README.md``). A task is a run of :data:`BATCHES_PER_TASK` consecutive
length-sorted batches; the vectors are gathered back in order in the parent, which alone writes the
cache. On Linux the workers are forked and inherit the loaded (and cast) weights, as DataLoader
workers do; elsewhere they are spawned and load the weights themselves.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "BATCHES_PER_TASK",
    "PARALLEL_MIN_POSTS",
    "PLAN_ENV",
    "EncodePlan",
    "WorkerPool",
    "available_cpus",
    "can_fork",
    "cgroup_cpu_quota",
    "encode_plan",
    "workers_for",
]

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


#: An explicit plan for every encoder of the process, ``"PxT"``: P worker processes of T torch threads
#: each (``"1x2"``: in this process on 2 threads; ``"2x1"``: two single-threaded workers). The
#: encoder's own ``processes`` / ``num_threads`` arguments still win over it.
PLAN_ENV = "TEXTCAUSE_ENCODER_PLAN"


@dataclass(frozen=True)
class EncodePlan:
    """How one encode call runs: ``processes`` worker processes (1: in this process) of ``threads``
    torch threads each, and why (``reason``)."""

    processes: int
    threads: int
    reason: str

    def describe(self) -> str:
        return f"{self.processes}x{self.threads} ({self.reason})"


def cgroup_cpu_quota(root: str = "/sys/fs/cgroup") -> float | None:
    """The CPUs this process's cgroup may use (quota / period), or None where there is no limit.

    Reads cgroup v2's ``cpu.max`` ("max 100000" or "200000 100000"), else v1's ``cpu/cpu.cfs_quota_us``
    and ``cpu.cfs_period_us`` (quota -1: none), of the cgroup hierarchy's root as mounted in this
    process's namespace (a container sees its own there). Unreadable files count as no limit.

    >>> cgroup_cpu_quota("/nonexistent") is None
    True
    """
    from pathlib import Path

    base = Path(root)
    try:
        quota, period = (base / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        q = int((base / "cpu" / "cpu.cfs_quota_us").read_text())
        p = int((base / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if q <= 0 or p <= 0 else q / p


def available_cpus(affinity: int | None = None, quota: float | None | str = "read") -> int:
    """The CPUs this process can use: those it may run on (``os.sched_getaffinity``), at most its
    cgroup's CPU quota rounded up (:func:`cgroup_cpu_quota`), at least 1.

    Args:
        affinity: the number of CPUs in the affinity mask (None: read it).
        quota: the cgroup quota in CPUs, None for no limit (``"read"``: read it).
    """
    import os

    if affinity is None:
        affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if quota == "read":
        quota = cgroup_cpu_quota()
    cpus = affinity if quota is None else min(affinity, max(1, math.ceil(float(quota) - 1e-9)))
    return max(1, cpus)


def encode_plan(
    n: int,
    processes: int | None = None,
    num_threads: int | None = None,
    *,
    cpus: int | None = None,
    load: float | None = None,
    machine_cpus: int | None = None,
    thread_budget: int | None = None,
    wait_policy: str | None | bool = True,
    forkable: bool | None = None,
    daemon: bool | None = None,
    override: str | None | bool = True,
) -> EncodePlan:
    """Processes, threads and why, for an encode of ``n`` posts, from the CPUs actually available.

    The rules (measured on 2 cores in ``benchmarks/README.md``, bench_encode.py ``--busy``):

    - ``processes`` / ``num_threads`` given: they decide (``processes`` > 1: workers of
      ``num_threads or 1`` threads; else in this process on ``num_threads``, or as in auto mode).
      Next the :data:`PLAN_ENV` environment variable (``"PxT"``), if set.
    - Worker processes (one thread each, one per available CPU) for a call of at least
      :data:`PARALLEL_MIN_POSTS` posts where forking is possible, outside a daemonic process, with
      at least 2 CPUs available, and within this process's torch thread budget: independent
      single-threaded workers lose only their share of a busy CPU, while threads of one forward pass
      meet at a barrier after every operation and wait for whichever was preempted. The parent
      runs on one thread meanwhile (an OpenMP team of its own would spin beside the workers under
      ``OMP_WAIT_POLICY=ACTIVE``).
    - Else in this process on every available CPU when the machine is quiet (the 1-minute load
      less this process, scaled to our CPUs, leaves them free), and, on a busy machine, on the
      CPUs left free with passive OpenMP waits, on one thread without.

    Args:
        n: the posts of the call.
        processes: the encoder's worker processes (None: auto).
        num_threads: the encoder's threads per process (None: auto).
        cpus: the CPUs available (None: :func:`available_cpus`).
        load: the 1-minute load average (None: ``os.getloadavg``).
        machine_cpus: the machine's CPUs, which the load is spread over (None: ``os.cpu_count``).
        thread_budget: this process's torch threads (None: ``torch.get_num_threads``); a grid worker
            given one thread encodes on one.
        wait_policy: ``OMP_WAIT_POLICY`` (True: read it from the environment).
        forkable: whether workers can be forked (None: :func:`can_fork`).
        daemon: whether this is a daemonic process (None: ask ``multiprocessing``).
        override: the :data:`PLAN_ENV` value (True: read it; None: none).

    Raises:
        ValueError: :data:`PLAN_ENV` is not of the form ``"PxT"`` with P, T >= 1.

    >>> encode_plan(5000, cpus=2, load=0.0, machine_cpus=2, thread_budget=2, forkable=True,
    ...             daemon=False, override=None).describe()
    '2x1 (worker processes, one per available CPU)'
    """
    import multiprocessing
    import os

    if daemon is None:
        daemon = multiprocessing.current_process().daemon
    if override is True:
        override = os.environ.get(PLAN_ENV) or None
    if processes is not None and processes > 1 and not daemon:
        return EncodePlan(processes, num_threads or 1, "processes given")
    if processes is None and num_threads is None and override and not daemon:
        try:
            p, t = (int(x) for x in str(override).lower().split("x"))
            if p < 1 or t < 1:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"The {PLAN_ENV} environment variable must be 'PxT' (worker processes x threads, both "
                f">= 1, e.g. '2x1'). Got {override!r} instead."
            ) from None
        return EncodePlan(p, t, f"{PLAN_ENV}={override}")
    if cpus is None:
        cpus = available_cpus()
    if thread_budget is None:
        import torch

        thread_budget = torch.get_num_threads()
    cpus = max(1, min(cpus, thread_budget))
    if num_threads is not None:
        return EncodePlan(1, num_threads, "num_threads given")
    if forkable is None:
        forkable = can_fork()
    if processes is None and not daemon and cpus >= 2 and n >= PARALLEL_MIN_POSTS and forkable:
        return EncodePlan(cpus, 1, "worker processes, one per available CPU")
    if load is None:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    machine = max(machine_cpus or os.cpu_count() or cpus, cpus)
    others = max(0.0, load - 1.0) * cpus / machine  # the others' runnable tasks on our CPUs
    free = max(1, math.floor(cpus - others + 0.5))
    if free >= cpus:
        return EncodePlan(1, cpus, "in this process, the CPUs are free")
    if wait_policy is True:
        wait_policy = os.environ.get("OMP_WAIT_POLICY")
    if str(wait_policy).upper() == "PASSIVE":
        return EncodePlan(1, free, f"in this process, {free} of {cpus} CPUs free, passive waits")
    return EncodePlan(1, 1, f"in this process, busy ({free} of {cpus} CPUs free), OpenMP waits not passive")


def workers_for(n: int, processes: int | None, num_threads: int | None) -> int:
    """How many worker processes a call with ``n`` posts uses (1: none): :func:`encode_plan`'s.

    Args:
        n: the posts of the call.
        processes: the encoder's ``processes`` setting.
        num_threads: the encoder's ``num_threads`` setting.
    """
    return encode_plan(n, processes, num_threads).processes


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

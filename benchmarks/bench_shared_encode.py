"""Two grid workers that need the same new posts: the wall time until both have their vectors.

A benchmark grid's first cells on a new corpus (or on a machine with an empty cache) all ask the
post-embedding cache for the same posts. Each worker is a process with one torch thread. Before,
one process encoded everything under the cache's single lock while the others waited; now posts fall
into buckets with a lock each and the processes encode different buckets at once
(:data:`textcause.features.embeddings.ENCODE_BUCKETS`). The baseline is measured in the same run:
one process alone (the old wall time, since the waiting worker did nothing), then two at once, each
into a fresh temporary cache, alternated for ``--rounds`` rounds.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_shared_encode.py --n 20000 --rounds 2

Prints per round the posts/s of one process alone, the wall time of two together, how the work was
split, and the speedup (one alone / two together, wall time to have every vector), then the median.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _worker(folder: str, posts: list[str], barrier: Any, out: Any) -> None:
    import torch

    torch.set_num_threads(1)  # a grid worker with --threads 1
    from textcause.features.embeddings import PostEmbeddingCache

    cache = PostEmbeddingCache(None, cache_dir=folder, progress=False, processes=1)
    barrier.wait(timeout=600)
    start = time.perf_counter()
    cache.embed(posts)
    out.put({"seconds": time.perf_counter() - start, "n_encoded": cache.last_stats["n_encoded"]})


def run(posts: list[str], processes: int) -> dict[str, Any]:
    """``processes`` fresh processes (forked) encode ``posts`` into one new temporary cache at once."""
    ctx = multiprocessing.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="shared-encode-") as folder:
        barrier, out = ctx.Barrier(processes + 1), ctx.Queue()
        procs = [ctx.Process(target=_worker, args=(folder, posts, barrier, out)) for _ in range(processes)]
        for p in procs:
            p.start()
        barrier.wait(timeout=600)
        start = time.perf_counter()
        got = [out.get(timeout=3600) for _ in procs]
        wall = time.perf_counter() - start
        for p in procs:
            p.join()
    return {"wall": wall, "n_encoded": [g["n_encoded"] for g in got]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="twitter", help="a corpus name or path for load_histories")
    parser.add_argument("--n", type=int, default=20000, help="distinct posts (sampled with seed 0)")
    parser.add_argument("--rounds", type=int, default=2, help="alternated rounds of one process, then two")
    args = parser.parse_args()
    import numpy as np
    from bench_encode import corpus_posts

    posts = corpus_posts(args.corpus, 60, with_bank=False)
    rng = np.random.default_rng(0)
    posts = [posts[i] for i in np.sort(rng.choice(len(posts), size=min(args.n, len(posts)), replace=False))]
    print(f"{len(posts)} distinct {args.corpus} posts, load {os.getloadavg()[0]:.2f}", flush=True)
    speedups = []
    for r in range(args.rounds):
        one = run(posts, 1)
        two = run(posts, 2)
        speedups.append(one["wall"] / two["wall"])
        print(
            json.dumps(
                {
                    "round": r,
                    "one_process_s": round(one["wall"], 1),
                    "one_process_posts_per_s": round(len(posts) / one["wall"], 1),
                    "two_processes_s": round(two["wall"], 1),
                    "two_processes_split": two["n_encoded"],
                    "speedup": round(speedups[-1], 2),
                    "load": round(os.getloadavg()[0], 2),
                }
            ),
            flush=True,
        )
    print(f"median speedup, two workers sharing a new corpus's encode: {statistics.median(speedups):.2f}x")


if __name__ == "__main__":
    main()

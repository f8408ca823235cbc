"""Time and peak memory of the four n-gram representations on the blog corpus (8,000 users).

Each representation runs in a fresh subprocess (so ``ru_maxrss`` is its own peak) with the
feature cache disabled: ``build_representation(..., cache=False)`` fits on the training users and
transforms all users. Targets: ``bigram_counts`` under 60 s and 4 GB.

    .venv/bin/python benchmarks/bench_features.py                # paper split: fit on 3,200, all 8,000 out
    .venv/bin/python benchmarks/bench_features.py --train all    # fit on all 8,000 users
    .venv/bin/python benchmarks/bench_features.py --kinds bigram_counts --users 2000

For reference, the paper's vocabularies (appendix D, Reddit): unigram 24,164; bigram 125,319.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KINDS = ("unigram_binary", "bigram_binary", "bigram_counts", "lda")


def read_blogs(path: str, n_users: int, max_posts: int) -> list[list[str]]:
    """The first ``n_users`` histories, each cut to its first ``max_posts`` posts."""
    texts = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if len(texts) >= n_users:
                break
            texts.append([p["text"] for p in json.loads(line)["posts"][:max_posts]])
    return texts


def worker(args: argparse.Namespace) -> None:
    import numpy as np

    from textcause.corpus.splits import split_users
    from textcause.features.representation import build_representation

    t0 = time.perf_counter()
    texts = read_blogs(args.data, args.users, args.posts)
    read_s = time.perf_counter() - t0
    rss_after_read = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    n = len(texts)
    train = np.arange(n) if args.train == "all" else split_users(n, seed=0).train
    t0, c0 = time.perf_counter(), time.process_time()
    rep = build_representation(args.worker, texts, train, min_users=args.min_users, cache=False)
    total_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    m = rep.matrix
    print(
        json.dumps(
            {
                "kind": args.worker,
                "users": n,
                "posts": sum(map(len, texts)),
                "train_users": int(len(train)),
                "read_s": round(read_s, 1),
                "fit_transform_s": round(total_s, 1),
                "cpu_s": round(cpu_s, 1),
                "vocabulary": rep.vocabulary_size,
                "shape": list(m.shape),
                "nnz": int(m.nnz) if hasattr(m, "nnz") else int(m.size),
                "rss_after_read_mb": round(rss_after_read),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "blogs-histories.jsonl.gz"))
    parser.add_argument("--users", type=int, default=8000)
    parser.add_argument("--posts", type=int, default=60)
    parser.add_argument("--min-users", type=int, default=10)
    parser.add_argument(
        "--train",
        choices=("paper", "all"),
        default="paper",
        help="fit on the paper's training split (40%%) or on every user",
    )
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    print(
        f"{'kind':<15} {'users':>6} {'train':>6} {'fit+transform s':>16} {'(CPU s)':>8} {'peak RSS MB':>12} "
        f"{'(after read)':>12} {'vocabulary':>11} {'nnz':>11}"
    )
    for kind in args.kinds:
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            kind,
            "--data",
            args.data,
            "--users",
            str(args.users),
            "--posts",
            str(args.posts),
            "--min-users",
            str(args.min_users),
            "--train",
            args.train,
        ]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(
            f"{r['kind']:<15} {r['users']:>6} {r['train_users']:>6} {r['fit_transform_s']:>16.1f} {r['cpu_s']:>8.1f} "
            f"{r['peak_rss_mb']:>12,} {r['rss_after_read_mb']:>12,} {r['vocabulary']:>11,} {r['nnz']:>11,}",
            flush=True,
        )


if __name__ == "__main__":
    main()

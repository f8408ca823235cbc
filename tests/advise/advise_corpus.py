"""A small history JSONL whose users carry a treatment and an outcome in their meta fields."""

from __future__ import annotations

import gzip
import json

import numpy as np

WORDS = "the a cat dog ran sat on mat big small red blue house tree car road sun moon day night".split()


def write_study_corpus(path, n_users=240, n_posts=12, seed=0, *, treated_share=0.5, missing_y=0, y_kind="number"):
    """Users ``u0..``, posts of common words, meta ``group`` (a/b) and ``score`` (a number, or absent)."""
    rng = np.random.default_rng(seed)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for u in range(n_users):
            posts = [{"text": " ".join(rng.choice(WORDS, size=rng.integers(4, 9)))} for _ in range(n_posts)]
            meta = {"group": "a" if rng.random() < treated_share else "b"}
            if u >= missing_y:
                meta["score"] = float(rng.normal())
            fh.write(json.dumps({"user_id": f"u{u}", "posts": posts, "meta": meta}) + "\n")
    return str(path)


def advise_dict(corpus, **extra):
    """An advise config mapping on ``corpus``: T = group a, Y = score above its median."""
    return {
        "name": "toy",
        "corpus": corpus,
        "treatment": {"column": "group", "treated": "a", "control": "b"},
        "outcome": {"column": "score", "threshold": "median"},
        "min_per_arm": 20,
        "candidates": ["lr_unigram_binary"],
        "budget_minutes": 30,
        **extra,
    }

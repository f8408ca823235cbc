"""Privacy: a smoke-sized benchmark on a toy corpus writes no post text anywhere in its outputs.

Every post carries a marker token of its own (``zqx0007k`` ...), used once in the whole corpus, so
no vocabulary keeps it: finding a marker, or any whole post, in a log, a result, a report, a cell
log or an error message means post text leaked.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

WORDS = "coffee morning train rain music game city park dog cat movie book friend work lunch night".split()


def write_marked_corpus(path: Path, n_users: int = 160, n_posts: int = 12, seed: int = 0) -> list[str]:
    """A history JSONL whose every post ends with a unique marker token; returns every post."""
    rng = np.random.default_rng(seed)
    posts = []
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for u in range(n_users):
            texts = []
            for _ in range(n_posts):
                text = " ".join(rng.choice(WORDS, size=rng.integers(4, 8))) + f" zqx{len(posts):04d}k"
                posts.append(text)
                texts.append({"text": text, "time": None})
            fh.write(json.dumps({"user_id": f"u{u}", "posts": texts, "meta": {}}) + "\n")
    return posts


def scan(root: Path, posts: list[str]) -> list[str]:
    """Every (file, what) where a marker or a whole post appears under ``root``."""
    marker = re.compile(rb"zqx\d{4}k")
    whole = [p.encode("utf-8") for p in posts]
    found = []
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        hit = marker.search(data)
        if hit:
            found.append(f"{path.relative_to(root)}: {hit.group().decode()}")
        elif any(p in data for p in whole):
            found.append(f"{path.relative_to(root)}: a whole post")
    return found


@pytest.mark.slow  # a benchmark grid with real training, a failed cell and a report: about a minute
def test_a_smoke_run_writes_no_post_text(tmp_path, capsys):
    from textcause.cli.benchmark import benchmark_main
    from textcause.cli.report import report_main

    posts = write_marked_corpus(tmp_path / "marked.jsonl.gz")
    broken = tmp_path / "nosuchmodel.yaml"  # a cell that fails at fit time (a missing config is refused first)
    broken.write_text("model:\n  class_path: textcause.models.NoSuchModel\n", encoding="utf-8")
    grid = {
        "name": "privacy",
        "corpora": {"marked": str(tmp_path / "marked.jsonl.gz")},
        "tasks": {"linguistic_complexity": [1]},
        "models": ["oracle", "unadjusted", "lr_bigram_binary", "nn_unigram_binary", str(broken)],
        "seeds": [0],
        "overrides": {"trainer.max_epochs": 1, "data.min_users": 2},
        "evaluation": {"n_boot": 20},
        "threads": 1,
    }
    config = tmp_path / "privacy.yaml"
    config.write_text(yaml.safe_dump(grid), encoding="utf-8")
    out = tmp_path / "out"
    assert benchmark_main(["--config", str(config), "--out", str(out)]) == 1  # the failed cell: exit code 1
    report_main(["--db", str(out / "results.db"), "--out", str(out / "report"), "--formats", "svg"])
    written = {p.suffix for p in out.rglob("*") if p.is_file()}
    assert {".db", ".json", ".csv", ".log", ".md"} <= written, written  # results, cell logs, the report
    assert (out / "runs").is_dir() and list(out.rglob("cell.log"))
    streams = capsys.readouterr()
    (tmp_path / "streams.txt").write_text(streams.out + streams.err, encoding="utf-8")  # what the user saw
    assert scan(out, posts) == []
    assert scan(tmp_path, posts) == ["marked.jsonl.gz: zqx0000k"]  # only the corpus itself holds post text

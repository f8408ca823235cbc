"""Shared fixtures: offline settings, an isolated cache root, and a tiny history corpus on disk."""

from __future__ import annotations

import gzip
import json
import os
import sys

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")

try:  # property-based tests (tests/*/test_properties.py): the same examples on every run, no example database
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "textcause",
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.load_profile(os.environ.get("TEXTCAUSE_HYPOTHESIS_PROFILE", "textcause"))
except ImportError:  # hypothesis is in the dev extra; without it those tests are skipped
    pass

WORDS = (
    "coffee morning train rain music game city park dog cat movie book friend work lunch "
    "night weekend beach phone news team goal song dinner school summer winter road shop"
).split()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test writes caches under its own temporary cache root, never ~/.cache."""
    monkeypatch.setenv("TEXTCAUSE_CACHE", str(tmp_path_factory.mktemp("cache")))


def write_history_jsonl(path, n_users: int = 240, n_posts: int = 12, seed: int = 0) -> str:
    """Write a tiny gzipped history JSONL of fake users with short posts of common words."""
    rng = np.random.default_rng(seed)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for u in range(n_users):
            posts = [
                {"text": " ".join(rng.choice(WORDS, size=rng.integers(4, 9))), "time": None} for _ in range(n_posts)
            ]
            fh.write(json.dumps({"user_id": f"u{u}", "posts": posts, "meta": {}}) + "\n")
    return str(path)


@pytest.fixture
def tiny_corpus(tmp_path) -> str:
    """Path of a 240-user history JSONL (12 posts each)."""
    return write_history_jsonl(tmp_path / "tiny.jsonl.gz")


@pytest.fixture
def write_module(tmp_path, monkeypatch):
    """``write_module(text, name="user_methods")`` writes ``text`` to ``tmp_path/<name>.py``, importable
    as a fresh ``name`` for this test (sys.path and sys.modules restored after it); returns the file."""

    def write(text: str, name: str = "user_methods"):
        path = tmp_path / f"{name}.py"
        path.write_text(text, encoding="utf-8")
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, name, raising=False)
        return path

    return write


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory) -> str:
    """A tiny random BERT (transformers' ModelTester sizes: 2 layers, width 32) with the real MiniLM
    tokenizer, saved to disk so it loads by path like any Hugging Face encoder."""
    from tinybert import save_tiny_bert

    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))

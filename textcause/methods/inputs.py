"""The task a method is evaluated on, and its inputs in the representation the method requests.

:func:`build_task` draws a task exactly as :class:`textcause.data.CausalTextDataModule` does (the
same corpus reading, user sample and ``make_task`` call), so a method and a built-in model of the
same cell see the same users, treatments, outcomes and split. :class:`TaskInputs` gives the users'
inputs as plain Python / numpy:

========================  ====================================================================
``representation``        ``X`` (one entry per user, in the order of the indices asked for)
========================  ====================================================================
None (raw text)           a list of users, each a list of post strings (oldest first)
``unigram_binary``,       a ``scipy.sparse.csr_matrix`` (float32), one row per user: the
``bigram_binary``,        paper's n-gram features, vocabulary fitted on the training users
``bigram_counts``         (``textcause.features.build_representation``, ``min_users`` = 10)
``lda``                   a dense float32 ``numpy`` array of 20 topic proportions per user (LDA
                          fitted on the training users)
``post_embeddings``       a list of float32 arrays, one per user, of shape (n_posts, dim): each
                          post's vector from the cached frozen encoder (all-MiniLM-L6-v2, d = 384)
========================  ====================================================================
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, Iterable, Optional

import numpy as np

from textcause.io import resolve_corpus

NGRAM_KINDS = ("unigram_binary", "bigram_binary", "bigram_counts", "lda")
#: Data-module options (``data.<key>`` overrides of a grid) that change the task or the inputs.
DATA_KEYS = ("n_users", "min_posts", "max_posts", "outcome", "insertion", "min_users", "encoder", "max_tokens")
DEFAULTS: dict[str, Any] = {"n_users": None, "min_posts": 10, "max_posts": 60, "outcome": "binary", "insertion": None,
                            "min_users": 10, "encoder": None, "max_tokens": 64}


def data_settings(overrides: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The data settings of a cell: :data:`DEFAULTS` updated by its ``data.<key>`` overrides.

    Other options (``trainer.*``, ``model.*``, data options that only change batching) do not
    concern methods and are ignored.

    Raises:
        ValueError: for ``data.observational``: methods are evaluated on semi-synthetic tasks only.
    """
    settings = dict(DEFAULTS)
    for key, value in overrides:
        name = key.lstrip("-")
        if name == "data.observational" and value:
            raise ValueError("Methods are evaluated on semi-synthetic tasks only: the 'data.observational' option "
                             "applies to model configs, not to methods.")
        if name.startswith("data.") and name[5:] in DATA_KEYS:
            settings[name[5:]] = value
    return settings


def load_corpus(source: str, min_posts: int, max_posts: int, n_users: Optional[int]) -> Any:
    """Read a corpus as the data module does (one memo per process, keyed by path and mtime)."""
    module = sys.modules.get("textcause.data.datamodule")
    if module is not None:  # already imported (a benchmark worker): share its memo
        return module._load_corpus(source, min_posts, max_posts, n_users)
    path = resolve_corpus(source)
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        stamp = None
    return _read_corpus(path, stamp, min_posts, max_posts, n_users)


@functools.lru_cache(maxsize=2)
def _read_corpus(path: str, stamp: Optional[int], min_posts: int, max_posts: int, n_users: Optional[int]) -> Any:
    from textcause.corpus import load_histories

    return load_histories(path, min_posts=min_posts, max_posts=max_posts, n_users=n_users, seed=0)


def build_task(source: str, task: str, level: int, seed: int, settings: dict[str, Any] | None = None) -> Any:
    """The :class:`~textcause.simulation.SemiSyntheticTask` of a cell, as the data module builds it.

    Args:
        source: a corpus short name or path.
        task, level, seed: the task draw.
        settings: :func:`data_settings` (default :data:`DEFAULTS`).
    """
    from textcause.simulation import make_task

    s = {**DEFAULTS, **(settings or {})}
    corpus = load_corpus(source, s["min_posts"], s["max_posts"], s["n_users"])
    kwargs: dict[str, Any] = {"outcome": s["outcome"]}
    if s["insertion"] is not None:
        kwargs["insertion"] = s["insertion"]
    return make_task(corpus, task, level, seed=seed, **kwargs)


class TaskInputs:
    """Users' inputs in one representation, built once per cell.

    Args:
        task: the semi-synthetic task.
        representation: None (raw text) or a representation name (see the module docstring).
        seed: the cell's seed (LDA's random state, as in the data module).
        options: ``min_users``, ``encoder``, ``max_tokens`` (see :data:`DEFAULTS`).
        needed: the users whose inputs will be asked for (embeddings are computed for these only).
    """

    def __init__(self, task: Any, representation: str | None, *, seed: int, options: dict[str, Any] | None = None,
                 needed: np.ndarray | None = None) -> None:
        self.task, self.representation, self.seed = task, representation, seed
        self.options = {**DEFAULTS, **(options or {})}
        self.needed = None if needed is None else np.unique(np.asarray(needed, dtype=np.int64))
        self._matrix: Any = None
        self._rows: dict[int, np.ndarray] | None = None

    def take(self, indices: np.ndarray) -> Any:
        """The inputs of the users at ``indices`` (into the task), in that order."""
        idx = np.asarray(indices, dtype=np.int64)
        rep = self.representation
        if rep is None:
            return [list(self.task.texts[i]) for i in idx]
        if rep in NGRAM_KINDS:
            return self._ngrams()[idx]
        if rep == "post_embeddings":
            rows = self._embeddings()
            return [rows[int(i)].copy() for i in idx]
        raise ValueError(f"Unknown representation {rep!r}.")

    def _ngrams(self) -> Any:
        if self._matrix is None:
            from textcause.features import build_representation

            rep = build_representation(self.representation, self.task.texts, self.task.split.train,
                                       min_users=int(self.options["min_users"]), seed=self.seed, cache=True)
            self._matrix = rep.matrix
        return self._matrix

    def _embeddings(self) -> dict[int, np.ndarray]:
        if self._rows is None:
            from textcause.features.embeddings import PostEmbeddingCache

            users = self.needed if self.needed is not None else np.arange(len(self.task))
            cache = PostEmbeddingCache(self.options["encoder"], max_tokens=int(self.options["max_tokens"]))
            table = cache.embed_histories([self.task.texts[i] for i in users], out_dtype=np.float32)
            self._rows = {int(u): table.vectors[ids] for u, ids in zip(users, table.post_ids)}
        return self._rows

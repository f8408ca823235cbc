"""The LightningDataModule that wires a real corpus, a semi-synthetic task and a text representation.

``CausalTextDataModule`` reads the corpus, draws the task (with its known truth), fits the
representation on the training users (cached by content), and serves batches of
``{"x", "t", "y", "p_true", "index"}`` for the train / val / test / predict splits.
"""

from __future__ import annotations

import functools
import logging
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any, Optional

import lightning as L
import numpy as np
import scipy.sparse as sp
import torch
from torch.utils.data import DataLoader, Dataset

from textcause.data.batches import FeatureCollate, HistoryCollate
from textcause.data.memory import keep_freed_memory
from textcause.io import content_key, resolve_corpus
from textcause.validation import check_int

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")

# Built (task, features, info) per data configuration, so a second data module with the same
# settings in this process (the CLI sizing the model, a benchmark re-evaluating) does not rebuild.
_BUILT: "OrderedDict[str, tuple[Any, Any, dict[str, Any]]]" = OrderedDict()
_BUILT_MAX = 4
# Settings that change what is built (the rest only changes how it is served).
_BUILD_KEYS = (
    "corpus", "task", "level", "seed", "representation", "min_users", "n_users",
    "min_posts", "max_posts", "insertion", "outcome", "encoder", "max_tokens", "token_cap", "scale",
    "encoder_layer", "observational",
)
SCALES = (None, "maxabs", "log1p")
EMBEDDING_REPRESENTATIONS = ("post_embeddings", "post_tokens")


def _load_corpus(source: str, min_posts: int, max_posts: int, n_users: Optional[int]) -> Any:
    """Read a corpus once per process: a grid of cells reuses it (a Corpus is immutable).

    The memo is keyed by the resolved path and its modification time, so a changed file or data
    root is read again.
    """
    path = resolve_corpus(source)
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        stamp = None  # not a local file (a Hugging Face name): load_histories reports problems
    return _read_corpus(path, stamp, min_posts, max_posts, n_users)


@functools.lru_cache(maxsize=2)
def _read_corpus(path: str, stamp: Optional[int], min_posts: int, max_posts: int, n_users: Optional[int]) -> Any:
    from textcause.corpus import load_histories

    return load_histories(path, min_posts=min_posts, max_posts=max_posts, n_users=n_users, seed=0)


def clear_built_cache() -> None:
    """Forget the tasks and features built in this process (long-running workers call it between
    cells to bound memory); the last two corpora read stay in memory."""
    _BUILT.clear()


def scale_features(x: Any, train: np.ndarray, how: Optional[str]) -> Any:
    """Rescale a sparse or dense feature matrix (``maxabs`` fitted on the training rows only)."""
    if how is None:
        return x
    if how == "log1p":
        if sp.issparse(x):
            x = x.copy()
            x.data = np.log1p(x.data)
            return x
        return np.log1p(x)
    col_max = abs(x[train]).max(axis=0)
    col_max = np.asarray(col_max.todense() if sp.issparse(col_max) else col_max, dtype=np.float64).ravel()
    factor = np.where(col_max > 0, 1.0 / np.where(col_max > 0, col_max, 1.0), 1.0).astype(np.float32)
    if sp.issparse(x):
        return (x @ sp.diags(factor)).tocsr().astype(np.float32)
    return (x * factor).astype(np.float32)


class _Indices(Dataset):
    """A dataset of unit indices; the collate function turns them into a batch."""

    def __init__(self, indices: np.ndarray) -> None:
        self.indices = np.asarray(indices, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i: int) -> int:
        return int(self.indices[i])


class CausalTextDataModule(L.LightningDataModule):
    """A semi-synthetic causal task on a real corpus, served as propensity-model batches.

    Args:
        corpus: a short corpus name (``twitter``, ``blogs``, ``reddit-drunk``), a path to a history
            JSONL / comment table, or a Hugging Face dataset source.
        task: the task name (see ``textcause.simulation.list_tasks``).
        level: the task's difficulty level (1 = easiest).
        seed: the task's seed (class assignment, inserted posts, treatments, outcomes, split).
        representation: ``unigram_binary``, ``bigram_binary``, ``bigram_counts``, ``lda``;
            ``post_embeddings`` (frozen-encoder post vectors, for hierarchical models) or
            ``post_tokens`` (post vectors and token states, for SHERBERT's token attention);
            or ``none`` for models that read no text (oracle, unadjusted).
        min_users: an n-gram enters the vocabulary when at least this many training users use it.
        n_users: sample this many users from the corpus (None: all that pass the filters); the
            sample does not depend on ``seed``.
        min_posts: drop users with fewer posts.
        max_posts: keep each user's first ``max_posts`` posts.
        insertion: where synthetic posts go (``append``, ``prepend``, ``replace``; None: the task's own).
        outcome: ``binary`` or ``normal`` (continuous outcomes of section 5.3).
        predict_split: the split served by ``predict_dataloader`` (``test`` by default).
        batch_size: users per batch.
        num_workers: DataLoader worker processes.
        cache: reuse fitted representations from the cache root.
        encoder: for ``post_embeddings`` / ``post_tokens``: the frozen encoder (None: the packaged
            all-MiniLM-L6-v2; any Hugging Face name or local path).
        max_tokens: encoder input length per post.
        token_cap: token states kept per post for ``post_tokens``.
        encoder_layer: for ``post_tokens``: serve the token states after this encoder layer (None:
            the last layer). A SHERBERT with ``unfreeze_top=k`` needs ``n_layers - k`` (5 for the
            6-layer all-MiniLM-L6-v2 with k = 1).
        scale: rescale n-gram/topic features before training: ``maxabs`` divides each column by its
            largest absolute value among the training users (counts keep their ratios; binary
            columns are unchanged), ``log1p`` takes log(1 + x); None leaves them as they are.
        observational: a path to an observational study config (``configs/observational/*.yaml``,
            see :mod:`textcause.observational`): serve its real treatment, text and later-post
            outcome instead of a semi-synthetic task (``corpus``, ``task``, ``level``, ``n_users``,
            ``min_posts``, ``max_posts``, ``insertion`` and ``outcome`` are then ignored). It has no
            true propensity (``p_true`` is NaN) and no true ATE.
    """

    def __init__(
        self,
        corpus: str = "twitter",
        task: str = "linguistic_complexity",
        level: int = 2,
        seed: int = 0,
        representation: str = "bigram_binary",
        min_users: int = 10,
        n_users: Optional[int] = None,
        min_posts: int = 10,
        max_posts: int = 60,
        insertion: Optional[str] = None,
        outcome: str = "binary",
        predict_split: str = "test",
        batch_size: int = 64,
        num_workers: int = 0,
        cache: bool = True,
        encoder: Optional[str] = None,
        max_tokens: int = 64,
        token_cap: int = 32,
        scale: Optional[str] = None,
        encoder_layer: Optional[int] = None,
        observational: Optional[str] = None,
    ) -> None:
        super().__init__()
        if scale not in SCALES:
            raise ValueError(f"The 'scale' parameter must be one of {list(SCALES)}. Got {scale!r} instead.")
        if predict_split not in SPLITS:
            raise ValueError(f"The 'predict_split' parameter must be one of {list(SPLITS)}. Got {predict_split!r} instead.")
        check_int(batch_size, "batch_size", "CausalTextDataModule", low=1)
        check_int(num_workers, "num_workers", "CausalTextDataModule", low=0)
        self.save_hyperparameters()
        self._built = False
        self.task_data: Any = None
        self._features: Any = None

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        if self._built:
            return
        from textcause.features import build_representation
        from textcause.simulation import make_task

        hp = self.hparams
        key = repr([(k, hp[k]) for k in _BUILD_KEYS])
        study = Path(hp.observational) if hp.observational else None
        if study is not None and study.is_file():  # the study file's content, not only its path, decides what is built
            key += content_key(study.read_bytes())
        if key in _BUILT:
            self.task_data, self._features, self.representation_info = _BUILT[key]
            self._built = True
            return
        # The user sample is fixed (seed 0) so that task seeds compare methods on the same users;
        # the task seed redraws classes, inserted posts, treatments, outcomes and the split.
        if hp.observational:
            from textcause.observational.task import load_task

            task = load_task(hp.observational, seed=hp.seed)
        else:
            corpus = _load_corpus(hp.corpus, hp.min_posts, hp.max_posts, hp.n_users)
            kwargs: dict[str, Any] = {"outcome": hp.outcome}
            if hp.insertion is not None:
                kwargs["insertion"] = hp.insertion
            task = make_task(corpus, hp.task, hp.level, seed=hp.seed, **kwargs)
        if hp.representation == "none":  # baselines (oracle, unadjusted) read no text
            features: Any = np.zeros((len(task), 0), dtype=np.float32)
            info = {"kind": "none", "vocabulary_size": 0, "fit_seconds": 0.0}
        elif hp.representation in EMBEDDING_REPRESENTATIONS:
            features, info = self._embed(task.texts)
        else:
            rep = build_representation(
                hp.representation, task.texts, task.split.train, min_users=hp.min_users, seed=hp.seed, cache=hp.cache
            )
            features = scale_features(rep.matrix, task.split.train, hp.scale)
            info = {"kind": rep.kind, "vocabulary_size": int(rep.vocabulary_size), "fit_seconds": float(rep.fit_seconds)}
        self.task_data = task
        self._features = features
        self.representation_info = info
        self._built = True
        _BUILT[key] = (task, features, info)
        while len(_BUILT) > _BUILT_MAX:
            _BUILT.popitem(last=False)
        log.info("Built %r with %s features of width %d.", task, hp.representation, self.input_dim)

    def _embed(self, texts: list[list[str]]) -> tuple[Any, dict[str, Any]]:
        import time

        from textcause.features.embeddings import PostEmbeddingCache

        hp = self.hparams
        tokens = hp.representation == "post_tokens"
        cache = PostEmbeddingCache(hp.encoder, max_tokens=hp.max_tokens, store_tokens=tokens, token_cap=hp.token_cap,
                                   layer=hp.encoder_layer if tokens else None)
        started = time.perf_counter()
        # float16 in memory: the token table of a 4,000-user corpus is several GB in float32.
        hist = cache.embed_histories(texts, out_dtype=np.float16 if tokens else np.float32)
        info = {"kind": hp.representation, "vocabulary_size": 0, "fit_seconds": time.perf_counter() - started,
                "encoder": cache.spec.name, "cache": str(cache.folder)}
        return hist, info

    def prepare_data(self) -> None:
        # Runs on one process: fills the feature cache so the other ranks get a cache hit.
        self._build()

    def setup(self, stage: Optional[str] = None) -> None:
        self._build()

    # ------------------------------------------------------------------ truth
    @property
    def task(self) -> Any:
        """The :class:`~textcause.simulation.types.SemiSyntheticTask` with its truth."""
        self._build()
        return self.task_data

    @property
    def features(self) -> Any:
        """The feature matrix of every user (sparse, dense, or a post-embedding table)."""
        self._build()
        return self._features

    @property
    def input_dim(self) -> int:
        """Width of the feature matrix (linked into the model's ``net.input_dim`` by the CLI)."""
        self._build()
        if self.hparams.representation in EMBEDDING_REPRESENTATIONS:
            return int(self.features.vectors.shape[1])
        return int(self.features.shape[1])

    @property
    def true_ate(self) -> Optional[float]:
        """The task's true ATE (None for an observational task)."""
        value = self.task.true_ate
        return None if value is None else float(value)

    def truth(self, split: str = "test") -> dict[str, np.ndarray]:
        """Treatment, outcome, true propensity and indices of the users of ``split``."""
        task = self.task
        idx = task.split[split]
        return {
            "index": idx,
            "t": task.treatment[idx],
            "y": task.outcome[idx],
            "p_true": task.propensity[idx],
        }

    # ------------------------------------------------------------------ loaders
    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        task = self.task
        if self.hparams.representation in EMBEDDING_REPRESENTATIONS:
            tokens = self.hparams.representation == "post_tokens"
            if tokens:
                keep_freed_memory()
            collate: Any = HistoryCollate(
                self.features, task.treatment, task.outcome, task.propensity,
                use_tokens=tokens, token_dtype=self._token_dtype(),
            )
        else:
            collate = FeatureCollate(self.features, task.treatment, task.outcome, task.propensity)
        return DataLoader(
            _Indices(task.split[split]),
            batch_size=self.hparams.batch_size,
            shuffle=shuffle,
            num_workers=self.hparams.num_workers,
            collate_fn=collate,
            persistent_workers=self.hparams.num_workers > 0,
            generator=torch.Generator().manual_seed(self.hparams.seed) if shuffle else None,
        )

    def _token_dtype(self) -> torch.dtype:
        """bfloat16 token batches under bf16-mixed training (autocast would cast them anyway), else float32."""
        trainer = getattr(self, "trainer", None)
        precision = str(getattr(trainer, "precision", "")) if trainer is not None else ""
        return torch.bfloat16 if precision.startswith("bf16") else torch.float32

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("val", shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader("test", shuffle=False)

    def predict_dataloader(self) -> DataLoader:
        return self._loader(self.hparams.predict_split, shuffle=False)

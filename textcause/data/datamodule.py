"""The LightningDataModule that serves a task built from a real corpus as propensity-model batches.

``CausalTextDataModule`` holds :class:`~textcause.data.build.DataSettings` (what is built: corpus,
task, representation) and serving options (batch size, workers, the predict split); the task and
features come from :func:`textcause.data.build.build_data`, the one build every caller shares.
Batches are ``{"x", "t", "y", "p_true", "index"}`` for the train / val / test / predict splits.

Under DDP the evaluation splits (val, test, predict) are served by
:func:`~textcause.data.distributed.evaluation_sampler`: each unit on exactly one rank, none
repeated (Lightning's default ``DistributedSampler`` pads a split with repeated units), so the
logged losses, weighted by batch size over ranks, and the gathered predictions are those of one
process. Training batches are Lightning's ``DistributedSampler`` shards, as usual.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch
from torch.utils.data import DataLoader

from textcause.corpus.splits import SPLITS
from textcause.data.batches import FeatureCollate, HistoryCollate, IndexDataset
from textcause.data.build import BuiltData, DataSettings, build_data, outcome_kind
from textcause.data.distributed import evaluation_sampler
from textcause.data.featurizer import FEATURIZER_KEY, check_same
from textcause.data.memory import keep_freed_memory
from textcause.data.resumable import resumable_loader
from textcause.data.serving import SplitServing
from textcause.features.kinds import EMBEDDING_KINDS

__all__ = [
    "CausalTextDataModule",
]

_D = DataSettings()


class CausalTextDataModule(SplitServing):
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
            outcome instead of a semi-synthetic task. The study decides the corpus and its users, so
            ``corpus``, ``task``, ``level``, ``n_users``, ``min_posts``, ``max_posts``, ``insertion``
            and ``outcome`` must keep their defaults (an error otherwise). It has no true propensity
            (``p_true`` is NaN) and no true ATE.
        author_col: the author column of a flat comment table (CSV, Parquet, NDJSON or a Hugging
            Face dataset); history JSONL files ignore it.
        text_col: the text column of a flat comment table; history JSONL files ignore it.
        time_col: the time column of a flat comment table (``time_col: null`` keeps the table's
            order); history JSONL files ignore it.
        drop_duplicates: drop a post whose text and time repeat an earlier post of the same user.
        meta_filter: keep only the users whose ``meta`` has these values before the task is drawn,
            e.g. ``{kind: human}`` for PAN 2019's human accounts (a value may be a list of accepted
            values); None keeps every user.
        held_out_bank: the share of each synthetic post kind reserved for the test users, so that
            no inserted post of a test user was inserted into a training or validation user (0: one
            bank for everyone, the paper's design).
    """

    def __init__(
        self,
        corpus: str = _D.corpus,
        task: str = _D.task,
        level: int = _D.level,
        seed: int = _D.seed,
        representation: str = _D.representation,
        min_users: int = _D.min_users,
        n_users: Optional[int] = _D.n_users,
        min_posts: int = _D.min_posts,
        max_posts: int = _D.max_posts,
        insertion: Optional[str] = _D.insertion,
        outcome: str = _D.outcome,
        predict_split: str = "test",
        batch_size: int = 64,
        num_workers: int = 0,
        cache: bool = True,
        encoder: Optional[str] = _D.encoder,
        max_tokens: int = _D.max_tokens,
        token_cap: int = _D.token_cap,
        scale: Optional[str] = _D.scale,
        encoder_layer: Optional[int] = _D.encoder_layer,
        observational: Optional[str] = _D.observational,
        author_col: str = _D.author_col,
        text_col: str = _D.text_col,
        time_col: Optional[str] = _D.time_col,
        drop_duplicates: bool = _D.drop_duplicates,
        meta_filter: Optional[dict[str, Any]] = _D.meta_filter,
        held_out_bank: float = _D.held_out_bank,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.settings = self.settings_from_hparams(DataSettings, "CausalTextDataModule", SPLITS)
        self._built: Optional[BuiltData] = None

    # ------------------------------------------------------------------ building
    @property
    def built(self) -> BuiltData:
        """The task and features (built on first use; the build is memoised per process)."""
        if self._built is None:
            self._built = build_data(self.settings, cache=self.hparams["cache"])
        return self._built

    def prepare_data(self) -> None:
        # Runs on one process per node: fills the feature and embedding caches so that the other
        # ranks get cache hits in setup. Assigns no state (Lightning's rule for prepare_data).
        build_data(self.settings, cache=self.hparams["cache"])

    def setup(self, stage: Optional[str] = None) -> None:
        self.built  # noqa: B018 - build (or fetch from the memo) on every rank

    # ------------------------------------------------------------------ the saved featurizer
    def state_dict(self) -> dict[str, Any]:
        """What Lightning saves with every checkpoint: the featurizer that turns NEW users' text into
        this model's input (:mod:`textcause.data.featurizer`: plain values and tensors, no pickled code)."""
        return {FEATURIZER_KEY: self.built.featurizer} if self.built.featurizer else {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Refuse a checkpoint whose featurizer differs from the one rebuilt from these data settings
        (the data or the code changed since training); a checkpoint without one (older versions) passes."""
        check_same(state_dict.get(FEATURIZER_KEY), self.built.featurizer)

    @property
    def featurizer(self) -> dict[str, Any]:
        """The featurizer state of the build (:func:`textcause.data.featurizer.featurizer_state`)."""
        return self.built.featurizer

    @property
    def task(self) -> Any:
        """The :class:`~textcause.simulation.types.SemiSyntheticTask` (or observational task) with its truth."""
        return self.built.task

    @property
    def features(self) -> Any:
        """The feature matrix of every user (sparse, dense, or a post-embedding table)."""
        return self.built.features

    @property
    def representation_info(self) -> dict[str, Any]:
        """``kind``, ``vocabulary_size``, ``fit_seconds`` of the representation (and its encoder)."""
        return self.built.info

    @property
    def input_dim(self) -> int:
        """Width of the feature matrix (linked into the model's ``net.input_dim`` by the CLI)."""
        return self.built.input_dim

    @property
    def outcome_kind(self) -> str:
        """``binary`` or ``continuous``: the task's outcome kind, for TMLE (:func:`textcause.data.build.outcome_kind`)."""
        return outcome_kind(self.task)

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
    def loader(self, split: str, *, shuffle: bool = False) -> DataLoader[Any]:
        """A loader over one split (``train``: shuffled, resumable mid-epoch, when ``shuffle``)."""
        task = self.task
        if self.settings.representation in EMBEDDING_KINDS:
            tokens = self.settings.representation == "post_tokens"
            if tokens:
                keep_freed_memory()
            collate: Any = HistoryCollate(
                self.features,
                task.treatment,
                task.outcome,
                task.propensity,
                use_tokens=tokens,
                token_dtype=self._token_dtype(),
            )
        else:
            collate = FeatureCollate(self.features, task.treatment, task.outcome, task.propensity)
        dataset = IndexDataset(task.split[split])
        if shuffle:  # the training split: shuffled by its own generator, resumable mid-epoch
            return resumable_loader(
                self,
                dataset,
                self.hparams["batch_size"],
                self.hparams["seed"],
                num_workers=self.hparams["num_workers"],
                collate_fn=collate,
            )
        return DataLoader(
            dataset,
            batch_size=self.hparams["batch_size"],
            sampler=evaluation_sampler(dataset, getattr(self, "trainer", None), split),
            num_workers=self.hparams["num_workers"],
            collate_fn=collate,
            persistent_workers=self.hparams["num_workers"] > 0,
        )

    def _token_dtype(self) -> torch.dtype:
        """bfloat16 token batches under bf16-mixed training (autocast would cast them anyway), else float32."""
        trainer = getattr(self, "trainer", None)
        precision = str(getattr(trainer, "precision", "")) if trainer is not None else ""
        return torch.bfloat16 if precision.startswith("bf16") else torch.float32

"""One build of task + features, a pure function of the data settings.

:func:`build_data` is what :class:`~textcause.data.CausalTextDataModule` serves and what
:mod:`textcause.methods` evaluates outside methods on: the corpus (read once per process by
:func:`textcause.corpus.read_corpus`), the task drawn from it (semi-synthetic, with its truth, or
observational, from a study config), and the representation fitted on the training users (cached
on disk by content). The same :class:`DataSettings` always give the same users, treatments,
outcomes, split and features.

Results are memoised per process (a few entries: token tables are large), so a second data module
with the same settings, the CLI's evaluation after a fit, or a method cell beside a model cell do
not rebuild; :func:`clear_built` forgets them (long-lived workers call it between cells). In a
multi-process job the ranks of a machine take turns on the first build of a setting, so the caches
are filled once and read by all (:mod:`textcause.data.distributed`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from textcause.corpus.filters import check_meta_filter
from textcause.data.distributed import one_build_at_a_time
from textcause.data.featurizer import apply_scale, embed_histories, featurizer_state, maxabs_factor
from textcause.features.kinds import EMBEDDING_KINDS, NGRAM_KINDS, REPRESENTATIONS
from textcause.io import content_key
from textcause.validation import check_int, check_options, check_real

__all__ = [
    "BuiltData",
    "DataSettings",
    "OUTCOME_KINDS",
    "SCALES",
    "SIMULATION_FIELDS",
    "build_data",
    "build_task",
    "clear_built",
    "embed_texts",
    "outcome_kind",
]

log = logging.getLogger(__name__)

#: How n-gram / topic features may be rescaled before training (None: as they are).
SCALES = (None, "maxabs", "log1p")
#: The fields of a semi-synthetic task that an observational study decides itself.
SIMULATION_FIELDS = (
    "corpus",
    "task",
    "level",
    "n_users",
    "min_posts",
    "max_posts",
    "insertion",
    "outcome",
    "author_col",
    "text_col",
    "time_col",
    "drop_duplicates",
    "meta_filter",
    "held_out_bank",
)
#: Settings added after grids had run, left out of :meth:`DataSettings.key` at their defaults (so
#: every setting that existed before keeps its key) and recorded in the task's info when set.
_ROBUSTNESS_DEFAULTS: dict[str, Any] = {"meta_filter": None, "held_out_bank": 0.0}
_MEMO_SIZE = 4


@dataclass(frozen=True)
class DataSettings:
    """Everything that decides what is built (how it is batched is the data module's business).

    Attributes:
        corpus: a short corpus name (``twitter``, ``blogs``, ``reddit-drunk``), a path to a history
            JSONL / comment table, or a Hugging Face dataset source.
        task: the task name (see ``textcause.simulation.list_tasks``).
        level: the task's difficulty level (1 = easiest).
        seed: the task's seed (class assignment, inserted posts, treatments, outcomes, split).
        representation: one of :data:`textcause.features.kinds.REPRESENTATIONS`.
        min_users: an n-gram enters the vocabulary when at least this many training users use it.
        n_users: sample this many users from the corpus (None: all that pass the filters); the
            sample does not depend on ``seed``.
        min_posts: drop users with fewer posts.
        max_posts: keep each user's first ``max_posts`` posts.
        insertion: where synthetic posts go (``append``, ``prepend``, ``replace``; None: the task's own).
        outcome: ``binary`` or ``normal`` (continuous outcomes of section 5.3).
        encoder: for ``post_embeddings`` / ``post_tokens``: the frozen encoder (None: the packaged
            all-MiniLM-L6-v2; any Hugging Face name or local path).
        max_tokens: encoder input length per post.
        token_cap: token states kept per post for ``post_tokens``.
        encoder_layer: for ``post_tokens``: the token states after this encoder layer (None: the last).
        scale: rescale n-gram/topic features: ``maxabs`` divides each column by its largest absolute
            value among the training users, ``log1p`` takes log(1 + x); None leaves them as they are.
        observational: a study config (``configs/observational/*.yaml``): its real treatment, text
            and later-post outcome instead of a semi-synthetic task. The study decides the corpus and
            the users, so :data:`SIMULATION_FIELDS` must then keep their defaults.
        author_col, text_col, time_col: the columns of a flat comment table (CSV, Parquet, NDJSON,
            a Hugging Face dataset) holding the author, the text and the time (None: keep the
            table's order); history JSONL files ignore them.
        drop_duplicates: drop a post whose text and time repeat an earlier post of the same user.
        meta_filter: keep only the users whose ``meta`` has these values, e.g. ``{"kind": "human"}``
            (PAN 2019's human accounts; a value may be a list of accepted values), before the task
            is drawn; ``n_users`` then samples among them. None: every user. Recorded in the task's
            info (``meta_filter``, ``n_users_before_meta_filter``).
        held_out_bank: the share of each synthetic post kind reserved for the test users (0: one
            bank for everyone, the paper's design). In (0, 1), training and validation users receive
            posts of one part of the bank and test users of the other, divided with ``seed``
            (:func:`textcause.simulation.bank.split_bank`): no inserted string is in both.
    """

    corpus: str = "twitter"
    task: str = "linguistic_complexity"
    level: int = 2
    seed: int = 0
    representation: str = "bigram_binary"
    min_users: int = 10
    n_users: Optional[int] = None
    min_posts: int = 10
    max_posts: int = 60
    insertion: Optional[str] = None
    outcome: str = "binary"
    encoder: Optional[str] = None
    max_tokens: int = 64
    token_cap: int = 32
    encoder_layer: Optional[int] = None
    scale: Optional[str] = None
    observational: Optional[str] = None
    author_col: str = "author"
    text_col: str = "text"
    time_col: Optional[str] = "time"
    drop_duplicates: bool = False
    meta_filter: Optional[dict[str, Any]] = None
    held_out_bank: float = 0.0

    def __post_init__(self) -> None:
        owner = "DataSettings"
        check_options(self.representation, "representation", owner, REPRESENTATIONS)
        if self.meta_filter is not None:
            check_meta_filter(self.meta_filter, owner)
        check_real(self.held_out_bank, "held_out_bank", owner, low=0.0, high=1.0, high_open=True)
        check_options(self.scale, "scale", owner, SCALES)
        check_int(self.min_users, "min_users", owner, low=1)
        if self.n_users is not None:
            check_int(self.n_users, "n_users", owner, low=1)
        check_int(self.min_posts, "min_posts", owner, low=1)
        if self.max_posts is not None:  # None: every post of each history
            check_int(self.max_posts, "max_posts", owner, low=1)
        check_int(self.max_tokens, "max_tokens", owner, low=1)
        check_int(self.token_cap, "token_cap", owner, low=1)
        if self.observational:
            defaults = DataSettings()
            changed = [f for f in SIMULATION_FIELDS if getattr(self, f) != getattr(defaults, f)]
            if changed:
                raise ValueError(
                    f"The 'observational' study decides the corpus and its users: the data settings {changed} "
                    "do not apply to it; set them in the study config instead (or remove them)."
                )

    def key(self) -> str:
        """A key of everything that decides the build (a study config counts by its content)."""
        fields = dataclasses.asdict(self)
        for name, default in _ROBUSTNESS_DEFAULTS.items():
            if fields[name] == default:
                del fields[name]
        parts: list[Any] = [fields]
        study = Path(self.observational) if self.observational else None
        if study is not None and study.is_file():
            parts.append(study.read_bytes())
        return content_key(*parts)


@dataclass(frozen=True, eq=False)
class BuiltData:
    """A task and the features of its users.

    Attributes:
        task: a :class:`~textcause.simulation.types.SemiSyntheticTask` (with its truth) or an
            :class:`~textcause.observational.ObservationalTask` (no truth).
        features: one row per user: a sparse or dense matrix (n-grams, topics; width 0 for
            ``none``) or a post-embedding table (``post_embeddings`` / ``post_tokens``).
        info: ``kind``, ``vocabulary_size``, ``fit_seconds`` (and the encoder and cache folder).
        featurizer: what featurises NEW users' text exactly as these users' was, as plain values and
            tensors (:func:`textcause.data.featurizer.featurizer_state`; saved with every checkpoint).
    """

    task: Any
    features: Any
    info: dict[str, Any] = field(default_factory=dict)
    featurizer: dict[str, Any] = field(default_factory=dict)

    @property
    def input_dim(self) -> int:
        """The width of a user's feature vector (or of a post vector for embedding tables)."""
        vectors = getattr(self.features, "vectors", None)
        return int((vectors if vectors is not None else self.features).shape[1])


def build_task(settings: DataSettings) -> Any:
    """The task of ``settings``: drawn from the memoised corpus, or read from the study config."""
    if settings.observational:
        from textcause.observational.task import load_task

        return load_task(settings.observational, seed=settings.seed)
    from textcause.corpus import read_corpus
    from textcause.simulation import make_task

    filtered = settings.meta_filter is not None
    corpus = read_corpus(
        settings.corpus,
        min_posts=settings.min_posts,
        max_posts=settings.max_posts,
        n_users=None if filtered else settings.n_users,
        author_col=settings.author_col,
        text_col=settings.text_col,
        time_col=settings.time_col,
        drop_duplicates=settings.drop_duplicates,
    )
    extra: dict[str, Any] = {}
    if filtered:
        corpus, extra = _filtered(corpus, settings)
    kwargs: dict[str, Any] = {"outcome": settings.outcome}
    if settings.insertion is not None:
        kwargs["insertion"] = settings.insertion
    if settings.held_out_bank:
        kwargs["held_out_bank"] = settings.held_out_bank
    task = make_task(corpus, settings.task, settings.level, seed=settings.seed, **kwargs)
    return dataclasses.replace(task, info={**task.info, **extra}) if extra else task


def _filtered(corpus: Any, settings: DataSettings) -> tuple[Any, dict[str, Any]]:
    """The users of ``settings.meta_filter`` (then the ``n_users`` sample among them) and what to record."""
    from textcause.corpus import filter_meta, sample_indices

    meta_filter = settings.meta_filter
    if meta_filter is None:  # called only for settings with a filter
        raise RuntimeError("Internal error: the corpus filter was applied without a filter.")
    kept = filter_meta(corpus, meta_filter)
    if settings.n_users is not None:
        if settings.n_users > len(kept):
            raise ValueError(
                f"Only {len(kept)} users of '{corpus.source}' match meta_filter {settings.meta_filter!r}, "
                f"fewer than n_users={settings.n_users}: lower n_users or widen the filter."
            )
        kept = kept.subset(sample_indices(len(kept), settings.n_users, seed=0).tolist())
    info = {"meta_filter": dict(meta_filter), "n_users_before_meta_filter": len(corpus)}
    return kept, info


#: The task's outcome setting -> the doubly robust estimators' outcome kind (TMLE's ``outcome``).
OUTCOME_KINDS = {"binary": "binary", "normal": "continuous"}


def outcome_kind(task: Any) -> str:
    """``binary`` or ``continuous``: how the doubly robust estimators must treat ``task``'s outcome.

    Read from what drew the outcome, never from its values: a semi-synthetic task's ``outcome``
    setting (``binary``, or ``normal`` for the continuous outcomes of section 5.3), an
    observational task's threshold (a thresholded property is binary, a raw property continuous).

    Raises:
        ValueError: a task that does not say how its outcome was made.
    """
    info = getattr(task, "info", None) or {}
    if getattr(task, "task", None) == "observational" and "threshold" in info:
        return "continuous" if info["threshold"] is None else "binary"
    kind = info.get("outcome")
    if kind not in OUTCOME_KINDS:
        raise ValueError(
            f"The task {getattr(task, 'name', task)!r} does not say its outcome kind (info['outcome'] must be one "
            f"of {sorted(OUTCOME_KINDS)}; got {kind!r}): pass outcome='binary' or 'continuous' to the evaluation."
        )
    return OUTCOME_KINDS[kind]


def _scale_features(x: Any, train: np.ndarray, how: Optional[str]) -> Any:
    """Rescale a sparse or dense feature matrix (``maxabs`` fitted on the training rows only)."""
    return apply_scale(x, how, maxabs_factor(x, train) if how == "maxabs" else None)


def embed_texts(texts: list[list[str]], settings: DataSettings) -> tuple[Any, dict[str, Any]]:
    """The post-embedding table of ``texts`` (frozen encoder, through the embedding cache)."""
    return embed_histories(
        texts,
        settings.representation,
        settings.encoder,
        max_tokens=settings.max_tokens,
        token_cap=settings.token_cap,
        encoder_layer=settings.encoder_layer,
    )


def _features(task: Any, settings: DataSettings, cache: bool) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """The features of ``task``'s users, their info and the featurizer state (see :mod:`textcause.data.featurizer`)."""
    rep = settings.representation
    if rep == "none":  # baselines (oracle, unadjusted) read no text
        info = {"kind": "none", "vocabulary_size": 0, "fit_seconds": 0.0}
        return np.zeros((len(task), 0), dtype=np.float32), info, featurizer_state(settings)
    if rep in EMBEDDING_KINDS:
        table, info = embed_texts(task.texts, settings)
        return table, info, featurizer_state(settings, embedding=info)
    if rep not in NGRAM_KINDS:  # DataSettings refuses any other name; a registry added without a builder lands here
        raise ValueError(f"The representation {rep!r} has no builder: choose one of {list(REPRESENTATIONS)}.")
    from textcause.features import build_representation

    built = build_representation(
        rep, task.texts, task.split.train, min_users=settings.min_users, seed=settings.seed, cache=cache
    )
    info = {"kind": built.kind, "vocabulary_size": int(built.vocabulary_size), "fit_seconds": float(built.fit_seconds)}
    factor = maxabs_factor(built.matrix, task.split.train) if settings.scale == "maxabs" else None
    state = featurizer_state(settings, ngram=built.state, scale_factor=factor)
    return apply_scale(built.matrix, settings.scale, factor), info, state


_BUILT: OrderedDict[str, BuiltData] = OrderedDict()


def build_data(settings: DataSettings, *, cache: bool = True) -> BuiltData:
    """The task and features of ``settings`` (memoised per process; see the module docstring).

    Args:
        settings: what to build.
        cache: read and write fitted n-gram / topic representations in the cache root.
    """
    key = settings.key()
    if key in _BUILT:
        _BUILT.move_to_end(key)
        return _BUILT[key]
    with one_build_at_a_time(key):  # ranks of a torchrun / SLURM job: one fills the caches, the others read them
        task = build_task(settings)
        features, info, featurizer = _features(task, settings, cache)
    built = BuiltData(task, features, info, featurizer)
    _BUILT[key] = built
    while len(_BUILT) > _MEMO_SIZE:
        _BUILT.popitem(last=False)
    log.info("Built %r with %s features of width %d.", task, settings.representation, built.input_dim)
    return built


def clear_built() -> None:
    """Forget the tasks and features built in this process (the corpora read stay memoised)."""
    _BUILT.clear()

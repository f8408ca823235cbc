"""An observational task: real treatment and outcome from a corpus's metadata and later posts.

Nothing is simulated and nothing is known: ``T`` is a meta field of the user (e.g. self-reported
gender), the text ``X`` is the user's earliest posts, and ``Y`` is a property of the posts written
after them. There is no true propensity (``propensity`` is NaN) and no true ATE (``true_ate`` is
None). :class:`ObservationalTask` has the attributes of a
:class:`~textcause.simulation.types.SemiSyntheticTask` that the data module serves, so the same
models, features and loaders work on it (``--data.observational <config>``).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from textcause.corpus.splits import split_users
from textcause.corpus.types import Corpus, Split
from textcause.observational.outcomes import OUTCOMES, outcome_label
from textcause.observational.spec import ObservationalSpec, load_spec

__all__ = [
    "ObservationalTask",
    "build_observational_task",
    "load_task",
]


@dataclass(frozen=True)
class ObservationalTask:
    """Users with a real treatment, a text and a real later outcome; every array in ``user_ids`` order.

    Attributes:
        name: the study's name.
        seed: the split's seed.
        user_ids: the users' ids in the corpus.
        texts: each user's text (the earliest posts), oldest first.
        treatment: T in {0, 1} from the treatment meta field.
        outcome: Y (the thresholded property, or the property itself).
        outcome_value: the outcome property before thresholding.
        split: train/val/test indices (40/10/50, seeded).
        info: counts and settings (users read, dropped, per arm, the threshold, ...).
    """

    name: str
    seed: int
    user_ids: list[str]
    texts: list[list[str]]
    treatment: np.ndarray
    outcome: np.ndarray
    outcome_value: np.ndarray
    split: Split
    info: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    task = "observational"
    level = 0
    true_ate = None
    sample_ate = None

    def __len__(self) -> int:
        return len(self.user_ids)

    def __repr__(self) -> str:
        return (
            f"ObservationalTask(name={self.name!r}, seed={self.seed}, n_users={len(self)}, "
            f"treated={int(self.treatment.sum())}, split={self.split.sizes()})"
        )

    @property
    def propensity(self) -> np.ndarray:
        """NaN for every user: an observational study has no true propensity."""
        return np.full(len(self), np.nan)


def _fail(spec: ObservationalSpec, message: str) -> ValueError:
    return ValueError(f"Observational config '{spec.source}': {message}")


def _check_field(corpus: Corpus, spec: ObservationalSpec, name: str, wanted: tuple[Any, ...], what: str) -> None:
    seen = {h.meta[name] for h in corpus if name in h.meta and isinstance(h.meta[name], (str, int, float, bool))}
    if not any(name in h.meta for h in corpus):
        fields = sorted({k for h in corpus for k in h.meta})
        raise _fail(spec, f"no user of the corpus has the meta field {name!r} ({what}); its fields are {fields}.")
    absent = [v for v in wanted if v not in seen]
    if absent:
        shown = sorted(map(str, seen))[:12]
        raise _fail(
            spec, f"the value(s) {absent} of meta field {name!r} ({what}) occur in no user; values seen: {shown}."
        )


def _number(value: Any) -> float | None:
    """A meta value as a finite float (None: missing, not a number, or not finite)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        return None
    return float(value)


def _values(values: tuple[Any, ...]) -> str:
    return " or ".join(map(str, values))


def _text_length(n_posts: int, spec: ObservationalSpec) -> int:
    """How many of a user's ``n_posts`` earliest posts are the text."""
    if spec.text_posts is not None:
        return min(spec.text_posts, n_posts)
    if spec.text_fraction is None:
        raise ValueError("An observational spec sets 'text_posts' or 'text_fraction'; this one sets neither.")
    return int(np.floor(spec.text_fraction * n_posts))


def build_observational_task(corpus: Corpus, spec: ObservationalSpec, seed: int | None = None) -> ObservationalTask:
    """Select the study's users, cut their histories and compute T and Y.

    Users are kept when every ``filter`` field matches and the treatment field has a treated or a
    control value; each history is cut into the text (the first ``text_posts`` posts, or
    ``floor(text_fraction * n)``) and the later posts (all the rest); users with fewer than
    ``min_text_posts`` / ``min_later_posts`` are dropped; ``n_users`` of them are sampled (seed 0,
    so every split seed studies the same users); the outcome property of the later posts is
    thresholded at its median over these users (``Y = value > median``) or at the given number.

    Args:
        corpus: the corpus, with its meta (``load_histories(..., max_posts=None)`` keeps every post).
        spec: the study.
        seed: the split's seed (default: ``spec.seed``).

    Raises:
        ValueError: an unknown meta field or value, fewer than ``min_per_arm`` users in an arm, or a
            constant outcome (one sentence naming the config).
    """
    seed = spec.seed if seed is None else seed
    for name, values in spec.filter:
        _check_field(corpus, spec, name, values, "filter")
    users = [h for h in corpus if all(h.meta.get(k) in v for k, v in spec.filter)]
    n_filtered = len(users)
    _check_field(Corpus(tuple(users)), spec, spec.treatment_field, spec.treated + spec.control, "treatment")
    users = [h for h in users if h.meta.get(spec.treatment_field) in spec.treated + spec.control]
    n_with_treatment = len(users)
    field = spec.outcome_field  # a meta field as the outcome: the whole history is the text
    if field is not None:
        _check_field(Corpus(tuple(users)), spec, field, (), "outcome")
        users = [h for h in users if _number(h.meta.get(field)) is not None]
    n_outcome_missing = n_with_treatment - len(users)
    cut = [len(h) if field is not None else _text_length(len(h), spec) for h in users]
    later = 0 if field is not None else spec.min_later_posts
    keep = [i for i, (h, k) in enumerate(zip(users, cut)) if k >= spec.min_text_posts and len(h) - k >= later]
    n_eligible = len(keep)
    if spec.n_users is not None and spec.n_users < len(keep):
        keep = sorted(np.random.default_rng(0).choice(keep, size=spec.n_users, replace=False).tolist())
    users, cut = [users[i] for i in keep], [cut[i] for i in keep]
    t = np.array([float(h.meta[spec.treatment_field] in spec.treated) for h in users])
    n_treated, n_control = int(t.sum()), int(len(t) - t.sum())
    if min(n_treated, n_control) < spec.min_per_arm:
        raise _fail(
            spec,
            f"{n_treated} treated and {n_control} control users remain after the filters, fewer than "
            f"min_per_arm = {spec.min_per_arm} in an arm; use more users or lower min_per_arm.",
        )
    if field is not None:
        value = np.array([_number(h.meta[field]) for h in users], dtype=np.float64)
    else:
        value = np.array([OUTCOMES[spec.outcome](h.posts[k:], spec.terms) for h, k in zip(users, cut)])
    threshold = float(np.median(value)) if spec.threshold == "median" else spec.threshold
    y = value if threshold is None else (value > threshold).astype(np.float64)
    if np.all(y == y[0]):
        raise _fail(spec, f"the outcome is the same ({y[0]:g}) for every user; choose another property or threshold.")
    info = {
        "corpus": str(corpus.source),
        "n_corpus": len(corpus),
        "n_filtered": n_filtered,
        "n_with_treatment": n_with_treatment,
        "n_eligible": n_eligible,
        "n_users": len(users),
        "n_treated": n_treated,
        "n_control": n_control,
        "treatment": f"{spec.treatment_field} = {_values(spec.treated)} (T=1) vs {_values(spec.control)} (T=0)",
        "outcome": f"meta field {field!r}" if field is not None else outcome_label(spec.outcome, spec.terms),
        "outcome_property": spec.outcome,
        "threshold": threshold,
        "outcome_mean": float(y.mean()),
        "mean_text_posts": float(np.mean(cut)),
        "mean_later_posts": float(np.mean([len(h) - k for h, k in zip(users, cut)])),
        "n_outcome_missing": n_outcome_missing,
    }
    return ObservationalTask(
        name=spec.name,
        seed=seed,
        user_ids=[h.user_id for h in users],
        texts=[list(h.posts[:k]) for h, k in zip(users, cut)],
        treatment=t,
        outcome=y,
        outcome_value=value,
        split=split_users(len(users), seed=seed),
        info=info,
    )


def _read_corpus(source: str) -> Corpus:
    """Every user and post of a corpus (the process-wide memoised reader)."""
    from textcause.corpus.memo import read_corpus as read

    return read(source, min_posts=1, max_posts=None)


@functools.lru_cache(maxsize=2)
def _load_task(path: str, text: str, seed: int | None) -> ObservationalTask:
    spec = load_spec(path)
    return build_observational_task(_read_corpus(spec.corpus), spec, seed)


def load_task(config: str | os.PathLike[str], seed: int | None = None) -> ObservationalTask:
    """The task of an observational config file (memoised per file content and seed).

    Args:
        config: the study's YAML (``configs/observational/<name>.yaml``).
        seed: the split's seed (default: the config's ``seed``).
    """
    path = Path(config)
    if not path.is_file():
        raise FileNotFoundError(f"No observational config at '{path}'.")
    return _load_task(str(path), path.read_text(encoding="utf-8"), seed)

"""The corpus data types: a user history, a corpus of them, and a train/validation/test split."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from textcause.io import content_key

__all__ = [
    "Corpus",
    "DELETED_AUTHORS",
    "History",
    "SPLITS",
    "Split",
]

#: Author names that stand for many deleted accounts, never one user (rows of a comment table
#: with such an author are dropped: :mod:`textcause.corpus.tables`).
DELETED_AUTHORS = frozenset({"[deleted]", "[removed]"})


@dataclass(frozen=True)
class History:
    """One user's posts, oldest first.

    Attributes:
        user_id: the user's identifier in the source.
        posts: the texts, oldest first.
        times: one ISO date/time string (or None) per post, or None when the source has no times.
        meta: source metadata (e.g. gender, kind), never used by the simulation.
    """

    user_id: str
    posts: tuple[str, ...]
    times: tuple[str | None, ...] | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __len__(self) -> int:
        return len(self.posts)

    def __repr__(self) -> str:  # never print a whole history
        return f"History(user_id={self.user_id!r}, n_posts={len(self.posts)})"


@dataclass(frozen=True)
class Corpus:
    """An ordered collection of user histories read from one source.

    Attributes:
        histories: the users, in a fixed order.
        source: where they came from (a path or a dataset name), for provenance.
    """

    histories: tuple[History, ...]
    source: str = ""

    def __len__(self) -> int:
        return len(self.histories)

    def __iter__(self) -> Iterator[History]:
        return iter(self.histories)

    def __getitem__(self, i: int) -> History:
        return self.histories[i]

    def __repr__(self) -> str:
        return f"Corpus(source={self.source!r}, n_users={len(self)})"

    @property
    def user_ids(self) -> list[str]:
        return [h.user_id for h in self.histories]

    @property
    def texts(self) -> list[list[str]]:
        """The posts of every user, as plain lists (oldest first)."""
        return [list(h.posts) for h in self.histories]

    def subset(self, indices: Sequence[int]) -> Corpus:
        """A corpus of the users at ``indices``, in that order."""
        return Corpus(tuple(self.histories[int(i)] for i in indices), self.source)

    def fingerprint(self) -> str:
        """A content key of every user id and post, for cache keys."""
        return content_key([[h.user_id, list(h.posts)] for h in self.histories])


#: The names of a split's parts, in this order.
SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class Split:
    """Index arrays (into a corpus or task) of the training, validation and test users (:data:`SPLITS`)."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray

    def __post_init__(self) -> None:
        for name in SPLITS:
            arr = np.asarray(getattr(self, name), dtype=np.int64)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    def sizes(self) -> tuple[int, int, int]:
        return len(self.train), len(self.val), len(self.test)

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in SPLITS:
            raise ValueError(f"Unknown split {name!r}: choose 'train', 'val' or 'test'.")
        rows: np.ndarray = getattr(self, name)
        return rows

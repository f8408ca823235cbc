"""The semi-synthetic task: real histories with inserted posts, and the known causal truth."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from textcause.corpus.types import Split

__all__ = [
    "SemiSyntheticTask",
]


@dataclass(frozen=True)
class SemiSyntheticTask:
    """One draw of a semi-synthetic causal task (Weld et al., section 5.1).

    Every array has one entry per user, in the order of ``user_ids``.

    Attributes:
        task: the task name (e.g. ``linguistic_complexity``).
        level: the difficulty level (1 = easiest).
        seed: the seed this draw came from.
        user_ids: the users' ids in the source corpus.
        texts: each user's posts after the class-specific edit, oldest first.
        latent_class: 1 or 2 (the paper's class 1 and class 2).
        treatment: observed treatment T in {0, 1}.
        outcome: observed outcome Y = T*Y(1) + (1-T)*Y(0).
        y0, y1: both potential outcomes.
        propensity: the true P(T=1 | class) of every user.
        true_ate: the population ATE implied by the probability tables.
        sample_ate: mean(y1 - y0) over all users of this draw.
        split: train/val/test indices (the train part subsampled in the Sample Size task).
        n_inserted: synthetic posts inserted into each user's history.
        info: the task's parameters (probabilities, insertion strategy, ...).
    """

    task: str
    level: int
    seed: int
    user_ids: list[str]
    texts: list[list[str]]
    latent_class: np.ndarray
    treatment: np.ndarray
    outcome: np.ndarray
    y0: np.ndarray
    y1: np.ndarray
    propensity: np.ndarray
    true_ate: float
    sample_ate: float
    split: Split
    n_inserted: np.ndarray
    info: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __len__(self) -> int:
        return len(self.user_ids)

    def __repr__(self) -> str:
        return (
            f"SemiSyntheticTask(task={self.task!r}, level={self.level}, seed={self.seed}, "
            f"n_users={len(self)}, true_ate={self.true_ate:.3f}, split={self.split.sizes()})"
        )

    @property
    def name(self) -> str:
        return f"{self.task}-{self.level}"

"""Seeded train/validation/test splits in the paper's proportions (3,200 / 800 / 4,000 of 8,000)."""

from __future__ import annotations

import numpy as np

from textcause.corpus.types import SPLITS, Split

__all__ = ["PAPER_FRACTIONS", "SPLITS", "split_users"]
from textcause.validation import check_int, check_real

#: The paper's fractions: 3,200 / 800 / 4,000 of 8,000 users.
PAPER_FRACTIONS = (0.4, 0.1, 0.5)


def split_users(n_users: int, *, seed: int = 0, fractions: tuple[float, float, float] = PAPER_FRACTIONS) -> Split:
    """Randomly partition ``n_users`` indices into train / validation / test.

    Args:
        n_users: how many users to split.
        seed: the split's seed (same seed, same split).
        fractions: train, validation and test fractions, summing to 1.

    Returns:
        A :class:`Split` of sorted index arrays; sizes are rounded so they add up to ``n_users``
        (8,000 users give exactly 3,200 / 800 / 4,000).
    """
    n_users = check_int(n_users, "n_users", "split_users", low=3)
    if len(fractions) != 3:
        raise ValueError(f"The 'fractions' parameter of split_users must have 3 entries. Got {fractions!r} instead.")
    for f in fractions:
        check_real(f, "fractions", "split_users", low=0.0, high=1.0, low_open=True)
    if abs(sum(fractions) - 1.0) > 1e-9:
        raise ValueError(f"The 'fractions' parameter of split_users must sum to 1. Got {sum(fractions)!r} instead.")
    n_train = int(round(fractions[0] * n_users))
    n_val = int(round(fractions[1] * n_users))
    n_train, n_val = max(n_train, 1), max(n_val, 1)
    if n_train + n_val >= n_users:
        raise ValueError(f"{n_users} users are too few to split into train, validation and test sets.")
    perm = np.random.default_rng(seed).permutation(n_users)
    return Split(
        train=np.sort(perm[:n_train]),
        val=np.sort(perm[n_train : n_train + n_val]),
        test=np.sort(perm[n_train + n_val :]),
    )

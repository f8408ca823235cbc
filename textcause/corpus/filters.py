"""Keep the users of a corpus whose metadata match, and draw a seeded user sample (nothing else random).

``filter_meta(corpus, {"kind": "human"})`` keeps PAN 2019's human accounts (``meta.kind`` is
``human`` or ``bot``); a value may also be a list of accepted values (``{"gender": ["male", "female"]}``).
A filter that names a meta key no user has, or values no user has, is one ``ValueError`` naming the
key and the values present, never an empty corpus.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from textcause.corpus.types import Corpus

__all__ = [
    "check_meta_filter",
    "filter_meta",
    "sample_indices",
]

#: The types a meta filter's values may take (what a YAML scalar or a JSON meta value is).
_SCALARS = (str, int, float, bool)


def check_meta_filter(meta: Any, owner: str = "filter_meta") -> dict[str, tuple[Any, ...]]:
    """A meta filter as ``{key: (accepted value, ...)}``; a ValueError in the package's wording otherwise."""
    doc = (
        "a non-empty mapping from meta keys to a value or a non-empty list of values, "
        "e.g. {'kind': 'human'} or {'gender': ['male', 'female']}"
    )
    if not isinstance(meta, Mapping) or not meta:
        raise ValueError(f"The 'meta_filter' parameter of {owner} must be {doc}. Got {meta!r} instead.")
    out: dict[str, tuple[Any, ...]] = {}
    for key, value in meta.items():
        values = tuple(value) if isinstance(value, (list, tuple)) else (value,)
        if not isinstance(key, str) or not key or not values or not all(isinstance(v, _SCALARS) for v in values):
            raise ValueError(f"The 'meta_filter' parameter of {owner} must be {doc}. Got {meta!r} instead.")
        out[key] = values
    return out


def filter_meta(corpus: Corpus, meta: Mapping[str, Any]) -> Corpus:
    """The users of ``corpus`` whose ``meta`` holds every key of ``meta`` with an accepted value, in order.

    Args:
        corpus: the corpus (not modified).
        meta: meta key -> an accepted value or a list of them (every key must match).

    Returns:
        A corpus of the matching users (same ``source``).

    Raises:
        ValueError: a malformed filter, a key no user's meta has (naming the keys present), or no
            user matching (naming the values present of each key).
    """
    wanted = check_meta_filter(meta)
    histories = corpus.histories
    for key in wanted:
        if not any(key in h.meta for h in histories):
            keys = sorted({k for h in histories for k in h.meta})
            raise ValueError(
                f"No user of the corpus '{corpus.source}' has the meta key {key!r} asked for by meta_filter; "
                f"the meta keys present are {keys}."
            )
    kept = tuple(h for h in histories if all(_matches(h.meta, k, v) for k, v in wanted.items()))
    if not kept:
        present = {k: sorted({repr(h.meta[k]) for h in histories if k in h.meta}) for k in wanted}
        shown = "; ".join(f"{k!r}: {', '.join(v)}" for k, v in present.items())
        raise ValueError(
            f"No user of the corpus '{corpus.source}' matches meta_filter {dict(meta)!r}; "
            f"the values present are {shown}."
        )
    return Corpus(kept, corpus.source)


def _matches(meta: Mapping[str, Any], key: str, values: tuple[Any, ...]) -> bool:
    if key not in meta:
        return False
    value = meta[key]
    # bool is an int: True must not match 1, nor "1" match 1
    return any(type(value) is type(v) or (_number(value) and _number(v)) for v in values if v == value)


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def sample_indices(n: int, size: int, seed: int = 0) -> np.ndarray:
    """``size`` of ``n`` indices drawn without replacement with ``default_rng(seed)``, sorted (corpus order)."""
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))

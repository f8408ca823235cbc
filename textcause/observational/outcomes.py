"""Outcome properties of a user's later posts: pure functions ``(posts, terms) -> float``.

An observational study's outcome is one of these, computed on the posts a user wrote after the
text the propensity models read (see :mod:`textcause.observational.task`), then optionally
thresholded (``Y = 1`` when the value is above the median of the study's users).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "mean_words",
    "url_share",
    "mention_share",
    "hashtag_share",
    "term_share",
    "OUTCOMES",
    "OUTCOME_LABELS",
    "outcome_label",
]

_URL = re.compile(r"https?://|\bwww\.", re.IGNORECASE)
_MENTION = re.compile(r"(?<![\w@])@\w")
_HASHTAG = re.compile(r"(?<![\w#&])#\w")


def _posts(posts: Sequence[str]) -> Sequence[str]:
    if isinstance(posts, (str, bytes)) or len(posts) == 0:
        raise ValueError("An outcome property needs a non-empty list of posts.")
    return posts


def mean_words(posts: Sequence[str], terms: Sequence[str] = ()) -> float:
    """Mean number of whitespace-separated words per post."""
    return float(np.mean([len(p.split()) for p in _posts(posts)]))


def _share_matching(posts: Sequence[str], pattern: re.Pattern[str]) -> float:
    """Share of posts in which ``pattern`` occurs."""
    return float(np.mean([pattern.search(p) is not None for p in _posts(posts)]))


def url_share(posts: Sequence[str], terms: Sequence[str] = ()) -> float:
    """Share of posts with a link (``http://``, ``https://`` or ``www.``)."""
    return _share_matching(posts, _URL)


def mention_share(posts: Sequence[str], terms: Sequence[str] = ()) -> float:
    """Share of posts that mention an account (``@name``, retweets included)."""
    return _share_matching(posts, _MENTION)


def hashtag_share(posts: Sequence[str], terms: Sequence[str] = ()) -> float:
    """Share of posts with a hashtag (``#word``)."""
    return _share_matching(posts, _HASHTAG)


def _term_pattern(terms: Sequence[str]) -> re.Pattern[str]:
    """A case-insensitive whole-word pattern matching any of ``terms``."""
    if isinstance(terms, str) or not terms:
        raise ValueError("term_share needs a non-empty list of terms.")
    return re.compile(r"\b(?:" + "|".join(re.escape(t) for t in terms) + r")\b", re.IGNORECASE)


def term_share(posts: Sequence[str], terms: Sequence[str] = ()) -> float:
    """Share of posts containing any of ``terms`` as a whole word (case-insensitive)."""
    return _share_matching(posts, _term_pattern(terms))


#: Outcome property name -> function.
OUTCOMES: dict[str, Callable[[Sequence[str], Sequence[str]], float]] = {
    "mean_words": mean_words,
    "url_share": url_share,
    "mention_share": mention_share,
    "hashtag_share": hashtag_share,
    "term_share": term_share,
}
#: Outcome property name -> a phrase for figures and reports.
OUTCOME_LABELS = {
    "mean_words": "mean words per later post",
    "url_share": "share of later posts with a link",
    "mention_share": "share of later posts with an @mention",
    "hashtag_share": "share of later posts with a #hashtag",
    "term_share": "share of later posts mentioning {terms}",
}


def outcome_label(name: str, terms: Sequence[str] = ()) -> str:
    """The phrase describing an outcome property (``term_share`` names its terms)."""
    label = OUTCOME_LABELS.get(name, name)
    return label.format(terms="/".join(terms[:4]) + (", ..." if len(terms) > 4 else ""))

"""What every loaded corpus must be, checked by the corpus readers' property tests."""

from __future__ import annotations

from textcause.corpus import Corpus


def assert_well_formed(corpus: object, *, meta: bool = False) -> None:
    """A non-empty :class:`Corpus` of distinct users, each with a non-blank id, non-blank posts and
    either no times or one string (or None) per post; with ``meta``, each history's ``meta`` a dict."""
    assert isinstance(corpus, Corpus) and len(corpus) >= 1
    assert len(set(corpus.user_ids)) == len(corpus)
    for h in corpus:
        assert isinstance(h.user_id, str) and h.user_id.strip()
        assert h.posts and all(isinstance(p, str) and p.strip() for p in h.posts)
        assert h.times is None or (
            len(h.times) == len(h.posts) and all(t is None or isinstance(t, str) for t in h.times)
        )
        assert not meta or isinstance(h.meta, dict)

"""Class-specific edit functions f1 / f2: inserting synthetic posts, and rewriting real posts.

An insertion edit is an :class:`Insert` (how many posts of which kinds, and where); the identity is
``None``. A rewriting edit (section 5.3, "Types of Confounding") is any callable taking a user's
posts and returning the rewritten posts, or a mapping of whole-word replacement rules such as
``{"happy": "sad"}`` (see :class:`WordRules`), which can come straight from a YAML config.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from textcause.simulation.bank import PostBank
from textcause.validation import check_int, check_options

__all__ = [
    "INSERTIONS",
    "Rewrite",
    "Insert",
    "check_insertion",
    "insert_posts",
    "WordRules",
    "as_rewrite",
    "apply_rewrite",
    "describe_rewrite",
]

#: Where inserted posts go: after the last post, before the first, or in place of random real posts.
INSERTIONS = ("append", "prepend", "replace")

#: A rewriting edit: posts -> posts, a mapping of word rules, or None for the identity.
Rewrite = Callable[[list[str]], list[str]] | Mapping[str, str] | None


@dataclass(frozen=True)
class Insert:
    """An edit f_n that inserts synthetic posts into a history.

    Attributes:
        kinds: post kinds to draw from; for each post a kind is chosen uniformly, then a post of it.
        count: how many posts each history receives (drawn independently, with replacement).
        fixed: draw the ``count`` posts once per task and give every user the same ones
            (Linguistic Complexity level 1).
        where: force ``append``, ``prepend`` or ``replace`` whatever the task's insertion strategy
            (Order of Text level 2 prepends f2's post); None follows the strategy. Under the
            ``replace`` strategy a forced ``append`` / ``prepend`` overwrites the last / first real
            posts instead, so every history keeps its length.
    """

    kinds: tuple[str, ...] = ("sickness",)
    count: int = 1
    fixed: bool = False
    where: str | None = None

    def __post_init__(self) -> None:
        kinds = (self.kinds,) if isinstance(self.kinds, str) else tuple(self.kinds)
        if not kinds or not all(isinstance(k, str) and k for k in kinds):
            raise ValueError(
                f"The 'kinds' parameter of Insert must be a non-empty list of kind names. Got {self.kinds!r} instead."
            )
        object.__setattr__(self, "kinds", kinds)
        check_int(self.count, "count", "Insert", low=1)
        if self.where is not None:
            check_insertion(self.where, "Insert")

    def draw(self, bank: PostBank, rng: np.random.Generator) -> list[str]:
        """Draw this edit's ``count`` posts: per post a uniform kind, then a post of that kind."""
        out = []
        for _ in range(self.count):
            kind = self.kinds[int(rng.integers(len(self.kinds)))] if len(self.kinds) > 1 else self.kinds[0]
            out.append(bank.sample(kind, rng))
        return out

    def describe(self, insertion: str = "append") -> str:
        where = self.where or insertion
        kinds = " or ".join(k.capitalize() for k in self.kinds)
        many = self.count > 1
        if self.fixed:
            what = f"the same {f'{self.count} {kinds} Posts' if many else f'{kinds} Post'} (drawn once per task)"
        else:
            what = f"{self.count} random {kinds} Posts (with replacement)" if many else f"a random {kinds} Post"
        if self.where in ("append", "prepend") and insertion == "replace":  # the length is kept (insert_posts)
            end = "last" if self.where == "append" else "first"
            return f"replaces the {f'{end} {self.count} real posts' if many else f'{end} real post'} with {what}"
        verb = {
            "append": "appends",
            "prepend": "prepends",
            "replace": f"replaces {f'{self.count} random real posts' if many else 'a random real post'} with",
        }[where]
        return f"{verb} {what}"


def check_insertion(insertion: Any, owner: str = "make_task") -> str:
    """Return ``insertion`` if it is one of :data:`INSERTIONS`.

    Raises:
        ValueError: any other value (the message lists the insertion modes).

    Examples:
        >>> check_insertion("replace")
        'replace'
    """
    check_options(insertion, "insertion", owner, INSERTIONS)
    return str(insertion)


def insert_posts(
    posts: Sequence[str],
    new: Sequence[str],
    where: str,
    rng: np.random.Generator,
    *,
    keep_length: bool = False,
) -> tuple[list[str], tuple[int, ...]]:
    """Insert ``new`` posts into a history.

    Args:
        posts: the history, oldest first (not modified).
        new: the synthetic posts, kept in their order.
        where: ``append`` (after the last post), ``prepend`` (before the first) or ``replace``
            (``len(new)`` distinct real posts chosen uniformly are replaced, so the history keeps its
            length; the new posts fill the chosen positions in order).
        rng: used by ``replace`` only.
        keep_length: ``append`` / ``prepend`` overwrite the last / first ``len(new)`` real posts
            instead of adding posts, so the history keeps its length and the new posts keep their
            place (a task's forced position under the ``replace`` strategy: Order of Text level 2).

    Returns:
        The new history and the positions of the inserted posts in it.
    """
    posts, new = list(posts), list(new)
    if not new:
        return posts, ()
    if keep_length and where in ("append", "prepend"):
        _check_room(posts, new, where)
        start = len(posts) - len(new) if where == "append" else 0
        posts[start : start + len(new)] = new
        return posts, tuple(range(start, start + len(new)))
    if where == "append":
        return posts + new, tuple(range(len(posts), len(posts) + len(new)))
    if where == "prepend":
        return new + posts, tuple(range(len(new)))
    if where == "replace":
        _check_room(posts, new, "replace")
        at = np.sort(rng.choice(len(posts), size=len(new), replace=False))
        for i, text in zip(at, new):
            posts[int(i)] = text
        return posts, tuple(int(i) for i in at)
    check_insertion(where, "insert_posts")
    raise AssertionError("unreachable")  # pragma: no cover


def _check_room(posts: list[str], new: list[str], where: str) -> None:
    """A history must hold as many real posts as the length-keeping insertion overwrites."""
    if len(new) > len(posts):
        raise ValueError(
            f"The 'replace' insertion needs histories of at least {len(new)} posts to replace; "
            f"a history has {len(posts)}. Use insertion='append' or filter short histories."
        )


class WordRules:
    """Whole-word replacement rules, e.g. ``{"happy": "sad"}`` (section 5.3's rewriting task).

    Matching is whole-word (not inside a longer word: "happy" leaves "unhappy" and "happyness"
    alone) and all rules apply in one pass, so ``{"happy": "sad", "sad": "happy"}`` swaps the words
    instead of chaining. Longer keys win over shorter ones that start the same way.

    By default matching ignores case and the replacement follows the case of the matched text:
    "happy" -> "sad", "Happy" -> "Sad", "HAPPY" -> "SAD". With ``case_sensitive=True`` only the exact
    key matches and the replacement is used verbatim.

    Args:
        rules: word (or phrase) -> replacement.
        case_sensitive: match keys exactly instead of ignoring case.
    """

    def __init__(self, rules: Mapping[str, str], *, case_sensitive: bool = False) -> None:
        if not isinstance(rules, Mapping) or not rules:
            raise ValueError(
                f"Word replacement rules must be a non-empty mapping like {{'happy': 'sad'}}. Got {rules!r} instead."
            )
        bad = [(k, v) for k, v in rules.items() if not isinstance(k, str) or not k.strip() or not isinstance(v, str)]
        if bad:
            raise ValueError(f"Every word replacement rule must map a non-empty string to a string. Got {bad[0]!r}.")
        self.rules = dict(rules)
        self.case_sensitive = bool(case_sensitive)
        folded = {k if case_sensitive else k.lower(): v for k, v in self.rules.items()}
        if len(folded) != len(self.rules):
            raise ValueError(f"The word replacement rules {sorted(self.rules)} repeat a word in different cases.")
        self._lookup = folded
        alternation = "|".join(re.escape(k) for k in sorted(self.rules, key=len, reverse=True))
        flags = 0 if case_sensitive else re.IGNORECASE
        self._pattern = re.compile(rf"(?<!\w)(?:{alternation})(?!\w)", flags)

    def __repr__(self) -> str:
        return f"WordRules({self.rules!r}, case_sensitive={self.case_sensitive})"

    def apply(self, text: str) -> str:
        """Rewrite one post."""
        return self._pattern.sub(self._replace, text)

    def __call__(self, posts: list[str]) -> list[str]:
        return [self.apply(p) for p in posts]

    def _replace(self, match: re.Match[str]) -> str:
        found = match.group(0)
        if self.case_sensitive:
            return self._lookup[found]
        out = self._lookup[found.lower()]
        if len(found) > 1 and found.isupper():
            return out.upper()
        if found[:1].isupper():
            return out[:1].upper() + out[1:]
        return out


def as_rewrite(f: Rewrite, name: str, owner: str = "make_rewrite_task") -> Callable[[list[str]], list[str]] | None:
    """Turn a rewriting edit (callable, rule mapping or None) into a callable or None."""
    if f is None:
        return None
    if isinstance(f, WordRules):
        return f
    if isinstance(f, Mapping):
        return WordRules(f)
    if callable(f):
        return f
    raise ValueError(
        f"The '{name}' parameter of {owner} must be a callable (posts -> posts), a mapping of word rules "
        f"like {{'happy': 'sad'}}, or None. Got {type(f).__name__} instead."
    )


def apply_rewrite(f: Callable[[list[str]], list[str]], posts: list[str], name: str) -> list[str]:
    """Call a rewriting edit on a copy of ``posts`` and check it returned a list of strings."""
    out = f(list(posts))
    if isinstance(out, (str, bytes)) or not isinstance(out, Sequence) or not all(isinstance(p, str) for p in out):
        raise ValueError(
            f"The rewriting edit '{name}' must return a list of strings (the posts). Got {type(out).__name__} instead."
        )
    return list(out)


def describe_rewrite(f: Callable[[list[str]], list[str]] | None) -> str:
    """A rewrite in words for a task's description: ``identity`` for None, else the rules or the function's name.

    Examples:
        >>> describe_rewrite(None)
        'identity'
    """
    if f is None:
        return "identity"
    if isinstance(f, WordRules):
        return repr(f)
    return getattr(f, "__qualname__", None) or repr(f)

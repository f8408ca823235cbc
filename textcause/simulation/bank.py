"""Synthetic post banks: the paper's Appendix C posts, kept as data and loaded from YAML or JSON.

A bank has named kinds (the paper's ``sickness``, ``isolation`` and ``death``). A kind is either a
set of templates with a ``{x}`` slot and a set of words (a post is one template and one word, drawn
independently and uniformly), or a set of complete posts (drawn uniformly).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from textcause.io import atomic_write_text
from textcause.validation import check_real

__all__ = [
    "SLOT",
    "DEFAULT_BANK",
    "PostKind",
    "PostBank",
    "split_bank",
    "bank_from_dict",
    "load_bank",
    "save_bank",
]

#: The slot a template's word goes into.
SLOT = "{x}"

#: The bank shipped with the package (Appendix C of the paper).
DEFAULT_BANK = "default"


@dataclass(frozen=True)
class PostKind:
    """One kind of synthetic post.

    Attributes:
        templates: texts with a ``{x}`` slot (empty for a kind of complete posts).
        words: the words that fill the slot (empty for a kind of complete posts).
        posts: complete posts (empty for a template kind).
    """

    templates: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    posts: tuple[str, ...] = ()

    @property
    def is_template(self) -> bool:
        return bool(self.templates)

    def expand(self) -> list[str]:
        """Every post of this kind: each template with each word, or the complete posts."""
        if self.is_template:
            return [t.replace(SLOT, w) for t in self.templates for w in self.words]
        return list(self.posts)

    def sample(self, rng: np.random.Generator) -> str:
        """One post: a uniform template and an independent uniform word, or a uniform post."""
        if self.is_template:
            template = self.templates[int(rng.integers(len(self.templates)))]
            return template.replace(SLOT, self.words[int(rng.integers(len(self.words)))])
        return self.posts[int(rng.integers(len(self.posts)))]

    def to_dict(self) -> dict[str, list[str]]:
        if self.is_template:
            return {"templates": list(self.templates), "words": list(self.words)}
        return {"posts": list(self.posts)}


@dataclass(frozen=True)
class PostBank:
    """Named kinds of synthetic posts.

    Attributes:
        name: the bank's name (recorded in every task's ``info``).
        kinds: kind name -> :class:`PostKind`, in file order.
    """

    name: str
    kinds: Mapping[str, PostKind]

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}={len(v.expand())}" for k, v in self.kinds.items())
        return f"PostBank(name={self.name!r}, {sizes})"

    def check_kind(self, kind: str) -> PostKind:
        """The kind called ``kind``; a ValueError naming the bank's kinds otherwise."""
        if kind not in self.kinds:
            raise ValueError(f"The post bank {self.name!r} has no kind {kind!r}. Choose one of {sorted(self.kinds)}.")
        return self.kinds[kind]

    def sample(self, kind: str, rng: np.random.Generator) -> str:
        """Draw one post of ``kind`` (``sickness``, ``isolation``, ``death`` in the default bank)."""
        return self.check_kind(kind).sample(rng)

    def posts(self, kind: str) -> list[str]:
        """Every distinct post of ``kind``, in a fixed order."""
        return list(dict.fromkeys(self.check_kind(kind).expand()))

    def all_posts(self) -> list[str]:
        """Every distinct post of every kind, in a fixed order (e.g. to pre-encode them once)."""
        out: dict[str, None] = {}
        for kind in self.kinds.values():
            out.update(dict.fromkeys(kind.expand()))
        return list(out)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kinds": {k: v.to_dict() for k, v in self.kinds.items()}}


def split_bank(bank: PostBank, held_out: float, rng: np.random.Generator) -> tuple[PostBank, PostBank]:
    """Divide every kind's distinct posts into two disjoint banks: one for training, one held out.

    Each kind's distinct posts (:meth:`PostBank.posts`: a template kind's every template-word pair)
    are permuted by ``rng``; ``round(held_out * n)`` of them (at least one, at most ``n - 1``) go to
    the held-out bank and the rest to the training bank, each as a kind of complete posts drawn
    uniformly (a template kind's posts are all distinct pairs, so this is its template-then-word
    draw restricted to the half). No post string is in both banks.

    Args:
        bank: the bank to divide (not modified).
        held_out: the share of each kind's posts held out, in (0, 1).
        rng: the split's Generator.

    Returns:
        ``(training bank, held-out bank)``, named ``<name>[train]`` and ``<name>[held-out]``.

    Raises:
        ValueError: ``held_out`` outside (0, 1), or a kind with fewer than two distinct posts.
    """
    held_out = check_real(held_out, "held_out", "split_bank", low=0.0, high=1.0, low_open=True, high_open=True)
    train: dict[str, PostKind] = {}
    test: dict[str, PostKind] = {}
    for kind in bank.kinds:
        posts = bank.posts(kind)
        if len(posts) < 2:
            raise ValueError(
                f"The post bank {bank.name!r} has {len(posts)} distinct post(s) of kind {kind!r}: a held-out "
                "bank needs at least two per kind (one for training users, one for test users)."
            )
        order = rng.permutation(len(posts))
        n_test = min(max(1, int(round(held_out * len(posts)))), len(posts) - 1)
        test[kind] = PostKind(posts=tuple(posts[int(i)] for i in np.sort(order[:n_test])))
        train[kind] = PostKind(posts=tuple(posts[int(i)] for i in np.sort(order[n_test:])))
    return PostBank(f"{bank.name}[train]", train), PostBank(f"{bank.name}[held-out]", test)


def bank_from_dict(data: Any, *, source: str = "the post bank") -> PostBank:
    """Build a :class:`PostBank` from its dict form (the YAML/JSON file's content).

    Args:
        data: ``{"name": ..., "kinds": {kind: {"templates": [...], "words": [...]} or {"posts": [...]}}}``.
        source: where ``data`` came from, for error messages.

    Returns:
        The bank.
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("kinds"), Mapping) or not data["kinds"]:
        raise ValueError(f"{source} must be a mapping with a non-empty 'kinds' mapping of post kinds.")
    name = str(data.get("name") or "custom")
    kinds: dict[str, PostKind] = {}
    for kind_name, spec in data["kinds"].items():
        where = f"{source}, kind {kind_name!r}"
        if not isinstance(spec, Mapping):
            raise ValueError(f"In {where}: expected a mapping with 'templates' and 'words', or 'posts'.")
        unknown = set(spec) - {"templates", "words", "posts"}
        if unknown:
            raise ValueError(f"In {where}: unknown keys {sorted(unknown)}; use 'templates' and 'words', or 'posts'.")
        templates = _strings(spec.get("templates"), f"{where}, 'templates'")
        words = _strings(spec.get("words"), f"{where}, 'words'")
        posts = _strings(spec.get("posts"), f"{where}, 'posts'")
        if posts and (templates or words):
            raise ValueError(f"In {where}: give either 'templates' and 'words', or 'posts', not both.")
        if posts:
            kinds[str(kind_name)] = PostKind(posts=posts)
            continue
        if not templates or not words:
            raise ValueError(f"In {where}: a kind needs non-empty 'templates' and 'words', or non-empty 'posts'.")
        missing = [t for t in templates if SLOT not in t]
        if missing:
            raise ValueError(f"In {where}: every template needs the slot {SLOT!r}. Got {missing[0]!r}.")
        kinds[str(kind_name)] = PostKind(templates=templates, words=words)
    return PostBank(name=name, kinds=kinds)


def load_bank(path: str | os.PathLike[str] | None = None) -> PostBank:
    """Load a post bank from a YAML or JSON file (``.json`` is read as JSON, anything else as YAML).

    Args:
        path: a bank file, the name of a bank shipped in ``textcause/simulation/banks``
            (``"default"``), or None for the default bank (the paper's Appendix C).

    Returns:
        The bank.
    """
    if path is None or (isinstance(path, str) and _is_shipped(path)):
        name = DEFAULT_BANK if path is None else str(path)
        ref = resources.files("textcause.simulation") / "banks" / f"{name}.yaml"
        return _parse(ref.read_text(encoding="utf-8"), yaml_format=True, source=f"the shipped bank {name!r}")
    p = Path(path)
    if not p.is_file():
        raise ValueError(
            f"Post bank file not found: {str(p)!r}. Pass a YAML or JSON bank file, or None for the default."
        )
    return _parse(
        p.read_text(encoding="utf-8"), yaml_format=p.suffix.lower() != ".json", source=f"post bank {str(p)!r}"
    )


def save_bank(bank: PostBank, path: str | os.PathLike[str]) -> Path:
    """Write ``bank`` to ``path`` atomically, as JSON for ``.json`` and YAML otherwise."""
    data = bank.to_dict()
    if Path(path).suffix.lower() == ".json":
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    else:
        import yaml

        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000)
    return atomic_write_text(path, text)


def _is_shipped(name: str) -> bool:
    if os.sep in name or "/" in name or "." in name:
        return False
    return (resources.files("textcause.simulation") / "banks" / f"{name}.yaml").is_file()


def _parse(text: str, *, yaml_format: bool, source: str) -> PostBank:
    try:
        if yaml_format:
            from textcause.io import load_yaml

            data = load_yaml(text)
        else:
            data = json.loads(text)
    except Exception as err:  # yaml.YAMLError / json.JSONDecodeError: one sentence for the user
        raise ValueError(f"Could not parse {source}: {err.__class__.__name__}: {str(err).splitlines()[0]}") from err
    return bank_from_dict(data, source=source)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValueError(f"In {where}: expected a list of strings. Got {type(value).__name__} instead.")
    bad = [v for v in value if not isinstance(v, str) or not v.strip()]
    if bad:
        raise ValueError(f"In {where}: every entry must be a non-empty string. Got {bad[0]!r}.")
    return tuple(value)

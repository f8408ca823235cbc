"""The gendered words of table 3 and their token ids in a given tokenizer.

The word list is data (``textcause/gender/data/gendered_words.yaml``, ``[female, male]`` pairs),
replaceable by any YAML file of the same shape. Table 3 lists "her" twice (the female of "him" and
of "his"): a word is kept once per gender, and so is a token id, so no probability is counted twice.

Every word must be exactly one token of the tokenizer: it is tokenised as ``" " + word`` without
special tokens, which gives WordPiece's ``she`` and byte-level BPE's space-prefixed ``Ġshe`` (the
form a word takes after a space, as at a mask inside a sentence). A word that splits into several
tokens, maps to the unknown token, or shares its token with a word of the other gender is dropped,
and :class:`GenderedIds` says which and why (with a warning), never silently.
"""

from __future__ import annotations

import dataclasses
import warnings
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from textcause.gender.probes import read_utf8
from textcause.io import load_yaml

GENDERS = ("female", "male")


@dataclasses.dataclass(frozen=True)
class GenderedWords:
    """Pairs of gendered words.

    Attributes:
        pairs: ``(female, male)`` pairs in the list's order (a word may appear in several pairs).
    """

    pairs: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        if not self.pairs:
            raise ValueError("The gendered word list is empty: give at least one [female, male] pair.")
        for pair in self.pairs:
            if len(pair) != 2 or not all(isinstance(w, str) and w.strip() for w in pair):
                raise ValueError(
                    f"Each gendered pair must be two non-empty words [female, male]. Got {pair!r} instead."
                )

    def words(self, gender: str) -> tuple[str, ...]:
        """The distinct words of one gender (``female`` or ``male``), in the list's order."""
        if gender not in GENDERS:
            raise ValueError(f"The 'gender' parameter must be one of {list(GENDERS)}. Got {gender!r} instead.")
        col = GENDERS.index(gender)
        return tuple(dict.fromkeys(p[col].strip() for p in self.pairs))


def load_gendered_words(path: str | Path | None = None) -> GenderedWords:
    """The gendered words of table 3 (``path=None``) or of a YAML file with ``pairs: [[female, male], ...]``.

    Raises:
        ValueError: the file is missing or not of that shape.
    """
    if path is None:
        ref: Any = resources.files("textcause.gender").joinpath("data", "gendered_words.yaml")
    else:
        ref = Path(path)
        if not ref.is_file():
            raise ValueError(f"The gendered word file {str(path)!r} does not exist.")
    text = read_utf8(ref, "gendered word file")
    try:
        data = load_yaml(text)
    except yaml.YAMLError as err:
        raise ValueError(f"The gendered word file {str(ref)!r} is not valid YAML ({err.__class__.__name__}).") from None
    if not isinstance(data, dict) or not isinstance(data.get("pairs"), list):
        raise ValueError(f"The gendered word file {str(ref)!r} must hold 'pairs: [[female, male], ...]'.")
    return GenderedWords(pairs=tuple(tuple(p) if isinstance(p, list) else (p,) for p in data["pairs"]))


@dataclasses.dataclass(frozen=True)
class Dropped:
    """A gendered word left out for one tokenizer, and why.

    Attributes:
        word: the word.
        gender: ``female`` or ``male``.
        reason: why it is not scored.
    """

    word: str
    gender: str
    reason: str


@dataclasses.dataclass(frozen=True)
class GenderedIds:
    """The token ids scored as female and as male for one tokenizer (each id once).

    Attributes:
        female_ids: distinct token ids of the female words kept.
        female_words: the word of each female id.
        male_ids: distinct token ids of the male words kept.
        male_words: the word of each male id.
        dropped: the words left out, with the reason.
    """

    female_ids: tuple[int, ...]
    female_words: tuple[str, ...]
    male_ids: tuple[int, ...]
    male_words: tuple[str, ...]
    dropped: tuple[Dropped, ...] = ()

    def ids(self, gender: str) -> tuple[int, ...]:
        """The token ids of one gender."""
        return self.female_ids if gender == "female" else self.male_ids

    def describe_dropped(self) -> str:
        """One line per dropped word (empty when none was dropped)."""
        return "\n".join(f"{d.gender} {d.word!r}: {d.reason}" for d in self.dropped)


def single_token_id(tokenizer: Any, word: str) -> tuple[int | None, str]:
    """The one token id of ``" " + word``, or ``(None, reason)`` when there is not exactly one."""
    ids = list(tokenizer(" " + word, add_special_tokens=False)["input_ids"])
    if len(ids) != 1:
        pieces = tokenizer.convert_ids_to_tokens(ids)
        return None, f"not a single token: it splits into {pieces}"
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is not None and ids[0] == unk:
        return None, f"unknown to the tokenizer (it maps to {tokenizer.unk_token!r})"
    if ids[0] in set(getattr(tokenizer, "all_special_ids", ())):
        return None, "it maps to a special token"
    return int(ids[0]), ""


def gendered_token_ids(tokenizer: Any, words: GenderedWords | None = None, *, warn: bool = True) -> GenderedIds:
    """Map the gendered words to token ids of ``tokenizer``, one id per word, each id once.

    Args:
        tokenizer: a Hugging Face tokenizer.
        words: the word list (default: table 3).
        warn: issue a ``UserWarning`` that names the dropped words, if any.

    Raises:
        ValueError: no female or no male word is a single token of the tokenizer.
    """
    words = load_gendered_words() if words is None else words
    kept: dict[str, dict[int, str]] = {g: {} for g in GENDERS}
    dropped: list[Dropped] = []
    for gender in GENDERS:
        for word in words.words(gender):
            tid, reason = single_token_id(tokenizer, word)
            if tid is None:
                dropped.append(Dropped(word, gender, reason))
            elif tid in kept[gender]:
                dropped.append(Dropped(word, gender, f"the same token as {kept[gender][tid]!r} (counted once)"))
            else:
                kept[gender][tid] = word
    for tid in sorted(set(kept["female"]) & set(kept["male"])):
        f, m = kept["female"].pop(tid), kept["male"].pop(tid)
        reason = f"female {f!r} and male {m!r} are the same token"
        dropped += [Dropped(f, "female", reason), Dropped(m, "male", reason)]
    for gender in GENDERS:
        if not kept[gender]:
            raise ValueError(
                f"No {gender} word of the list is a single token of this tokenizer: the scores would be empty."
            )
    out = GenderedIds(
        female_ids=tuple(kept["female"]),
        female_words=tuple(kept["female"].values()),
        male_ids=tuple(kept["male"]),
        male_words=tuple(kept["male"].values()),
        dropped=tuple(dropped),
    )
    if warn and dropped:
        warnings.warn(
            f"{len(dropped)} gendered words are not scored with this tokenizer:\n" + out.describe_dropped(),
            UserWarning,
            stacklevel=2,
        )
    return out

"""The gendered-word swap: a counterfactual text by rule, from a replaceable bidirectional word map.

The map is data (``configs/cfr/gender_swap.yaml`` by default; a cfr config's ``swap_map:`` names
another file with the same keys):

* ``pairs``: ``[female, male]`` words; each word is swapped for its partner (the first pair a word
  appears in decides, so ``dad`` -> ``mom`` although ``mum`` -> ``dad`` too);
* ``ambiguous``: words whose partner depends on the next token, each with a ``possessive`` and an
  ``object`` partner (``her`` -> ``his`` / ``him``; ``his`` -> ``her`` / ``hers``);
* ``object_before``: the tokens after which an ambiguous word is an object (or a standalone
  pronoun), not a determiner.

**The "her" rule.** ``her`` followed by a word that is not in ``object_before`` is a possessive
determiner and becomes ``his`` ("her old car" -> "his old car"); followed by the end of the text,
punctuation, or a word in ``object_before`` (a preposition, determiner, conjunction, pronoun,
auxiliary, adverb, or a verb / adjective that follows an object) it is an object and becomes ``him``
("I saw her." -> "I saw him.", "gave her a book" -> "gave him a book", "let her go" -> "let him
go"). ``his`` uses the same rule ("his car" -> "her car", "the car is his." -> "the car is hers.").
The rule reads one token ahead and uses no tagger, so "saw her running" becomes "saw his running".

Tokens are runs of ASCII letters; everything between them (spaces, punctuation, apostrophes, digits)
is kept as it is, so "Mom's" becomes "Dad's". Case is kept: ``She`` -> ``He``, ``SHE`` -> ``HE``.
Names are not swapped.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from textcause.paths import config_dir

#: A token: a run of ASCII letters.
WORD = re.compile(r"[A-Za-z]+")
#: The concept values the two sides of a pair stand for, in the order of ``[female, male]``.
SIDES = ("female", "male")
DEFAULT_MAP = "cfr/gender_swap.yaml"


@dataclasses.dataclass(frozen=True)
class SwapMap:
    """A parsed word map (see the module docstring).

    Attributes:
        partner: every swappable word (lower case) -> its partner (ambiguous words excluded).
        side: every mapped word -> ``"female"`` or ``"male"`` (ambiguous words included).
        ambiguous: ambiguous word -> ``{"possessive": ..., "object": ...}``.
        object_before: the tokens after which an ambiguous word takes its ``object`` partner.
        source: where the map came from.
    """

    partner: Mapping[str, str]
    side: Mapping[str, str]
    ambiguous: Mapping[str, Mapping[str, str]]
    object_before: frozenset[str]
    source: str = ""

    def swap(self, text: str) -> str:
        """``text`` with every mapped word replaced by its partner (see the module docstring)."""
        return swap_text(text, self)

    def count(self, text: str) -> dict[str, int]:
        """How many words of each side ``text`` holds: ``{"female": n, "male": m}``."""
        out = dict.fromkeys(SIDES, 0)
        for m in WORD.finditer(text):
            side = self.side.get(m.group().lower())
            if side is not None:
                out[side] += 1
        return out


def _fail(source: str, message: str) -> ValueError:
    return ValueError(f"Swap map '{source}': {message}")


def _word(value: Any, source: str, where: str) -> str:
    if not isinstance(value, str) or not WORD.fullmatch(value):
        raise _fail(source, f"{where} must be a single word of letters. Got {value!r} instead.")
    return value.lower()


def parse_swap_map(data: Any, *, source: str = "<dict>") -> SwapMap:
    """The :class:`SwapMap` of a parsed YAML mapping.

    Raises:
        ValueError: one sentence naming the map and the key that is wrong.
    """
    if not isinstance(data, Mapping):
        raise _fail(
            source,
            f"expected a mapping with the keys 'pairs', 'ambiguous', 'object_before'. Got {type(data).__name__} instead.",
        )
    unknown = sorted(set(data) - {"pairs", "ambiguous", "object_before"})
    if unknown:
        raise _fail(source, f"unknown key(s) {unknown}; expected some of ['pairs', 'ambiguous', 'object_before'].")
    pairs = data.get("pairs")
    if not isinstance(pairs, list) or not pairs:
        raise _fail(source, "'pairs' must be a non-empty list of [female, male] word pairs.")
    partner: dict[str, str] = {}
    side: dict[str, str] = {}
    for i, pair in enumerate(pairs):
        if not isinstance(pair, list) or len(pair) != 2:
            raise _fail(source, f"'pairs[{i}]' must be a [female, male] pair of words. Got {pair!r} instead.")
        female, male = (_word(w, source, f"'pairs[{i}]'") for w in pair)
        if female == male:
            raise _fail(source, f"'pairs[{i}]' pairs the word {female!r} with itself.")
        partner.setdefault(female, male)
        partner.setdefault(male, female)
        for w, s in ((female, "female"), (male, "male")):
            if side.setdefault(w, s) != s:
                raise _fail(source, f"the word {w!r} is on both sides of the map.")
    ambiguous: dict[str, dict[str, str]] = {}
    raw = data.get("ambiguous") or {}
    if not isinstance(raw, Mapping):
        raise _fail(source, "'ambiguous' must map words to {possessive: ..., object: ...}.")
    for w, forms in raw.items():
        w = _word(w, source, "a key of 'ambiguous'")
        if not isinstance(forms, Mapping) or set(forms) != {"possessive", "object"}:
            raise _fail(source, f"'ambiguous.{w}' must have exactly the keys 'possessive' and 'object'.")
        ambiguous[w] = {k: _word(v, source, f"'ambiguous.{w}.{k}'") for k, v in forms.items()}
        if w not in side:
            raise _fail(source, f"the ambiguous word {w!r} must also appear in 'pairs' (its side).")
        partner.pop(w, None)
    before = data.get("object_before") or []
    if not isinstance(before, list):
        raise _fail(source, "'object_before' must be a list of words.")
    words = frozenset(_word(w, source, "'object_before'") for w in before)
    return SwapMap(partner=partner, side=side, ambiguous=ambiguous, object_before=words, source=source)


def load_swap_map(path: str | Path | None = None) -> SwapMap:
    """The word map of a YAML file (None: ``configs/cfr/gender_swap.yaml``).

    Raises:
        FileNotFoundError: ``path`` is not a file.
        ValueError: the file is not a valid map (one sentence naming it).
    """
    import yaml

    file = Path(path) if path is not None else config_dir() / DEFAULT_MAP
    if not file.is_file():
        raise FileNotFoundError(f"No swap map at '{file}': give a YAML file such as configs/{DEFAULT_MAP}.")
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise _fail(str(file), f"not valid YAML ({' '.join(str(err).split())[:200]}).") from None
    return parse_swap_map(data, source=str(file))


def _cased(word: str, like: str) -> str:
    if len(like) > 1 and like.isupper():
        return word.upper()
    if like[0].isupper():
        return word[0].upper() + word[1:]
    return word


def swap_text(text: str, words: SwapMap) -> str:
    """``text`` with every word of ``words`` swapped for its partner (the "her" rule for ambiguous ones).

    Examples:
        >>> m = load_swap_map()
        >>> swap_text("She gave her brother her keys, then I saw her.", m)
        'He gave his sister his keys, then I saw him.'
    """
    matches = list(WORD.finditer(text))
    out, last = [], 0
    for i, m in enumerate(matches):
        token = m.group()
        lower = token.lower()
        if lower in words.ambiguous:
            nxt = matches[i + 1] if i + 1 < len(matches) else None
            between = text[m.end() : nxt.start()] if nxt is not None else ""
            # a word right after (only spaces between) that is not a function word: a possessive
            possessive = nxt is not None and between.strip() == "" and nxt.group().lower() not in words.object_before
            new = words.ambiguous[lower]["possessive" if possessive else "object"]
        elif lower in words.partner:
            new = words.partner[lower]
        else:
            continue
        out.append(text[last : m.start()])
        out.append(_cased(new, token))
        last = m.end()
    out.append(text[last:])
    return "".join(out)

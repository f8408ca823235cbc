"""Texts with their true counterfactuals: blog posts swapped by rule, EEEC-style templates, a user's CSV.

Each source gives :class:`CounterfactualPairs`: per unit the original text, its counterfactual text
(the same text with the concept changed), the original's concept value (one of two) and its label.

* :func:`blog_pairs`: one post per author of a history corpus (the blog corpus by default), cut to
  its first ``max_words`` words (so the encoder sees every swapped word), among the posts with at
  least ``min_swaps`` mapped words there; the counterfactual is :func:`~.swap.swap_text` of it. The
  concept is the author's self-reported gender (``concept_source: author``) or the side most of the
  text's mapped words are on (``concept_source: words``; ties are left out). The label is a metadata
  field, optionally cut into bins (age -> "<20", "20-29", ">=30").
* :func:`template_pairs`: every (template, word, person pair) of an EEEC-style template file, sampled
  without replacement; the original's side is drawn at random (``bias`` makes it follow the label's
  class), the counterfactual is the other side.
* :func:`read_pairs_csv`: a CSV with the columns ``original``, ``counterfactual``, ``concept`` and
  ``label`` (EEEC, BiasInBios or any pairs a user has).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import numpy as np

from textcause.counterfactual.cfr.swap import SIDES, SwapMap
from textcause.paths import config_dir

PAIR_COLUMNS = ("original", "counterfactual", "concept", "label")
DEFAULT_TEMPLATES = "cfr/eeec_templates.yaml"


@dataclasses.dataclass(frozen=True)
class CounterfactualPairs:
    """Units with a true counterfactual text.

    Attributes:
        original: the texts as written.
        counterfactual: the same texts with the concept changed.
        concept: the original's concept value, one of ``concept_values`` (object array).
        label: the label to predict (object array of strings).
        concept_values: the two concept values; the effect of the concept is that of going from the
            first to the second.
        group: the unit's group (an author), kept together by the split (object array).
        info: where the pairs came from and how many were left out, for the report.
        class_order: the classes in a natural order (bins low to high); empty: sorted.
    """

    original: tuple[str, ...]
    counterfactual: tuple[str, ...]
    concept: np.ndarray
    label: np.ndarray
    concept_values: tuple[str, str]
    group: np.ndarray
    info: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False)
    class_order: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.original)

    def __repr__(self) -> str:  # never print the texts
        return f"CounterfactualPairs(n={len(self)}, concept_values={self.concept_values}, labels={self.classes})"

    @property
    def classes(self) -> list[str]:
        """The label's classes: in ``class_order`` (those present), else sorted."""
        present = set(self.label.tolist())
        ordered = [c for c in self.class_order if c in present]
        return ordered + sorted(present - set(ordered))

    @property
    def z(self) -> np.ndarray:
        """The concept as 0 / 1 (1: the second concept value)."""
        return (self.concept == self.concept_values[1]).astype(np.int64)


def make_pairs(
    original: Sequence[str],
    counterfactual: Sequence[str],
    concept: Sequence[Any],
    label: Sequence[Any],
    *,
    concept_values: Optional[Sequence[str]] = None,
    group: Optional[Sequence[Any]] = None,
    source: str = "pairs",
    info: Optional[dict[str, Any]] = None,
) -> CounterfactualPairs:
    """Checked :class:`CounterfactualPairs`.

    Raises:
        ValueError: lengths differ, a text is empty, the concept does not have exactly two values
            (or a value outside ``concept_values``), or the label has fewer than two classes.
    """
    from textcause.validation import check_consistent_length

    n = check_consistent_length(original, counterfactual, concept, label, group)
    original = tuple(str(t) for t in original)
    counterfactual = tuple(str(t) for t in counterfactual)
    blank = next((i for i, (a, b) in enumerate(zip(original, counterfactual)) if not a.strip() or not b.strip()), None)
    if blank is not None:
        raise ValueError(
            f"The {source} hold an empty text at row {blank}: every original and counterfactual needs text."
        )
    z = np.array([str(v) for v in concept], dtype=object)
    y = np.array([str(v) for v in label], dtype=object)
    found = sorted(set(z.tolist()))
    if concept_values is None:
        if len(found) != 2:
            raise ValueError(f"The concept of the {source} must take exactly 2 values. Got {found[:5]} instead.")
        values = (found[0], found[1])
    else:
        values = (str(concept_values[0]), str(concept_values[1]))
        if len(set(values)) != 2:
            raise ValueError(f"'concept_values' must be two distinct values. Got {list(concept_values)} instead.")
        other = sorted(set(found) - set(values))
        if other:
            raise ValueError(
                f"The concept of the {source} takes values {other[:5]} outside 'concept_values' {list(values)}."
            )
        missing = [v for v in values if v not in found]
        if missing:
            raise ValueError(f"The concept of the {source} never takes the value(s) {missing}: both values are needed.")
    if len(set(y.tolist())) < 2:
        raise ValueError(
            f"The label of the {source} must have at least 2 classes. Got {sorted(set(y.tolist()))} instead."
        )
    groups = (
        np.array([str(g) for g in group], dtype=object)
        if group is not None
        else np.array([str(i) for i in range(n)], dtype=object)
    )
    return CounterfactualPairs(original, counterfactual, z, y, values, groups, dict(info or {}, source=source))


# ---------------------------------------------------------------------------------------- a user's CSV
def read_pairs_csv(path: str | Path, *, concept_values: Optional[Sequence[str]] = None) -> CounterfactualPairs:
    """The pairs of a CSV with the columns ``original``, ``counterfactual``, ``concept``, ``label``.

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: a missing column, an empty text, a concept without exactly two values (one sentence).
    """
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No pairs file at '{path}': give a CSV with the columns {list(PAIR_COLUMNS)}.")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as err:
        raise ValueError(
            f"The pairs file '{path}' is not a readable CSV ({' '.join(str(err).split())[:160]})."
        ) from None
    missing = [c for c in PAIR_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(
            f"The pairs file '{path}' has no column(s) {missing}: it needs the columns {list(PAIR_COLUMNS)}."
        )
    group = df["group"] if "group" in df.columns else None
    return make_pairs(
        df["original"].tolist(),
        df["counterfactual"].tolist(),
        df["concept"].tolist(),
        df["label"].tolist(),
        concept_values=concept_values,
        group=None if group is None else group.tolist(),
        source=f"pairs file '{path}'",
        info={"file": str(path)},
    )


# ---------------------------------------------------------------------------------------- templates
def _forms(entry: Any, where: str) -> dict[str, str]:
    if isinstance(entry, str) and entry.strip():
        return {"subject": entry, "object": entry}
    if isinstance(entry, dict) and set(entry) == {"subject", "object"}:
        return {k: str(v) for k, v in entry.items()}
    raise ValueError(f"{where} must be a name or {{subject: ..., object: ...}}. Got {entry!r} instead.")


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _fill(template: str, person: dict[str, str], reflexive: str, slot: str, word: str) -> str:
    text = template.replace("{person}", person["subject"]).replace("{person_obj}", person["object"])
    text = text.replace("{reflexive}", reflexive).replace("{a}", _article(word)).replace("{" + slot + "}", word)
    return text[0].upper() + text[1:]


def load_templates(path: str | Path | None = None) -> dict[str, Any]:
    """The parsed template file (None: ``configs/cfr/eeec_templates.yaml``), checked.

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: a missing key or a malformed entry (one sentence naming the file).
    """
    import yaml

    file = Path(path) if path is not None else config_dir() / DEFAULT_TEMPLATES
    if not file.is_file():
        raise FileNotFoundError(f"No template file at '{file}': give a YAML file such as configs/{DEFAULT_TEMPLATES}.")
    data = yaml.safe_load(file.read_text(encoding="utf-8"))
    where = f"Template file '{file}'"
    need = ("templates", "persons", "reflexive")
    if not isinstance(data, dict) or any(k not in data for k in need):
        raise ValueError(f"{where}: needs the keys {list(need)} and 'emotions' or 'situations'.")
    if not (data.get("emotions") or data.get("situations")):
        raise ValueError(f"{where}: needs 'emotions' or 'situations' (class -> words).")
    for i, pair in enumerate(data["persons"]):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValueError(f"{where}: 'persons[{i}]' must be a [female, male] pair. Got {pair!r} instead.")
        for entry in pair:
            _forms(entry, f"{where}: 'persons[{i}]'")
    if not (isinstance(data["reflexive"], list) and len(data["reflexive"]) == 2):
        raise ValueError(f"{where}: 'reflexive' must be a [female, male] pair.")
    data["_source"] = str(file)
    return data


def template_pairs(
    n: Optional[int],
    rng: np.random.Generator,
    *,
    templates: str | Path | dict[str, Any] | None = None,
    bias: float = 0.0,
    bias_mode: str = "selection",
) -> CounterfactualPairs:
    """EEEC-style pairs: ``n`` (None: all) distinct (template, word, person pair) fills, sampled without replacement.

    Args:
        n: how many units (at most the number of distinct fills).
        rng: draws the units, which side is the original, and the bias.
        templates: a template file, its parsed content, or None for ``configs/cfr/eeec_templates.yaml``.
        bias: a selection bias: the original's side is female with probability 1/2 + bias/2 in the
            class ``bias_classes.female`` favours, 1/2 - bias/2 in the class ``bias_classes.male``
            favours, 1/2 elsewhere; labels are always the class of the sentence's word, so gender
            correlates with the label without deciding it (a shortcut a classifier may take).
        bias_mode: ``"selection"`` (above) or ``"label"``: the side is drawn at random and with
            probability ``bias`` the label is replaced by the class the original's gender favours
            (biased annotation: the label then depends on gender given the text, and a classifier
            that uses gender is right to, on these labels).
    """
    from textcause.validation import check_options, check_real

    bias = check_real(bias, "bias", "template_pairs", low=0.0, high=1.0)
    check_options(bias_mode, "bias_mode", "template_pairs", ("selection", "label"))
    data = templates if isinstance(templates, dict) else load_templates(templates)
    fills = []
    for t in data["templates"]:
        slot = "emotion" if "{emotion}" in t else "situation"
        for cls, words in sorted((data.get(slot + "s") or {}).items()):
            for w in words:
                for p in range(len(data["persons"])):
                    fills.append((t, slot, str(w), str(cls), p))
    if not fills:
        raise ValueError(f"Template file '{data.get('_source', '<dict>')}' gives no sentence to fill.")
    take = len(fills) if n is None else min(int(n), len(fills))
    idx = np.sort(rng.choice(len(fills), size=take, replace=False))
    favoured = data.get("bias_classes") or {}
    if bias > 0 and set(favoured) != set(SIDES):
        raise ValueError(f"A bias needs 'bias_classes' for {list(SIDES)} in the template file.")
    # P(the original is female | class): 1/2, moved by bias/2 towards each side's favoured class
    shift = bias if bias_mode == "selection" else 0.0
    female_share = {
        cls: 0.5 + shift / 2 * ((cls == favoured.get("female")) - (cls == favoured.get("male")))
        for cls in {f[3] for f in fills}
    }
    draws = rng.random(take)
    relabel = rng.random(take) < (bias if bias_mode == "label" else 0.0)
    original, counter, concept, label = [], [], [], []
    for k, i in enumerate(idx):
        t, slot, w, cls, p = fills[i]
        pair = [_forms(e, "persons") for e in data["persons"][p]]
        texts = [_fill(t, pair[s], str(data["reflexive"][s]), slot, w) for s in (0, 1)]
        s = 0 if draws[k] < female_share[cls] else 1
        original.append(texts[s])
        counter.append(texts[1 - s])
        concept.append(SIDES[s])
        label.append(str(favoured[SIDES[s]]) if relabel[k] else cls)
    info = {
        "n_fills": len(fills),
        "bias": bias,
        "bias_mode": bias_mode,
        "female_share": female_share,
        "n_relabelled": int(relabel.sum()),
        "templates": data.get("_source"),
    }
    return make_pairs(original, counter, concept, label, concept_values=SIDES, source="template pairs", info=info)


# ---------------------------------------------------------------------------------------- blogs
def label_name(value: Any, bins: Optional[Sequence[float]]) -> Optional[str]:
    """A metadata value as a class name: itself, or its bin (``bins=[20, 30]``: "<20", "20-29", ">=30").

    None for a missing value or a non-number when ``bins`` is given.
    """
    if value is None or str(value).strip() == "":
        return None
    if not bins:
        return str(value).strip()
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    edges = [float(b) for b in bins]
    k = int(np.searchsorted(edges, x, side="right"))

    def fmt(b: float) -> str:
        return f"{b:g}"

    if k == 0:
        return f"<{fmt(edges[0])}"
    if k == len(edges):
        return f">={fmt(edges[-1])}"
    upper = edges[k] - 1 if float(edges[k]).is_integer() and float(edges[k - 1]).is_integer() else edges[k]
    return f"{fmt(edges[k - 1])}-{fmt(upper)}"


def cut_words(text: str, max_words: int) -> str:
    """The first ``max_words`` whitespace-separated words of ``text``, joined by single spaces."""
    return " ".join(text.split()[:max_words])


def blog_pairs(
    corpus: Any,
    words: SwapMap,
    rng: np.random.Generator,
    *,
    n_documents: Optional[int],
    concept_field: str = "gender",
    concept_source: str = "author",
    concept_values: Sequence[str] = SIDES,
    label_field: str = "age",
    label_bins: Optional[Sequence[float]] = (20, 30),
    max_words: int = 64,
    min_swaps: int = 1,
) -> CounterfactualPairs:
    """One swapped post per author of a history corpus (see the module docstring).

    Args:
        corpus: a :class:`~textcause.corpus.types.Corpus` (authors' metadata in ``meta``).
        words: the swap map.
        rng: draws each author's post and the authors kept.
        n_documents: how many authors (None: every eligible author).
        concept_field: the metadata field of the concept (``concept_source: author``).
        concept_source: ``"author"`` (the metadata field) or ``"words"`` (the text's mapped words).
        concept_values: the two values; with ``words`` they name the female and male sides.
        label_field: the metadata field of the label.
        label_bins: cut a numeric label into bins (None: the value itself).
        max_words: a post is cut to its first this many words before the swap.
        min_swaps: a post needs at least this many mapped words (after the cut).

    Raises:
        ValueError: no author has a usable post, concept and label.
    """
    from textcause.validation import check_int, check_options

    owner = "blog_pairs"
    check_options(concept_source, "concept_source", owner, ("author", "words"))
    check_int(max_words, "max_words", owner, low=1)
    check_int(min_swaps, "min_swaps", owner, low=1)
    values = (str(concept_values[0]), str(concept_values[1]))
    counts = {"authors": len(corpus), "no_concept": 0, "no_label": 0, "no_post": 0, "tie": 0}
    rows = []
    for h in corpus:
        label = label_name(h.meta.get(label_field), label_bins)
        if label is None:
            counts["no_label"] += 1
            continue
        author_value = str(h.meta.get(concept_field, "")).strip().lower()
        if concept_source == "author" and author_value not in values:
            counts["no_concept"] += 1
            continue
        usable = []
        for post in h.posts:
            text = cut_words(post, max_words)
            c = words.count(text)
            if c["female"] + c["male"] >= min_swaps:
                usable.append((text, c))
        if not usable:
            counts["no_post"] += 1
            continue
        text, c = usable[int(rng.integers(len(usable)))]
        if concept_source == "words":
            if c["female"] == c["male"]:
                counts["tie"] += 1
                continue
            z = values[0] if c["female"] > c["male"] else values[1]
        else:
            z = author_value
        rows.append((h.user_id, text, z, label))
    if not rows:
        raise ValueError(
            f"No author of the corpus has a post with {min_swaps} gendered word(s) in its first {max_words} words, "
            f"a {concept_field!r} in {list(values)} and a {label_field!r}."
        )
    keep = np.arange(len(rows))
    if n_documents is not None and n_documents < len(rows):
        keep = np.sort(rng.choice(len(rows), size=int(n_documents), replace=False))
    chosen = [rows[i] for i in keep]
    info = {"eligible": len(rows), "left_out": counts, "concept_source": concept_source, "max_words": max_words}
    pairs = make_pairs(
        [r[1] for r in chosen],
        [words.swap(r[1]) for r in chosen],
        [r[2] for r in chosen],
        [r[3] for r in chosen],
        concept_values=values,
        group=[r[0] for r in chosen],
        source=f"blog pairs of {getattr(corpus, 'source', 'the corpus')!s}",
        info=info,
    )
    if label_bins:
        edges = [float(b) for b in label_bins]
        probes = [edges[0] - 1] + [(a + b) / 2 for a, b in zip(edges, edges[1:])] + [edges[-1]]
        pairs = dataclasses.replace(pairs, class_order=tuple(label_name(v, edges) for v in probes))
    return pairs


def n_distinct(*texts: Sequence[str]) -> int:
    """How many distinct texts the sequences hold together (what the encoder will see)."""
    return len(set(itertools.chain.from_iterable(texts)))

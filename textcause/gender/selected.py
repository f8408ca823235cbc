"""Masked-gender training sets built by an explicit selection on a collider of W and gender.

:func:`select_examples` takes a built pool of examples (:class:`~textcause.gender.build.GenderData`,
every author with a value of W written in its prefix) and keeps a selected sample of it with
:func:`textcause.gender.selection.select_authors`, S ~ Bernoulli(f(W, G)), where the unit is

* ``author``: G is the author's own gender (a metadata column of the W file); an author is kept or
  dropped with all its sentences;
* ``example``: G is the gender of the example's masked words (its majority label, ties broken by
  the first mask): the paper's G, the word the model must predict. W is still the author's.

W (the value in the prefix) is drawn per author independently of everything (the W file), so W
and G are independent before selection. The kept examples, in the pool's (seeded random) order,
are cut to ``n_sentences`` and split again by author. :class:`SelectedGenderDataModule` serves
them (a :class:`~textcause.gender.datamodule.GenderDataModule` whose build is selected); its
``selection`` attribute holds the sample's true W-G association, of the selected units and of
the training masks' labels.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Optional

import numpy as np

from textcause.gender.build import (
    GenderData,
    GenderDataSettings,
    build_gender_data,
    check_one_row_per_author,
    example_counts,
    read_w_csv,
    split_by_author,
    value_text,
)
from textcause.gender.datamodule import GenderDataModule
from textcause.gender.masking import FEMALE, IGNORE
from textcause.gender.selection import Association, association, select_authors
from textcause.validation import check_int, check_options, check_real

UNITS = ("author", "example")
FEMALE_VALUES = ("female", "f", "woman", "1")
MALE_VALUES = ("male", "m", "man", "0")
_D = GenderDataSettings()


@dataclasses.dataclass(frozen=True)
class SelectionInfo:
    """What a selection did and the sample's true W-G association.

    Attributes:
        unit: ``author`` or ``example``.
        strength: the selection strength.
        w_values: the values of W, in order (their index is the x of every slope).
        n_pool: examples in the pool before selection.
        n_units: units (authors or examples) before selection.
        n_selected: units selected.
        units: the association of G with W among the selected units (the injected one).
        labels: the association of the training masks' labels with W (what the model is trained on).
        n_examples: examples kept (after the cut to ``n_sentences``).
    """

    unit: str
    strength: float
    w_values: tuple[str, ...]
    n_pool: int
    n_units: int
    n_selected: int
    units: Association
    labels: Association
    n_examples: int


def read_w_file(path: str | Path, w_name: str, gender_field: Optional[str]) -> Any:
    """The W file as a frame (``author``, ``w_name`` and, if given, ``gender_field`` columns).

    Raises:
        ValueError: a missing file or column.
    """

    path = Path(str(path))
    if not path.is_file():
        raise ValueError(f"The W file {str(path)!r} does not exist.")
    frame = read_w_csv(path, {}, keep_default_na=False)
    need = ["author", w_name] + ([gender_field] if gender_field else [])
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise ValueError(f"The W file {str(path)!r} lacks the column(s) {missing}; it has {list(frame.columns)}.")
    check_one_row_per_author(frame, path)
    return frame


def female_flags(values: Any, field: str) -> np.ndarray:
    """Booleans of gender values (``female`` / ``male`` and the like, any case).

    Raises:
        ValueError: a value that is neither.
    """
    low = np.array([str(v).strip().lower() for v in values], dtype=object)
    bad = sorted({v for v in low if v not in FEMALE_VALUES + MALE_VALUES})
    if bad:
        raise ValueError(f"The gender column {field!r} holds {bad[:5]}: use female / male (drop other authors).")
    return np.isin(low, FEMALE_VALUES)


def example_gender(labels: np.ndarray) -> bool:
    """Whether an example's masks are mostly female (ties: the first mask decides)."""
    at = labels[labels != IGNORE]
    share = float(np.mean(at == FEMALE))
    return bool(at[0] == FEMALE) if share == 0.5 else share > 0.5


def select_examples(
    data: GenderData,
    w_of_author: dict[str, str],
    w_values: tuple[str, ...],
    *,
    strength: float,
    unit: str,
    rng: np.random.Generator,
    n_sentences: Optional[int],
    seed: int,
    fractions: tuple[float, float, float] = _D.fractions,
    female_of_author: Optional[dict[str, bool]] = None,
) -> tuple[GenderData, SelectionInfo]:
    """The selected examples of a pool, split again by author, and what the selection did.

    Args:
        data: the pool (every example's author has a value of W).
        w_of_author: each author's value of W (as written in the prefix).
        w_values: the values of W in order.
        strength: the selection strength in [0, 1].
        unit: ``author`` (G: ``female_of_author``) or ``example`` (G: the masked words' gender).
        rng: the selection draws' generator.
        n_sentences: the examples kept after selection (None: all selected).
        seed: the new author split's seed.
        fractions: the split's train / validation / test fractions.
        female_of_author: each author's gender (needed for ``unit="author"``).

    Raises:
        ValueError: a bad unit or strength, an author without W or gender, a W value missing from
            ``w_values``, or too few selected authors to split.
    """
    owner = "select_examples"
    check_options(unit, "unit", owner, UNITS)
    check_real(strength, "strength", owner, low=0.0, high=1.0)
    index = {v: i for i, v in enumerate(w_values)}
    authors = data.authors.astype(str)
    missing = sorted({a for a in authors if a not in w_of_author})
    if missing:
        raise ValueError(f"{len(missing)} authors of the pool have no value of W (e.g. {missing[0]!r}).")
    unknown = sorted({w_of_author[a] for a in set(authors)} - set(index))
    if unknown:
        raise ValueError(f"The values of W {unknown[:5]} are not in the experiment's W list {list(w_values)}.")
    if unit == "author":
        if female_of_author is None:
            raise ValueError("Selecting authors needs each author's gender: give female_of_author.")
        ids = np.array(sorted(set(authors)), dtype=object)
        absent = [a for a in ids if a not in female_of_author]
        if absent:
            raise ValueError(f"{len(absent)} authors of the pool have no gender (e.g. {absent[0]!r}).")
        female = np.array([female_of_author[a] for a in ids], dtype=bool)
        w = np.array([index[w_of_author[a]] for a in ids], dtype=np.int64)
        chosen = select_authors(ids, female, w, len(w_values), strength, rng)
        keep = np.flatnonzero(np.isin(authors, chosen.authors.astype(str)))
    else:
        ids = np.arange(len(data), dtype=np.int64)
        female = np.array([example_gender(lab) for lab in data.labels], dtype=bool)
        w = np.array([index[w_of_author[a]] for a in authors], dtype=np.int64)
        chosen = select_authors(ids, female, w, len(w_values), strength, rng)
        keep = np.sort(chosen.authors.astype(np.int64))
    if n_sentences is not None:
        keep = keep[:n_sentences]
    kept_authors = authors[keep]
    unique, codes = np.unique(kept_authors, return_inverse=True)
    if len(unique) < 3:
        raise ValueError(f"The selection kept {len(keep)} examples of {len(unique)} authors: a split needs 3.")
    split = split_by_author(codes, len(unique), seed, fractions)
    labels = tuple(data.labels[i] for i in keep)
    train_w = np.concatenate(
        [np.full(int((labels[i] != IGNORE).sum()), index[w_of_author[kept_authors[i]]]) for i in split.train]
    )
    train_labels = np.concatenate([labels[i][labels[i] != IGNORE] == FEMALE for i in split.train])
    selected = GenderData(
        input_ids=tuple(data.input_ids[i] for i in keep),
        labels=labels,
        authors=data.authors[keep],
        sentences=tuple(data.sentences[i] for i in keep),
        prefixes=tuple(data.prefixes[i] for i in keep),
        split=split,
        pad_token_id=data.pad_token_id,
        info={
            **data.info,
            "n_pool": len(data),
            **example_counts([data.input_ids[i] for i in keep], list(labels), len(unique), split),
        },
    )
    info = SelectionInfo(
        unit=unit,
        strength=float(strength),
        w_values=tuple(w_values),
        n_pool=len(data),
        n_units=len(ids),
        n_selected=len(chosen),
        units=chosen.association,
        labels=association(train_w, train_labels, len(w_values)),
        n_examples=len(keep),
    )
    return selected, info


def sorted_w_values(values: Any) -> tuple[str, ...]:
    """Distinct values of W in order: numerically where they are all numbers, else as text."""
    distinct = sorted({str(v) for v in values})
    try:
        return tuple(sorted(distinct, key=float))
    except ValueError:
        return tuple(distinct)


class SelectedGenderDataModule(GenderDataModule):
    """A :class:`~textcause.gender.datamodule.GenderDataModule` whose examples are a selected sample.

    The pool is built with ``pool_sentences`` masked sentences of the authors of ``w_file`` (W in
    the prefix); :func:`select_examples` keeps a sample, S ~ Bernoulli(f(W, G)), cut to
    ``n_sentences``. Pick it in YAML by ``class_path: textcause.gender.SelectedGenderDataModule``.

    Args:
        source: as :class:`GenderDataModule`.
        text_col: as :class:`GenderDataModule`.
        author_col: as :class:`GenderDataModule`.
        prefix: the W column of ``w_file``, written as the prefix (required).
        w_file: a CSV with ``author``, ``prefix`` and (for ``unit="author"``) ``gender_field``
            columns: W drawn per author independently of gender (required).
        prefix_format: as :class:`GenderDataModule`.
        encoder: as :class:`GenderDataModule`.
        words: as :class:`GenderDataModule`.
        max_tokens: as :class:`GenderDataModule`.
        n_sentences: the examples kept after selection (None: every selected one).
        seed: the pool draw's, the selection's and the split's seed.
        fractions: as :class:`GenderDataModule`.
        batch_size: as :class:`GenderDataModule`.
        length_buckets: as :class:`GenderDataModule`.
        num_workers: as :class:`GenderDataModule`.
        predict_split: as :class:`GenderDataModule`.
        strength: the selection strength in [0, 1] (0: no selection bias).
        unit: ``author`` (G: the author's gender) or ``example`` (G: the masked words' gender).
        gender_field: the ``w_file`` column of the author's gender (``unit="author"``).
        w_values: the values of W in order (None: the W file's distinct values, sorted).
        pool_sentences: masked sentences built before selection (None: all).
    """

    def __init__(
        self,
        source: str = _D.source,
        text_col: str = _D.text_col,
        author_col: Optional[str] = _D.author_col,
        prefix: Optional[str] = "year",
        w_file: Optional[str] = None,
        prefix_format: str = _D.prefix_format,
        encoder: Optional[str] = _D.encoder,
        words: Optional[str] = _D.words,
        max_tokens: int = _D.max_tokens,
        n_sentences: Optional[int] = _D.n_sentences,
        seed: int = _D.seed,
        fractions: tuple[float, float, float] = _D.fractions,
        batch_size: int = 32,
        length_buckets: int = 50,
        num_workers: int = 0,
        predict_split: str = "test",
        strength: float = 0.0,
        unit: str = "example",
        gender_field: str = "gender",
        w_values: Optional[list[str]] = None,
        pool_sentences: Optional[int] = None,
    ) -> None:
        owner = "SelectedGenderDataModule"
        check_real(strength, "strength", owner, low=0.0, high=1.0)
        check_options(unit, "unit", owner, UNITS)
        if prefix is None or w_file is None:
            raise ValueError(f"{owner} needs 'prefix' (the W column) and 'w_file' (W drawn per author).")
        if pool_sentences is not None:
            check_int(pool_sentences, "pool_sentences", owner, low=3)
        super().__init__(
            source=source,
            text_col=text_col,
            author_col=author_col,
            prefix=prefix,
            w_file=w_file,
            prefix_format=prefix_format,
            encoder=encoder,
            words=words,
            max_tokens=max_tokens,
            n_sentences=n_sentences,
            seed=seed,
            fractions=fractions,
            batch_size=batch_size,
            length_buckets=length_buckets,
            num_workers=num_workers,
            predict_split=predict_split,
        )
        self.settings = dataclasses.replace(self.settings, n_sentences=pool_sentences)
        self.selection: Optional[SelectionInfo] = None

    @property
    def built(self) -> GenderData:
        """The selected examples (the pool's build is memoised per process; the selection is cheap)."""
        if self._built is None:
            hp = self.hparams
            frame = read_w_file(hp.w_file, hp.prefix, hp.gender_field if hp.unit == "author" else None)
            texts = [value_text(_number(v)) for v in frame[hp.prefix]]
            w_of_author = dict(zip(frame["author"], texts))
            w_values = tuple(value_text(_number(v)) for v in hp.w_values) if hp.w_values else sorted_w_values(texts)
            female = None
            if hp.unit == "author":
                female = dict(zip(frame["author"], female_flags(frame[hp.gender_field], hp.gender_field)))
            self._built, self.selection = select_examples(
                build_gender_data(self.settings),
                w_of_author,
                w_values,
                strength=hp.strength,
                unit=hp.unit,
                rng=np.random.default_rng([hp.seed, 20_230_611]),
                n_sentences=hp.n_sentences,
                seed=hp.seed,
                fractions=self.settings.fractions,
                female_of_author=female,
            )
        return self._built


def _number(value: Any) -> Any:
    """A W value as the build writes it in the prefix (``"1980.0"`` -> 1980.0 -> ``1980``)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return value
    return number if math.isfinite(number) else value

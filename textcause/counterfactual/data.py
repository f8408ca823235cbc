"""Readers of the official SemEval-2020 Task 5 CSV files, validated row by row, and the validation split.

The release (``../shared/data/semeval2020-task5/``, or any other path with the same columns):

* subtask 1: ``sentenceID,gold_label,sentence``, ``gold_label`` 1 for a counterfactual, 0 otherwise;
* subtask 2: ``sentenceID,sentence,antecedent,consequent,antecedent_startid,antecedent_endid,
  consequent_startid,consequent_endid``: character offsets into ``sentence`` with the END INCLUSIVE,
  so ``sentence[start:end + 1] == antecedent``; a missing consequent is ``-1, -1`` (its text ``{}``).

Every value is read as text (nothing coerced, a sentence "NA" stays a sentence) and checked; a
malformed row raises one ``ValueError`` sentence naming the file, the row (1 = the first data row)
and its sentenceID, never the sentence itself. :func:`carve_validation` splits a *training* frame
(seeded, stratified); nothing here ever splits a test file.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from textcause.paths import data_root
from textcause.validation import check_int, check_real

#: The release's folder under the data root, and its files by short name.
RELEASE_DIR = "semeval2020-task5"
FILES = ("subtask1_train", "subtask1_test", "subtask2_train", "subtask2_test")
SUBTASK1_COLUMNS = ("sentenceID", "gold_label", "sentence")
OFFSET_COLUMNS = ("antecedent_startid", "antecedent_endid", "consequent_startid", "consequent_endid")
SUBTASK2_COLUMNS = ("sentenceID", "sentence", "antecedent", "consequent", *OFFSET_COLUMNS)
#: The range of a sentenceID (stored as int64).
INT64_MIN, INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)
#: How the release writes the text of a missing consequent.
MISSING_TEXT = "{}"


def default_path(name: str) -> Path:
    """The path of one official file (``subtask1_train``, ...) under :func:`textcause.paths.data_root`."""
    if name not in FILES:
        raise ValueError(f"The 'name' parameter of default_path must be one of {list(FILES)}. Got {name!r} instead.")
    return data_root() / RELEASE_DIR / f"{name}.csv"


def parse_int(value: object) -> int | None:
    """An integer from a CSV cell: ``12``, ``" 12 "``, ``12.0`` and ``-1.0`` are ints; anything else is None.

    Offsets written by numpy or pandas are often integer-valued floats; ``12.5``, ``nan``, ``""`` and
    ``"abc"`` are not integers.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if np.isfinite(number) and number.is_integer() else None


def read_table(path: str | os.PathLike, columns: tuple[str, ...], what: str) -> pd.DataFrame:
    """Read a CSV as text with at least ``columns`` (one sentence naming the file when it cannot).

    Args:
        path: the file.
        columns: the columns it must have (others are kept).
        what: what the file should be, for messages ("a subtask-1 file").
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"The {what} {str(path)!r} does not exist: pass the path of an official CSV file.")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise ValueError(f"The {what} {path.name!r} is not a readable UTF-8 CSV file ({type(err).__name__}).") from None
    header = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False, encoding="utf-8").iloc[0]
    twice = [c for c in columns if list(header).count(c) > 1]
    if twice:
        raise ValueError(
            f"Column {twice[0]!r} is named {list(header).count(twice[0])} times in the header of the {what} "
            f"{path.name!r}: name each column once."
        )
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"The {what} {path.name!r} lacks the column(s) {missing}: it must have the columns {list(columns)}."
        )
    if frame.empty:
        raise ValueError(f"The {what} {path.name!r} has no rows.")
    return frame


def shown(value: object, chars: int = 24) -> str:
    """How a message shows a cell: its repr when short, else its length (a message never quotes a text).

    >>> shown("2"), shown("x" * 100)
    ("'2'", 'a text of 100 characters')
    """
    text = str(value)
    return repr(value) if len(text) <= chars else f"a text of {len(text)} characters"


def row_name(path: Path, i: int, sentence_id: object) -> str:
    """``"'x.csv' row 3 (sentenceID 200002)"``: how every message names a row (1 = the first data row)."""
    return f"{path.name!r} row {i + 1} (sentenceID {sentence_id})"


def _ids(frame: pd.DataFrame, path: Path) -> np.ndarray:
    """The sentenceID column as int64, checked to be integers and unique."""
    ids = np.empty(len(frame), dtype=np.int64)
    seen: dict[int, int] = {}
    for i, raw in enumerate(frame["sentenceID"]):
        value = parse_int(raw)
        if value is None or not INT64_MIN <= value <= INT64_MAX:
            raise ValueError(
                f"{row_name(path, i, shown(raw))}: the sentenceID must be an integer in [{INT64_MIN}, {INT64_MAX}]."
            )
        if value in seen:
            raise ValueError(
                f"{row_name(path, i, value)}: the sentenceID repeats row {seen[value] + 1}; every sentenceID must be unique."
            )
        seen[value] = i
        ids[i] = value
    return ids


def read_subtask1(path: str | os.PathLike) -> pd.DataFrame:
    """Read and validate a subtask-1 file (``sentenceID,gold_label,sentence``).

    Returns:
        A frame with ``sentenceID`` (int64), ``gold_label`` (int8, 0/1) and ``sentence`` (str), in
        file order.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a missing column, a non-integer or repeated sentenceID, a label other than 0/1,
            an empty sentence (one sentence naming the file and the row).
    """
    path = Path(path).expanduser()
    frame = read_table(path, SUBTASK1_COLUMNS, "subtask-1 file")
    ids = _ids(frame, path)
    labels = np.empty(len(frame), dtype=np.int8)
    for i, (raw, sentence) in enumerate(zip(frame["gold_label"], frame["sentence"])):
        value = parse_int(raw)
        if value not in (0, 1):
            raise ValueError(f"{row_name(path, i, ids[i])}: the gold_label must be 0 or 1. Got {shown(raw)} instead.")
        if not sentence.strip():
            raise ValueError(f"{row_name(path, i, ids[i])}: the sentence is empty.")
        labels[i] = value
    return pd.DataFrame({"sentenceID": ids, "gold_label": labels, "sentence": frame["sentence"].astype(str).tolist()})


def check_span(start: int | None, end: int | None, length: int, *, optional: bool) -> str | None:
    """What is wrong with an END-INCLUSIVE span ``[start, end]`` of a text of ``length`` characters, or None.

    Args:
        start: the first character (None: not an integer).
        end: the last character, inclusive (None: not an integer).
        length: the sentence's length.
        optional: whether ``(-1, -1)`` (no span) is allowed.
    """
    if start is None or end is None:
        return "offsets must be integers"
    if optional and start == end == -1:
        return None
    if start == -1 or end == -1:
        return "a missing span must be -1 at both ends" if optional else "the span is required (got -1)"
    if start < 0 or end < 0:
        return f"offsets must be >= 0 (or -1, -1 for none); got ({start}, {end})"
    if end < start:
        return f"the end comes before the start; got ({start}, {end})"
    if end >= length:
        return f"the end {end} lies outside the sentence of {length} characters (the end is inclusive: at most {length - 1})"
    return None


def read_subtask2(path: str | os.PathLike) -> pd.DataFrame:
    """Read and validate a subtask-2 file.

    Every row must satisfy ``sentence[start:end + 1] == antecedent`` (END INCLUSIVE), and the same for
    the consequent unless it is missing (``-1, -1``, text ``{}`` or empty).

    Returns:
        A frame with ``sentenceID`` (int64), ``sentence``, ``antecedent``, ``consequent`` (str, ""
        for a missing consequent) and the four offsets (int64), in file order.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a malformed row (one sentence naming the file, the row and what is wrong).
    """
    path = Path(path).expanduser()
    frame = read_table(path, SUBTASK2_COLUMNS, "subtask-2 file")
    ids = _ids(frame, path)
    offsets = np.empty((len(frame), 4), dtype=np.int64)
    consequents: list[str] = []
    for i, row in enumerate(frame.itertuples(index=False)):
        where = row_name(path, i, ids[i])
        sentence = str(row.sentence)
        if not sentence.strip():
            raise ValueError(f"{where}: the sentence is empty.")
        values = [parse_int(getattr(row, c)) for c in OFFSET_COLUMNS]
        for part, (start, end), text in (
            ("antecedent", values[:2], str(row.antecedent)),
            ("consequent", values[2:], str(row.consequent)),
        ):
            optional = part == "consequent"
            problem = check_span(start, end, len(sentence), optional=optional)
            if problem:
                raise ValueError(f"{where}: the {part} offsets are invalid: {problem}.")
            if optional and start == -1:
                if text not in (MISSING_TEXT, ""):
                    raise ValueError(
                        f"{where}: the consequent offsets are -1 but its text is not empty or {MISSING_TEXT}."
                    )
                continue
            if sentence[start : end + 1] != text:
                hint = " (the offsets look end-exclusive)" if sentence[start:end] == text else ""
                raise ValueError(
                    f"{where}: sentence[{part}_startid:{part}_endid + 1] is not the {part} text{hint}; "
                    "offsets must be character offsets with the end inclusive."
                )
        offsets[i] = values
        consequents.append("" if values[2] == -1 else str(row.consequent))
    out = pd.DataFrame(
        {
            "sentenceID": ids,
            "sentence": frame["sentence"].astype(str).tolist(),
            "antecedent": frame["antecedent"].astype(str).tolist(),
            "consequent": consequents,
        }
    )
    for j, column in enumerate(OFFSET_COLUMNS):
        out[column] = offsets[:, j]
    return out


def carve_validation(
    train: pd.DataFrame, *, fraction: float = 0.15, seed: int = 0, label: str = "gold_label"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split a TRAINING frame into (fit, validation) parts, stratified on ``label`` and seeded.

    The validation part is where thresholds and regularisation are chosen; the test file is never
    split or looked at. The same seed gives the same split.

    Args:
        train: a frame from :func:`read_subtask1` of the training file.
        fraction: the share of rows held out for validation, in (0, 1).
        seed: the split's seed.
        label: the column to stratify on.

    Returns:
        The fit part and the validation part, each in file order with a fresh index.
    """
    from sklearn.model_selection import train_test_split

    owner = "carve_validation"
    fraction = check_real(fraction, "fraction", owner, low=0.0, high=1.0, low_open=True, high_open=True)
    seed = check_int(seed, "seed", owner, low=0)
    y = np.asarray(train[label])
    counts = np.unique(y, return_counts=True)[1]
    n_val = int(np.ceil(fraction * len(y)))
    if counts.size < 2 or counts.min() < 2 or n_val < counts.size or len(y) - n_val < counts.size:
        raise ValueError(
            f"The training data of carve_validation must hold at least 2 rows of each class and room for both "
            f"classes in each part. Got class counts {counts.tolist()} and fraction {fraction} instead."
        )
    fit_idx, val_idx = train_test_split(np.arange(len(y)), test_size=fraction, random_state=seed, stratify=y)
    return (
        train.iloc[np.sort(fit_idx)].reset_index(drop=True),
        train.iloc[np.sort(val_idx)].reset_index(drop=True),
    )


def check_disjoint(train: pd.DataFrame, test: pd.DataFrame, names: tuple[str, str] = ("train", "test")) -> None:
    """Refuse a training frame that shares sentenceIDs with the test frame (the test file passed twice, a leak)."""
    shared = np.intersect1d(train["sentenceID"].to_numpy(), test["sentenceID"].to_numpy())
    if shared.size:
        raise ValueError(
            f"The {names[0]} and {names[1]} files share {shared.size} sentenceID(s) (e.g. {int(shared[0])}): "
            "fitting on test rows would leak; pass the official training and test files."
        )

"""The SemEval-2020 Task 5 scorer, with the official semantics and none of the published scorers' faults.

Subtask 1 (:func:`score_subtask1`): precision, recall and F1 of the positive (counterfactual) class,
the official ranking metric, and accuracy, computed by scikit-learn.

Subtask 2 (:func:`score_subtask2`), as the task paper defines it: offsets are character offsets
with the END INCLUSIVE; a missing consequent is ``(-1, -1)``.

* exact match: the share of sentences whose four offsets all equal the gold ones (a missing
  consequent predicted missing matches; a span where gold has none, or none where gold has one,
  does not);
* precision / recall / F1 per sentence from token counts: the gold "tokens" are the
  whitespace-separated pieces of ``sentence[start:end + 1]`` of the antecedent plus those of the
  consequent, the predicted ones likewise, and the overlap is the pieces of each intersected
  character interval (antecedent with antecedent, consequent with consequent); precision =
  overlap / predicted, recall = overlap / gold, averaged over the sentences;
* ``char_precision`` / ``char_recall`` / ``char_f1``: the same with characters instead of tokens
  (a diagnostic: it sees an off-by-one end that the token count forgives).

Faults of the organisers' script that this one does not share: it sliced ``sentence[start:end]``
(end-exclusive) on end-inclusive offsets, swapped precision and recall when printing, compared
offsets as strings (``-1.0`` is not ``-1`` there), stopped when rows were out of order, and refused
one-character antecedents. Here rows are joined on ``sentenceID`` (any order), ``12.0`` is ``12``,
and a malformed prediction row is refused in one sentence naming it (or, with
``malformed="zero"``, scored 0 with a warning naming it). To compare with published numbers,
``score_files(..., official=True)`` (``textcause semeval score --official``) reproduces the
organisers' script's subtask-2 numbers instead (:mod:`textcause.counterfactual.official`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from textcause.counterfactual.data import (
    OFFSET_COLUMNS,
    check_span,
    parse_int,
    read_subtask1,
    read_subtask2,
    read_table,
    row_name,
)
from textcause.io import atomic_path
from textcause.validation import check_consistent_length, check_options

SUBTASK1_PRED_COLUMNS = ("sentenceID", "pred_label")
SUBTASK2_PRED_COLUMNS = ("sentenceID", *OFFSET_COLUMNS)
SUBTASKS = (1, 2)
MALFORMED = ("raise", "zero")
#: The per-sentence scores of subtask 2 that :func:`score_subtask2` averages.
SPAN_METRICS = ("exact_match", "precision", "recall", "f1", "char_precision", "char_recall", "char_f1")


def binary_scores(y_true: Sequence[int] | np.ndarray, y_pred: Sequence[int] | np.ndarray) -> dict[str, float]:
    """Precision, recall, F1 of the positive class (1) and accuracy of 0/1 predictions (scikit-learn).

    Args:
        y_true: gold labels (0/1).
        y_pred: predicted labels (0/1).

    Returns:
        ``precision``, ``recall``, ``f1``, ``accuracy`` (fractions; 0 where undefined) and the counts
        ``n``, ``n_positive``, ``n_predicted_positive``.
    """
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    check_consistent_length(y_true, y_pred)
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        if y.size == 0 or not np.all(np.isin(y, (0, 1))):
            raise ValueError(f"'{name}' must be a non-empty array of 0/1 labels.")
    p, r, f1, _ = precision_recall_fscore_support(y_true, y_pred, average="binary", pos_label=1, zero_division=0)
    return {
        "precision": float(p),
        "recall": float(r),
        "f1": float(f1),
        "accuracy": float(accuracy_score(y_true, y_pred)),
        "n": int(y_true.size),
        "n_positive": int(y_true.sum()),
        "n_predicted_positive": int(y_pred.sum()),
    }


def align(gold_ids: np.ndarray, pred: pd.DataFrame, source: str) -> np.ndarray:
    """The prediction row of each gold sentenceID (rows may come in any order).

    Raises:
        ValueError: a non-integer or repeated sentenceID, one unknown to the gold file, or a gold
            sentence without a prediction.
    """
    where: dict[int, int] = {}
    path = Path(source)
    for i, raw in enumerate(pred["sentenceID"]):
        value = parse_int(raw)
        if value is None:
            raise ValueError(f"{row_name(path, i, repr(raw))}: the sentenceID must be an integer.")
        if value in where:
            raise ValueError(
                f"{row_name(path, i, value)}: a second prediction for this sentenceID (first at row {where[value] + 1})."
            )
        where[value] = i
    unknown = set(where) - set(gold_ids.tolist())
    if unknown:
        first = min(unknown, key=where.__getitem__)
        raise ValueError(
            f"{row_name(path, where[first], first)}: this sentenceID is not in the gold file "
            f"({len(unknown)} such row(s)); score predictions against the gold file they were made for."
        )
    missing = [int(s) for s in gold_ids if int(s) not in where]
    if missing:
        raise ValueError(
            f"The predictions {path.name!r} lack {len(missing)} of the {len(gold_ids)} gold sentences "
            f"(e.g. sentenceID {missing[0]}): predict every sentence of the gold file."
        )
    return np.array([where[int(s)] for s in gold_ids], dtype=np.int64)


def score_subtask1(gold: pd.DataFrame, pred: pd.DataFrame, *, source: str = "predictions") -> dict[str, float]:
    """Score subtask-1 predictions (``sentenceID,pred_label``) against a gold frame, joined on sentenceID.

    Args:
        gold: a frame from :func:`~textcause.counterfactual.data.read_subtask1`.
        pred: a frame with ``sentenceID`` and ``pred_label`` (0/1; ``1.0`` is 1), any row order.
        source: the predictions' file name, for messages.

    Returns:
        :func:`binary_scores` of the predictions.

    Raises:
        ValueError: a missing column, a label other than 0/1, or rows that do not match the gold
            sentences one to one (one sentence naming the row).
    """
    _check_columns(pred, SUBTASK1_PRED_COLUMNS, source)
    rows = align(gold["sentenceID"].to_numpy(), pred, source)
    labels = np.empty(len(rows), dtype=np.int8)
    for k, i in enumerate(rows):
        value = parse_int(pred["pred_label"].iloc[i])
        if value not in (0, 1):
            raw = pred["pred_label"].iloc[i]
            raise ValueError(
                f"{row_name(Path(source), int(i), gold['sentenceID'].iloc[k])}: the pred_label must be 0 or 1. Got {raw!r} instead."
            )
        labels[k] = value
    return binary_scores(gold["gold_label"].to_numpy(), labels)


def _tokens(sentence: str, start: int, end: int) -> int:
    """The whitespace-separated pieces of the END-INCLUSIVE span ``[start, end]`` (0 for no span)."""
    return 0 if start < 0 or end < start else len(sentence[start : end + 1].split())


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    """The intersection of two END-INCLUSIVE spans, or None (also when either is missing)."""
    if a[0] < 0 or b[0] < 0:
        return None
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return (lo, hi) if lo <= hi else None


def _prf(overlap: float, predicted: float, gold: float) -> tuple[float, float, float]:
    if overlap <= 0:
        return 0.0, 0.0, 0.0
    p, r = overlap / predicted, overlap / gold
    return p, r, 2 * p * r / (p + r)


def span_scores(sentence: str, gold: Sequence[int], pred: Sequence[int]) -> dict[str, float]:
    """One sentence's subtask-2 scores: exact match, token-overlap P / R / F1 and character-overlap P / R / F1.

    Args:
        sentence: the sentence.
        gold: gold ``(antecedent_start, antecedent_end, consequent_start, consequent_end)``, ends
            inclusive, ``-1, -1`` for no consequent.
        pred: the predicted offsets, the same way (already validated).
    """
    spans_g = [(int(gold[0]), int(gold[1])), (int(gold[2]), int(gold[3]))]
    spans_p = [(int(pred[0]), int(pred[1])), (int(pred[2]), int(pred[3]))]
    exact = float(spans_g == spans_p)
    overlaps = [_overlap(g, p) for g, p in zip(spans_g, spans_p)]
    tok = _prf(
        sum(_tokens(sentence, *o) for o in overlaps if o),
        sum(_tokens(sentence, *s) for s in spans_p),
        sum(_tokens(sentence, *s) for s in spans_g),
    )

    def width(span: tuple[int, int]) -> int:
        return span[1] - span[0] + 1 if span[0] >= 0 else 0

    char = _prf(sum(width(o) for o in overlaps if o), sum(map(width, spans_p)), sum(map(width, spans_g)))
    return dict(zip(SPAN_METRICS, (exact, *tok, *char)))


def score_subtask2(
    gold: pd.DataFrame, pred: pd.DataFrame, *, source: str = "predictions", malformed: str = "raise"
) -> dict[str, float]:
    """Score subtask-2 predictions against a gold frame, joined on sentenceID (see the module docstring).

    Args:
        gold: a frame from :func:`~textcause.counterfactual.data.read_subtask2`.
        pred: a frame with ``sentenceID`` and the four offset columns (ints, integer-valued floats
            or their text), any row order.
        source: the predictions' file name, for messages.
        malformed: ``"raise"``: a malformed row (non-integer offsets, a missing antecedent, a
            consequent -1 at one end only, an end before its start, offsets outside the sentence)
            raises one sentence naming it; ``"zero"``: it scores 0 (and no exact match) with a
            warning naming it.

    Returns:
        Means over the gold sentences of ``exact_match``, ``precision``, ``recall``, ``f1``,
        ``char_precision``, ``char_recall``, ``char_f1`` (fractions), ``n`` and ``n_malformed``.
    """
    check_options(malformed, "malformed", "score_subtask2", MALFORMED)
    _check_columns(pred, SUBTASK2_PRED_COLUMNS, source)
    rows = align(gold["sentenceID"].to_numpy(), pred, source)
    totals = dict.fromkeys(SPAN_METRICS, 0.0)
    n_bad = 0
    gold_offsets = gold[list(OFFSET_COLUMNS)].to_numpy(dtype=np.int64)
    pred_cells = pred[list(OFFSET_COLUMNS)].to_numpy(dtype=object)
    for k, i in enumerate(rows):
        sentence = gold["sentence"].iloc[k]
        values = [parse_int(v) for v in pred_cells[i]]
        problem = check_span(values[0], values[1], len(sentence), optional=False)
        part = "antecedent"
        if problem is None:
            problem, part = check_span(values[2], values[3], len(sentence), optional=True), "consequent"
        if problem:
            message = f"{row_name(Path(source), int(i), gold['sentenceID'].iloc[k])}: the predicted {part} is malformed: {problem}."
            if malformed == "raise":
                raise ValueError(message)
            warnings.warn(message + " It scores 0.", stacklevel=2)
            n_bad += 1
            continue
        for name, value in span_scores(sentence, gold_offsets[k], values).items():
            totals[name] += value
    n = len(rows)
    return {**{name: total / n for name, total in totals.items()}, "n": n, "n_malformed": n_bad}


def _check_columns(pred: pd.DataFrame, columns: tuple[str, ...], source: str) -> None:
    missing = [c for c in columns if c not in pred.columns]
    if missing:
        raise ValueError(
            f"The predictions {Path(source).name!r} lack the column(s) {missing}: the official format has "
            f"the columns {list(columns)}."
        )


def score_files(
    gold_path: str | os.PathLike,
    pred_path: str | os.PathLike,
    subtask: int,
    *,
    malformed: str = "raise",
    official: bool = False,
) -> dict[str, float]:
    """Score an official prediction file against an official gold file of subtask 1 or 2.

    Args:
        gold_path: the gold CSV.
        pred_path: the prediction CSV (official format, rows in any order).
        subtask: 1 or 2.
        malformed: what a malformed subtask-2 row does (:func:`score_subtask2`).
        official: subtask 2 with the organisers' script's arithmetic, for comparing with published
            numbers (:func:`~textcause.counterfactual.official.score_subtask2_official`: end-exclusive
            slices, exact match on the cells' text, its validity rule, and also the precision /
            recall it prints swapped). Subtask 1's scores are the same either way.
    """
    check_options(subtask, "subtask", "score_files", SUBTASKS)
    columns = SUBTASK1_PRED_COLUMNS if subtask == 1 else SUBTASK2_PRED_COLUMNS
    pred = read_table(pred_path, columns, f"subtask-{subtask} prediction file")
    source = str(pred_path)
    if subtask == 1:
        return score_subtask1(read_subtask1(gold_path), pred, source=source)
    gold = read_subtask2(gold_path)
    if official:
        from textcause.counterfactual.official import score_subtask2_official

        rows = align(gold["sentenceID"].to_numpy(), pred, source)
        return score_subtask2_official(gold, pred, rows, source=source)
    return score_subtask2(gold, pred, source=source, malformed=malformed)


def write_subtask1_predictions(path: str | os.PathLike, ids: Sequence[int], labels: Sequence[int]) -> Path:
    """Write ``sentenceID,pred_label`` (the official subtask-1 format) atomically, in the given order."""
    ids, labels = np.asarray(ids, dtype=np.int64), np.asarray(labels)
    check_consistent_length(ids, labels)
    if not np.all(np.isin(labels, (0, 1))):
        raise ValueError("The labels of write_subtask1_predictions must be 0/1.")
    frame = pd.DataFrame({"sentenceID": ids, "pred_label": labels.astype(np.int64)})
    return _write(path, frame)


def write_subtask2_predictions(path: str | os.PathLike, ids: Sequence[int], offsets: np.ndarray) -> Path:
    """Write ``sentenceID`` and the four END-INCLUSIVE offsets (``-1, -1``: no consequent) atomically."""
    ids, offsets = np.asarray(ids, dtype=np.int64), np.asarray(offsets)
    check_consistent_length(ids, offsets)
    if offsets.ndim != 2 or offsets.shape[1] != 4:
        raise ValueError(
            f"The offsets of write_subtask2_predictions must have shape (n, 4). Got {offsets.shape} instead."
        )
    frame = pd.DataFrame(
        {"sentenceID": ids, **{c: offsets[:, j].astype(np.int64) for j, c in enumerate(OFFSET_COLUMNS)}}
    )
    return _write(path, frame)


def _write(path: str | os.PathLike, frame: pd.DataFrame) -> Path:
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
    return Path(path)

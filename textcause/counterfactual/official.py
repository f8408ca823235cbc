"""The organisers' subtask-2 arithmetic, for comparing with published SemEval-2020 Task 5 numbers.

:func:`~textcause.counterfactual.scoring.score_subtask2` scores spans as the task paper defines
them (END-INCLUSIVE offsets). The leaderboard and the system papers quote the numbers of the
organisers' evaluation script, which differs from that definition in ways that change the
numbers; :func:`score_subtask2_official` reproduces them, written here from its documented
behaviour (no code of it is copied):

* **End-exclusive slices.** A span's "tokens" are the whitespace pieces of ``sentence[start:end]``,
  which drops the span's last character (a one-letter last word is not counted), and the overlap
  is ``sentence[max(starts):min(ends)]``, likewise.
* **Exact match on the text of the cells.** The four offsets are compared as the strings written in
  the file: ``-1.0`` or `` 12`` is not ``-1`` or ``12``.
* **Its validity rule.** A row scores 0 (P = R = F1 = 0; exact match is still counted on the
  strings) when an antecedent offset is the string ``-1``, when exactly one consequent offset is
  ``-1``, when the antecedent's start is not smaller than its end (so a one-character antecedent,
  start == end, is invalid), when the consequent's end comes before its start, or when an offset
  is below -1. Offsets past the sentence's end are not checked (Python slices stop at the end).
* **Precision and recall swapped when printed.** The script averages per-sentence precision and
  recall correctly, then unpacks them in the wrong order, so the column it prints as "precision" is
  the mean recall and vice versa. Both are returned: ``precision`` / ``recall`` are the true means,
  ``printed_precision`` / ``printed_recall`` what the script prints (and what a paper quoting its
  output reports). F1 and exact match are not affected.

Where the script gives no number at all, this function still gives one and warns: rows out of the
gold file's order (the script stops: "the sentence id is not matched"; here rows are joined on
sentenceID) and offsets that Python's ``int`` does not parse, such as ``12.0`` (the script raises
ValueError; here the row scores 0 and the warning names it).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from textcause.counterfactual.data import OFFSET_COLUMNS, row_name

#: What :func:`score_subtask2_official` returns besides the counts.
OFFICIAL_METRICS = ("exact_match", "f1", "precision", "recall", "printed_precision", "printed_recall")


def _words(sentence: str, start: int, end: int) -> int:
    """The organisers' token count of a span: whitespace pieces of the END-EXCLUSIVE slice."""
    return len(sentence[start:end].split())


def _judge(cells: Sequence[str]) -> tuple[int, int, int, int] | None:
    """The organisers' validity rule on the four cells (strings); the offsets as ints, or None if invalid.

    Raises:
        ValueError: a cell that Python's ``int`` does not parse, where the organisers' script
            reaches ``int`` (it crashes there).
    """
    a_s, a_e, c_s, c_e = cells
    if a_s == "-1" or a_e == "-1":
        return None
    if (c_s == "-1") != (c_e == "-1"):
        return None
    values = tuple(int(c) for c in cells)
    if values[0] >= values[1] or values[2] > values[3]:
        return None
    if min(values) < -1:
        return None
    return values  # type: ignore[return-value]


def _intersection(pred: tuple[int, int], gold: tuple[int, int]) -> tuple[int, int] | None:
    if pred[1] < gold[0] or pred[0] > gold[1]:
        return None
    return max(pred[0], gold[0]), min(pred[1], gold[1])


def official_span_scores(
    sentence: str, gold: Sequence[int], cells: Sequence[str]
) -> tuple[float, float, float, bool, bool]:
    """One sentence as the organisers' script scores it.

    Args:
        sentence: the sentence.
        gold: the gold ``(antecedent_start, antecedent_end, consequent_start, consequent_end)`` as
            ints (END-INCLUSIVE in the file; the script slices them end-exclusive), ``-1, -1`` for
            no consequent.
        cells: the prediction's four offset cells as the strings written in the file.

    Returns:
        ``(precision, recall, f1, exact_match, valid)``.

    Raises:
        ValueError: a cell the script's ``int`` would crash on (see :func:`_judge`).
    """
    gold = tuple(int(g) for g in gold)
    exact = tuple(str(c) for c in cells) == tuple(str(g) for g in gold)
    pred = _judge([str(c) for c in cells])
    if pred is None:
        return 0.0, 0.0, 0.0, exact, False
    gold_len = _words(sentence, gold[0], gold[1]) + (0 if gold[2] == -1 else _words(sentence, gold[2], gold[3]))
    pred_cons = 0 if pred[2] == -1 else _words(sentence, pred[2], pred[3])
    pred_len = _words(sentence, pred[0], pred[1]) + pred_cons
    overlap = 0
    inter = _intersection(pred[:2], gold[:2])
    if inter is not None:
        overlap += _words(sentence, *inter)
    gold_cons = 0 if gold[2] == -1 else _words(sentence, gold[2], gold[3])
    if gold_cons and pred_cons:
        inter = _intersection(pred[2:], gold[2:])
        if inter is not None:
            overlap += _words(sentence, *inter)
    if overlap <= 0:
        return 0.0, 0.0, 0.0, exact, True
    p, r = overlap / pred_len, overlap / gold_len
    return p, r, 2 * p * r / (p + r), exact, True


def score_subtask2_official(gold: pd.DataFrame, pred: pd.DataFrame, rows: np.ndarray, *, source: str) -> dict:
    """Score subtask-2 predictions with the organisers' arithmetic (see the module docstring).

    Args:
        gold: a frame from :func:`~textcause.counterfactual.data.read_subtask2`.
        pred: the prediction frame (offset cells as read from the file: strings).
        rows: the prediction row of each gold sentence (from the sentenceID join).
        source: the predictions' file name, for messages.

    Returns:
        Means over the gold sentences of :data:`OFFICIAL_METRICS` (fractions), ``n``,
        ``n_invalid`` (rows the script's validity rule scores 0) and ``n_unparsable`` (rows the
        script would crash on, scored 0 here).
    """
    path = Path(source)
    if not np.array_equal(rows, np.arange(len(rows))):
        first = int(np.flatnonzero(rows != np.arange(len(rows)))[0])
        warnings.warn(
            f"The predictions {path.name!r} are not in the gold file's order (first at gold row {first + 1}): "
            "the organisers' script stops there; these scores join the rows on sentenceID.",
            stacklevel=2,
        )
    gold_offsets = gold[list(OFFSET_COLUMNS)].to_numpy(dtype=np.int64)
    cells = pred[list(OFFSET_COLUMNS)].astype(str).to_numpy(dtype=object)
    p_sum = r_sum = f_sum = 0.0
    n_exact = n_invalid = n_unparsable = 0
    for k, i in enumerate(rows):
        try:
            p, r, f, exact, valid = official_span_scores(gold["sentence"].iloc[k], gold_offsets[k], cells[i])
        except ValueError:
            warnings.warn(
                f"{row_name(path, int(i), gold['sentenceID'].iloc[k])}: the organisers' script crashes on the "
                f"offsets {list(cells[i])} (Python's int does not parse them); the row scores 0.",
                stacklevel=2,
            )
            n_unparsable += 1
            continue
        p_sum, r_sum, f_sum = p_sum + p, r_sum + r, f_sum + f
        n_exact += exact
        n_invalid += not valid
    n = len(rows)
    return {
        "exact_match": n_exact / n,
        "f1": f_sum / n,
        "precision": p_sum / n,
        "recall": r_sum / n,
        "printed_precision": r_sum / n,
        "printed_recall": p_sum / n,
        "n": n,
        "n_invalid": n_invalid,
        "n_unparsable": n_unparsable,
    }

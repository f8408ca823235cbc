"""Evaluate a fine-tuned SemEval-2020 Task 5 model: choose on validation, score the test file once.

:func:`evaluate_finetuned` predicts the validation split (carved from the training file) and the
test split with a trained model, then:

* subtask 1: chooses the decision threshold on the validation logits (the F1-maximising one,
  :func:`~textcause.counterfactual.baselines.choose_threshold`), applies it to the test logits and
  scores them (:func:`~textcause.counterfactual.scoring.score_subtask1`: P / R / F1 / accuracy);
* subtask 2: decodes valid spans only (:func:`~textcause.counterfactual.spans.decode`), chooses
  the "no consequent" margin on validation (the one with the best mean token F1) and scores the
  test offsets (:func:`~textcause.counterfactual.scoring.score_subtask2`: exact match and F1).

A fitted subtask-1 baseline (:class:`~textcause.counterfactual.fitted.FittedTextClassifier`)
is scored the same way, on its ``decision`` of the raw sentences, at the threshold (and C) its fit
already chose on the same validation part; ``results.json`` then also holds ``C``, ``threshold``
and the validation grid, beside the same keys.

Nothing is chosen on the test split: it is predicted after the choice, and its labels are read by
the scorer only. The test predictions are written in the official format (``subtask1.csv``:
``sentenceID,pred_label``; ``subtask2.csv``: ``sentenceID`` and the four END-INCLUSIVE offsets)
with ``results.json``, atomically.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from textcause.counterfactual.baselines import choose_threshold
from textcause.counterfactual.scoring import (
    score_subtask1,
    score_subtask2,
    write_subtask1_predictions,
    write_subtask2_predictions,
)
from textcause.counterfactual.spans import Decoded, decode
from textcause.io import atomic_write_json


def predict(trainer: Any, model: Any, data: Any, split: str) -> dict[str, Any]:
    """Model outputs on one split, in the split's order: ``{"logit": (n,)}`` or ``{"logits": [(4, L_i)]}``.

    A model with a ``decision`` of raw sentences (a fitted baseline) scores the split's sentences directly.
    """
    if callable(getattr(model, "decision", None)):
        return {"logit": np.asarray(model.decision(data.splits[split].sentences), dtype=np.float64)}
    outputs = trainer.predict(model, dataloaders=data.loader(split))
    index = np.concatenate([o["index"].cpu().numpy() for o in outputs])
    order = np.argsort(index, kind="stable")
    if "logit" in outputs[0]:
        return {"logit": np.concatenate([o["logit"].cpu().numpy() for o in outputs])[order]}
    per = [z[:, :n] for o in outputs for z, n in zip(o["logits"].cpu().numpy(), o["length"].cpu().numpy())]
    return {"logits": [per[i] for i in order]}


def choose_margin(decoded: Decoded, frame: pd.DataFrame) -> tuple[float, float]:
    """The "no consequent" margin with the best mean token F1 on (decoded, frame): (margin, that F1).

    Candidates: 0 (the plain argmax between the null answer and the best span) and the midpoints
    between consecutive sorted gaps (every distinct decision), up to 200 of them by quantiles.
    """
    gaps = np.unique(decoded.gap)
    mids = (gaps[1:] + gaps[:-1]) / 2 if gaps.size > 1 else np.empty(0)
    if mids.size > 200:
        mids = np.quantile(mids, np.linspace(0, 1, 200))
    candidates = np.concatenate([[0.0], mids, [gaps.min() - 1.0, gaps.max() + 1.0]])
    best = (0.0, -1.0)
    for margin in candidates:
        pred = offsets_frame(frame["sentenceID"].to_numpy(), decoded.offsets(float(margin)))
        f1 = score_subtask2(frame, pred)["f1"]
        if f1 > best[1] + 1e-12 or (abs(f1 - best[1]) <= 1e-12 and abs(margin) < abs(best[0])):
            best = (float(margin), float(f1))
    return best


def offsets_frame(ids: np.ndarray, offsets: np.ndarray) -> pd.DataFrame:
    """A subtask-2 prediction frame (official columns) from ids and (n, 4) offsets."""
    from textcause.counterfactual.data import OFFSET_COLUMNS

    return pd.DataFrame({"sentenceID": ids, **{c: offsets[:, j] for j, c in enumerate(OFFSET_COLUMNS)}})


def evaluate_finetuned(
    trainer: Any, model: Any, data: Any, out: str | os.PathLike, *, meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Choose on validation, predict and score the test split, write the official predictions and results.

    Args:
        trainer: a Lightning trainer to predict with.
        model: a trained :class:`~textcause.counterfactual.models.CounterfactualClassifier` or
            :class:`~textcause.counterfactual.models.CounterfactualSpanModel`, or a fitted
            :class:`~textcause.counterfactual.fitted.FittedTextClassifier`.
        data: its :class:`~textcause.counterfactual.datamodule.SemEvalDataModule`.
        out: the folder of ``subtask<k>.csv`` and ``results.json``.
        meta: more entries for the summary (the checkpoint evaluated, ...).

    Returns:
        The summary written to ``results.json``: ``test`` and ``validation`` scores (fractions),
        what was chosen on validation, sizes, timings.
    """
    started = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    subtask = data.settings.subtask
    if subtask != 1 and callable(getattr(model, "chosen", None)):
        raise ValueError(
            f"{type(model).__name__} is a subtask-1 model, but the data module serves subtask {subtask}: "
            "set data.init_args.subtask to 1."
        )
    val, test = data.splits["val"], data.splits["test"]
    val_out = predict(trainer, model, data, "val")
    test_out = predict(trainer, model, data, "test")  # predicted after nothing is left to choose
    test_ids = test.frame["sentenceID"].to_numpy()
    summary: dict[str, Any] = {"task": f"semeval2020-task5-subtask{subtask}", "model": type(model).__name__}
    if subtask == 1:
        y_val = val.frame["gold_label"].to_numpy()
        chosen = model.chosen() if callable(getattr(model, "chosen", None)) else {}  # a fitted baseline's choice
        threshold = chosen["threshold"] if "threshold" in chosen else choose_threshold(y_val, val_out["logit"])[0]
        val_pred = (val_out["logit"] >= threshold).astype(np.int8)
        test_pred = (test_out["logit"] >= threshold).astype(np.int8)
        val_frame = pd.DataFrame({"sentenceID": val.frame["sentenceID"].to_numpy(), "pred_label": val_pred})
        summary["validation"] = score_subtask1(val.frame, val_frame, source="validation")
        test_frame = pd.DataFrame({"sentenceID": test_ids, "pred_label": test_pred})
        summary["test"] = score_subtask1(test.frame, test_frame, source="test predictions")
        summary["threshold_logit"] = float(threshold)  # on the model's score (a baseline's: SVM margin, LR logit)
        summary |= chosen
        path = write_subtask1_predictions(out / "subtask1.csv", test_ids, test_pred)
    else:
        max_tokens = int(getattr(model, "max_span_tokens", 64))
        val_dec = decode(val_out["logits"], val.offsets, val.context, max_tokens)
        margin, _ = choose_margin(val_dec, val.frame)
        val_frame = offsets_frame(val.frame["sentenceID"].to_numpy(), val_dec.offsets(margin))
        summary["validation"] = score_subtask2(val.frame, val_frame, source="validation")
        test_dec = decode(test_out["logits"], test.offsets, test.context, max_tokens)
        test_offsets = test_dec.offsets(margin)
        summary["test"] = score_subtask2(test.frame, offsets_frame(test_ids, test_offsets), source="test predictions")
        summary["no_consequent_margin"] = margin
        summary["max_span_tokens"] = max_tokens
        path = write_subtask2_predictions(out / "subtask2.csv", test_ids, test_offsets)
    summary["info"] = data.info
    summary["predictions"] = str(path)
    summary["timings"] = {**summary.get("timings", {}), "evaluate_seconds": time.perf_counter() - started}
    summary |= dict(meta or {})
    atomic_write_json(out / "results.json", summary)
    return summary

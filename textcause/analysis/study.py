"""An observational study's results as one table, and where the models disagree.

A *record* is what :mod:`textcause.experiments.observational` stores per model (``models/<model>.json``);
:func:`result_rows` flattens records into one row per (model, estimator); :func:`disagreement`
summarises, per estimator, how far the text-adjusted estimates are apart (the paper's section 3
question: with no ground truth, do the models at least agree?).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from textcause.analysis.names import model_labels, model_order

__all__ = [
    "RESULT_COLUMNS",
    "disagreement",
    "result_rows",
]

RESULT_COLUMNS = [
    "study",
    "corpus",
    "model",
    "label",
    "estimator",
    "ate",
    "ci_low",
    "ci_high",
    "excludes_zero",
    "treatment_accuracy",
    "accuracy_ci_low",
    "accuracy_ci_high",
    "ece",
    "brier",
    "n_used",
    "n_dropped",
    "n_eval",
    "split",
    "seed",
    "n_boot",
    "ci_method",
    "status",
    "error",
    "seconds",
]


def _num(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def result_rows(records: Iterable[dict[str, Any]], *, study: str = "", corpus: str = "") -> list[dict[str, Any]]:
    """One row per (model, estimator) in the paper's model order; a failed model gives one row with its error."""
    records = {r["model"]: r for r in records}
    labels = model_labels(records)
    out = []
    for model in model_order(records):
        rec = records[model]
        base = {
            "study": study,
            "corpus": corpus,
            "model": model,
            "label": labels[model],
            "status": rec.get("status"),
            "error": rec.get("error"),
            "seconds": rec.get("seconds"),
            "n_eval": rec.get("n_eval"),
            "split": rec.get("split"),
            "seed": rec.get("seed"),
            "n_boot": rec.get("n_boot"),
        }
        if rec.get("status") != "ok":
            out.append({**base, "estimator": None})
            continue
        acc_lo, acc_hi = rec.get("accuracy_ci") or (None, None)
        for r in rec["rows"]:
            lo, hi = _num(r.get("ci_low")), _num(r.get("ci_high"))
            out.append(
                {
                    **base,
                    "estimator": r["estimator"],
                    "ate": _num(r.get("ate")),
                    "ci_low": lo,
                    "ci_high": hi,
                    "excludes_zero": None if lo is None or hi is None else bool(lo > 0 or hi < 0),
                    "treatment_accuracy": _num(r.get("treatment_accuracy")),
                    "accuracy_ci_low": acc_lo,
                    "accuracy_ci_high": acc_hi,
                    "ece": _num(r.get("ece")),
                    "brier": _num(r.get("brier")),
                    "n_used": r.get("n_used"),
                    "n_dropped": r.get("n_dropped"),
                    "ci_method": r.get("ci_method"),
                    "error": r.get("error"),
                    "status": "ok" if "error" not in r else "failed",
                }
            )
    return out


def _ok(rows: Sequence[dict[str, Any]], estimator: str) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("estimator") == estimator and r.get("status") == "ok" and r.get("ate") is not None]


def _spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def disagreement(rows: Sequence[dict[str, Any]], estimators: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per estimator, how the text-adjusted models (every model but ``unadjusted``) disagree.

    Returns:
        ``{estimator: {n_models, min, min_model, max, max_model, spread, excludes_zero, includes_zero,
        non_overlapping, accuracy_ate_spearman, unadjusted, unadjusted_ci}}``; ``non_overlapping``
        lists the model pairs whose intervals do not overlap, ``accuracy_ate_spearman`` is the rank
        correlation across models between treatment accuracy and the ATE (None with < 3 models).
    """
    out: dict[str, dict[str, Any]] = {}
    for est in estimators:
        ok = _ok(rows, est)
        base = next((r for r in ok if r["model"] == "unadjusted"), None)
        text = [r for r in ok if r["model"] != "unadjusted"]
        if not text:
            continue
        ates = [r["ate"] for r in text]
        lo_i, hi_i = int(np.argmin(ates)), int(np.argmax(ates))
        with_ci = [r for r in text if r["ci_low"] is not None]
        pairs = [
            (a["model"], b["model"])
            for i, a in enumerate(with_ci)
            for b in with_ci[i + 1 :]
            if a["ci_high"] < b["ci_low"] or b["ci_high"] < a["ci_low"]
        ]
        out[est] = {
            "n_models": len(text),
            "min": ates[lo_i],
            "min_model": text[lo_i]["model"],
            "max": ates[hi_i],
            "max_model": text[hi_i]["model"],
            "spread": ates[hi_i] - ates[lo_i],
            "excludes_zero": [r["model"] for r in with_ci if r["excludes_zero"]],
            "includes_zero": [r["model"] for r in with_ci if not r["excludes_zero"]],
            "non_overlapping": pairs,
            "accuracy_ate_spearman": _spearman([r["treatment_accuracy"] for r in text], ates),
            "unadjusted": None if base is None else base["ate"],
            "unadjusted_ci": None if base is None else [base["ci_low"], base["ci_high"]],
        }
    return out

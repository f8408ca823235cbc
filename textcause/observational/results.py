"""An observational study's results: one table of rows, where the models disagree, CSV and Markdown.

A *record* is what the runner stores per model (``models/<model>.json``); :func:`result_rows`
flattens records into one row per (model, estimator); :func:`disagreement` summarises, per
estimator, how far the text-adjusted estimates are apart (the paper's section 3 question: with no
ground truth, do the models at least agree?).
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any, Iterable, Sequence

import numpy as np

from textcause.experiments.markup import Bullets, Heading, Image, Para, Table, to_markdown
from textcause.experiments.names import ESTIMATOR_LABELS, model_labels, model_order

RESULT_COLUMNS = [
    "study", "corpus", "model", "label", "estimator", "ate", "ci_low", "ci_high", "excludes_zero",
    "treatment_accuracy", "accuracy_ci_low", "accuracy_ci_high", "ece", "brier", "n_used", "n_dropped",
    "n_eval", "split", "seed", "n_boot", "ci_method", "status", "error", "seconds",
]


def accuracy_interval(t: np.ndarray, propensity: np.ndarray, *, n_boot: int = 1000, level: float = 0.95,
                      seed: int = 0) -> tuple[float, float] | tuple[None, None]:
    """Percentile bootstrap interval over units of the treatment accuracy (``propensity > 0.5`` vs ``t``)."""
    correct = ((np.asarray(propensity) > 0.5) == (np.asarray(t) == 1)).astype(np.float64)
    if n_boot <= 0 or correct.size == 0:
        return None, None
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    for b in range(n_boot):  # one replicate at a time: memory stays O(n)
        means[b] = correct[rng.integers(0, correct.size, correct.size)].mean()
    alpha = (1.0 - level) / 2.0
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1.0 - alpha))


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
        base = {"study": study, "corpus": corpus, "model": model, "label": labels[model], "status": rec.get("status"),
                "error": rec.get("error"), "seconds": rec.get("seconds"), "n_eval": rec.get("n_eval"),
                "split": rec.get("split"), "seed": rec.get("seed"), "n_boot": rec.get("n_boot")}
        if rec.get("status") != "ok":
            out.append({**base, "estimator": None})
            continue
        acc_lo, acc_hi = rec.get("accuracy_ci") or (None, None)
        for r in rec["rows"]:
            lo, hi = _num(r.get("ci_low")), _num(r.get("ci_high"))
            out.append({
                **base, "estimator": r["estimator"], "ate": _num(r.get("ate")), "ci_low": lo, "ci_high": hi,
                "excludes_zero": None if lo is None or hi is None else bool(lo > 0 or hi < 0),
                "treatment_accuracy": _num(r.get("treatment_accuracy")), "accuracy_ci_low": acc_lo,
                "accuracy_ci_high": acc_hi, "ece": _num(r.get("ece")), "brier": _num(r.get("brier")),
                "n_used": r.get("n_used"), "n_dropped": r.get("n_dropped"), "ci_method": r.get("ci_method"),
                "error": r.get("error"), "status": "ok" if "error" not in r else "failed",
            })
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
        pairs = [(a["model"], b["model"]) for i, a in enumerate(with_ci) for b in with_ci[i + 1:]
                 if a["ci_high"] < b["ci_low"] or b["ci_high"] < a["ci_low"]]
        out[est] = {
            "n_models": len(text), "min": ates[lo_i], "min_model": text[lo_i]["model"], "max": ates[hi_i],
            "max_model": text[hi_i]["model"], "spread": ates[hi_i] - ates[lo_i],
            "excludes_zero": [r["model"] for r in with_ci if r["excludes_zero"]],
            "includes_zero": [r["model"] for r in with_ci if not r["excludes_zero"]],
            "non_overlapping": pairs,
            "accuracy_ate_spearman": _spearman([r["treatment_accuracy"] for r in text], ates),
            "unadjusted": None if base is None else base["ate"],
            "unadjusted_ci": None if base is None else [base["ci_low"], base["ci_high"]],
        }
    return out


def _fmt(value: Any, signed: bool = True) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _interval(est: Any, lo: Any, hi: Any, signed: bool = True) -> str:
    if est is None:
        return "-"
    if lo is None or hi is None:
        return _fmt(est, signed)
    return f"{_fmt(est, signed)} [{_fmt(lo, signed)}, {_fmt(hi, signed)}]"


def results_table(rows: Sequence[dict[str, Any]], estimators: Sequence[str]) -> Table:
    """Model | treatment accuracy [95% CI] | ATE [95% CI] per estimator (``*``: the interval excludes 0)."""
    header = ["Model", "Treatment accuracy"] + [f"ATE {ESTIMATOR_LABELS.get(e, e)}" for e in estimators]
    body = []
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model]
        first = mine[0]
        if first.get("estimator") is None:
            body.append([first["label"], f"failed: {first.get('error')}"] + [""] * len(estimators))
            continue
        line = [first["label"], _interval(first["treatment_accuracy"], first["accuracy_ci_low"],
                                          first["accuracy_ci_high"], signed=False)]
        for est in estimators:
            r = next((x for x in mine if x["estimator"] == est), None)
            if r is None or r.get("ate") is None:
                line.append(f"failed: {r.get('error')}" if r is not None and r.get("error") else "-")
            else:
                line.append(_interval(r["ate"], r["ci_low"], r["ci_high"]) + (" *" if r["excludes_zero"] else ""))
        body.append(line)
    return Table(header, body)


def disagreement_bullets(summary: dict[str, dict[str, Any]], labels: dict[str, str]) -> list[str]:
    """One sentence per estimator saying where the models disagree."""
    items = []
    name = lambda m: labels.get(m, m)  # noqa: E731
    for est, s in summary.items():
        if s["n_models"] == 1:
            text = f"{ESTIMATOR_LABELS.get(est, est)}: the only text model, {name(s['min_model'])}, estimates {s['min']:+.3f}"
        else:
            text = (f"{ESTIMATOR_LABELS.get(est, est)}: the {s['n_models']} text models estimate from "
                    f"{s['min']:+.3f} ({name(s['min_model'])}) to {s['max']:+.3f} ({name(s['max_model'])}), "
                    f"a spread of {s['spread']:.3f}")
        if s["unadjusted"] is not None:
            text += f" (unadjusted: {s['unadjusted']:+.3f})"
        text += (f"; {len(s['excludes_zero'])} interval(s) exclude 0 and {len(s['includes_zero'])} include it")
        if s["non_overlapping"]:
            shown = ", ".join(f"{name(a)} vs {name(b)}" for a, b in s["non_overlapping"][:4])
            more = f" and {len(s['non_overlapping']) - 4} more" if len(s["non_overlapping"]) > 4 else ""
            text += f"; {len(s['non_overlapping'])} pair(s) of models have disjoint intervals ({shown}{more})"
        else:
            text += "; every pair of intervals overlaps"
        if s["accuracy_ate_spearman"] is not None:
            text += f"; Spearman correlation of treatment accuracy and ATE across models: {s['accuracy_ate_spearman']:+.2f}"
        items.append(text + ".")
    return items


def to_csv(rows: Sequence[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=RESULT_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def report_markdown(rows: Sequence[dict[str, Any]], summary: dict[str, dict[str, Any]], *, title: str,
                    about: Sequence[str], estimators: Sequence[str], figure: str | None = None) -> str:
    """The study's Markdown report: what was studied, the table, the disagreement, the figure."""
    labels = {r["model"]: r["label"] for r in rows}
    blocks: list[Any] = [Heading(1, title), Bullets(list(about)), Heading(2, "Results"), results_table(rows, estimators),
                         Para("Intervals: 95% percentile bootstrap over the evaluation users (ATE and treatment "
                              "accuracy). `*`: the ATE interval excludes 0. There is no ground truth: agreement "
                              "between models is necessary for a credible estimate, not sufficient.")]
    if summary:
        blocks += [Heading(2, "Where the models disagree"), Bullets(disagreement_bullets(summary, labels))]
    if figure:
        blocks.append(Image(figure, f"{title}: treatment accuracy and ATE per model"))
    return to_markdown(blocks)

"""A CFR evaluation's files: the Markdown table (``<name>_cfr.md``), the rows (``<name>_cfr.csv``), the figure.

The table puts every intervention beside the identity baseline (no intervention) and erasure only,
and says in words, from the paired bootstrap interval of the difference from identity, whether
each CFR is closer to the true counterfactual texts than doing nothing, indistinguishable from it,
or further away. The figure (``<name>_cfr.png`` / ``.svg``): PIP and ATV of each intervention with
their intervals, and the TPR gap of each class for the classifier trained on original, erased,
CFR-augmented and text-augmented representations. Every file is written atomically.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

__all__ = [
    "PROBE_LABELS",
    "verdict",
    "write_cfr_report",
]

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from textcause.counterfactual.cfr.evaluate import AUGMENTATIONS, METHOD_LABELS, METHODS
from textcause.io import atomic_write_text
from textcause.reports.figures import save_figure

PROBE_LABELS = {
    "none": "none (original)",
    "orth": "orthogonal projection (the CFR's)",
    "leace": "LEACE",
    "oracle": "oracle",
}
#: A paired difference whose whole interval lies within this of 0 is called negligible, not better / worse.
_NEGLIGIBLE = 0.005
_TPR_LABELS = {
    "original": "trained on original",
    "erased": "trained on erased (orthogonal, the CFR's)",
    "leace_erased": "trained on LEACE-erased",
    "cfr_augmented": "trained on original + CFR (Lemberger et al.)",
    "leace_mean_cfr_augmented": "trained on original + LEACE class-mean CFR",
    "text_augmented": "trained on original + true counterfactual texts",
}


def _num(x: Any, digits: int = 3) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _signed(x: Any, digits: int = 3) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.{digits}f}"


def _ci(row: pd.Series | None, signed: bool = False) -> str:
    if row is None:
        return "-"
    fmt = _signed if signed else _num
    if row["lo"] is None or (isinstance(row["lo"], float) and math.isnan(row["lo"])):
        return fmt(row["value"])
    return f"{fmt(row['value'])} [{fmt(row['lo'])}, {fmt(row['hi'])}]"


def _get(rows: pd.DataFrame, section: str, method: str, metric: str, klass: Any = None) -> pd.Series | None:
    sel = rows[(rows.section == section) & (rows.method == method) & (rows.metric == metric)]
    sel = sel[sel.klass.isna()] if klass is None else sel[sel.klass == klass]
    return None if sel.empty else sel.iloc[0]


def _methods(rows: pd.DataFrame) -> list[str]:
    present = set(rows[(rows.section == "cfr") & (rows.metric == "pip")].method)
    return [m for m in METHODS if m in present]


def verdict(rows: pd.DataFrame, method: str) -> str:
    """Whether ``method`` is closer to the true texts than identity, by the paired intervals of PIP and ATV.

    Better / WORSE: the 95% interval of the paired difference excludes 0; no different: it holds 0;
    negligibly different: the whole interval is within :data:`_NEGLIGIBLE` of 0.
    """
    if method == "identity":
        return "the baseline"
    parts = []
    for metric, better_if_negative in (("atv", True), ("pip", False)):
        r = _get(rows, "cfr", method, f"{metric}_vs_identity")
        if r is None or r["lo"] is None or (isinstance(r["lo"], float) and math.isnan(r["lo"])):
            parts.append(f"{metric.upper()}: no interval")
            continue
        lo, hi = r["lo"], r["hi"]
        if max(abs(lo), abs(hi)) < _NEGLIGIBLE:
            parts.append(f"{metric.upper()} negligibly different")
        elif (hi < 0) if better_if_negative else (lo > 0):
            parts.append(f"{metric.upper()} better")
        elif (lo > 0) if better_if_negative else (hi < 0):
            parts.append(f"{metric.upper()} WORSE")
        else:
            parts.append(f"{metric.upper()} no different")
    return ", ".join(parts) + " than identity"


def _cfr_markdown(rows: pd.DataFrame, summary: dict[str, Any]) -> str:
    """The Markdown report of one run's rows (``read_cfr`` of the store, or the run's rows)."""
    classes = list(summary.get("classes") or sorted(set(rows[rows.metric == "gap"].klass.dropna())))
    z0, z1 = (summary.get("concept_values") or ["Z=0", "Z=1"])[:2]
    ev, em = summary.get("evaluate_info", {}), summary.get("embed_info", {})
    name = summary.get("run_id", "cfr")
    lines = [f"# Counterfactual representations: {name}", ""]
    lines.append(
        f"{ev.get('n_units', '?')} units ({ev.get('n_train', '?')} train, {ev.get('n_test', '?')} test, split by "
        f"author / unit), label classes {classes}, concept {z0} / {z1}; representations from "
        f"{em.get('encoder', '?')} (dimension {ev.get('dim', '?')}); encoding {em.get('n_texts', '?')} texts "
        f"({em.get('n_encoded', '?')} new) took {_num(em.get('encode_seconds'), 1)} s, the whole run "
        f"{_num(summary.get('seconds'), 1)} s. The classifier Yhat (standardised logistic regression on the "
        f"original representations) has test accuracy {_num(_val(rows, 'classifier', 'original', 'accuracy'))}."
    )
    lines += ["", "## Interventions on the representation vs the true counterfactual texts", ""]
    lines.append(
        "PIP: share of test units where Yhat on the intervention predicts what Yhat predicts on the true "
        "counterfactual text's representation (higher is better). ATV: mean total variation between the two "
        "probability vectors (lower is better). Intervals: 95% percentile bootstrap over test units; the "
        "differences from identity are paired."
    )
    lines += [
        "",
        "| intervention | PIP | ATV | PIP - identity | ATV - identity | effect error | probe reads z' | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in _methods(rows):
        lines.append(
            f"| {METHOD_LABELS[m]} | {_ci(_get(rows, 'cfr', m, 'pip'))} | {_ci(_get(rows, 'cfr', m, 'atv'))} | "
            f"{_ci(_get(rows, 'cfr', m, 'pip_vs_identity'), True)} | {_ci(_get(rows, 'cfr', m, 'atv_vs_identity'), True)} | "
            f"{_num(_val(rows, 'cfr', m, 'effect_error'))} | {_num(_val(rows, 'cfr', m, 'concept_flip'))} | {verdict(rows, m)} |"
        )
    lines.append(
        f"| {METHOD_LABELS['true_text']} | 1 | 0 | | | 0 | {_num(_val(rows, 'cfr', 'true_text', 'concept_flip'))} | the target |"
    )
    lines += [
        "",
        "*effect error*: mean over classes of |effect estimated from the intervention - effect from the true "
        "texts|; *probe reads z'*: share of interventions a concept probe (trained on original representations) "
        "assigns the counterfactual value.",
        "",
        f"## The concept's effect on Yhat: E[p(Z = {z1}) - p(Z = {z0})] per class",
        "",
        "| class | true texts | " + " | ".join(METHOD_LABELS[m] for m in _methods(rows)) + " |",
        "|---|---|" + "---|" * len(_methods(rows)),
    ]
    for c in classes:
        cells = [_signed(_val(rows, "cfr", "true_text", "effect", c))]
        cells += [_signed(_val(rows, "cfr", m, "effect", c)) for m in _methods(rows)]
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Concept probe on held-out representations (chance = the majority rate)",
        "",
        "| erasure | accuracy | AUC | majority rate |",
        "|---|---|---|---|",
    ]
    for p, label in PROBE_LABELS.items():
        if _get(rows, "probe", p, "accuracy") is not None:
            lines.append(
                f"| {label} | {_num(_val(rows, 'probe', p, 'accuracy'))} | {_num(_val(rows, 'probe', p, 'auc'))} | "
                f"{_num(_val(rows, 'probe', p, 'majority'))} |"
            )
    lines += [
        "",
        f"## TPR gap per class: P(Yhat = c | Y = c, Z = {z1}) - P(Yhat = c | Y = c, Z = {z0})",
        "",
        "Mean abs gap: the unweighted mean of |gap| over classes; weighted: |gap| weighted by each class's "
        "share of the test units (the authors' aggregate for BiasInBios).",
        "",
        "| classifier | " + " | ".join(map(str, classes)) + " | mean abs gap | weighted abs gap | accuracy |",
        "|---|" + "---|" * (len(classes) + 3),
    ]
    for a in AUGMENTATIONS:
        if _get(rows, "tpr", a, "accuracy") is None:
            continue
        cells = [_signed(_val(rows, "tpr", a, "gap", c)) for c in classes]
        lines.append(
            f"| {_TPR_LABELS[a]} | "
            + " | ".join(cells)
            + f" | {_num(_val(rows, 'tpr', a, 'mean_abs_gap'))} | {_num(_val(rows, 'tpr', a, 'weighted_abs_gap'))}"
            + f" | {_num(_val(rows, 'tpr', a, 'accuracy'))} |"
        )
    return "\n".join(lines) + "\n"


def _val(rows: pd.DataFrame, section: str, method: str, metric: str, klass: Any = None) -> float:
    r = _get(rows, section, method, metric, klass)
    return float("nan") if r is None or r["value"] is None else float(r["value"])


def _cfr_figure(rows: pd.DataFrame, classes: Sequence[str], *, title: str = "") -> plt.Figure:
    """PIP and ATV per intervention (with intervals) and the TPR gaps per class and classifier."""
    methods = _methods(rows)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), gridspec_kw={"width_ratios": [1, 1, 1.3]})
    colors = ["#7f7f7f", "#8c564b", "#2ca02c", "#98df8a", "#9467bd", "#1f77b4", "#17becf", "#ff7f0e", "#d62728"]
    for ax, metric, label in ((axes[0], "pip", "PIP (higher is better)"), (axes[1], "atv", "ATV (lower is better)")):
        for i, m in enumerate(methods):
            r = _get(rows, "cfr", m, metric)
            v = float(r["value"])
            lo = float(r["lo"]) if r["lo"] is not None and not math.isnan(float(r["lo"])) else v
            hi = float(r["hi"]) if r["hi"] is not None and not math.isnan(float(r["hi"])) else v
            ax.barh(i, v, color=colors[i % len(colors)], alpha=0.85)
            ax.errorbar(v, i, xerr=[[v - lo], [hi - v]], color="black", capsize=3, linewidth=1)
        base = _val(rows, "cfr", "identity", metric)
        ax.axvline(base, color="#555555", linestyle=":", linewidth=1)
        ax.set_yticks(range(len(methods)))
        ax.set_yticklabels([METHOD_LABELS[m] for m in methods] if metric == "pip" else [])
        ax.invert_yaxis()
        ax.set_xlabel(label)
        ax.set_title(f"{metric.upper()} vs true counterfactual texts", fontsize=10)
    ax = axes[2]
    present = [a for a in AUGMENTATIONS if _get(rows, "tpr", a, "accuracy") is not None]
    width = 0.8 / max(1, len(present))
    for j, a in enumerate(present):
        xs = [k + (j - (len(present) - 1) / 2) * width for k in range(len(classes))]
        ax.bar(xs, [_val(rows, "tpr", a, "gap", c) for c in classes], width=width, label=_TPR_LABELS[a])
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(classes)))
    ax.set_xticklabels(list(classes))
    ax.set_ylabel("TPR gap")
    ax.set_title("TPR gap per class", fontsize=10)
    ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def write_cfr_report(
    rows: pd.DataFrame | list[dict[str, Any]], summary: dict[str, Any], out_dir: str | Path, stem: str
) -> list[Path]:
    """Write ``<stem>_cfr.md``, ``<stem>_cfr.csv`` and the figure (``.png`` / ``.svg``) under ``out_dir``."""
    frame = pd.DataFrame(rows) if not isinstance(rows, pd.DataFrame) else rows
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = atomic_write_text(out / f"{stem}_cfr.md", _cfr_markdown(frame, summary))
    cols = [c for c in ("section", "method", "metric", "klass", "value", "lo", "hi") if c in frame]
    csv = atomic_write_text(out / f"{stem}_cfr.csv", frame[cols].to_csv(index=False))
    fig = _cfr_figure(frame, summary.get("classes") or [], title=f"CFRs: {summary.get('run_id', stem)}")
    try:
        figures = save_figure(fig, out, f"{stem}_cfr")
    finally:
        plt.close(fig)
    return [md, csv, *figures]

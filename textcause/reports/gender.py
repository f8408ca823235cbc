"""The masked gender probe's files: table 2 (Markdown + CSV), the per-probe scores, figure 2.

Figure 2's layout: one panel per W list (and per x where W is numeric: a year's index and its
value give the same picture, so only the index is drawn), the mean female and male probability
(percent) at each value of W as dots, the least-squares line, and its 95% band (percentile
bootstrap over probes, the same replicates as the table's intervals). A fine-tuned model probed
through its binary head draws the female curve only (the male one is its mirror image). Every file
is written atomically (:func:`textcause.io.atomic_path`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from textcause.gender.run import ProbeResult
from textcause.gender.stats import Curve
from textcause.gender.table import table_markdown
from textcause.io import atomic_path, atomic_write_json, atomic_write_text
from textcause.reports.figures import save_figure

COLORS = {"female": "#d62728", "male": "#1f77b4"}
VARIANT_LABELS = {
    "top5": "gendered words among the top 5 (the paper's)",
    "softmax": "full softmax mass of the gendered words",
    "top5_renormalised": "top-5 gendered mass, renormalised to female + male = 1",
    "softmax_renormalised": "softmax gendered mass, renormalised to female + male = 1",
    "binary_head": "P(female) from the fine-tuned binary head (male = 1 - female)",
}
#: At most this many tick labels on an x-axis (every k-th value of W beyond it).
MAX_TICKS = 24


def file_stem(model: str) -> str:
    """A file-name-safe short name of a model (``bert-large-uncased``, ``tiny-bert`` for a path,
    ``finetune_age-version_0`` for a checkpoint in ``finetune_age/version_0/checkpoints/``)."""
    path = Path(str(model).rstrip("/"))
    name = path.name or str(model)
    if path.suffix == ".ckpt" and path.parent.name == "checkpoints" and path.parent.parent.name:
        name = f"{path.parent.parent.parent.name}-{path.parent.parent.name}".lstrip("-")
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model"


def _panel(ax: plt.Axes, curves: Sequence[Curve]) -> None:
    first = curves[0]
    grid = np.linspace(first.x.min(), first.x.max(), 200)
    for c in curves:
        color = COLORS.get(c.gender, "#555555")
        lo, hi = c.band(grid)
        ax.fill_between(grid, lo, hi, color=color, alpha=0.2, linewidth=0)
        ax.plot(grid, c.intercept + c.slope * grid, color=color, linewidth=1.2)
        ax.scatter(c.x, c.y, color=color, s=14, zorder=3, label=f"{c.gender}: slope {c.slope:.3g}, r {c.r:.3g}")
    step = max(1, int(np.ceil(len(first.x) / MAX_TICKS)))
    ax.set_xticks(
        first.x[::step], first.labels[::step], rotation=60 if first.w_category != "date" else 45, ha="right", fontsize=7
    )
    ax.set_xlabel(f"W: {first.w_list} ({first.w_category})", fontsize=8)
    ax.set_ylabel("probability at the mask (%)", fontsize=8)
    per_dot = first.n_probes // max(len(first.x), 1)
    ax.set_title(f"{first.w_category}: each dot is the mean of {per_dot} probes", fontsize=8, loc="left")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, frameon=False)


def probe_figure(curves: Sequence[Curve], model: str, *, binary_head: bool = False) -> plt.Figure:
    """Figure 2 for one model: a panel per W list, female and male dots, line and 95% band.

    Args:
        curves: the curves (:func:`textcause.gender.stats.probe_stats`).
        model: the model's name, for the title.
        binary_head: a fine-tuned binary head: draw the female curve only (the male one mirrors it).

    Raises:
        ValueError: no curves.
    """
    drawn = [c for c in curves if c.x_kind == "index" and not (binary_head and c.gender != "female")]
    if not drawn:
        raise ValueError("There are no curves to draw: score at least one W list.")
    lists = list(dict.fromkeys(c.w_list for c in drawn))
    fig, axes = plt.subplots(
        1, len(lists), figsize=(max(5.5 * len(lists), 6.5), 4.4), layout="constrained", squeeze=False
    )
    for ax, name in zip(axes[0], lists):
        _panel(ax, [c for c in drawn if c.w_list == name])
    c0 = drawn[0]
    label = VARIANT_LABELS["binary_head"] if binary_head else VARIANT_LABELS.get(c0.variant, c0.variant)
    name = file_stem(model) if str(model).endswith(".ckpt") else model
    fig.suptitle(
        f"{name}: {label}\nshaded: {round(100 * c0.level)}% band of the linear fit (bootstrap over probes)",
        fontsize=9,
    )
    return fig


def write_probe_outputs(
    result: ProbeResult, out_dir: str | Path, *, formats: Sequence[str] = ("png", "svg")
) -> list[Path]:
    """Write table 2 (``.md``, ``.csv``), the scores (``scores_<variant>.csv`` holds every variant),
    a ``summary.json`` (dropped words, notes) and figure 2 (PNG, SVG) under ``out_dir``.

    Returns:
        The paths written, the Markdown table first.
    """
    out = Path(out_dir)
    binary = result.head == "binary"
    stem = f"gender_{file_stem(result.model)}_{'binary_head' if binary else result.variant}"
    md = atomic_write_text(
        out / f"{stem}_table2.md",
        f"# Masked gender probe: {result.model}\n\n" + table_markdown(result.table, notes=result.notes),
    )
    csv = out / f"{stem}_table2.csv"
    with atomic_path(csv) as tmp:
        result.table.to_csv(tmp, index=False)
    scores = out / f"gender_{file_stem(result.model)}_scores.csv"
    with atomic_path(scores) as tmp:
        result.scores.to_csv(tmp, index=False)
    summary = atomic_write_json(
        out / f"{stem}_summary.json",
        {
            "model": result.model,
            "variant": "binary_head" if binary else result.variant,
            "head": result.head,
            "notes": list(result.notes),
            "dropped": [{"gender": g, "word": w, "reason": r} for g, w, r in result.scores.attrs.get("dropped", [])],
            "n_probes": int(len(result.scores)),
        },
    )
    figs = save_figure(probe_figure(result.curves, result.model, binary_head=binary), out, f"{stem}_fig2", formats)
    return [md, csv, scores, summary, *figs]

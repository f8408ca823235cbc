"""The paper's figures from a seed summary (matplotlib, Agg backend): Fig. 4/8/9, 6, 7, 10 and 11.

Every panel puts the task level (difficulty, harder to the right) on x and one marker per model,
jittered on x, with an error bar whose meaning the figure states: by default the 95% interval of the
mean over seeds with the corrected resampled variance ``(1/J + n_test/n_train) sd^2``; with one seed
(or ``interval="bootstrap"``) the per-cell percentile bootstrap over test units.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Optional

import matplotlib

from textcause.validation import check_options

__all__ = [
    "COLORS",
    "INTERVAL_LABELS",
    "agreement_figure",
    "draw_figures",
    "estimator_columns",
    "grid_figure",
    "model_style",
    "panel_points",
    "resolve_interval",
    "save_figure",
]

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from textcause.analysis.frame import task_order
from textcause.analysis.inference import corrected_interval
from textcause.analysis.names import model_labels, model_order
from textcause.estimators.registry import ESTIMATOR_LABELS, adjusted_estimators
from textcause.io import atomic_path
from textcause.simulation.tasks import task_label

_METRIC_LABELS = {
    "treatment_accuracy": "Treatment accuracy",
    "iptw_weight_mse": "IPTW weight MSE",
    "spearman": "Spearman correlation",
    "bias": "Bias (estimate - true ATE)",
}
#: Where a figure's error bars come from (``auto``: seeds when some method has two or more seeds).
_INTERVALS = ("auto", "bootstrap", "seeds")
INTERVAL_LABELS = {
    "seeds": "error bars: 95% interval of the mean over seeds (corrected resampled t, Nadeau & Bengio 2003)",
    "bootstrap": "error bars: 95% percentile bootstrap over test units "
    "(per cell; ends averaged over seeds; none on propensity metrics)",
}
_MARKERS = "osD^vP<X>*hp8"
#: tab10, then darker colours, so that the paper's 12 models never share a colour (one shared
#: colour with a circle and a hexagon read as the same model at marker size 5).
COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#000000",
    "#8c6d31",
    "#393b79",
    "#637939",
)


def model_style(i: int) -> tuple[str, str]:
    """The (marker, colour) of the ``i``-th model: distinct colours for 14 models, distinct pairs for 182."""
    return _MARKERS[i % len(_MARKERS)], COLORS[i % len(COLORS)]


#: Fig. 4's columns: (title, estimator or None for a propensity metric, metric).
_FIG4_COLUMNS = (
    ("Treatment accuracy", None, "treatment_accuracy"),
    ("IPTW bias", "ipw", "bias"),
    ("Stratified bias", "stratified", "bias"),
)
_FIG7_COLUMNS = (
    ("Treatment accuracy", None, "treatment_accuracy"),
    ("IPTW weight MSE", None, "iptw_weight_mse"),
    ("Spearman correlation", None, "spearman"),
)


def estimator_columns(present: Iterable[str]) -> list[tuple[str, str, str]]:
    """Fig. 6's columns: the bias of each adjusted estimator of the registry found in ``present``.

    Args:
        present: the estimator names of the results (repeats allowed).

    Returns:
        ``(title, estimator, "bias")`` per estimator, in the registry's display order
        (:func:`~textcause.estimators.registry.adjusted_estimators`); ``unadjusted`` has none.

    Example:
        >>> estimator_columns(["tmle", "unadjusted", "ipw", "ipw"])
        [('IPTW bias', 'ipw', 'bias'), ('TMLE bias', 'tmle', 'bias')]
    """
    found = set(present)
    return [(f"{ESTIMATOR_LABELS.get(e, e)} bias", e, "bias") for e in adjusted_estimators() if e in found]


#: ``auto`` draws across-seed intervals only when every plotted method has at least this many seeds:
#: a t interval with 1-3 degrees of freedom is wider than the axis (a 2-seed grid drew accuracy bars
#: from -1.5 to 2.5), so smaller grids show the per-cell bootstrap intervals instead.
_MIN_SEEDS_FOR_SEED_INTERVALS = 5
#: Metrics that live in [0, 1]: their axes and error bars are clipped to it.
_UNIT_METRICS = ("treatment_accuracy", "ece", "brier")


def resolve_interval(summary: pd.DataFrame, interval: str) -> str:
    """``auto`` -> ``seeds`` when every method has :data:`_MIN_SEEDS_FOR_SEED_INTERVALS` or more seeds,
    else ``bootstrap``."""
    check_options(interval, "interval", "resolve_interval", _INTERVALS)
    if interval == "auto":
        seeds = summary.loc[summary["n_seeds"] > 0, "n_seeds"]
        return "seeds" if len(seeds) and seeds.min() >= _MIN_SEEDS_FOR_SEED_INTERVALS else "bootstrap"
    return interval


def panel_points(summary: pd.DataFrame, task: str, estimator: str | None, metric: str, interval: str) -> pd.DataFrame:
    """Rows ``model, level, y, lo, hi`` for one panel (``lo``/``hi`` NaN: no error bar)."""
    rows = summary[(summary["task"] == task) & (summary["n_seeds"] > 0)]
    if estimator is not None:
        rows = rows[rows["estimator"] == estimator]
    else:  # a propensity metric: the same on every estimator row of a cell; keep the best-covered row
        rows = rows.sort_values("n_seeds", ascending=False).drop_duplicates(["level", "model"])
    out = []
    for r in rows.itertuples():
        y, sd = getattr(r, f"mean_{metric}"), getattr(r, f"sd_{metric}")
        lo = hi = np.nan
        if interval == "seeds" and r.n_seeds >= 2:
            lo, hi = corrected_interval(y, sd, r.n_seeds, r.test_train_ratio)
        elif interval == "bootstrap" and metric == "bias":
            lo, hi = r.mean_ci_low - r.true_ate, r.mean_ci_high - r.true_ate
        if metric in _UNIT_METRICS:  # an interval never leaves the metric's range
            lo, hi = (float(np.clip(v, 0.0, 1.0)) if np.isfinite(v) else v for v in (lo, hi))
        out.append({"model": r.model, "level": int(r.level), "y": y, "lo": lo, "hi": hi})
    return pd.DataFrame(out, columns=["model", "level", "y", "lo", "hi"])


def _draw_panel(
    ax: plt.Axes,
    points: pd.DataFrame,
    models: list[str],
    labels: dict[str, str],
    levels: list[int],
    metric: str,
    *,
    compact: bool = False,
) -> None:
    width = 0.75 if compact else 0.6
    offsets = np.linspace(-width / 2, width / 2, len(models)) if len(models) > 1 else np.zeros(1)
    for i, model in enumerate(models):
        p = points[points["model"] == model].sort_values("level")
        if p.empty:
            continue
        x = np.array([levels.index(lv) for lv in p["level"]]) + offsets[i]
        y = p["y"].to_numpy()
        err = np.vstack([y - p["lo"].to_numpy(), p["hi"].to_numpy() - y])
        err = np.where(np.isfinite(err), np.maximum(err, 0.0), 0.0)
        marker, color = model_style(i)
        ax.errorbar(
            x,
            y,
            yerr=err,
            fmt=marker,
            color=color,
            ms=3 if compact else 5,
            capsize=1 if compact else 2,
            elinewidth=0.7 if compact else 1,
            label=labels[model],
            clip_on=False,
        )
    if metric in _UNIT_METRICS:
        ax.set_ylim(0.0, 1.0)
    if metric == "bias":
        ax.axhline(0.0, color="0.3", lw=0.8, ls="--", zorder=0)
    ax.set_xticks(range(len(levels)), [str(lv) for lv in levels])
    ax.set_xlim(-0.6, len(levels) - 0.4)
    ax.set_xlabel("difficulty level (harder →)", fontsize=8)
    ax.set_ylabel(_METRIC_LABELS.get(metric, metric), fontsize=8)
    ax.tick_params(labelsize=8)
    ax.grid(axis="y", alpha=0.3)


def grid_figure(
    summary: pd.DataFrame,
    tasks: Sequence[str],
    columns: Sequence[tuple[str, str | None, str]],
    *,
    interval: str = "auto",
    title: str = "",
    compact: bool = False,
) -> plt.Figure:
    """One row per task, one column per (title, estimator, metric); a shared legend at the bottom.

    Columns of one row that show the same metric share their y axis (e.g. the bias of every
    estimator); ``compact`` draws smaller markers in narrower panels and a wider legend (many models).
    """
    interval = resolve_interval(summary, interval)
    models = model_order(summary["model"].unique())
    labels = model_labels(models)
    nrows, ncols = len(tasks), len(columns)
    width = (3.2 + 0.06 * max(0, len(models) - 8)) if compact else (4.2 + 0.15 * max(0, len(models) - 8))
    height = 2.3 if compact else 2.9
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows + 1.4), squeeze=False)
    letter = iter("abcdefghijklmnopqrstuvwxyz" * 4)
    for r, task in enumerate(tasks):
        levels = sorted(summary.loc[summary["task"] == task, "level"].unique())
        for c, (col_title, estimator, metric) in enumerate(columns):
            ax = axes[r][c]
            points = panel_points(summary, task, estimator, metric, interval)
            _draw_panel(ax, points, models, labels, [int(lv) for lv in levels], metric, compact=compact)
            ax.set_title(f"({next(letter)}) {task_label(task)}: {col_title}", fontsize=9, loc="left")
            if points.empty:
                ax.text(0.5, 0.5, "no results", transform=ax.transAxes, ha="center", va="center", color="0.5")
        _share_rows(axes[r], [metric for _, _, metric in columns])
    handles, names = [], []
    for ax in axes.flat:
        for h, n in zip(*ax.get_legend_handles_labels()):
            if n not in names:
                handles.append(h)
                names.append(n)
    per_row = 8 if compact else 5
    fig.legend(
        handles,
        names,
        loc="lower center",
        ncol=min(len(names), per_row),
        fontsize=8,
        frameon=False,
        bbox_to_anchor=(0.5, 0.0),
    )
    head = f"{title}\n{INTERVAL_LABELS[interval]}; models jittered on x" if title else INTERVAL_LABELS[interval]
    fig.suptitle(head, fontsize=10)
    height = fig.get_figheight()
    legend_inches = 0.22 * ((len(names) + per_row - 1) // per_row) + 0.15
    fig.tight_layout(rect=(0, legend_inches / height, 1, 1 - 0.45 / height))
    return fig


def _share_rows(row: Sequence[plt.Axes], metrics: Sequence[str]) -> None:
    """Give the panels of one row that show the same metric one y range (the union of theirs)."""
    for metric in set(metrics):
        group = [ax for ax, m in zip(row, metrics) if m == metric]
        if len(group) < 2 or metric in _UNIT_METRICS:
            continue
        lows, highs = zip(*(ax.get_ylim() for ax in group))
        for ax in group:
            ax.set_ylim(min(lows), max(highs))


def agreement_figure(table: pd.DataFrame) -> plt.Figure:
    """Fig. 10: mean absolute difference between two corpora, by task (left) and by model (right)."""
    a, b = table.attrs.get("corpus_a", "A"), table.attrs.get("corpus_b", "B")
    n_groups = max(table["group"].nunique(), 1)
    height = max(4.5, 0.25 * n_groups + 2.0)
    fig, axes = plt.subplots(1, 2, figsize=(12, height), layout="constrained")
    quantities = list(dict.fromkeys(table["quantity"]))
    for ax, scope in zip(axes, ("task", "model")):
        sub = table[table["scope"] == scope]
        groups = list(dict.fromkeys(sub["group"]))
        names = [task_label(g) for g in groups] if scope == "task" else [model_labels(groups)[g] for g in groups]
        height = 0.8 / max(len(quantities), 1)
        for i, q in enumerate(quantities):
            vals = [sub[(sub["group"] == g) & (sub["quantity"] == q)]["mean_abs_diff"].sum() for g in groups]
            ax.barh(np.arange(len(groups)) + (i - (len(quantities) - 1) / 2) * height, vals, height=height, label=q)
        ax.set_yticks(range(len(groups)), names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(f"mean |{b} - {a}| (seed means)", fontsize=8)
        ax.set_title(f"by {scope}", fontsize=9, loc="left")
        ax.grid(axis="x", alpha=0.3)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=len(names), fontsize=8, frameon=False)
    fig.suptitle(f"Agreement of {a} and {b} results (Appendix G)", fontsize=10)
    return fig


def save_figure(fig: plt.Figure, out_dir: str | Path, stem: str, formats: Sequence[str] = ("png", "svg")) -> list[Path]:
    """Write ``fig`` as ``out_dir/stem.<fmt>`` for each format (atomically) and close it.

    The same figure gives the same bytes on every run (no date in an SVG or PDF, SVG ids salted by
    ``stem`` rather than drawn at random), so a report regenerated from unchanged results leaves its
    committed figures unchanged.
    """
    paths = []
    try:
        for fmt in formats:
            dest = Path(out_dir) / f"{stem}.{fmt}"
            metadata = {"Date": None} if fmt in ("svg", "pdf") else None
            with atomic_path(dest) as tmp, plt.rc_context({"svg.hashsalt": stem}):
                fig.savefig(tmp, format=fmt, dpi=150, metadata=metadata)
            paths.append(dest)
    finally:
        plt.close(fig)
    return paths


def draw_figures(
    summary: pd.DataFrame,
    out_dir: str | Path,
    *,
    corpus: str,
    interval: str = "auto",
    formats: Sequence[str] = ("png", "svg"),
    compact: Optional[bool] = None,
) -> dict[str, list[Path]]:
    """Fig. 4, 6, 7 and 11 for one corpus; returns ``{figure stem: [paths]}`` (absent tasks: no figure).

    ``compact`` (None: when there are more than 8 models) draws the smaller layout of :func:`grid_figure`."""
    data = summary[summary["corpus"] == corpus]
    if compact is None:
        compact = data["model"].nunique() > 8
    tasks = [t for t in task_order(data["task"]) if t != "order_of_text"]
    written: dict[str, list[Path]] = {}
    tag = corpus.replace("/", "_")
    figures = []  # (stem, tasks, columns, title)
    if tasks:
        figures.append(("fig4_tasks", tasks, _FIG4_COLUMNS, "Treatment accuracy and bias by task"))
        cols = estimator_columns(data["estimator"])
        if cols:
            figures.append(("fig6_estimators", tasks, cols, "Bias by estimator"))
        figures.append(("fig7_propensity", tasks, _FIG7_COLUMNS, "Propensity quality"))
    if "order_of_text" in set(data["task"]):
        figures.append(("fig11_order_of_text", ["order_of_text"], _FIG4_COLUMNS, "Order of Text"))
    for stem, shown, columns, title in figures:
        name = f"{stem}_{tag}"
        figure = grid_figure(data, shown, columns, interval=interval, compact=compact, title=f"{title} ({corpus})")
        written[name] = save_figure(figure, out_dir, name, formats)
    return written

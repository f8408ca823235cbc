"""The masked gender probe's files: table 2 (Markdown + CSV), the per-probe scores, figure 2.

Figure 2's layout: one panel per W list (and per x where W is numeric: a year's index and its
value give the same picture, so only the index is drawn), the mean female and male probability
(percent) at each value of W as dots, the least-squares line through them, and its 95% confidence
band (:meth:`textcause.gender.stats.Curve.band`: t with n_W - 2 degrees of freedom from the dots'
scatter around the line, the same fit as the table's slope interval; the paper's band). A
fine-tuned model probed through its binary head draws the female curve only (the male one is its
mirror image). The title names the model (a long path shortened to its last parts, the lines
wrapped to the figure's width) and, for a model whose masked-LM head was newly initialised
(``--allow-untrained-head``), says in its first line that the numbers are noise. Every file is
written atomically (:func:`textcause.io.atomic_path`).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

__all__ = [
    "COLORS",
    "PROBE_LABELS",
    "file_stem",
    "has_benchmark_results",
    "probe_figure",
    "selection_url",
    "short_name",
    "unit_slope_interval",
    "write_probe_outputs",
    "write_selection_report",
]

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from textcause.gender.run import ProbeResult
from textcause.gender.stats import Curve
from textcause.gender.table import table_markdown
from textcause.io import atomic_path, atomic_write_json, atomic_write_text
from textcause.reports.figures import save_figure

COLORS = {"female": "#d62728", "male": "#1f77b4"}
_VARIANT_LABELS = {
    "top5": "gendered words among the top 5 (the paper's)",
    "softmax": "full softmax mass of the gendered words",
    "top5_renormalised": "top-5 gendered mass, renormalised to female + male = 1",
    "softmax_renormalised": "softmax gendered mass, renormalised to female + male = 1",
    "binary_head": "P(female) from the fine-tuned binary head (male = 1 - female)",
}
#: At most this many tick labels on an x-axis (every k-th value of W beyond it).
_MAX_TICKS = 24
#: The longest model name a figure title shows (a longer path keeps its last parts).
_MAX_NAME = 48
#: Characters of a 9-point title line per inch of figure width (DejaVu Sans averages about 5.3 points).
_TITLE_CHARS_PER_INCH = 12


def file_stem(model: str) -> str:
    """A file-name-safe short name of a model (``bert-large-uncased``, ``tiny-bert`` for a path,
    ``finetune_age-version_0`` for a checkpoint in ``finetune_age/version_0/checkpoints/``)."""
    path = Path(str(model).rstrip("/"))
    name = path.name or str(model)
    if path.suffix == ".ckpt" and path.parent.name == "checkpoints" and path.parent.parent.name:
        name = f"{path.parent.parent.parent.name}-{path.parent.parent.name}".lstrip("-")
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model"


def short_name(model: str, limit: int = _MAX_NAME) -> str:
    """A model's name for a title: a checkpoint's :func:`file_stem`, a long path's last parts after ``.../``.

    >>> short_name("/home/me/models/a/very/deep/folder/of/checkpoints/bert-large-uncased-whole-word-masking")
    '.../bert-large-uncased-whole-word-masking'
    """
    text = str(model).rstrip("/")
    if text.endswith(".ckpt"):
        return file_stem(text)
    if len(text) <= limit:
        return text
    parts = re.split(r"[/\\]", text)
    kept = parts[-1]
    for part in reversed(parts[:-1]):
        if len(part) + 1 + len(kept) + 4 > limit:
            break
        kept = f"{part}/{kept}"
    return ("..." + kept[-(limit - 3) :]) if len(kept) + 4 > limit else f".../{kept}"


def _title(lines: Sequence[str], width_in: float) -> str:
    width = max(20, int(width_in * _TITLE_CHARS_PER_INCH))
    return "\n".join(w for line in lines for w in textwrap.wrap(line, width, break_long_words=True))


def _panel(ax: plt.Axes, curves: Sequence[Curve]) -> None:
    first = curves[0]
    grid = np.linspace(first.x.min(), first.x.max(), 200)
    for c in curves:
        color = COLORS.get(c.gender, "#555555")
        lo, hi = c.band(grid)
        ax.fill_between(grid, lo, hi, color=color, alpha=0.2, linewidth=0)
        ax.plot(grid, c.intercept + c.slope * grid, color=color, linewidth=1.2)
        ax.scatter(c.x, c.y, color=color, s=14, zorder=3, label=f"{c.gender}: slope {c.slope:.3g}, r {c.r:.3g}")
    step = max(1, int(np.ceil(len(first.x) / _MAX_TICKS)))
    ax.set_xticks(
        first.x[::step], first.labels[::step], rotation=60 if first.w_category != "date" else 45, ha="right", fontsize=7
    )
    ax.set_xlabel(f"W: {first.w_list} ({first.w_category})", fontsize=8)
    ax.set_ylabel("probability at the mask (%)", fontsize=8)
    per_dot = first.n_probes // max(len(first.x), 1)
    ax.set_title(f"{first.w_category}: each dot is the mean of {per_dot} probes", fontsize=8, loc="left")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, frameon=False)


def probe_figure(curves: Sequence[Curve], model: str, *, binary_head: bool = False, untrained: int = 0) -> plt.Figure:
    """Figure 2 for one model: a panel per W list, female and male dots, line and 95% band.

    Args:
        curves: the curves (:func:`textcause.gender.stats.probe_stats`).
        model: the model's name, for the title (shortened by :func:`short_name`).
        binary_head: a fine-tuned binary head: draw the female curve only (the male one mirrors it).
        untrained: the number of newly initialised weights (> 0: the title's first line warns that
            the probabilities are noise).

    Raises:
        ValueError: no curves.
    """
    drawn = [c for c in curves if c.x_kind == "index" and not (binary_head and c.gender != "female")]
    if not drawn:
        raise ValueError("There are no curves to draw: score at least one W list.")
    lists = list(dict.fromkeys(c.w_list for c in drawn))
    width = max(5.5 * len(lists), 6.5)
    fig, axes = plt.subplots(1, len(lists), figsize=(width, 4.4), layout="constrained", squeeze=False)
    for ax, name in zip(axes[0], lists):
        _panel(ax, [c for c in drawn if c.w_list == name])
    c0 = drawn[0]
    label = _VARIANT_LABELS["binary_head"] if binary_head else _VARIANT_LABELS.get(c0.variant, c0.variant)
    lines = [
        f"{short_name(model)}: {label}",
        f"shaded: {round(100 * c0.level)}% confidence band of the least-squares line (t, n_W - 2 df), "
        "the fit of the table's interval",
    ]
    if untrained:
        lines.insert(
            0,
            f"WARNING: untrained masked-LM head ({untrained} weights newly initialised): these probabilities are noise",
        )
    fig.suptitle(_title(lines, width), fontsize=9, color="#b00000" if untrained else "black")
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
            "untrained_weights": result.untrained,
        },
    )
    fig = probe_figure(result.curves, result.model, binary_head=binary, untrained=result.untrained)
    figs = save_figure(fig, out, f"{stem}_fig2", formats)
    return [md, csv, scores, summary, *figs]


# ------------------------------------------------------------------------------ selection experiment
PROBE_LABELS = {
    "prefixed": "prefixed probes (W as the training prefix, held-out sentences)",
    "paper": "the paper's probes (W in the sentence, table 1)",
}
_PROBE_COLORS = {"prefixed": "#d62728", "paper": "#9467bd"}


def _num(x: float, digits: int = 3) -> str:
    return "-" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def unit_slope_interval(curve: str, level: float = 0.95) -> tuple[float, float]:
    """The fit's interval of one fine-tune's slope from its stored per-W curve (JSON, percent; null: no score).

    The same quantity as the probe's table (:func:`textcause.gender.stats.slope_interval` on the
    index of W), recomputed from the stored points so that rows written by older code, whose
    ``slope_lo`` / ``slope_hi`` held a probe bootstrap, are reported alike.
    """
    import json

    from textcause.gender.stats import slope_interval

    y = np.array([np.nan if v is None else v for v in json.loads(curve)], dtype=np.float64)
    x = np.arange(y.size, dtype=np.float64)
    keep = np.isfinite(y)
    if np.unique(x[keep]).size < 2:
        return float("nan"), float("nan")
    return slope_interval(x[keep], y[keep], level)


def _ci(mean: float, lo: float, hi: float, digits: int = 3) -> str:
    if not np.isfinite(lo):
        return _num(mean, digits)
    return f"{_num(mean, digits)} [{_num(lo, digits)}, {_num(hi, digits)}]"


def _selection_figure(units, table, *, title: str = "") -> plt.Figure:
    """The dose-response figure: measured slope vs strength (mean, interval over seeds, each seed),
    the training labels' true slope beside it; the model's slope against the labels' slope per
    fine-tune; and the mean P(female | W) curve at each strength (first probe set)."""
    import json

    probes = list(dict.fromkeys(units["probe"]))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4), layout="constrained")
    ax = axes[0]
    width = 0.012 * max(float(table["strength"].max()), 1e-9)
    for i, probe in enumerate(probes):
        rows = table[table["probe"] == probe].sort_values("strength")
        color = _PROBE_COLORS.get(probe, f"C{i}")
        shift = (i - (len(probes) - 1) / 2) * width * 2
        err = np.vstack([rows["slope"] - rows["slope_lo"], rows["slope_hi"] - rows["slope"]])
        ax.errorbar(
            rows["strength"] + shift,
            rows["slope"],
            yerr=np.nan_to_num(err),
            fmt="o-",
            color=color,
            capsize=3,
            label=f"model, {probe} probes (mean, 95% CI over seeds)",
        )
        u = units[units["probe"] == probe]
        ax.scatter(u["strength"] + shift, u["slope"], color=color, s=8, alpha=0.5)
    truth = table[table["probe"] == probes[0]].sort_values("strength")
    ax.plot(
        truth["strength"], truth["label_slope"], "s--", color="black", ms=4, label="training labels' true W-G slope"
    )
    ax.axhline(0, color="#888888", linewidth=0.8)
    _decorate(ax, "selection strength", "female slope (percentage points per W step)", "dose-response")
    ax = axes[1]
    for i, probe in enumerate(probes):
        u = units[units["probe"] == probe]
        ax.scatter(u["label_slope"], u["slope"], color=_PROBE_COLORS.get(probe, f"C{i}"), s=16, label=probe)
    lim = [min(0.0, float(units["label_slope"].min())), float(units["label_slope"].max())]
    ax.plot(lim, lim, color="#888888", linewidth=0.8, linestyle=":", label="model = labels")
    _decorate(
        ax,
        "training labels' true slope (points per W step)",
        "model's slope (points per W step)",
        "each fine-tune: model vs the sample's truth",
    )
    ax = axes[2]
    u = units[units["probe"] == probes[0]]
    labels = json.loads(u["w_values"].iloc[0])
    x = np.arange(len(labels))
    cmap = plt.get_cmap("viridis")
    strengths = sorted(u["strength"].unique())
    for j, s in enumerate(strengths):
        curves = np.array([[np.nan if v is None else v for v in json.loads(c)] for c in u[u["strength"] == s]["curve"]])
        ax.plot(
            x,
            np.nanmean(curves, axis=0),
            "o-",
            ms=3,
            color=cmap(j / max(len(strengths) - 1, 1)),
            label=f"strength {s:g}",
        )
    step = max(1, int(np.ceil(len(labels) / _MAX_TICKS)))
    ax.set_xticks(x[::step], labels[::step], rotation=45, ha="right", fontsize=7)
    _decorate(ax, f"W: {u['w_name'].iloc[0]}", "P(female) at the mask (%)", f"{probes[0]} probes: mean over seeds")
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def _decorate(ax: Any, xlabel: str, ylabel: str, title: str) -> None:
    """One panel of the dose-response figure: its axis labels, its title (left), legend and grid."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9, loc="left")
    ax.legend(fontsize=7, frameon=False)
    ax.grid(alpha=0.3)


def _selection_markdown(name: str, units, table, lines: Sequence[str]) -> str:
    """The dose-response report in Markdown: the setup, one table per probe set, the verdicts, timings."""
    first = units.iloc[0]
    n_w = len(__import__("json").loads(first["w_values"]))
    unit = first["unit"]
    g = "the gender of its masked words (majority label)" if unit == "example" else "the author's gender"
    out = [
        f"# Selection-bias experiment: {name}",
        "",
        f"W = {first['w_name']} drawn uniformly per author from {n_w} values, independent of gender before "
        f"selection; each {'masked sentence' if unit == 'example' else 'author'} is kept with probability "
        f"f(W, G) = 1/2 + strength * x(W) * (+1 female, -1 male), x(W) = index / {n_w - 1} - 1/2, G = {g}. "
        f'Each (strength, seed) fine-tunes the masked-gender model with the prefix "{first["w_name"]}: W." on '
        f"~{int(units['n_train'].median())} training sentences (of {int(units['n_examples'].median())} kept from a "
        f"pool of {int(first['n_pool'])}), then probes its binary head for P(female | W). Slopes are in "
        "percentage points of P(female) per step of W's index (table 2's unit); the tables' intervals are 95% t "
        "intervals over seeds, and a single fine-tune's bracket (the last table) is the 95% confidence interval of "
        "the least-squares line through its per-W points (t, n_W - 2 degrees of freedom). 'Expected' is the closed form for the selected units, 'units' the selected units' measured "
        "slope, 'labels' the slope of the training masks' female share against W (what the model is trained on).",
        "",
    ]
    for probe in dict.fromkeys(table["probe"]):
        rows = table[table["probe"] == probe].sort_values("strength")
        out += [
            f"## {PROBE_LABELS.get(probe, probe)}",
            "",
            "| strength | seeds | expected slope (units) | units' slope | labels' slope [95% CI] | model slope [95% CI] "
            "| model r [95% CI] | model / labels | CI covers 0 |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
        ]
        for _, r in rows.iterrows():
            covers = "-" if r["covers_zero"] is None else ("yes" if r["covers_zero"] else "no")
            out.append(
                f"| {r['strength']:g} | {r['n_seeds']} | {_num(r['expected_slope'])} | {_num(r['unit_slope'])} "
                f"| {_ci(r['label_slope'], r['label_slope_lo'], r['label_slope_hi'])} "
                f"| {_ci(r['slope'], r['slope_lo'], r['slope_hi'])} | {_ci(r['r'], r['r_lo'], r['r_hi'], 2)} "
                f"| {_num(r['ratio_to_label'], 2)} | {covers} |"
            )
        out.append("")
    out += ["## What it shows", ""] + [f"- {line}" for line in lines] + [""]
    per = units.drop_duplicates("unit_id").sort_values(["strength", "seed"])
    out += [
        "## Fine-tunes",
        "",
        f"{len(per)} fine-tunes; training wall time per fine-tune: mean {per['train_seconds'].mean():.0f} s "
        f"(min {per['train_seconds'].min():.0f}, max {per['train_seconds'].max():.0f}); a unit (fine-tune + "
        f"probes) {per['unit_seconds'].mean():.0f} s on average, {per['unit_seconds'].sum() / 60:.1f} min in all.",
        "",
        "| strength | seed | train sentences | val acc | train s | unit s | labels' slope | "
        + " | ".join(f"{p} slope [95% CI of the fit]" for p in dict.fromkeys(units["probe"]))
        + " |",
        "|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * units["probe"].nunique(),
    ]
    for _, r in per.iterrows():
        slopes = [
            units[(units["unit_id"] == r["unit_id"]) & (units["probe"] == p)].iloc[0]
            for p in dict.fromkeys(units["probe"])
        ]
        out.append(
            f"| {r['strength']:g} | {r['seed']} | {r['n_train']} | {_num(r['val_acc'])} | {r['train_seconds']:.0f} "
            f"| {r['unit_seconds']:.0f} | {_num(r['label_slope'])} | "
            + " | ".join(_ci(s["slope"], *unit_slope_interval(s["curve"])) for s in slopes)
            + " |"
        )
    return "\n".join(out) + "\n"


def write_selection_report(
    source, out_dir: str | Path, *, experiment: str | None = None, formats: Sequence[str] = ("png", "svg")
) -> dict:
    """Write the dose-response table (``<name>_dose_response.md`` / ``.csv``), the per-unit rows
    (``<name>_units.csv``) and the figure (``<name>_dose_response.png`` / ``.svg``) of the selection
    experiment(s) in a results database (a URL or an engine).

    Returns:
        ``{"markdown": the first experiment's Markdown, "files": every path written, "experiments": names}``.

    Raises:
        ValueError: the database holds no selection-experiment rows (of ``experiment``).
    """
    from textcause.experiments.gender import read_selection
    from textcause.gender.dose import dose_response, trend, verdicts

    rows = read_selection(source, experiment)
    rows = rows[rows["status"] == "ok"]
    if rows.empty:
        which = f" of the experiment {experiment!r}" if experiment else ""
        raise ValueError(f"The results database holds no selection-experiment units{which}: run it first.")
    out = Path(out_dir)
    files: list[Path] = []
    markdown = None
    names = list(dict.fromkeys(rows["experiment"]))
    for name in names:
        units = rows[rows["experiment"] == name].reset_index(drop=True)
        level = 0.95
        table = dose_response(units, level)
        trends = [trend(units, p, level) for p in dict.fromkeys(units["probe"])]
        lines = verdicts(table, trends)
        md = atomic_write_text(out / f"{name}_dose_response.md", _selection_markdown(name, units, table, lines))
        markdown = markdown or md
        csv = out / f"{name}_dose_response.csv"
        with atomic_path(csv) as tmp:
            table.to_csv(tmp, index=False)
        per_unit = out / f"{name}_units.csv"
        with atomic_path(per_unit) as tmp:
            units.drop(columns=["curve", "label_curve"]).to_csv(tmp, index=False)
        title = f"{name}: fine-tuned model's P(female | W) slope against the selection strength"
        figs = save_figure(_selection_figure(units, table, title=title), out, f"{name}_dose_response", formats)
        files += [md, csv, per_unit, *figs]
    return {"markdown": markdown, "files": files, "experiments": names}


def selection_url(source) -> str | None:
    """The database URL of a report source that may hold the selection experiment (None: a CSV / Parquet
    file or a DataFrame), else None when it holds no selection-experiment rows."""
    from textcause.experiments.gender import has_selection

    if not isinstance(source, (str, Path)):
        return None
    text = str(source)
    if "://" not in text:
        path = Path(text)
        if not path.is_file() or path.suffix.lower() in (".csv", ".parquet"):
            return None
        text = f"sqlite:///{path.resolve()}"
    try:
        return text if has_selection(text) else None
    except Exception:  # not a database this module can read: the benchmark report says what is wrong
        return None


def has_benchmark_results(url: str) -> bool:
    """Whether the database at ``url`` holds benchmark result rows (table ``results``)."""
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        if not sa.inspect(engine).has_table("results"):
            return False
        with engine.connect() as conn:
            return conn.execute(sa.text("SELECT COUNT(*) FROM results")).scalar_one() > 0
    finally:
        engine.dispose()

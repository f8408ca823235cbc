"""Figure 2 of Weld et al. for an observational study: treatment accuracy and ATE per model.

One row per model (the paper's names and order, top to bottom), one panel for the treatment
accuracy and one per ATE estimator; every point has its 95% percentile bootstrap interval over the
evaluation users. The ATE panels draw the zero line and the unadjusted estimate (the difference in
means) with its interval as a shaded reference band, so a reader sees at once which models find an
effect, which do not, and how far adjusting moved each one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

__all__ = [
    "draw_study_figure",
    "study_figure",
]

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from textcause.estimators.registry import ESTIMATOR_LABELS
from textcause.reports.figures import model_style, save_figure

_ZERO_STYLE = {"color": "0.2", "lw": 0.9, "ls": "-"}
_UNADJUSTED_STYLE = {"color": "tab:red", "lw": 1.0, "ls": "--"}
_CHANCE_STYLE = {"color": "0.45", "lw": 0.9, "ls": ":"}


def _point(ax: plt.Axes, y: float, x: float | None, lo: float | None, hi: float | None, i: int) -> None:
    if x is None:
        return
    err = None
    if lo is not None and hi is not None:
        err = np.array([[max(x - lo, 0.0)], [max(hi - x, 0.0)]])
    marker, color = model_style(i)
    ax.errorbar([x], [y], xerr=err, fmt=marker, color=color, ms=5, capsize=2.5, elinewidth=1.2)


def _mark_failed(ax: plt.Axes, y: float, text: str = "failed") -> None:
    ax.text(0.5, y, text, transform=ax.get_yaxis_transform(), ha="center", va="center", fontsize=7, color="0.5")


def study_figure(
    rows: Sequence[dict[str, Any]],
    *,
    estimators: Sequence[str],
    title: str,
    subtitle: str = "",
    chance: float | None = None,
) -> plt.Figure:
    """Draw the figure from :func:`textcause.reports.study.result_rows` rows.

    Args:
        rows: one row per (model, estimator), models in display order; a failed model has one row
            with ``estimator`` None.
        estimators: the ATE panels, in order (``ipw``, ``stratified``, ``matching``).
        title: the first title line (the study).
        subtitle: a second line (treatment, outcome, users).
        chance: the accuracy of always predicting the larger arm, drawn in the accuracy panel.

    Returns:
        The figure: ``1 + len(estimators)`` axes sharing the model axis.
    """
    models = list(dict.fromkeys(r["model"] for r in rows))
    labels = {r["model"]: r["label"] for r in rows}
    n = len(models)
    ncols = 1 + len(estimators)
    fig, axes = plt.subplots(
        1, ncols, figsize=(2.0 + 3.3 * ncols, 1.9 + 0.36 * max(n, 3)), sharey=True, layout="constrained", squeeze=False
    )
    axes = axes[0]
    ys = np.arange(n)
    by_model = {m: {r.get("estimator"): r for r in rows if r["model"] == m} for m in models}

    ax = axes[0]
    for i, m in enumerate(models):
        r = next(iter(by_model[m].values()))
        if r.get("treatment_accuracy") is None:
            _mark_failed(ax, i)
            continue
        _point(ax, i, r["treatment_accuracy"], r.get("accuracy_ci_low"), r.get("accuracy_ci_high"), i)
    if chance is not None:
        ax.axvline(chance, **_CHANCE_STYLE)
    ax.set_title("(a) Treatment accuracy", fontsize=9, loc="left")
    ax.set_xlabel("accuracy of P(T=1 | text) > 0.5", fontsize=8)

    for c, est in enumerate(estimators, start=1):
        ax = axes[c]
        base = by_model.get("unadjusted", {}).get(est)
        if base is not None and base.get("ate") is not None:
            if base.get("ci_low") is not None:
                ax.axvspan(base["ci_low"], base["ci_high"], color=_UNADJUSTED_STYLE["color"], alpha=0.08, lw=0)
            ax.axvline(base["ate"], **_UNADJUSTED_STYLE)
        ax.axvline(0.0, **_ZERO_STYLE)
        for i, m in enumerate(models):
            r = by_model[m].get(est)
            if r is None or r.get("ate") is None:
                _mark_failed(ax, i)
                continue
            _point(ax, i, r["ate"], r.get("ci_low"), r.get("ci_high"), i)
        ax.set_title(f"({chr(ord('a') + c)}) ATE, {ESTIMATOR_LABELS.get(est, est)}", fontsize=9, loc="left")
        ax.set_xlabel("ATE = E[Y(1)] - E[Y(0)]", fontsize=8)

    for ax in axes:
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(labelsize=8)
        ax.set_ylim(n - 0.5, -0.5)  # the first model on top
    axes[0].set_yticks(ys, [labels[m] for m in models])

    handles = [
        Line2D([], [], color="0.2", marker="o", ls="", ms=5, label="estimate, 95% percentile bootstrap interval"),
        Line2D([], [], **_ZERO_STYLE, label="zero effect"),
        (
            Line2D([], [], **_UNADJUSTED_STYLE, label="unadjusted estimate (difference in means)"),
            Patch(color=_UNADJUSTED_STYLE["color"], alpha=0.08),
        ),
    ]
    names = [h.get_label() if not isinstance(h, tuple) else h[0].get_label() for h in handles]
    if chance is not None:
        handles.append(Line2D([], [], **_CHANCE_STYLE))
        names.append("share of the larger arm (chance accuracy)")
    fig.legend(handles, names, loc="outside lower center", ncol=min(len(names), 4), fontsize=8, frameon=False)
    fig.suptitle(f"{title}\n{subtitle}" if subtitle else title, fontsize=10)
    return fig


def draw_study_figure(
    rows: Sequence[dict[str, Any]],
    out_dir: str | Path,
    stem: str,
    *,
    estimators: Sequence[str],
    title: str,
    subtitle: str = "",
    chance: float | None = None,
    formats: Sequence[str] = ("png", "svg"),
) -> list[Path]:
    """Draw :func:`study_figure` and write it as ``out_dir/stem.<fmt>`` (atomically)."""
    fig = study_figure(rows, estimators=estimators, title=title, subtitle=subtitle, chance=chance)
    return save_figure(fig, out_dir, stem, formats)

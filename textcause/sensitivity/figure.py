"""The Austen plot as a matplotlib figure (Agg canvas: no display, no global pyplot state)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from textcause.sensitivity.austen import AustenCurve

__all__ = ["austen_figure", "plotted_r2"]

#: The authors' colours for benchmark points (``plot_helpers.get_color_palette``); black beyond seven.
PALETTE = ("#D55E00", "#E69F00", "#0072B2", "#009E73", "#F0E442", "#CC79A7", "#56B4E9")


def plotted_r2(r2: np.ndarray) -> np.ndarray:
    """The curve as the authors draw it: values above 1 hidden (NaN), except the smallest of them, set
    to 1 so that the line reaches the top of the plot (``plot_helpers.modify_Rsq_plot``).

    >>> plotted_r2(np.array([3.0, 1.5, 0.5])).tolist()
    [nan, 1.0, 0.5]
    """
    out: np.ndarray = np.asarray(r2, dtype=np.float64).copy()
    over = out > 1
    if over.any():
        first = np.flatnonzero(over)[np.argmin(out[over])]
        out[over] = np.nan
        out[first] = 1.0
    return out


def austen_figure(curve: AustenCurve, path: str | Path | None = None, *, title: str | None = None) -> Figure:
    """Draw an Austen plot: the curve of confounders that induce ``curve.bias``, and the benchmark points.

    Args:
        curve: from :func:`textcause.sensitivity.austen_curve`.
        path: where to save the figure (any matplotlib format, by its suffix); None to only return it.
        title: the plot's title; default ``"Bias = <bias>"`` as the authors'.

    Returns:
        the matplotlib ``Figure`` (drawn on an Agg canvas).

    Raises:
        ValueError: ``curve`` is not an :class:`~textcause.sensitivity.AustenCurve`.

    >>> from textcause.sensitivity import AustenCurve
    >>> fig = austen_figure(AustenCurve(1.0, "ate", np.array([0.2, 0.6]), np.array([0.8, 0.1]), np.zeros(2)))
    >>> fig.axes[0].get_xlabel()
    'Influence on treatment (α)'
    """
    if not isinstance(curve, AustenCurve):
        raise ValueError(
            f"The 'curve' parameter of austen_figure must be an AustenCurve. Got {type(curve).__name__} instead."
        )
    fig = Figure(figsize=(4.2, 4.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot(curve.alpha, plotted_r2(curve.r2), color="#585858", linewidth=1.5)
    for i, b in enumerate(curve.benchmarks):
        colour = PALETTE[i] if i < len(PALETTE) else "#000000"
        ax.scatter([b.alpha], [b.r2], s=45, color=colour, edgecolor="black", alpha=0.85, label=b.name, zorder=3)
    ax.set_xlim(-0.03, 1)
    ax.set_ylim(-0.03, 1)
    ax.set_xlabel("Influence on treatment (α)")
    ax.set_ylabel("Influence on outcome (partial R²)")
    ax.set_title(title if title is not None else f"Bias = {curve.bias:g}" + (" (ATT)" if curve.target == "att" else ""))
    ax.grid(alpha=0.3)
    if curve.benchmarks:
        ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=150)
    return fig

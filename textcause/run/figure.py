"""The run figure: the propensity overlap plot of an evaluated run, beside its model card.

:func:`write_run_figure` draws ``propensity_overlap.png`` into the run folder after an evaluation
(:func:`~textcause.run.fit.fit_and_evaluate` unless the run is quiet, ``evaluate.py``,
``train.py test``), atomically, and hands it to the run's loggers (a copy in every CSV log folder
that is not the run folder, ``log_image`` for a wandb run). It shows the estimated propensity of the
evaluated users by treatment arm, with the true propensities marked when the task has them: arms
that do not overlap mean extreme weights and estimates resting on a few users.

The figure is drawn on a bare :class:`matplotlib.figure.Figure` with the Agg canvas (no pyplot, no
global state); an SVG copy is written only on request (``_write_overlap_figure(..., svg=True)``).
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

import numpy as np

from textcause.io import atomic_path

__all__ = [
    "FILE",
    "KEY",
    "MAX_MARKED",
    "SVG_FILE",
    "write_run_figure",
]

FILE = "propensity_overlap.png"
SVG_FILE = "propensity_overlap.svg"
#: The key of the figure in a wandb run.
KEY = "propensity_overlap"
#: At most this many distinct true propensities are marked as lines; more are drawn as a histogram.
MAX_MARKED = 12
_BINS = np.linspace(0.0, 1.0, 41)
_COLOURS = {1: "#d95f02", 0: "#1b9e77"}


def _overlap_title(meta: Mapping[str, Any]) -> str:
    """``LogisticRegression (bigram_binary): linguistic_complexity level 2, test split``."""
    rep = f" ({meta['representation']})" if meta.get("representation") else ""
    task = f"{meta.get('task')}" + (f" level {meta['level']}" if meta.get("level") is not None else "")
    return f"{meta.get('model')}{rep}: {task}, {meta.get('split', 'test')} split"


def _overlap_figure(
    t: np.ndarray, propensity: np.ndarray, *, p_true: Optional[np.ndarray] = None, title: str = ""
) -> Any:
    """The propensity overlap figure (a :class:`matplotlib.figure.Figure`).

    Args:
        t: the treatments (0 / 1) of the evaluated users.
        propensity: their estimated propensities.
        p_true: their true propensities (None, or not all finite: not marked).
        title: the figure's title.

    Raises:
        ValueError: ``t`` and ``propensity`` (or ``p_true``) of different lengths.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_rgba
    from matplotlib.figure import Figure

    t = np.asarray(t).reshape(-1)
    propensity = np.asarray(propensity, dtype=float).reshape(-1)
    lengths = [len(t), len(propensity)] + ([len(np.asarray(p_true).reshape(-1))] if p_true is not None else [])
    if len(set(lengths)) > 1:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: {lengths}")
    fig = Figure(figsize=(6.0, 3.6), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for arm, label in ((0, "T = 0"), (1, "T = 1")):
        values = np.clip(propensity[(t == arm) & np.isfinite(propensity)], 0.0, 1.0)
        colour = _COLOURS[arm]
        ax.hist(
            values,
            bins=_BINS,
            density=len(values) > 0,
            facecolor=to_rgba(colour, 0.45),
            edgecolor=colour,  # opaque: the arms stay apart where they overlap
            linewidth=1.0,
            label=f"{label} ({len(values)} users)",
        )
    if p_true is not None:
        true = np.asarray(p_true, dtype=float).reshape(-1)
        if len(true) and np.isfinite(true).all():
            marked = np.unique(np.round(true, 6))
            if len(marked) <= MAX_MARKED:
                for i, value in enumerate(marked):
                    share = float(np.mean(np.isclose(true, value, atol=1e-6)))
                    ax.axvline(
                        value,
                        color="black",
                        linestyle="--",
                        linewidth=1.2,
                        label="true propensity (share of users)" if i == 0 else None,
                    )
                    ax.annotate(
                        f"{value:.2f} ({share:.0%})",
                        (value, 1.0),
                        xycoords=("data", "axes fraction"),
                        xytext=(3, -12),
                        textcoords="offset points",
                        fontsize=8,
                    )
            else:
                ax.hist(
                    true,
                    bins=_BINS,
                    density=True,
                    histtype="step",
                    color="black",
                    linestyle="--",
                    label="true propensity (all users)",
                )
    ax.set_xlim(0.0, 1.0)
    ax.set_xlabel("estimated propensity P(T = 1 | text)")
    ax.set_ylabel("density of users")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper center", frameon=False)
    return fig


def _write_overlap_figure(
    folder: Path, predictions: Mapping[str, np.ndarray], meta: Mapping[str, Any], *, svg: bool = False
) -> Path:
    """Write ``propensity_overlap.png`` (and ``.svg`` if asked) of a run's predictions into ``folder``, atomically."""
    fig = _overlap_figure(
        predictions["t"], predictions["propensity"], p_true=predictions.get("p_true"), title=_overlap_title(meta)
    )
    path = Path(folder) / FILE
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, format="png")
    if svg:
        with atomic_path(Path(folder) / SVG_FILE, suffix=".svg") as tmp:
            fig.savefig(tmp, format="svg")
    fig.clear()
    return path


def _log_figure(loggers: Sequence[Any], path: Path, *, step: Optional[int] = None) -> None:
    """Hand the figure at ``path`` to a run's loggers: a copy in each CSV log folder that is not the
    figure's own, and ``log_image`` under :data:`KEY` for a wandb run."""
    for logger in loggers:
        name = type(logger).__name__
        if name == "CSVLogger":
            log_dir = Path(logger.log_dir)
            if log_dir.resolve() != path.parent.resolve():
                with atomic_path(log_dir / path.name, suffix=path.suffix) as tmp:
                    shutil.copyfile(path, tmp)
        elif name == "WandbLogger":
            logger.log_image(key=KEY, images=[str(path)], step=step)


def write_run_figure(result: Any, loggers: Sequence[Any] = (), *, step: Optional[int] = None) -> Optional[Path]:
    """The run figure of an evaluated run (a :class:`~textcause.run.evaluation.RunResult`) in its log
    folder, handed to ``loggers`` (:func:`_log_figure`). A figure that cannot be drawn is a warning: the
    results it shows are written already.

    Returns:
        The PNG's path, or None (no log folder, or the figure failed).
    """
    folder = result.log_dir
    if folder is None:
        return None
    try:
        path = _write_overlap_figure(Path(folder), result.predictions, result.meta)
        _log_figure(loggers, path, step=step)
        return path
    except Exception as err:
        warnings.warn(
            f"Could not write the propensity overlap figure in '{folder}': {err}", RuntimeWarning, stacklevel=2
        )
        return None

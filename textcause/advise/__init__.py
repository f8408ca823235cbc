"""Choose a text-adjustment method on the user's own users, estimate, refute, report (``textcause advise``).

The loop: :mod:`~textcause.advise.inputs` (the study made ready, bad input refused before any work),
:mod:`~textcause.advise.calibrate` (a compact benchmark grid on the same users, through the grid
machinery and results store), :mod:`~textcause.advise.grades` (bias, coverage, placebo false
discoveries; the ranking), :mod:`~textcause.advise.estimate` (every candidate on the real T and Y),
:mod:`~textcause.advise.robustness` (refuters and sensitivity, through ``textcause.sensitivity``),
:mod:`~textcause.advise.report` (Markdown, HTML, figures); :func:`advise` runs them in turn.
"""

from __future__ import annotations

from typing import Any

__all__ = ["advise"]


def advise(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """:func:`textcause.advise.run.advise` (imported on first call: the CLI's ``--help`` stays light)."""
    from textcause.advise.run import advise as run

    return run(*args, **kwargs)

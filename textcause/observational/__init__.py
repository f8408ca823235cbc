"""Observational studies with no ground truth (Weld et al., section 3, "current models disagree").

Treatment and outcome come from a real corpus: T from a user's metadata (e.g. self-reported
gender), the text from their earliest posts, Y from a property of their later posts. Every
propensity model is fitted on the text and the ATE estimates are compared: with no truth to
measure bias against, disagreement between models is what a study can see.

* :mod:`textcause.observational.spec`: the study config (``configs/observational/*.yaml``).
* :mod:`textcause.observational.outcomes`: outcome properties of the later posts.
* :mod:`textcause.observational.task`: the :class:`ObservationalTask` (served by the data module
  through ``--data.observational <config>``).
* :mod:`textcause.experiments.observational`: ``textcause observe``: fit, evaluate, resume.
* :mod:`textcause.reports.study` and :mod:`textcause.reports.study_figure`: tables, the
  disagreement summary and the paper's figure 2 layout.

Importing this package is cheap (no torch or Lightning).
"""

from textcause.observational.outcomes import OUTCOMES
from textcause.observational.spec import ObservationalSpec, load_spec, spec_from_dict
from textcause.observational.task import ObservationalTask, build_observational_task, load_task

__all__ = [
    "OUTCOMES",
    "ObservationalSpec",
    "ObservationalTask",
    "build_observational_task",
    "load_spec",
    "load_task",
    "spec_from_dict",
]

"""The report's "What each interval describes" section, with refitting intervals beside test-sample ones.

Every row of a results table carries the percentile bootstrap over its test users (``ci_low`` /
``ci_high``), the fitted propensities held fixed; a cell evaluated with ``refit_reps > 0`` also has the
refitting interval (``refit_ci_low`` / ``refit_ci_high``, :mod:`textcause.estimators.refit`), which
refits the propensity model on each replicate's resample of the training users. The section says
what each describes and, where both exist, sets their coverage of the true ATE and (on the placebo
test) their false-discovery rates side by side, each rate with its exact binomial interval over
seeds (from :func:`textcause.analysis.inference.seed_summary`).
"""

from __future__ import annotations

import pandas as pd

from textcause.analysis.names import model_labels, model_order
from textcause.estimators.registry import ESTIMATOR_LABELS
from textcause.reports.markup import Block, Bullets, Heading, Para, Table
from textcause.simulation.tasks import task_label

__all__ = [
    "INTERVAL_KINDS",
    "intervals_section",
]

#: What each interval kind describes (the same words in every report).
INTERVAL_KINDS = (
    "**Test-sample interval** (`ci_low`, `ci_high`; every estimator): the percentile bootstrap over the "
    "evaluated test users with the fitted propensities held fixed. It describes one fitted model's "
    "test-sample noise: a new draw of training users gives a new model whose estimate can fall outside it.",
    "**Refitting interval** (`refit_ci_low`, `refit_ci_high`; cells run with `refit_reps`; the tuned LR "
    "and L-BFGS models only): each replicate refits the propensity model by its own recipe on a bootstrap resample of the "
    "training users and resamples the test users; the basic (default) or percentile bootstrap interval of "
    "those replicates, as each row's `refit_ci_method` says. It describes the method (fit, then estimate) "
    "at this training size; a tuned penalty and the fitted representation (vocabulary, topics, scaling) "
    "stay as they were.",
    "**Influence-function interval** (`influence_ci_low`, `influence_ci_high`; AIPW and TMLE only): the "
    "normal approximation from the efficient influence curve, with the fitted nuisances held fixed.",
    "**Across-seed intervals** (the comparisons, findings and figures): over the seeds' redraws of the "
    "task, with the corrected resampled variance: inference about the method over tasks.",
)


def _rate(rate: float, low: float, high: float) -> str:
    if pd.isna(rate):
        return "-"
    return f"{rate:.2f} [{low:.2f}, {high:.2f}]"


def _refit_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """The seed summary's methods that have refitting intervals."""
    if "n_refit_ci" not in summary:
        return summary.iloc[:0]
    return summary[summary["n_refit_ci"] > 0]


def intervals_section(summary: pd.DataFrame) -> list[Block]:
    """What each interval describes; the two intervals' coverage and false discoveries where both exist."""
    blocks: list[Block] = [Heading(2, "What each interval describes"), Bullets(list(INTERVAL_KINDS))]
    data = _refit_rows(summary)
    if data.empty:
        return blocks + [
            Para(
                "No cell of these results has a refitting interval (run a grid with "
                "`evaluation: {refit_reps: 50}`, or `evaluate.py RUN --evaluation.refit_reps 50`)."
            )
        ]
    rows = []
    for corpus in sorted(set(data["corpus"])):
        sub = data[data["corpus"] == corpus]
        labels = model_labels(model_order(sub["model"].unique()))
        for r in sub.itertuples():
            placebo = pd.notna(r.false_discovery_rate)
            rows.append(
                [
                    corpus,
                    labels[r.model],
                    ESTIMATOR_LABELS.get(r.estimator, r.estimator),
                    f"{task_label(r.task)} {r.level}",
                    str(int(r.n_refit_ci)),
                    _rate(r.paired_coverage, r.paired_coverage_ci_low, r.paired_coverage_ci_high),
                    _rate(r.refit_coverage, r.refit_coverage_ci_low, r.refit_coverage_ci_high),
                    _rate(
                        r.paired_false_discovery_rate, r.paired_false_discovery_ci_low, r.paired_false_discovery_ci_high
                    )
                    if placebo
                    else "-",
                    _rate(r.refit_false_discovery_rate, r.refit_false_discovery_ci_low, r.refit_false_discovery_ci_high)
                    if placebo
                    else "-",
                    f"{r.paired_ci_width:.3f}",
                    f"{r.mean_refit_ci_width:.3f}",
                ]
            )
    blocks += [
        Heading(3, "Test-sample vs refitting intervals"),
        Para(
            "Per method and task level, over the seeds whose cell has both intervals (both columns on the same seeds): the share of seeds whose "
            "interval covers the true ATE and, on the placebo test (true ATE 0), the share whose interval "
            "excludes 0 (a false discovery), each with its exact binomial (Clopper-Pearson) 95% interval; then "
            "the mean widths. A method whose test-sample interval under-covers while its refitting interval "
            "covers has estimates that move with the training draw more than one fit's interval admits."
        ),
        Table(
            [
                "Corpus",
                "Model",
                "Estimator",
                "Task",
                "Seeds",
                "Coverage, test-sample",
                "Coverage, refitting",
                "False discoveries, test-sample",
                "False discoveries, refitting",
                "Width, test-sample",
                "Width, refitting",
            ],
            rows,
            ["l", "l", "l", "l"] + ["r"] * 7,
        ),
    ]
    return blocks

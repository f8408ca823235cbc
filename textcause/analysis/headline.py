"""The benchmark's headline: mean bias per method and task level over seeds, and placebo false discoveries.

Two small tables from :func:`textcause.analysis.inference.seed_summary`, for one corpus:

* :func:`bias_table`: rows = task levels (paper order), columns = models (paper order), cells = the
  mean bias of one estimator over seeds (``mean ± sd`` in the text version);
* :func:`placebo_table`: rows = models, columns = estimators, cells = the share of seeds whose 95%
  interval excludes 0 on the Placebo task (true ATE 0: every exclusion is a false discovery).

``textcause demo`` prints them; ``textcause report`` puts them first in the report.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from textcause.analysis.names import estimator_order, model_labels, model_order
from textcause.estimators.registry import ESTIMATOR_LABELS
from textcause.simulation.tasks import task_label


def _levels(summary: pd.DataFrame) -> list[tuple[str, int]]:
    seen: dict[tuple[str, int], None] = {}
    for task, level in zip(summary["task"], summary["level"]):  # seed_summary is already in paper order
        seen.setdefault((str(task), int(level)), None)
    return list(seen)


def _task_label(task: str, level: int) -> str:
    return f"{task_label(task)} {level}"


def bias_table(summary: pd.DataFrame, corpus: str, estimator: str = "stratified") -> pd.DataFrame:
    """Mean bias over seeds of ``estimator``: one row per task level, one column per model.

    Args:
        summary: the output of :func:`~textcause.analysis.inference.seed_summary`.
        corpus: the corpus to show.
        estimator: ``stratified`` (the paper's headline estimator), ``ipw``, ``matching``, ...

    Returns:
        Two-level columns ``(model, "mean" | "sd" | "n_seeds")``, index = task-level labels; a model
        without that estimator (an effect method) or level is NaN.
    """
    here = summary[summary["corpus"] == corpus]
    sub = here[here["estimator"] == estimator]
    # Effect methods (textcause.methods) have no propensity estimators: their own estimate stands in.
    own = here[~here["model"].isin(set(sub["model"])) & (here["estimator"] != "unadjusted")]
    single = own.groupby("model")["estimator"].nunique()
    sub = pd.concat([sub, own[own["model"].isin(single[single == 1].index)]])
    if sub.empty:
        raise ValueError(
            f"No {estimator!r} results for corpus {corpus!r}; the results have corpora "
            f"{sorted(set(summary['corpus']))} and estimators {sorted(set(summary['estimator']))}."
        )
    models = model_order(sub["model"].unique())
    labels = model_labels(models)
    index = [_task_label(t, lv) for t, lv in _levels(sub)]
    columns = pd.MultiIndex.from_product([[labels[m] for m in models], ["mean", "sd", "n_seeds"]])
    table = pd.DataFrame(np.nan, index=index, columns=columns)
    for r in sub.itertuples():
        row, col = _task_label(r.task, int(r.level)), labels[r.model]
        table.loc[row, (col, "mean")] = r.mean_bias
        table.loc[row, (col, "sd")] = r.sd_bias
        table.loc[row, (col, "n_seeds")] = r.n_seeds
    return table


def placebo_table(summary: pd.DataFrame, corpus: str) -> pd.DataFrame:
    """False-discovery rate on tasks whose true ATE is 0: rows = models, columns = estimators."""
    sub = summary[(summary["corpus"] == corpus) & summary["false_discovery_rate"].notna()]
    if sub.empty:
        return pd.DataFrame()
    models = model_order(sub["model"].unique())
    labels = model_labels(models)
    estimators = estimator_order(sub["estimator"].unique())
    table = pd.DataFrame(
        np.nan, index=[labels[m] for m in models], columns=[ESTIMATOR_LABELS.get(e, e) for e in estimators]
    )
    for r in sub.itertuples():
        table.loc[labels[r.model], ESTIMATOR_LABELS.get(r.estimator, r.estimator)] = r.false_discovery_rate
    table.attrs["n_seeds"] = int(sub["n_seeds"].max())
    return table


def _cell(mean: Any, sd: Any, with_sd: bool) -> str:
    if not np.isfinite(mean):
        return "-"
    return f"{mean:+.3f} ± {sd:.3f}" if with_sd and np.isfinite(sd) else f"{mean:+.3f}"


def bias_rows(summary: pd.DataFrame, corpus: str, estimator: str = "stratified") -> tuple[list[str], list[list[str]]]:
    """:func:`bias_table` as a header and string rows (``mean ± sd`` when there are several seeds)."""
    table = bias_table(summary, corpus, estimator)
    models = list(dict.fromkeys(table.columns.get_level_values(0)))
    with_sd = bool((table.xs("n_seeds", axis=1, level=1).fillna(0) > 1).any().any())
    rows = [
        [label] + [_cell(table.loc[label, (m, "mean")], table.loc[label, (m, "sd")], with_sd) for m in models]
        for label in table.index
    ]
    return ["Task level"] + models, rows


def format_headline(summary: pd.DataFrame, corpus: str, estimator: str = "stratified") -> str:
    """Fixed-width text of both headline tables for a terminal."""
    header, rows = bias_rows(summary, corpus, estimator)
    n_seeds = int(summary.loc[summary["corpus"] == corpus, "n_seeds"].max())
    what = "mean ± sd over" if n_seeds > 1 else "one draw,"
    lines = [
        f"{ESTIMATOR_LABELS.get(estimator, estimator)} bias on {corpus} ({what} {n_seeds} seed(s); "
        "true ATE known, 0 is unbiased):"
    ]
    lines += _fixed([header] + rows)
    placebo = placebo_table(summary, corpus)
    if not placebo.empty:
        lines += [
            "",
            f"Placebo test on {corpus}: share of {placebo.attrs['n_seeds']} seed(s) whose 95% interval "
            "excludes the true ATE of 0 (false discoveries):",
        ]
        body = [[str(m)] + ["-" if not np.isfinite(v) else f"{v:.2f}" for v in placebo.loc[m]] for m in placebo.index]
        lines += _fixed([["Model"] + list(placebo.columns)] + body)
    return "\n".join(lines)


def _fixed(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]

"""The benchmark's headline: mean bias per method and task level over seeds, and placebo false discoveries.

Two small tables from :func:`textcause.analysis.inference.seed_summary`, for one corpus:

* :func:`bias_table`: rows = task levels (paper order), columns = models (paper order), cells = the
  mean bias of one estimator over seeds (``mean ± sd`` in the text version);
* :func:`placebo_table`: rows = models, columns = estimators, cells = the share of seeds whose 95%
  interval excludes 0 on the Placebo task (true ATE 0: every exclusion is a false discovery).

``textcause report`` puts them first in the report. ``textcause demo`` prints :func:`format_cells`:
one row per (task level, model) with the true ATE, treatment accuracy, the units used, the bias and
its interval side by side, and a flag on every cell whose estimate should not be trusted as it is
(:func:`cell_flags`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from textcause.analysis.names import estimator_order, model_labels, model_order
from textcause.estimators.registry import ESTIMATOR_LABELS
from textcause.simulation.tasks import task_label

__all__ = [
    "CHANCE_ACCURACY",
    "REFERENCES",
    "bias_rows",
    "bias_table",
    "cell_flags",
    "cell_table",
    "format_cells",
    "format_headline",
    "placebo_table",
]


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
    table.attrs["seeds"] = sorted({int(n) for n in sub["n_seeds"]})  # the seed counts of the rows shown
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
    lines += _placebo_lines(summary, corpus)
    return "\n".join(lines)


def _placebo_lines(summary: pd.DataFrame, corpus: str) -> list[str]:
    """The placebo false-discovery table as fixed-width lines (none when no task has a true ATE of 0)."""
    placebo = placebo_table(summary, corpus)
    if placebo.empty:
        return []
    body = [[str(m)] + ["-" if not np.isfinite(v) else f"{v:.2f}" for v in placebo.loc[m]] for m in placebo.index]
    low, high = min(placebo.attrs["seeds"]), max(placebo.attrs["seeds"])
    seeds = f"{high} seed{'s' if high != 1 else ''}" if low == high else f"{low} to {high} seeds per method"
    return [
        "",
        f"Placebo test on {corpus}: share of the seeds ({seeds}) whose 95% interval "
        "excludes the true ATE of 0 (false discoveries):",
        *_fixed([["Model"] + list(placebo.columns)] + body),
    ]


def _fixed(rows: list[list[str]], left: tuple[int, ...] = (0,)) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in rows
    ]


#: A propensity model whose mean treatment accuracy is at most this has learnt nothing (the tasks
#: treat about half of the users, so chance is about 0.5).
CHANCE_ACCURACY = 0.55
#: Models that are references, not propensity models to judge.
REFERENCES = ("oracle", "unadjusted")


def cell_flags(row: Any, estimator: str) -> list[str]:
    """Why one summary row's estimate is unreliable: units dropped, a model at chance, failed seeds."""
    flags = []
    dropped = getattr(row, "max_n_dropped", np.nan)
    if np.isfinite(dropped) and dropped > 0:
        what = {"stratified": "in empty strata", "matching": "outside the caliper"}.get(estimator, "dropped")
        flags.append(f"{int(dropped)} users {what}")
    acc = getattr(row, "mean_treatment_accuracy", np.nan)
    if row.model not in REFERENCES and np.isfinite(acc) and acc <= CHANCE_ACCURACY:
        flags.append(f"model at chance (accuracy {acc:.2f})")
    if getattr(row, "n_failed", 0):
        flags.append(f"{int(row.n_failed)} seed(s) failed")
    return flags


def cell_table(summary: pd.DataFrame, corpus: str, estimator: str = "stratified") -> pd.DataFrame:
    """One row per (task level, model) of ``estimator``: truth, accuracy, units, bias, interval, flags.

    The interval is the per-seed 95% interval of the estimate, its ends averaged over seeds and
    shifted by the true ATE (an interval of the bias); ``sd`` is the bias's sd over seeds.
    """
    sub = summary[(summary["corpus"] == corpus) & (summary["estimator"] == estimator)]
    if sub.empty:
        raise ValueError(
            f"No {estimator!r} results for corpus {corpus!r}; the results have corpora "
            f"{sorted(set(summary['corpus']))} and estimators {sorted(set(summary['estimator']))}."
        )
    order = {m: i for i, m in enumerate(model_order(sub["model"].unique()))}
    labels = model_labels(list(order))
    levels = {lv: i for i, lv in enumerate(_levels(sub))}
    rows = []
    for r in sub.itertuples():
        rows.append(
            {
                "task level": _task_label(r.task, int(r.level)),
                "model": labels[r.model],
                "seeds": int(r.n_seeds),
                "true ATE": r.true_ate,
                "accuracy": r.mean_treatment_accuracy,
                "n_used": r.mean_n_used,
                "bias": r.mean_bias,
                "sd": r.sd_bias,
                "ci_low": r.mean_ci_low - r.true_ate,
                "ci_high": r.mean_ci_high - r.true_ate,
                "flags": "; ".join(cell_flags(r, estimator)),
                "_order": (levels[(str(r.task), int(r.level))], order[r.model]),
            }
        )
    table = pd.DataFrame(rows).sort_values("_order").drop(columns="_order").reset_index(drop=True)
    return table


def format_cells(summary: pd.DataFrame, corpus: str, estimator: str = "stratified") -> str:
    """Fixed-width text of :func:`cell_table` and the placebo table, for a terminal."""
    table = cell_table(summary, corpus, estimator)
    n = int(table["seeds"].max()) if len(table) else 0

    def num(v: Any, fmt: str) -> str:
        return "-" if not np.isfinite(v) else format(v, fmt)

    body = [
        ["Task level", "Model", "true ATE", "accuracy", "n_used", "bias", "± sd", "95% interval of the bias", "flags"]
    ]
    for r in table.to_dict("records"):
        interval = "-" if not np.isfinite(r["ci_low"]) else f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
        body.append(
            [
                r["task level"],
                r["model"],
                num(r["true ATE"], "+.2f"),
                num(r["accuracy"], ".3f"),
                num(r["n_used"], ".0f"),
                num(r["bias"], "+.3f"),
                num(r["sd"], ".3f"),
                interval,
                r["flags"],
            ]
        )
    what = ESTIMATOR_LABELS.get(estimator, estimator)
    lines = [
        f"{what} estimates on {corpus}, mean over {n} seed(s) (bias = estimate - true ATE; the interval is "
        "each seed's 95% bootstrap interval, ends averaged):",
        *_fixed(body, left=(0, 1, 8)),
    ]
    flagged = int((table["flags"] != "").sum())
    lines.append(f"{flagged} of {len(table)} cells flagged." if flagged else "No cell flagged.")
    lines += _placebo_lines(summary, corpus)
    return "\n".join(lines)

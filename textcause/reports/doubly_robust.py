"""The report's "Doubly robust vs propensity-only" section: IPTW, AIPW and TMLE of the same model.

For every model whose rows include the doubly robust estimators (a model with an outcome model:
``aipw`` / ``tmle``) and every task level: the mean bias over seeds of IPTW (propensity only) beside
AIPW and TMLE (propensity and outcome model), and the coverage of the true ATE by each interval kind
(the percentile bootstrap over test units, which every estimator has, and the influence-function
interval, which only AIPW and TMLE have). Everything comes from the seed summary of the results.

The cross-fitted effect methods of :mod:`textcause.methods.crossfit` (rows ``dml_aipw`` / ``dml_tmle``)
get a second small table per corpus: their mean bias over seeds, the users they used, and the
coverage of their own (influence-function) interval. They cross-fit over all the task's users (double
machine learning) where the models' AIPW / TMLE use sample splitting; without such rows the section
is as before.
"""

from __future__ import annotations

import pandas as pd

from textcause.analysis.frame import INFLUENCE_LABEL, ci_label
from textcause.analysis.names import model_labels, model_order
from textcause.estimators.registry import ESTIMATOR_LABELS, OUTCOME_ESTIMATORS
from textcause.methods.crossfit import LABELS as DML_LABELS
from textcause.reports.markup import Block, Heading, Para, Table
from textcause.simulation.tasks import task_label

__all__ = [
    "ESTIMATORS",
    "doubly_robust_models",
    "doubly_robust_section",
]

#: The propensity-only estimator the doubly robust ones are set beside.
_BASELINE = "ipw"
#: The estimators of the section, in column order.
ESTIMATORS = (_BASELINE,) + OUTCOME_ESTIMATORS
#: The estimator labels of the cross-fitted effect methods' rows (``dml_aipw``, ``dml_tmle``).
_DML_ESTIMATORS = tuple(DML_LABELS.values())


def doubly_robust_models(summary: pd.DataFrame) -> list[str]:
    """The models (in display order) that have rows of a doubly robust estimator."""
    return model_order(summary.loc[summary["estimator"].isin(OUTCOME_ESTIMATORS), "model"].unique())


def _dml_methods(summary: pd.DataFrame) -> list[str]:
    """The effect methods (in display order) that have rows of a cross-fitted estimator (``dml_*``)."""
    return model_order(summary.loc[summary["estimator"].isin(_DML_ESTIMATORS), "model"].unique())


def _num(x: float, digits: int = 3, sign: bool = True) -> str:
    if pd.isna(x):
        return "-"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def _coverage(share: float, n: float) -> str:
    return "-" if pd.isna(share) or not n else f"{share:.2f} ({int(n)})"


def doubly_robust_section(summary: pd.DataFrame, data: pd.DataFrame) -> list[Block]:
    """The section's blocks; empty when no model has doubly robust rows and no effect method has
    cross-fitted (``dml_*``) rows (the report is then unchanged).

    Args:
        summary: :func:`textcause.analysis.inference.seed_summary` of the results.
        data: the normalised results (for the interval label).
    """
    models, methods = doubly_robust_models(summary), _dml_methods(summary)
    if not models and not methods:
        return []
    blocks: list[Block] = [Heading(2, "Doubly robust vs propensity-only")]
    if models:
        blocks += _model_blocks(summary, data, models)
    if methods:
        blocks += _dml_blocks(summary, methods)
    return blocks


def _model_blocks(summary: pd.DataFrame, data: pd.DataFrame, models: list[str]) -> list[Block]:
    """The models' table (IPTW beside AIPW and TMLE of the same model) and its tally."""
    labels = {e: ESTIMATOR_LABELS.get(e, e) for e in ESTIMATORS}
    boot = ci_label(data[data["model"].isin(models)])  # the models' split only, not the effect methods' "all"
    blocks: list[Block] = [
        Para(
            f"For each model with an outcome model: the mean bias over seeds (estimate - true ATE) of {labels['ipw']}, "
            f"which uses the model's propensities only, beside {labels['aipw']} and {labels['tmle']}, which also use "
            "its outcome predictions (mu0, mu1), on the same seeds' test users. The nuisance models were fitted on "
            "each cell's training users and evaluated on its held-out test users (sample splitting). Coverage is the "
            "share of seeds whose 95% interval contains the true ATE (seeds with an interval in brackets), for each "
            f"interval kind: **bootstrap** = the {boot} (the `ci_low` / `ci_high` columns, as for every estimator); "
            f"**IF** = the {INFLUENCE_LABEL} from the estimator's influence function (the `influence_ci_low` / "
            f"`influence_ci_high` columns; only {labels['aipw']} and {labels['tmle']} have one). "
            f"'Smallest |bias|' names the estimator whose mean bias is closest to 0."
        ),
    ]
    header = ["Model", "Task", "Level", "Seeds"]
    header += [f"{labels[e]} bias" for e in ESTIMATORS]
    header += [f"{labels['ipw']} coverage (bootstrap)"]
    for e in OUTCOME_ESTIMATORS:
        header += [f"{labels[e]} coverage (bootstrap)", f"{labels[e]} coverage (IF)"]
    header.append("Smallest |bias|")
    tally: list[str] = []
    for corpus in sorted(set(summary["corpus"])):
        sub = summary[(summary["corpus"] == corpus) & summary["model"].isin(models)]
        if sub.empty:
            continue
        names = model_labels(model_order(sub["model"].unique()))
        rows = []
        for model in [m for m in models if m in set(sub["model"])]:
            mine = sub[sub["model"] == model]
            wins = {e: 0 for e in OUTCOME_ESTIMATORS}
            levels = 0
            for (task, level), cell in mine.groupby(["task", "level"], sort=False):
                cell = cell.set_index("estimator")
                bias = {e: cell.at[e, "mean_bias"] if e in cell.index else float("nan") for e in ESTIMATORS}
                seeds = int(cell.loc[[e for e in ESTIMATORS if e in cell.index], "n_seeds"].max()) if len(cell) else 0
                row = [names[model], task_label(task), str(level), str(seeds)]
                row += [_num(bias[e]) for e in ESTIMATORS]
                row.append(_coverage(*_cov(cell, _BASELINE, "coverage", "n_ci")))
                for e in OUTCOME_ESTIMATORS:
                    row.append(_coverage(*_cov(cell, e, "coverage", "n_ci")))
                    row.append(_coverage(*_cov(cell, e, "influence_coverage", "n_influence_ci")))
                finite = {e: abs(b) for e, b in bias.items() if pd.notna(b)}
                row.append(labels[min(finite, key=finite.get)] if finite else "-")
                rows.append(row)
                if pd.notna(bias[_BASELINE]):
                    levels += 1
                    for e in OUTCOME_ESTIMATORS:
                        wins[e] += bool(pd.notna(bias[e]) and abs(bias[e]) < abs(bias[_BASELINE]))
            if levels:
                parts = [f"{labels[e]} at {wins[e]}" for e in OUTCOME_ESTIMATORS]
                tally.append(
                    f"{names[model]} ({corpus}): |mean bias| below {labels[_BASELINE]}'s with "
                    + " and ".join(parts)
                    + f" of {levels} task levels."
                )
        blocks += [
            Heading(3, f"{corpus}: mean bias over seeds and coverage by interval kind"),
            Table(header, rows, ["l", "l"] + ["r"] * (len(header) - 3) + ["l"]),
        ]
    if tally:
        blocks.append(Para(" ".join(tally)))
    return blocks


def _dml_blocks(summary: pd.DataFrame, methods: list[str]) -> list[Block]:
    """The cross-fitted effect methods' table: mean bias over seeds and coverage of their own interval."""
    labels = {e: ESTIMATOR_LABELS.get(e, e) for e in OUTCOME_ESTIMATORS}
    blocks: list[Block] = [
        Para(
            "Cross-fitted effect methods (double machine learning, `textcause.methods.crossfit`; rows "
            f"{' / '.join(f'`{e}`' for e in _DML_ESTIMATORS)}): {labels['aipw']} or {labels['tmle']} on K-fold "
            "out-of-fold nuisance predictions (a logistic-regression propensity model and one outcome model per "
            "arm, each fitted on the other folds), cross-fitted over all the task's users (training, validation "
            f"and test users together), whereas the models' {labels['aipw']} and {labels['tmle']} above fit their "
            "nuisances on the training users and evaluate on the test users (sample splitting). 'Users' is the "
            "mean number of users an estimate used; coverage is the share of seeds whose 95% influence-function "
            "interval (the method's own, in `ci_low` / `ci_high`) contains the true ATE (seeds with an interval "
            "in brackets)."
        )
    ]
    header = ["Method", "Estimator", "Task", "Level", "Seeds", "Users", "Bias", "Coverage (IF)"]
    for corpus in sorted(set(summary["corpus"])):
        sub = summary[
            (summary["corpus"] == corpus) & summary["model"].isin(methods) & summary["estimator"].isin(_DML_ESTIMATORS)
        ]
        if sub.empty:
            continue
        names = model_labels(model_order(sub["model"].unique()))
        rows = []
        for model in [m for m in methods if m in set(sub["model"])]:
            for r in sub[sub["model"] == model].itertuples(index=False):
                users = "-" if pd.isna(r.mean_n_used) else f"{r.mean_n_used:.0f}"
                rows.append(
                    [names[model], f"`{r.estimator}`", task_label(r.task), str(r.level), str(int(r.n_seeds)), users]
                    + [_num(r.mean_bias), _coverage(r.coverage, r.n_ci)]
                )
        blocks += [
            Heading(3, f"{corpus}: cross-fitted effect methods (DML), mean bias over seeds and coverage"),
            Table(header, rows, ["l", "l", "l"] + ["r"] * (len(header) - 3)),
        ]
    return blocks


def _cov(cell: pd.DataFrame, estimator: str, share: str, count: str) -> tuple[float, float]:
    if estimator not in cell.index:
        return float("nan"), 0.0
    return cell.at[estimator, share], cell.at[estimator, count]

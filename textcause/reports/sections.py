"""The report's sections as blocks: tables by task, the method comparison, the headline, the paper's
findings, the placebo test, coverage, appendix A's heuristic and the failed cells.

Each builder takes the results (:func:`~textcause.analysis.frame.load_results`) or their seed summary
(:func:`~textcause.analysis.inference.seed_summary`) and returns :mod:`~textcause.reports.markup` blocks;
:func:`textcause.reports.report.build_report` puts them in order.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from textcause.analysis.agreement import narrower_than_ad
from textcause.analysis.findings import ALPHA, BIAS_TOLERANCE, RATE_SEEDS, SIGN_TEST_SEEDS, findings_table
from textcause.analysis.frame import ci_label, task_order
from textcause.analysis.headline import bias_rows, placebo_table
from textcause.analysis.inference import binomial_ci, compare
from textcause.analysis.names import ESTIMATOR_ORDER, estimator_order, model_labels, model_order
from textcause.estimators.registry import ESTIMATOR_LABELS
from textcause.reports.markup import Block, Heading, Para, Table
from textcause.simulation.tasks import task_label

__all__ = [
    "ad_interval_section",
    "comparison_section",
    "coverage_section",
    "failed_section",
    "findings_block",
    "findings_section",
    "fmt",
    "headline_section",
    "mean_sd",
    "placebo_section",
    "seed_words",
    "task_tables",
]


def fmt(x: Any, digits: int = 3, sign: bool = False) -> str:
    """A number for a table; "-" for a missing value."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)) or pd.isna(x):
        return "-"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def seed_words(counts: Any) -> str:
    """``3 seeds``, ``5 to 20 seeds`` or ``no seeds``: how many seeds the rows shown rest on."""
    counts = [int(c) for c in counts if pd.notna(c) and c > 0]
    if not counts:
        return "no seeds"
    low, high = min(counts), max(counts)
    return f"{high} seed{'s' if high != 1 else ''}" if low == high else f"{low} to {high} seeds"


def _fmt_p(p: float) -> str:
    return "-" if pd.isna(p) else ("<0.001" if p < 0.001 else f"{p:.3f}")


def mean_sd(mean: float, sd: float, sign: bool = True) -> str:
    """A mean and its standard deviation as ``mean ± sd``; ``-`` when the mean is missing."""
    if pd.isna(mean):
        return "-"
    return fmt(mean, sign=sign) + ("" if pd.isna(sd) else f" ± {sd:.3f}")


def _estimators(summary: pd.DataFrame) -> list[str]:
    return estimator_order(summary["estimator"])


def task_tables(summary: pd.DataFrame, corpus: str) -> list[Block]:
    """One table per task: accuracy and each estimator's bias (mean ± sd over seeds), RMSE, coverage."""
    data = summary[summary["corpus"] == corpus]
    ests = [e for e in _estimators(data) if e != "unadjusted"] or _estimators(data)
    main = "stratified" if "stratified" in ests else ests[0]
    labels = model_labels(model_order(data["model"].unique()))
    blocks: list[Block] = []
    for task in task_order(data["task"]):
        sub = data[data["task"] == task]
        header = ["Model", "Level", "Seeds", "Treatment accuracy"] + [
            f"{ESTIMATOR_LABELS.get(e, e)} bias" for e in ests
        ]
        header += [f"RMSE ({ESTIMATOR_LABELS.get(main, main)})", f"Coverage ({ESTIMATOR_LABELS.get(main, main)})"]
        rows = []
        for model in model_order(sub["model"].unique()):
            for level in sorted(sub["level"].unique()):
                cell = sub[(sub["model"] == model) & (sub["level"] == level)].set_index("estimator")
                if cell.empty:
                    continue
                first = cell.sort_values("n_seeds", ascending=False).iloc[0]
                row = [
                    labels[model],
                    str(level),
                    str(int(cell["n_seeds"].max())),
                    mean_sd(first["mean_treatment_accuracy"], first["sd_treatment_accuracy"], sign=False),
                ]
                row += [
                    mean_sd(cell.at[e, "mean_bias"], cell.at[e, "sd_bias"]) if e in cell.index else "-" for e in ests
                ]
                m = cell.loc[main] if main in cell.index else None
                row += ["-" if m is None else fmt(m["rmse"]), "-" if m is None else fmt(m["coverage"], 2)]
                rows.append(row)
        blocks += [Heading(4, task_label(task)), Table(header, rows, ["l"] + ["r"] * (len(header) - 1))]
    return blocks


def comparison_section(data: pd.DataFrame, estimator: str, alpha: float = 0.05) -> list[Block]:
    """Each model's adjusted estimate vs the unadjusted estimate on the same seeds, metric |bias|."""
    blocks: list[Block] = [
        Heading(2, "Method comparison across seeds"),
        Para(
            f"Each model's **{ESTIMATOR_LABELS.get(estimator, estimator)}** estimate (A) against the **unadjusted** "
            "difference in means (B) of the same seeds, on |bias|: a negative difference means adjusting with the "
            "model's propensities reduced the bias. t and p: corrected resampled t-test (Nadeau & Bengio 2003: "
            "variance times 1/J + n_test/n_train, df = J - 1), Holm-adjusted across the task levels of each model "
            f"(one family per model and corpus), verdicts at alpha = {alpha}. The naive paired t p-value ignores "
            "that the seeds' training sets overlap and is shown only for contrast: it is too liberal. A single "
            "train/test split or a bootstrap over its test set cannot support such claims about methods."
        ),
    ]
    summary_rows, detail = [], []
    for corpus in sorted(set(data["corpus"])):
        sub = data[data["corpus"] == corpus]
        models = [m for m in model_order(sub["model"].unique()) if m != "unadjusted"]
        labels = model_labels(model_order(sub["model"].unique()))
        for model in models:
            ests = set(sub.loc[sub["model"] == model, "estimator"])
            if estimator not in ests or "unadjusted" not in ests:
                continue
            try:
                table = compare(sub, f"{model}:{estimator}", f"{model}:unadjusted", metric="abs_bias", alpha=alpha)
            except ValueError as err:  # e.g. no shared successful seed
                summary_rows.append([corpus, labels[model], "-", "-", "-", "-", str(err)])
                continue
            counts = table["better"].value_counts()
            verdicts = ("A", "B", "no significant difference", "not enough seeds")
            summary_rows.append([corpus, labels[model], *(str(counts.get(v, 0)) for v in verdicts), ""])
            for r in table.itertuples():
                verdict = {"A": "adjusted better", "B": "unadjusted better"}.get(r.better, r.better)
                detail.append(
                    [
                        corpus,
                        labels[model],
                        task_label(r.task),
                        str(r.level),
                        str(r.n_seeds),
                        fmt(r.mean_a),
                        fmt(r.mean_b),
                        fmt(r.mean_diff, sign=True),
                        fmt(r.t, 2, sign=True) if math.isfinite(r.t) else ("+inf" if r.t > 0 else "-inf"),
                        _fmt_p(r.p),
                        _fmt_p(r.p_holm),
                        _fmt_p(r.p_naive),
                        verdict + (f" ({r.note})" if r.note else ""),
                    ]
                )
    if not summary_rows:
        return blocks + [Para(f"No model has both {estimator!r} and 'unadjusted' rows: nothing to compare.")]
    blocks += [
        Heading(3, "Summary: task levels per verdict"),
        Table(
            [
                "Corpus",
                "Model",
                "Adjusted better",
                "Unadjusted better",
                "No significant difference",
                "Not enough seeds",
                "Note",
            ],
            summary_rows,
            ["l", "l", "r", "r", "r", "r", "l"],
        ),
        Heading(3, "Every task level"),
        Table(
            [
                "Corpus",
                "Model",
                "Task",
                "Level",
                "Seeds",
                "mean |bias| A",
                "mean |bias| B",
                "diff A - B",
                "t (corrected)",
                "p (corrected)",
                "p (Holm)",
                "p (naive)",
                "Verdict",
            ],
            detail,
            ["l", "l", "l"] + ["r"] * 9 + ["l"],
        ),
    ]
    return blocks


def headline_section(summary: pd.DataFrame, estimator: str = "stratified") -> list[Block]:
    """Per corpus: mean bias of ``estimator`` per task level and model, and the placebo false-discovery rates."""
    blocks: list[Block] = []
    for corpus in sorted(set(summary["corpus"])):
        if not (summary.loc[summary["corpus"] == corpus, "estimator"] == estimator).any():
            continue
        header, rows = bias_rows(summary, corpus, estimator)
        blocks += [
            Heading(2, f"Headline ({corpus})"),
            Para(
                f"{ESTIMATOR_LABELS.get(estimator, estimator)} bias (estimate - true ATE): the mean over seeds, ± the sd when there are several."
            ),
            Table(header, rows, ["l"] + ["r"] * (len(header) - 1)),
        ]
        placebo = placebo_table(summary, corpus)
        if not placebo.empty:
            body = [[str(m)] + [fmt(v, 2) for v in placebo.loc[m]] for m in placebo.index]
            blocks += [
                Para(
                    f"Placebo test: share of the seeds ({seed_words(placebo.attrs['seeds'])} per method) whose 95% "
                    "interval excludes the true ATE of 0 (false discoveries)."
                ),
                Table(["Model"] + list(placebo.columns), body, ["l"] + ["r"] * len(placebo.columns)),
            ]
    return blocks


def findings_block(table: pd.DataFrame) -> Table:
    """:func:`~textcause.analysis.findings.findings_table` as a report table: the finding and where the paper
    says it, the corpus, the verdict with the rule that gave it beside it, the evidence."""
    rows = [[f"{r.finding} ({r.paper})", r.corpus, f"**{r.verdict}**", r.rule, r.evidence] for r in table.itertuples()]
    return Table(["Finding (the paper)", "Corpus", "Verdict", "Rule", "Evidence"], rows, ["l"] * 5)


def findings_section(data: pd.DataFrame) -> list[Block]:
    """The paper's findings, one verdict per corpus, each beside the rule that gave it."""
    return [
        Heading(2, "Findings"),
        Para(
            "Weld et al.'s conclusions, each with the sentence of the paper it comes from, checked on each corpus "
            "of these results: every verdict (reproduced, refuted, mixed; not judged when the seeds cannot decide "
            "it, or a claim about all of the paper's methods has fewer than 5 of its 9 models, with why; no data when the finding's models or task levels are missing) is its rule applied to "
            "the numbers (`textcause.analysis.findings`). Twin levels count once; the estimators are IPTW and "
            "stratification; a method enters a level only with 2 or more seeds; across-seed intervals use the "
            "corrected variance (1/J + n_test/n_train) sd^2, but for the oracle in (a), which fits nothing, the "
            "plain t interval sd^2 / J; 'significantly' means the corrected resampled t-test "
            f"on |bias|, Holm-adjusted, alpha = {ALPHA}; a difference that is not significant counts as none only "
            f"when its interval lies within ±{BIAS_TOLERANCE}; a placebo rate passes only over seeds that give the "
            f"exact binomial test power 0.8 against a rate of 1/2 ({RATE_SEEDS} seeds or more); a sign test cannot "
            f"reject at {ALPHA} with fewer than {SIGN_TEST_SEEDS} seeds."
        ),
        findings_block(findings_table(data)),
    ]


def placebo_section(summary: pd.DataFrame) -> list[Block]:
    """Placebo test: share of seeds per method whose 95% interval excludes the true ATE of 0."""
    data = summary[summary["false_discovery_rate"].notna()]
    blocks: list[Block] = [Heading(2, "Placebo test: false discoveries")]
    if data.empty:
        return blocks + [Para("No task with a true ATE of 0 in the results.")]
    blocks.append(
        Para(
            "Share of seeds whose 95% interval (percentile bootstrap over test units) excludes 0 when "
            "the true ATE is 0; each such seed would report a false causal effect. In brackets, the exact "
            "binomial (Clopper-Pearson) 95% interval of the method's rate given that many seeds: "
            + _steps_sentence(data["n_ci"])
        )
    )
    rows = []
    for corpus in sorted(set(data["corpus"])):
        sub = data[data["corpus"] == corpus]
        labels = model_labels(model_order(sub["model"].unique()))
        for model in model_order(sub["model"].unique()):
            for r in sub[sub["model"] == model].sort_values("estimator", key=lambda s: s.map(_est_rank)).itertuples():
                rows.append(
                    [
                        corpus,
                        labels[model],
                        ESTIMATOR_LABELS.get(r.estimator, r.estimator),
                        f"{task_label(r.task)} {r.level}",
                        str(r.n_seeds),
                        fmt(r.mean_ate, sign=True),
                        _rate_with_ci(r.false_discovery_rate, r.false_discovery_ci_low, r.false_discovery_ci_high),
                    ]
                )
    return blocks + [
        Table(
            ["Corpus", "Model", "Estimator", "Task", "Seeds", "Mean ATE", "False discovery rate"],
            rows,
            ["l", "l", "l", "l", "r", "r", "r"],
        )
    ]


def _steps_sentence(counts: Any) -> str:
    """What a rate over the rows' seed counts can say: its step and the interval of 0 successes, per count."""
    ns = sorted({int(n) for n in counts if pd.notna(n) and n > 0})
    if not ns:
        return "no seed has an interval."
    parts = [
        f"with {n} seed{'s' if n != 1 else ''} the rate moves in steps of {1 / n:.2g}, and 0 of {n} is "
        f"compatible with a true rate up to {binomial_ci(0, n)[1]:.2f}"
        for n in ns
    ]
    return "; ".join(parts) + "."


def _rate_with_ci(rate: float, low: float, high: float) -> str:
    """``0.20 [0.01, 0.72]``: a rate over seeds with its binomial interval (``-`` when undefined)."""
    if pd.isna(rate):
        return "-"
    return f"{rate:.2f} [{low:.2f}, {high:.2f}]" if pd.notna(low) and pd.notna(high) else f"{rate:.2f}"


def _est_rank(name: str) -> int:
    return ESTIMATOR_ORDER.index(name) if name in ESTIMATOR_ORDER else len(ESTIMATOR_ORDER)


def coverage_section(summary: pd.DataFrame) -> list[Block]:
    """Pooled coverage of the true ATE per model and estimator (over task levels and seeds)."""
    ests = _estimators(summary)
    pooled = (
        summary.assign(hits=summary["coverage"] * summary["n_ci"])
        .groupby(["corpus", "model", "estimator"], as_index=False)[["hits", "n_ci"]]
        .sum()
    )
    rows = []
    for corpus in sorted(set(pooled["corpus"])):
        sub = pooled[pooled["corpus"] == corpus]
        labels = model_labels(model_order(sub["model"].unique()))
        for model in model_order(sub["model"].unique()):
            cells = sub[sub["model"] == model].set_index("estimator")
            row = [corpus, labels[model]]
            for e in ests:
                n = cells.at[e, "n_ci"] if e in cells.index else 0
                if n:
                    hits = cells.at[e, "hits"]
                    low, high = binomial_ci(round(hits), n)
                    row.append(f"{hits / n:.2f} [{low:.2f}, {high:.2f}] ({int(n)})")
                else:
                    row.append("-")
            rows.append(row)
    return [
        Heading(2, "Coverage of the true ATE"),
        Para(
            "Share of cells (task level x seed) whose 95% percentile-bootstrap interval over test units contains the "
            "true ATE, with the exact binomial (Clopper-Pearson) 95% interval of that share in square brackets and "
            "the number of cells with an interval in round ones. The cells of one model share seeds and training "
            "users, so they are not independent trials: read the binomial interval as a lower bound on the "
            "uncertainty. Well below 0.95 means the per-cell interval understates the error (it describes one "
            "fitted model's test-sample noise and ignores the bias of the propensity model)."
        ),
        Table(["Corpus", "Model"] + [ESTIMATOR_LABELS.get(e, e) for e in ests], rows, ["l", "l"] + ["r"] * len(ests)),
    ]


#: Why appendix A's quantity is reported as a heuristic (tests/metrics/test_honest_metrics.py).
_HEURISTIC_NOTE = (
    "Appendix A's Arbour-Dimmery quantity is the paper's heuristic, not a bound: with true propensities "
    "0.9 / 0.1 and estimated 0.8 / 0.2 (n = 2,000,000) the treated arm's IPW mean is off by 0.170 while "
    'equation (1) gives 0.119, and the "bounds" [0.107, 0.384] exclude the true ATE 0.4. So no claim '
    "that an interval is tighter than a bound is made from it; the widths are compared only as the paper did."
)


def ad_interval_section(data: pd.DataFrame) -> list[Block]:
    """Appendix A: the Arbour-Dimmery interval (the paper's heuristic, not a bound) beside IPW's empirical interval."""
    table = narrower_than_ad(data)
    total = table.iloc[-1]
    heading = Heading(2, "Appendix A: the paper's bias heuristic (not a bound)")
    if total["n"] == 0:
        return [heading, Para(_HEURISTIC_NOTE), Para("No cell has both an interval and the heuristic.")]
    rows = [[ESTIMATOR_LABELS.get(r.estimator, r.estimator), r.text, fmt(r.share, 3)] for r in table.itertuples()]
    return [
        heading,
        Para(_HEURISTIC_NOTE),
        Para(
            f"For comparison with the paper only: the empirical 95% interval ({ci_label(data)}) is narrower than "
            f"the heuristic's interval in {total['text']} (IPTW rows only: the heuristic's interval is centred "
            "on the IPTW estimate)."
        ),
        Table(["Estimator", "Narrower than the heuristic", "Share"], rows, ["l", "r", "r"]),
    ]


def failed_section(data: pd.DataFrame) -> list[Block]:
    """Cells that failed, with their error (one row per cell; its failed estimators listed)."""
    bad = data[(~data["usable"]) | (data["error"] != "")]
    blocks: list[Block] = [Heading(2, "Failed cells")]
    if bad.empty:
        return blocks + [Para("None: every cell ran.")]
    rows = []
    for key, g in bad.groupby(["corpus", "task", "level", "model", "seed", "error"], sort=True):
        errors = key[5] or "no estimate (status " + ", ".join(sorted(set(g["status"]))) + ")"
        ests = ", ".join(sorted(set(g["estimator"]) - {""})) or "-"
        rows.append([key[0], key[1], str(key[2]), key[3], str(key[4]), ests, errors])
    return blocks + [
        Para(f"{len(rows)} failed cell(s) or estimator(s); they are left out of every summary."),
        Table(["Corpus", "Task", "Level", "Model", "Seed", "Estimators", "Error"], rows, ["l"] * 7),
    ]

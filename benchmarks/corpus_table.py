#!/usr/bin/env python
"""Two corpora of one grid side by side: bias and treatment accuracy per task level and model, in Markdown.

    python benchmarks/corpus_table.py                       # blogs beside twitter, runs/benchmark/weld/results.db
    python benchmarks/corpus_table.py --estimator ipw --corpora twitter blogs
    python benchmarks/corpus_table.py --agreement [--scope all family model] [--top 5]   # appendix G instead

For every task level the second corpus has (twin levels once: Linguistic Complexity 2 stands for
Strength of Selection 1, Sample Size 1 and Order of Text 1, the same draw) and every model both
corpora ran, the mean over seeds of the estimator's bias and of the treatment accuracy, with the
number of seeds, from :func:`textcause.analysis.inference.seed_summary` (the database is read only).

``--agreement`` prints appendix G's agreement of the two corpora instead, as the report's Appendix G
section does (:func:`textcause.analysis.agreement.cross_corpus_agreement`): each quantity (treatment
accuracy, stratified ATE, IPTW ATE) averaged over seeds per (task level, model), twin levels once,
paired across corpora; mean absolute difference, mean ratio B:A and Pearson r (only over 5 pairs or
more) over the model-dependent pairs, for all, per model family, per task and per model; the
model-free pairs (oracle, unadjusted) apart; pairs with one seed on a side flagged; the ``--top``
largest disagreements by name. Only the models and levels both corpora ran enter.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def bias_accuracy_cell(summary, corpus: str, task: str, level: int, model: str) -> str:
    """``mean bias / mean treatment accuracy (seeds)`` of one row of a seed summary, or ``-`` if none."""
    row = summary[
        (summary["corpus"] == corpus)
        & (summary["task"] == task)
        & (summary["level"] == level)
        & (summary["model"] == model)
    ]
    if row.empty:
        return "-"
    r = row.iloc[0]
    return f"{r.mean_bias:+.3f} / {r.mean_treatment_accuracy:.3f} ({int(r.n_seeds)})"


def main() -> None:
    from textcause.analysis.findings import distinct_levels
    from textcause.analysis.frame import load_results
    from textcause.analysis.inference import seed_summary
    from textcause.analysis.names import model_labels, model_order
    from textcause.simulation.tasks import task_label

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="runs/benchmark/weld/results.db", help="the grid's results database")
    parser.add_argument("--corpora", nargs=2, default=["twitter", "blogs"], metavar=("A", "B"))
    parser.add_argument("--estimator", default="stratified")
    parser.add_argument("--agreement", action="store_true", help="appendix G's agreement table instead")
    parser.add_argument(
        "--scope", nargs="+", default=["all", "family", "task", "model"], choices=["all", "family", "task", "model"]
    )
    parser.add_argument("--top", type=int, default=5, help="how many of the largest disagreements to list")
    args = parser.parse_args()
    if not Path(args.db).is_file():
        sys.exit(f"error: no results database at {args.db!r}: run the grid first.")
    a, b = args.corpora
    if args.agreement:
        agreement(args.db, a, b, args.scope, args.top)
        return
    data = load_results(args.db)
    data = distinct_levels(data[data["corpus"].isin([a, b])])
    summary = seed_summary(data)
    summary = summary[summary["estimator"] == args.estimator]
    for name in (a, b):
        if not (summary["corpus"] == name).any():
            sys.exit(f"error: no {args.estimator} rows for corpus {name!r} in {args.db!r}.")
    both = set(summary.loc[summary["corpus"] == a, "model"]) & set(summary.loc[summary["corpus"] == b, "model"])
    models = model_order(both)
    labels = model_labels(models)
    levels = summary.loc[summary["corpus"] == b, ["task", "level"]].drop_duplicates().itertuples(index=False)
    print(f"| Task level | Model | {a} | {b} |")
    print("| :--- | :--- | ---: | ---: |")
    for task, level in levels:
        for model in models:
            cells = [bias_accuracy_cell(summary, corpus, task, level, model) for corpus in (a, b)]
            print(f"| {task_label(task)} {level} | {labels[model]} | {cells[0]} | {cells[1]} |")


def agreement(db: str, a: str, b: str, scopes: list[str], top: int = 5) -> None:
    """Print appendix G's tables of corpora ``a`` and ``b`` (the report's, :func:`agreement_blocks`)."""
    from textcause.analysis.agreement import cross_corpus_agreement
    from textcause.reports.appendix_g import agreement_blocks
    from textcause.reports.markup import to_markdown

    try:
        table = cross_corpus_agreement(db, a, b)
    except ValueError as err:
        sys.exit(f"error: {err}")
    shown = table[table["scope"].isin(scopes + ["model-free"])]
    shown.attrs.update(table.attrs)
    print(to_markdown(agreement_blocks(shown, top)).strip())


if __name__ == "__main__":
    main()

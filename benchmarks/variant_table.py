#!/usr/bin/env python
"""The task variants of issue 15 beside the paper's tasks: one Markdown table from two results databases.

    python benchmarks/variant_table.py
    python benchmarks/variant_table.py --default runs/benchmark/weld/results.db \\
        --variants runs/benchmark/weld_robust/results.db --estimator stratified

For every task level and model of the variant grid (``configs/benchmark/weld_twitter_robust.yaml``:
corpora ``twitter_<variant>``), the mean over seeds of the estimator's bias and of the treatment
accuracy on the default Twitter tasks (``configs/benchmark/weld_twitter.yaml``) and under each
variant, with the number of seeds. Both databases are read only (``textcause.analysis.seed_summary``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from corpus_table import bias_accuracy_cell


def main() -> None:
    from textcause.analysis.inference import seed_summary
    from textcause.analysis.names import model_labels, model_order
    from textcause.simulation.tasks import task_label

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--default", default="runs/benchmark/weld/results.db", help="the default grid's database")
    parser.add_argument("--variants", default="runs/benchmark/weld_robust/results.db", help="the variant grid's")
    parser.add_argument("--estimator", default="stratified")
    args = parser.parse_args()
    for path in (args.default, args.variants):
        if not Path(path).is_file():
            sys.exit(f"error: no results database at {path!r}: run the grid first (see the docstring).")
    var = seed_summary(args.variants)
    var = var[var["estimator"] == args.estimator]
    base = seed_summary(args.default)
    base = base[(base["estimator"] == args.estimator) & (base["corpus"] == "twitter")]
    variants = sorted(c for c in var["corpus"].unique())
    names = [c.removeprefix("twitter_") for c in variants]
    models = model_order(var["model"].unique())
    labels = model_labels(models)
    header = ["Task level", "Model", "default"] + names
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join([":---", ":---"] + ["---:"] * (len(header) - 2)) + " |")
    levels = var[["task", "level"]].drop_duplicates().itertuples(index=False)
    order = list(dict.fromkeys(base["task"]))
    for task, level in sorted(levels, key=lambda r: (order.index(r[0]) if r[0] in order else 99, r[1])):
        for model in models:
            columns = [(base, "twitter")] + [(var, c) for c in variants]
            cells = [bias_accuracy_cell(frame, corpus, task, level, model) for frame, corpus in columns]
            print(f"| {task_label(task)} {level} | {labels[model]} | " + " | ".join(cells) + " |")
    print(f"\n{args.estimator} bias / treatment accuracy (seeds), means over seeds.")


if __name__ == "__main__":
    main()

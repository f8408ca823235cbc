"""Did a change alter a grid's numbers? Compare the result rows of the same cells in two result stores.

For every cell id present in both stores (the same config hash: the same model, task, seed and
evaluation), the rows are matched by estimator and compared on the estimate, its interval and the
propensity metrics, timings aside. Per model it prints how many cells are identical (to 1e-9), the
largest absolute difference of each quantity, and for models whose cells differ the mean paired
difference of the bias and of the treatment accuracy beside the seed-to-seed standard deviation of
the reference store (every seed it holds), which bounds what a change of random stream (e.g.
dropout masks) may move.

    .venv/bin/python benchmarks/compare_grids.py --new runs/benchmark/weld_timing/results.db \\
        --reference runs/benchmark/weld/results.db
"""

from __future__ import annotations

import argparse
import sqlite3

import numpy as np
import pandas as pd

QUANTITIES = ("ate", "ci_low", "ci_high", "treatment_accuracy", "ece", "brier", "iptw_weight_mse", "spearman")


def load(db: str, grid: str | None) -> pd.DataFrame:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    query = "select * from results where status = 'ok'" if _has_status(con) else "select * from results"
    frame = pd.read_sql_query(query, con)
    con.close()
    if grid is not None:
        frame = frame[frame["grid"] == grid]
    return frame


def _has_status(con: sqlite3.Connection) -> bool:
    return "status" in [row[1] for row in con.execute("pragma table_info(results)")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new", required=True, help="the result store written by the changed code")
    parser.add_argument("--reference", required=True, help="the result store of the code before")
    parser.add_argument("--grid", default=None, help="only this grid's rows")
    args = parser.parse_args()
    new, ref = load(args.new, args.grid), load(args.reference, args.grid)
    key = ["cell_id", "estimator"]
    both = new.merge(ref, on=key, suffixes=("", "_ref"))
    other_config = both["config_hash"] != both["config_hash_ref"]
    if other_config.any():  # the same id under another configuration is another experiment
        print(f"{both.loc[other_config, 'cell_id'].nunique()} cells left out: their config hashes differ")
        both = both[~other_config]
    if both.empty:
        raise SystemExit("The two stores share no cell with the same configuration: nothing to compare.")
    print(f"{both['cell_id'].nunique()} cells in both stores ({len(both)} rows)\n")
    print("| model | cells | identical | " + " | ".join(f"max abs diff {q}" for q in QUANTITIES[:4]) + " |")
    print("|---|---|---|" + "---|" * 4)
    differing = []
    for model, rows in both.groupby("model", sort=False):
        diffs = {q: (rows[q] - rows[f"{q}_ref"]).abs() for q in QUANTITIES}
        # both empty: no difference; one empty: a difference (infinite)
        for q, d in diffs.items():
            one_missing = rows[q].isna() != rows[f"{q}_ref"].isna()
            diffs[q] = d.mask(one_missing, np.inf).fillna(0.0)
        per_cell = pd.concat([rows["cell_id"], *[d.rename(q) for q, d in diffs.items()]], axis=1)
        worst = per_cell.groupby("cell_id")[list(QUANTITIES)].max().max(axis=1)
        identical = int((worst <= 1e-9).sum())
        print(
            f"| {model} | {len(worst)} | {identical} | "
            + " | ".join(f"{diffs[q].max():.2g}" for q in QUANTITIES[:4])
            + " |"
        )
        if identical < len(worst):
            differing.append(model)
    if not differing:
        return
    print("\nModels whose cells differ: the paired difference against the seed-to-seed spread of the reference")
    print(
        "| model | estimator | cells | mean diff of bias | sd of bias across seeds (reference) | "
        "mean diff of accuracy | sd of accuracy across seeds (reference) |"
    )
    print("|---|---|---|---|---|---|---|")
    for model in differing:
        for estimator, rows in both[both["model"] == model].groupby("estimator"):
            d_bias = rows["bias"] - rows["bias_ref"]
            d_acc = rows["treatment_accuracy"] - rows["treatment_accuracy_ref"]
            spread = ref[(ref["model"] == model) & (ref["estimator"] == estimator)].groupby(["task", "level"])
            sd_bias = float(np.nanmean(spread["bias"].std()))
            sd_acc = float(np.nanmean(spread["treatment_accuracy"].std()))
            print(
                f"| {model} | {estimator} | {len(rows)} | {d_bias.mean():+.3f} (abs {d_bias.abs().mean():.3f}) | "
                f"{sd_bias:.3f} | {d_acc.mean():+.3f} (abs {d_acc.abs().mean():.3f}) | {sd_acc:.3f} |"
            )


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""How the post encoder's token cap changes SHERBERT's results: paired cells at two caps (issue 18).

Reads the result store of ``configs/benchmark/sherbert_token_cap.yaml`` (SHERBERT pooled on every
Twitter task level and seed, once per variant ``tok64`` / ``tok128``), pairs each cell of one cap
with the same task, level and seed at the other, and prints per estimator the mean absolute bias
at each cap, the mean paired difference of the bias (second cap minus first) with a paired t-test
and a Wilcoxon signed-rank test over the task levels (each level's difference averaged over its
seeds first, so the pairs are independent draws of a task), the seed-to-seed standard deviation of
the bias at the first cap (what one more seed would move), the treatment accuracy at each cap, and
the seconds a cell took (training + evaluation).

    .venv/bin/python benchmarks/token_cap_table.py --db runs/benchmark/sherbert_token_cap/results.db
"""

from __future__ import annotations

import argparse
import sqlite3

import numpy as np
import pandas as pd
from scipy import stats

KEY = ["task", "level", "seed", "estimator"]


def load(db: str, grid: str) -> pd.DataFrame:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    frame = pd.read_sql_query("select * from results where status = 'ok' and grid = ?", con, params=(grid,))
    con.close()
    if frame.empty:
        raise SystemExit(f"{db} holds no finished cell of the grid {grid!r}: run the grid first.")
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="the grid's result store (results.db)")
    parser.add_argument("--grid", default="sherbert_token_cap")
    parser.add_argument("--first", default="twitter_tok64", help="the corpus name of the first cap's cells")
    parser.add_argument("--second", default="twitter_tok128", help="the corpus name of the second cap's cells")
    args = parser.parse_args()
    rows = load(args.db, args.grid)
    a, b = rows[rows["corpus"] == args.first], rows[rows["corpus"] == args.second]
    if a.empty or b.empty:
        raise SystemExit(
            f"Need finished cells of both {args.first!r} and {args.second!r}; found {sorted(rows['corpus'].unique())}."
        )
    pairs = a.merge(b, on=KEY, suffixes=("_a", "_b"))
    cells = pairs.drop_duplicates(["task", "level", "seed"])
    print(
        f"{len(cells)} paired cells ({cells[['task', 'level']].drop_duplicates().shape[0]} task levels, "
        f"seeds {sorted(cells['seed'].unique().tolist())}); {args.first} = a, {args.second} = b\n"
    )
    print(
        "| estimator | mean abs bias a | mean abs bias b | mean diff of bias b - a | paired t p | Wilcoxon p "
        "| sd of bias across seeds (a) |"
    )
    print("|---|---|---|---|---|---|---|")
    for estimator, g in pairs.groupby("estimator"):
        diff = g["bias_b"] - g["bias_a"]
        per_level = g.assign(diff=diff).groupby(["task", "level"])["diff"].mean()
        if (per_level != 0).any():
            t_p = f"{stats.ttest_1samp(per_level, 0.0).pvalue:.2f}"
            w_p = f"{stats.wilcoxon(per_level).pvalue:.2f}"
        else:  # no model in the estimate (unadjusted): the pairs' task draws agree
            t_p = w_p = "- (identical)"
        sd = a[a["estimator"] == estimator].groupby(["task", "level"])["bias"].std().mean()
        print(
            f"| {estimator} | {g['bias_a'].abs().mean():.4f} | {g['bias_b'].abs().mean():.4f} | "
            f"{diff.mean():+.4f} (abs {diff.abs().mean():.4f}) | {t_p} | {w_p} | {sd:.4f} |"
        )
    acc_diff = cells["treatment_accuracy_b"] - cells["treatment_accuracy_a"]
    seconds_a = cells["train_seconds_a"] + cells["eval_seconds_a"]
    seconds_b = cells["train_seconds_b"] + cells["eval_seconds_b"]
    print(
        f"\ntreatment accuracy: a {cells['treatment_accuracy_a'].mean():.4f}, b {cells['treatment_accuracy_b'].mean():.4f}, "
        f"paired difference {acc_diff.mean():+.4f} (paired t p = {stats.ttest_rel(cells['treatment_accuracy_b'], cells['treatment_accuracy_a']).pvalue:.2f})"
    )
    print(
        f"seconds a cell (training + evaluation): a {seconds_a.mean():.1f} (median {np.median(seconds_a):.1f}), "
        f"b {seconds_b.mean():.1f} (median {np.median(seconds_b):.1f})"
    )


if __name__ == "__main__":
    main()

"""What the example scripts share: their tasks and seeds, their command line, and the tables they print.

Each example ends with ``main(method, show, __doc__)``; run the example, not this file.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import textcause

#: Linguistic Complexity 1 and 3 and the Placebo Test, seeds 0 and 1.
TASKS = {"linguistic_complexity": [1, 3], "placebo": [1]}
SEEDS = [0, 1]


def print_failures(table) -> None:
    """One line per failed cell: its id and its error."""
    for row in table[table["status"] != "ok"].drop_duplicates("cell_id").itertuples():
        print(f"failed: {row.cell_id}: {row.error}")


def show_bias(table) -> None:
    """Bias of each estimator per task level and seed, with the treatment accuracy of the propensities."""
    ok = table[table["status"] == "ok"]
    bias = ok.pivot_table(index=["task", "level", "seed"], columns="estimator", values="bias", sort=False)
    bias["accuracy"] = ok.groupby(["task", "level", "seed"], sort=False)["treatment_accuracy"].first()
    print("bias = estimate - true ATE (true ATE 0.4, placebo 0); accuracy of P(T=1) on the test users")
    print(bias.round(3).to_string())
    print_failures(table)


def main(method: Any, show: Callable[[Any], None], doc: str) -> None:
    """Evaluate ``method`` on the real Twitter corpus (``--db`` also stores the rows), then ``show`` the table."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--db", default=None, help="also write the rows to this results database")
    args = parser.parse_args()
    started = time.perf_counter()
    table = textcause.evaluate(method, corpus="twitter", tasks=TASKS, seeds=SEEDS, n_boot=1000, db=args.db)
    show(table)
    print(f"{table['cell_id'].nunique()} cells in {time.perf_counter() - started:.0f} s")

#!/usr/bin/env python
"""The paper's findings against our results, as one Markdown table from one or more results databases.

    python benchmarks/findings_table.py --db runs/benchmark/weld/results.db
    python benchmarks/findings_table.py --db runs/benchmark/weld/results.db \\
        --db runs/benchmark/weld_robust/results.db --rules

The databases' rows are put together (each corpus must come from one database only: the variant
grid's corpora are ``twitter_<variant>``) and judged by
:func:`textcause.analysis.findings.findings_table`: one row per (finding, corpus) with its verdict
and evidence. ``--rules`` prints the rules that gave the verdicts under the table; ``--matrix``
prints only the verdicts, one row per finding and one column per corpus (README's table). The
databases are opened read only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    import pandas as pd

    from textcause.analysis.findings import RULES, findings_table
    from textcause.analysis.frame import load_results
    from textcause.reports.markup import Bullets, Table, to_markdown
    from textcause.reports.sections import findings_block

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", action="append", required=True, help="a results database (repeatable)")
    parser.add_argument("--rules", action="store_true", help="print the verdicts' rules under the table")
    parser.add_argument("--matrix", action="store_true", help="only the verdicts: findings x corpora")
    args = parser.parse_args()
    frames, seen = [], {}
    for path in args.db:
        if not Path(path).is_file():
            sys.exit(f"error: no results database at {path!r}: run the grid first.")
        frame = load_results(path)
        for corpus in sorted(set(frame["corpus"])):
            if corpus in seen:
                sys.exit(f"error: corpus {corpus!r} is in both {seen[corpus]!r} and {path!r}; give each corpus once.")
            seen[corpus] = path
        frames.append(frame)
    table = findings_table(pd.concat(frames, ignore_index=True))
    if args.matrix:
        corpora = sorted(set(table["corpus"]), key=lambda c: (c != "twitter", not c.startswith("twitter"), c))
        rows = [
            [finding]
            + [group.set_index("corpus").at[c, "verdict"] if c in set(group["corpus"]) else "-" for c in corpora]
            for finding, group in table.groupby("finding", sort=False)
        ]
        blocks = [Table(["Finding"] + corpora, rows, ["l"] + ["l"] * len(corpora))]
        print(to_markdown(blocks).strip())
        return
    blocks = [findings_block(table)]
    if args.rules:
        blocks.append(Bullets([f"({key}) {rule}" for key, rule in RULES.items()]))
    print(to_markdown(blocks).strip())


if __name__ == "__main__":
    main()

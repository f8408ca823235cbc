"""The three summary tables of docs/cfr.md, from the `<name>_cfr.csv` files of `textcause cfr` runs.

    .venv/bin/python benchmarks/cfr_tables.py \
        "blogs (author gender)=runs/cfr/blogs/blogs_cfr.csv" \
        "blogs (words' gender)=runs/cfr/blogs_words/blogs_words_cfr.csv" \
        "templates, selection bias 0.8=runs/cfr/templates/templates_cfr.csv" \
        "templates, label bias 0.3=runs/cfr/templates_label/templates_label_cfr.csv" \
        "templates, no bias=/tmp/cfr_nobias/templates_cfr.csv"

Each argument is ``LABEL=CSV``; a label containing "no bias" gets the one-line PIP / ATV row. Prints
Markdown: PIP / ATV against the true counterfactual texts (differences from identity with their
paired 95% intervals), the effect error with the erasure check, and the TPR gaps (unweighted /
weighted by class share). The numbers are the CSV's, rounded to 3 decimals; nothing is recomputed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# the report's own formatting and row lookup (textcause/reports/cfr.py)
from textcause.reports.cfr import _ci, _get, _num, _signed

INTERVENTIONS = [
    ("erasure", "orthogonal erasure (CFR's)", True),
    ("cfr", "**CFR det. (Lemberger et al.)**", True),
    ("cfr_stochastic", "CFR stoch.", False),
    ("leace_erasure", "LEACE erasure", True),
    ("leace_mean_cfr", "LEACE + class mean", True),
    ("leace_mean_cfr_stochastic", "LEACE + drawn", False),
    ("oracle_erasure", "oracle erasure", True),
    ("oracle_cfr", "oracle CFR", True),
]
EFFECT = ["identity", "erasure", "cfr", "leace_erasure", "leace_mean_cfr", "oracle_cfr"]
TPR = ["original", "erased", "leace_erased", "cfr_augmented", "leace_mean_cfr_augmented", "text_augmented"]


def read(path: str) -> Any:
    """One run's CSV as the frame :mod:`textcause.reports.cfr` reads (section, method, metric, klass, value, lo, hi)."""
    import pandas as pd

    return pd.read_csv(path)


def value(r: Any, section: str, method: str, metric: str) -> str:
    """The row's value, 3 decimals (``-`` when the run has no such row)."""
    row = _get(r, section, method, metric)
    return _num(None if row is None else row["value"])


def pip_atv(runs: list[tuple[str, Any]]) -> list[str]:
    head = ["data", "Yhat acc.", "identity"] + [label for _, label, _ in INTERVENTIONS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, r in runs:
        acc = value(r, "classifier", "original", "accuracy")
        if "no bias" in label:
            methods = ["identity"] + [m for m, _, _ in INTERVENTIONS]
            cells = [f"{value(r, 'cfr', m, 'pip')} / {value(r, 'cfr', m, 'atv')}" for m in methods]
            lines.append(f"| {label}, PIP / ATV | {acc} | " + " | ".join(cells) + " |")
            continue
        pip, atv = [value(r, "cfr", "identity", "pip")], [value(r, "cfr", "identity", "atv")]
        for method, _, with_ci in INTERVENTIONS:
            with_pip_ci = method in ("cfr", "leace_mean_cfr")
            pip.append(_ci(_get(r, "cfr", method, "pip")) if with_pip_ci else value(r, "cfr", method, "pip"))
            diff = _get(r, "cfr", method, "atv_vs_identity")
            shown = _ci(diff, signed=True) if with_ci else _signed(None if diff is None else diff["value"])
            atv.append(f"{value(r, 'cfr', method, 'atv')} ({shown})")
        lines.append(f"| {label}, PIP | {acc} | " + " | ".join(pip) + " |")
        lines.append(f"| {label}, ATV | | " + " | ".join(atv) + " |")
    return lines


def effect_probe(runs: list[tuple[str, Any]]) -> list[str]:
    lines = [
        "| data | effect error: identity / orth. erasure / CFR (Lemberger et al.) / LEACE erasure / LEACE + class "
        "mean / oracle CFR | probe AUC before, after orthogonal, LEACE, oracle erasure (accuracy after orthogonal "
        "vs majority) |",
        "|---|---|---|",
    ]
    for label, r in runs:
        if "no bias" in label:
            continue
        errors = " / ".join(value(r, "cfr", m, "effect_error") for m in EFFECT)
        aucs = ", ".join(value(r, "probe", m, "auc") for m in ("none", "orth", "leace", "oracle"))
        after, majority = value(r, "probe", "orth", "accuracy"), value(r, "probe", "orth", "majority")
        lines.append(f"| {label} | {errors} | {aucs} ({after} vs {majority}) |")
    return lines


def tpr(runs: list[tuple[str, Any]]) -> list[str]:
    lines = [
        "| data | original | orth.-erased (CFR's) | LEACE-erased | original + CFR (Lemberger et al.) | original + "
        "LEACE class-mean CFR | original + true texts |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, r in runs:
        if "no bias" in label:
            continue
        cells = [f"{value(r, 'tpr', m, 'mean_abs_gap')} / {value(r, 'tpr', m, 'weighted_abs_gap')}" for m in TPR]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="LABEL=CSV (a `textcause cfr` run's <name>_cfr.csv)")
    args = parser.parse_args()
    runs = []
    for item in args.runs:
        label, sep, path = item.partition("=")
        if not sep or not Path(path).is_file():
            parser.error(f"each run must be LABEL=CSV with an existing CSV; got {item!r}")
        runs.append((label, read(path)))
    for block in (pip_atv(runs), effect_probe(runs), tpr(runs)):
        print("\n".join(block), end="\n\n")


if __name__ == "__main__":
    main()

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
import csv
from pathlib import Path

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


def read(path: str) -> dict[tuple[str, str, str, str], tuple[float, float | None, float | None]]:
    """``(section, method, metric, class) -> (value, lo, hi)`` of one run's CSV."""
    out = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            lo = float(row["lo"]) if row["lo"] else None
            hi = float(row["hi"]) if row["hi"] else None
            out[(row["section"], row["method"], row["metric"], row["klass"])] = (float(row["value"]), lo, hi)
    return out


def f3(x: float, sign: bool = False) -> str:
    return f"{x:+.3f}" if sign else f"{x:.3f}"


def interval(v: tuple[float, float | None, float | None], sign: bool = False) -> str:
    value, lo, hi = v
    if lo is None or hi is None:
        return f3(value, sign)
    return f"{f3(value, sign)} [{f3(lo, sign)}, {f3(hi, sign)}]"


def pip_atv(runs: list[tuple[str, dict]]) -> list[str]:
    head = ["data", "Yhat acc.", "identity"] + [label for _, label, _ in INTERVENTIONS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, r in runs:
        acc = f3(r[("classifier", "original", "accuracy", "")][0])
        if "no bias" in label:
            cells = [
                f"{f3(r[('cfr', m, 'pip', '')][0])} / {f3(r[('cfr', m, 'atv', '')][0])}"
                for m in ["identity"] + [m for m, _, _ in INTERVENTIONS]
            ]
            lines.append(f"| {label}, PIP / ATV | {acc} | " + " | ".join(cells) + " |")
            continue
        pip = [f3(r[("cfr", "identity", "pip", "")][0])]
        atv = [f3(r[("cfr", "identity", "atv", "")][0])]
        for method, _, with_ci in INTERVENTIONS:
            p = r[("cfr", method, "pip", "")]
            pip.append(interval(p) if method in ("cfr", "leace_mean_cfr") else f3(p[0]))
            d = r[("cfr", method, "atv_vs_identity", "")]
            diff = interval(d, sign=True) if with_ci else f3(d[0], sign=True)
            atv.append(f"{f3(r[('cfr', method, 'atv', '')][0])} ({diff})")
        lines.append(f"| {label}, PIP | {acc} | " + " | ".join(pip) + " |")
        lines.append(f"| {label}, ATV | | " + " | ".join(atv) + " |")
    return lines


def effect_probe(runs: list[tuple[str, dict]]) -> list[str]:
    lines = [
        "| data | effect error: identity / orth. erasure / CFR (Lemberger et al.) / LEACE erasure / LEACE + class "
        "mean / oracle CFR | probe AUC before, after orthogonal, LEACE, oracle erasure (accuracy after orthogonal "
        "vs majority) |",
        "|---|---|---|",
    ]
    for label, r in runs:
        if "no bias" in label:
            continue
        errors = " / ".join(f3(r[("cfr", m, "effect_error", "")][0]) for m in EFFECT)
        aucs = ", ".join(f3(r[("probe", m, "auc", "")][0]) for m in ("none", "orth", "leace", "oracle"))
        after = f3(r[("probe", "orth", "accuracy", "")][0])
        majority = f3(r[("probe", "orth", "majority", "")][0])
        lines.append(f"| {label} | {errors} | {aucs} ({after} vs {majority}) |")
    return lines


def tpr(runs: list[tuple[str, dict]]) -> list[str]:
    lines = [
        "| data | original | orth.-erased (CFR's) | LEACE-erased | original + CFR (Lemberger et al.) | original + "
        "LEACE class-mean CFR | original + true texts |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, r in runs:
        if "no bias" in label:
            continue
        cells = [
            f"{f3(r[('tpr', m, 'mean_abs_gap', '')][0])} / {f3(r[('tpr', m, 'weighted_abs_gap', '')][0])}" for m in TPR
        ]
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

"""Appendix G in the report: the agreement of two corpora, model-dependent pairs apart from model-free ones."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from textcause.analysis.agreement import (
    MIN_PAIRS_FOR_R,
    MIN_SPREAD_FOR_R,
    cross_corpus_agreement,
    largest_disagreements,
)
from textcause.analysis.names import model_labels
from textcause.reports.figures import agreement_figure, save_figure
from textcause.reports.markup import Block, Heading, Image, Para, Table
from textcause.simulation.tasks import task_label

__all__ = [
    "agreement_blocks",
    "agreement_section",
    "fmt",
    "shown_file",
]


def fmt(x: float, sign: bool = False) -> str:
    """A number to 3 decimals; "-" when missing."""
    return "-" if pd.isna(x) else (f"{x:+.3f}" if sign else f"{x:.3f}")


def shown_file(stem: str, paths: Sequence[Path]) -> str:
    """The file name a report shows of a figure written as ``paths``: its PNG, else its SVG, else the first."""
    names = [Path(p).name for p in paths]
    return next(
        (f"{stem}{ext}" for ext in (".png", ".svg") if f"{stem}{ext}" in names), names[0] if names else f"{stem}.png"
    )


def _group_label(scope: str, group: str) -> str:
    if scope in ("model", "model-free"):
        return model_labels([group])[group]
    return task_label(group) if scope == "task" else group


def agreement_blocks(table: pd.DataFrame, top: int = 5) -> list[Block]:
    """:func:`~textcause.analysis.agreement.cross_corpus_agreement` as report blocks: the model-dependent
    summary (all, per family, task and model), the model-free pairs apart, and the largest disagreements."""
    a, b = table.attrs["corpus_a"], table.attrs["corpus_b"]
    pairs = table.attrs["pairs"]
    header = ["Scope", "Group", "Quantity", "n", "1-seed pairs", "Mean abs. difference", f"Mean ratio {b}:{a}"]
    header.append("Pearson r")

    def rows(sub: pd.DataFrame) -> list[list[str]]:
        return [
            [
                r.scope,
                _group_label(r.scope, r.group),
                r.quantity,
                str(r.n),
                str(r.n_one_seed) + (" ⚑" if r.n_one_seed else ""),
                fmt(r.mean_abs_diff),
                fmt(r.mean_ratio),
                "- (a)" if r.n < MIN_PAIRS_FOR_R else ("- (b)" if r.clustered else fmt(r.pearson_r)),
            ]
            for r in sub.itertuples()
        ]

    align = ["l", "l", "l", "r", "r", "r", "r", "r"]
    dependent, free = table[table["scope"] != "model-free"], table[table["scope"] == "model-free"]
    n_models = len(pairs.loc[~pairs["model_free"], ["task", "level", "model"]].drop_duplicates())
    blocks: list[Block] = [
        Para(
            f"Each quantity is averaged over seeds per (task, level, model), then paired across corpora, twin levels "
            f"once. The summary counts only the {n_models} model-dependent (task level, model) pairs; the oracle and the unadjusted "
            "estimate (no text model: one draw repeated across levels) are shown apart below. Ratio is "
            f"{b}:{a} (over non-zero {a} values; unstable near 0, e.g. the placebo ATE). (a) Pearson r is not given "
            f"on fewer than {MIN_PAIRS_FOR_R} pairs (with 2 it is ±1 by construction; appendix G: r miscommunicates "
            f"clustered values); (b) nor where one corpus's values span less than {MIN_SPREAD_FOR_R:.2f} (clustered: "
            "e.g. every model at chance on Order of Text 2, where r would correlate noise). ⚑: pairs with a single "
            "seed on one side, a draw rather than a seed mean."
        ),
        Table(header, rows(dependent), align),
    ]
    if len(free):
        blocks += [Para("Model-free pairs (oracle, unadjusted), apart:"), Table(header, rows(free), align)]
    worst = largest_disagreements(pairs, top)
    if len(worst):
        labels = model_labels(worst["model"].unique())
        blocks += [
            Para(f"The {len(worst)} largest model-dependent disagreements:"),
            Table(
                ["Model", "Task level", "Quantity", a, b, f"{b} - {a}", "Seeds"],
                [
                    [
                        labels[r.model],
                        f"{task_label(r.task)} {r.level}",
                        r.quantity,
                        fmt(r.value_a),
                        fmt(r.value_b),
                        fmt(r.diff, sign=True),
                        f"{r.n_seeds_a} / {r.n_seeds_b}" + (" ⚑" if r.one_seed else ""),
                    ]
                    for r in worst.itertuples()
                ],
                ["l", "l", "l", "r", "r", "r", "r"],
            ),
        ]
    return blocks


def agreement_section(
    data: pd.DataFrame, out_dir: Path, formats: Sequence[str]
) -> tuple[list[Block], dict[str, list[Path]]]:
    """Appendix G for every pair of corpora: table and Fig. 10."""
    corpora = sorted(set(data["corpus"]))
    blocks: list[Block] = []
    written: dict[str, list[Path]] = {}
    for a, b in itertools.combinations(corpora, 2):
        try:
            table = cross_corpus_agreement(data, a, b)
        except ValueError as err:
            blocks += [Heading(2, f"Appendix G: {a} vs {b}"), Para(str(err))]
            continue
        stem = f"fig10_agreement_{a}_{b}".replace("/", "_")
        written[stem] = save_figure(agreement_figure(table), out_dir, stem, formats)
        blocks += [
            Heading(2, f"Appendix G: {a} vs {b}"),
            *agreement_blocks(table),
            Image(shown_file(stem, written[stem]), f"Agreement of {a} and {b}"),
        ]
    return blocks, written

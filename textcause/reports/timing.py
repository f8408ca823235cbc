"""The report's "Time" section: what the grid cost, per corpus, from its own rows
(:mod:`textcause.analysis.timing`)."""

from __future__ import annotations

import pandas as pd

from textcause.analysis.names import model_labels
from textcause.analysis.timing import GAP_SECONDS, grid_time, model_times
from textcause.reports.markup import Block, Heading, Para, Table

__all__ = [
    "clock",
    "time_section",
]


def clock(seconds: float) -> str:
    """``4 h 07 min`` (or ``12 min 05 s`` under an hour).

    >>> clock(14820.4), clock(725.0)
    ('4 h 07 min', '12 min 05 s')
    """
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 60} min {s % 60:02d} s"


def time_section(data: pd.DataFrame) -> list[Block]:
    """Per corpus: cell time, wall time while cells ran, sittings and each model's share (nothing when
    the rows carry no cell times)."""
    blocks: list[Block] = []
    for corpus in sorted(set(data["corpus"])) if "corpus" in data else []:
        rows = data[data["corpus"] == corpus]
        t = grid_time(rows)
        if t is None or not t["fitted"]:
            continue
        labels = model_labels(set(rows["model"]))
        per = model_times(rows)
        blocks += [
            Heading(3, f"{corpus}"),
            Para(
                f"{t['cells']} finished cells, {t['fitted']} fitted"
                f"{' (the others are twins whose rows were copied)' if t['fitted'] < t['cells'] else ''}: "
                f"**{clock(t['cell_seconds'])} of cell time** (the sum of the fitted cells' own durations, a pause inside a cell included), "
                f"**{clock(t['wall_seconds'])} of wall time while cells ran** (the union of the cells' start-finish "
                f"intervals: pauses and gaps between sittings not counted), in {t['sittings']} sitting"
                f"{'s' if t['sittings'] != 1 else ''} (separated by {GAP_SECONDS / 60:.0f} min or more with no cell "
                f"running), from {t['first']:%Y-%m-%d %H:%M} to {t['last']:%Y-%m-%d %H:%M} (workers' clocks) on "
                f"{len(t['hosts'])} host{'s' if len(t['hosts']) != 1 else ''}."
            ),
            Table(
                ["Model", "Fitted cells", "Mean s", "Median s", "Share of cell time"],
                [
                    [
                        labels.get(r.model, r.model),
                        str(r.cells),
                        f"{r.mean_s:.0f}",
                        f"{r.median_s:.0f}",
                        f"{r.share:.0%}",
                    ]
                    for r in per.itertuples()
                ],
                ["l", "r", "r", "r", "r"],
            ),
        ]
    return [Heading(2, "Time"), *blocks] if blocks else []

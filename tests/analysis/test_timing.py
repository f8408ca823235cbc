"""What a grid cost in time, from its rows: cell time, wall time while cells ran, sittings."""

from __future__ import annotations

import pandas as pd
import pytest

from textcause.analysis.timing import grid_time, model_times
from textcause.reports.markup import to_markdown
from textcause.reports.timing import time_section

T0 = pd.Timestamp("2026-12-07 10:00")


def cell(cell_id, model, start_min, end_min, *, train=1.0, status="ok", corpus="twitter", estimators=2):
    """A cell's result rows (one per estimator), started and finished ``start_min`` / ``end_min`` after T0."""
    return [
        {
            "cell_id": cell_id,
            "model": model,
            "corpus": corpus,
            "status": status,
            "estimator": est,
            "host": "h1",
            "train_seconds": train,
            "eval_seconds": 0.0,
            "started_at": T0 + pd.Timedelta(minutes=start_min),
            "finished_at": T0 + pd.Timedelta(minutes=end_min),
        }
        for est in ("ipw", "stratified")[:estimators]
    ]


def frame(*cells) -> pd.DataFrame:
    return pd.DataFrame([row for c in cells for row in c])


def test_wall_time_is_the_union_of_the_cells_intervals_and_gaps_split_sittings():
    data = frame(
        cell("a", "lr", 0, 10),  # two workers: a and b overlap by 5 minutes
        cell("b", "nn", 5, 20),
        cell("c", "nn", 25, 30),  # a 5-minute idle stretch: the same sitting, not counted
        cell("d", "lr", 25, 26, train=0.0),  # a twin: copied rows, no cell time
        cell("e", "nn", 300, 330),  # the next day's sitting
        cell("f", "nn", 40, 45, status="failed"),  # failed cells are not counted
    )
    t = grid_time(data)
    assert t["cells"] == 5 and t["fitted"] == 4
    assert t["cell_seconds"] == pytest.approx(60 * (10 + 15 + 5 + 30))
    assert t["wall_seconds"] == pytest.approx(60 * (20 + 5 + 30))
    assert t["sittings"] == 2 and t["hosts"] == ["h1"]
    assert (t["first"], t["last"]) == (T0, T0 + pd.Timedelta(minutes=330))
    per = model_times(data).set_index("model")
    assert per.loc["nn", "cells"] == 3 and per.loc["lr", "cells"] == 1
    assert per.loc["nn", "mean_s"] == pytest.approx(60 * 50 / 3) and per["share"].sum() == pytest.approx(1.0)


def test_rows_without_cell_times_give_no_time_and_no_section():
    data = frame(cell("a", "lr", 0, 10)).drop(columns=["started_at"])
    assert grid_time(data) is None and time_section(data) == []


def test_the_report_section_states_both_times_per_corpus():
    data = frame(cell("a", "lr", 0, 90), cell("b", "nn", 30, 100), cell("c", "nn", 0, 2, corpus="blogs", train=0.0))
    text = to_markdown(time_section(data))
    assert "## Time" in text and "### twitter" in text
    assert "**2 h 40 min of cell time**" in text and "**1 h 40 min of wall time while cells ran**" in text
    assert "in 1 sitting " in text and "### blogs" not in text  # blogs has only a twin: nothing fitted

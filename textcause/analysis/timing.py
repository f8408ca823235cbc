"""What a grid cost in time, from its own rows: cell time, wall time while cells ran, sittings.

Every result row of a benchmark cell carries the cell's ``started_at`` and ``finished_at`` (the
worker's clock) and its ``train_seconds`` and ``eval_seconds``; a twin cell, whose rows were copied
from the cell it repeats, has zero for both (nothing was fitted). From these alone, whatever machines
and sittings the grid took (a grid carried between machines by ``textcause results export|import``
keeps them), :func:`grid_time` gives:

* **cell time**: the sum of the fitted cells' own durations (finish - start), what the grid would
  take on one worker;
* **wall time while cells ran**: the length of the union of all cells' [start, finish] intervals, so
  pauses and the gaps between sittings do not count, and several workers at once count once;
* **sittings**: runs of cells separated by more than ``gap`` seconds with none running.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = [
    "GAP_SECONDS",
    "grid_time",
    "model_times",
]

#: A stretch this long with no cell running separates two sittings.
GAP_SECONDS = 1800.0
_NEEDED = ("cell_id", "started_at", "finished_at")


def _cells(data: pd.DataFrame) -> pd.DataFrame:
    """One row per finished cell with its clock times, ``seconds`` (finish - start) and ``fitted``."""
    if any(c not in data for c in _NEEDED):
        return pd.DataFrame(columns=[*_NEEDED, "model", "seconds", "fitted"])
    rows = data[data["status"] == "ok"] if "status" in data else data
    cells = rows.dropna(subset=["started_at", "finished_at"]).drop_duplicates("cell_id").copy()
    cells["started_at"] = pd.to_datetime(cells["started_at"])
    cells["finished_at"] = pd.to_datetime(cells["finished_at"])
    cells["seconds"] = (cells["finished_at"] - cells["started_at"]).dt.total_seconds()
    spent = cells.get("train_seconds", pd.Series(0.0, index=cells.index)).fillna(0.0)
    spent = spent + cells.get("eval_seconds", pd.Series(0.0, index=cells.index)).fillna(0.0)
    cells["fitted"] = spent > 0  # a twin's copied rows have zero: nothing was fitted for it
    return cells


def grid_time(data: pd.DataFrame, *, gap: float = GAP_SECONDS) -> dict[str, Any] | None:
    """Cell time, wall time while cells ran and sittings of the finished cells in ``data`` (None: no
    row carries the cells' times, e.g. a CSV export without them).

    >>> t0 = pd.Timestamp("2026-12-07 10:00")
    >>> rows = pd.DataFrame({"cell_id": ["a", "b", "c"], "train_seconds": [50.0, 50.0, 20.0],
    ...     "started_at": [t0, t0 + pd.Timedelta(minutes=1), t0 + pd.Timedelta(hours=5)],
    ...     "finished_at": [t0 + pd.Timedelta(minutes=2), t0 + pd.Timedelta(minutes=3), t0 + pd.Timedelta(hours=5, minutes=1)]})
    >>> t = grid_time(rows)
    >>> t["cell_seconds"], t["wall_seconds"], t["sittings"]
    (300.0, 240.0, 2)
    """
    cells = _cells(data)
    if cells.empty:
        return None
    fitted = cells[cells["fitted"]]
    spans = sorted(zip(cells["started_at"], cells["finished_at"]))
    wall, sittings = 0.0, 1
    start, end = spans[0]
    for s, e in spans[1:]:
        if s > end:
            wall += (end - start).total_seconds()
            sittings += (s - end).total_seconds() > gap
            start, end = s, e
        else:
            end = max(end, e)
    wall += (end - start).total_seconds()
    hosts = sorted(set(cells["host"].dropna().astype(str))) if "host" in cells else []
    return {
        "cells": len(cells),
        "fitted": len(fitted),
        "cell_seconds": float(fitted["seconds"].sum()),
        "wall_seconds": wall,
        "sittings": int(sittings),
        "first": cells["started_at"].min(),
        "last": cells["finished_at"].max(),
        "hosts": hosts,
    }


def model_times(data: pd.DataFrame) -> pd.DataFrame:
    """Per model: fitted cells, their mean and median seconds and the model's share of the cell time."""
    cells = _cells(data)
    fitted = cells[cells["fitted"]]
    if fitted.empty or "model" not in fitted:
        return pd.DataFrame(columns=["model", "cells", "mean_s", "median_s", "share"])
    out = fitted.groupby("model")["seconds"].agg(cells="size", mean_s="mean", median_s="median", total="sum")
    out["share"] = out["total"] / out["total"].sum()
    return out.drop(columns="total").reset_index().sort_values("share", ascending=False, ignore_index=True)

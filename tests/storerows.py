"""Result rows as older versions of textcause wrote them, for the store's migration tests."""

from __future__ import annotations

from typing import Any


def weld_row(tag: str, task: str, values: dict[str, Any]) -> dict[str, Any]:
    """A ``results`` row of the grid ``weld`` on Twitter: the oracle on level 1 of ``task``, seed 0, its
    cell id naming the task ``tag``; ``values`` adds the estimator's columns."""
    cell = {"cell_id": f"weld/twitter/{tag}-1/oracle/s0", "grid": "weld", "status": "ok", "model": "oracle"}
    return {**cell, "corpus": "twitter", "task": task, "level": 1, "seed": 0, **values}

"""How long a grid still needs, from what its finished cells of the same model took.

A grid's cells differ in cost by three orders of magnitude (an oracle row in under a second, a tuned
network on the blogs for minutes, the first cell of an encoder for half an hour), and the order in
which workers take them is not random (a resumed run takes up where the last one stopped). The rate
of the cells finished so far then says little about the rest: a blog grid that began with its
bigram networks showed an ETA of 37 h at 42 cells, where this estimate gave about 10 h
(``benchmarks/eta_replay.py`` replays a finished grid to compare both with the truth).

:func:`remaining_work` estimates each unfinished cell by the median time of the finished cells of
its model on its corpus (then its model on any corpus of the grid, then every finished cell), counts
a cell whose twin (:func:`~textcause.grid.cell.twins`) has finished, or is fitted in its stead, as
free, takes the time a running cell has already spent off its estimate, and spreads the sum over the
workers. Times are the ledger's (``started_at`` to ``finished_at`` of cells that finished ``ok``).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from textcause.grid.cell import Cell, draw_key

__all__ = [
    "RemainingWork",
    "draw_keys",
    "remaining_work",
]


@dataclass(frozen=True)
class RemainingWork:
    """What :func:`remaining_work` found.

    Attributes:
        cell_seconds: the estimated cell time still to run, summed over the unfinished cells.
        seconds: the wall time that makes with ``workers`` workers (no less than the longest single cell left).
        fits: unfinished cells that need a fit of their own (the others are twins of one).
        unknown: fits with no finished cell to estimate them from: all of them while no cell has
            finished (``seconds`` is then None), else none.
    """

    cell_seconds: float
    seconds: float | None
    fits: int
    unknown: int


def _duration(row: Any) -> float | None:
    """A finished cell's seconds from its ledger row (None without both times)."""
    start, end = getattr(row, "started_at", None), getattr(row, "finished_at", None)
    if not isinstance(start, datetime) or not isinstance(end, datetime):
        return None
    return max(0.0, (end - start).total_seconds())


def draw_keys(cells: Sequence[Cell]) -> dict[str, Any]:
    """Each cell's :func:`~textcause.grid.cell.draw_key` by cell id (a cell without one is its own draw).

    About half a millisecond a cell: compute it once for a grid's repeated :func:`remaining_work`.
    """
    return {c.cell_id: draw_key(c) or ("cell", c.cell_id) for c in cells}


def remaining_work(
    cells: Sequence[Cell],
    rows: Mapping[str, Any],
    *,
    workers: int,
    now: datetime,
    is_done: Any = None,
    keys: Mapping[str, Any] | None = None,
) -> RemainingWork:
    """Estimate the time the unfinished ``cells`` still need.

    Args:
        cells: the grid's cells.
        rows: the grid's ledger rows by cell id (:func:`textcause.store.ledger`).
        workers: how many cells run at once (at least 1).
        now: the ledger's clock now (:func:`textcause.store.utcnow`), for the running cells' time so far.
        is_done: ``is_done(row) -> bool`` for a cell that needs no run (default: status ``ok`` or ``failed``).
        keys: :func:`draw_keys` of ``cells``, if already computed.

    Returns:
        The :class:`RemainingWork`.
    """
    done = is_done or (lambda row: row is not None and row.status in ("ok", "failed"))
    keys = draw_keys(cells) if keys is None else keys
    # what each fit took: one time per draw (a twin's copy takes no time; the fit's is the group's longest)
    took: dict[Any, tuple[Cell, float]] = {}
    for c in cells:
        row = rows.get(c.cell_id)
        seconds = _duration(row) if row is not None and row.status == "ok" else None
        if seconds is not None and (keys[c.cell_id] not in took or seconds > took[keys[c.cell_id]][1]):
            took[keys[c.cell_id]] = (c, seconds)
    by_pair: dict[tuple[str, str], list[float]] = {}
    by_model: dict[str, list[float]] = {}
    for c, seconds in took.values():
        by_pair.setdefault((c.corpus, c.model), []).append(seconds)
        by_model.setdefault(c.model, []).append(seconds)
    everything = [s for _, s in took.values()]

    def estimate(c: Cell) -> float | None:
        for found in (by_pair.get((c.corpus, c.model)), by_model.get(c.model), everything):
            if found:
                return float(statistics.median(found))
        return None

    finished_draws = {
        keys[c.cell_id] for c in cells if rows.get(c.cell_id) is not None and rows[c.cell_id].status == "ok"
    }
    counted: set[Any] = set()
    total, longest, fits, unknown = 0.0, 0.0, 0, 0
    # running cells first: a draw being fitted is counted once, with its time so far taken off
    order = sorted(cells, key=lambda c: getattr(rows.get(c.cell_id), "status", None) != "running")
    for c in order:
        row = rows.get(c.cell_id)
        key = keys[c.cell_id]
        if done(row) or key in finished_draws or key in counted:
            continue
        counted.add(key)
        fits += 1
        guess = estimate(c)
        if guess is None:
            unknown += 1
            continue
        if row is not None and row.status == "running" and isinstance(row.started_at, datetime):
            guess = max(0.0, guess - max(0.0, (now - row.started_at).total_seconds()))
        total += guess
        longest = max(longest, guess)
    seconds = None if fits and unknown == fits else max(total / max(1, workers), longest)
    return RemainingWork(cell_seconds=total, seconds=seconds, fits=fits, unknown=unknown)

"""The claim ledger of a benchmark grid: who runs which cell, and what each cell finished with.

A worker claims a cell by inserting its ``cells`` row, or by swapping the row's ``token``
(compare-and-swap), so two workers never hold the same cell. A cell's result rows and its status are
written in one transaction, guarded by the claim's token (:func:`finish_cell`): they appear all
together or not at all, and a worker whose claim was taken over (it was presumed dead) writes nothing.

A cell's failure budget is its own errors: a cell that raises is recorded ``failed`` at once (a
seeded run fails the same way again; ``--retry-failed`` runs it anew). An attempt whose worker was
killed by a signal or lost (no heartbeat) is not the cell's fault and never counts: the next worker
takes the cell over, however often that happens (:func:`claim_decision`).
"""

from __future__ import annotations

import math
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from textcause.store.db import reading, utcnow
from textcause.store.tables import cells, results

__all__ = [
    "ClaimLost",
    "Claimant",
    "Progress",
    "cell_rows",
    "claim_decision",
    "finish_cell",
    "forget_cells",
    "ledger",
    "progress",
    "try_claim",
]


class ClaimLost(RuntimeError):
    """The cell was taken over by another worker (this one was presumed dead): nothing was written."""


@dataclass(frozen=True)
class Claimant:
    """Who claims a cell: the host and process, and the Optuna trial running it."""

    host: str
    pid: int
    trial_id: int | None = None

    @classmethod
    def current(cls, trial_id: int | None = None) -> Claimant:
        return cls(host=socket.gethostname(), pid=os.getpid(), trial_id=trial_id)


def ledger(engine: sa.Engine, grid: str) -> dict[str, Any]:
    """Every ``cells`` row of ``grid``, by cell id."""
    with reading(engine) as conn:
        rows = conn.execute(sa.select(cells).where(cells.c.grid == grid)).all()
    return {r.cell_id: r for r in rows}


def try_claim(
    engine: sa.Engine, cell_id: str, grid: str, config_hash: str, claimant: Claimant, *, previous: Any | None
) -> str | None:
    """Claim a cell: insert its row (``previous is None``) or take over ``previous`` by its token.

    Args:
        engine: the results database.
        cell_id: the cell's id.
        grid: its grid's name.
        config_hash: its config hash.
        claimant: who claims it.
        previous: the cell's ``cells`` row as last read (None: there was none).

    Returns:
        The new claim token, or None when another worker changed the row first.
    """
    token = uuid.uuid4().hex
    values = dict(
        status="running",
        token=token,
        host=claimant.host,
        pid=claimant.pid,
        trial_id=claimant.trial_id,
        started_at=utcnow(),
        finished_at=None,
        error=None,
        config_hash=config_hash,
    )
    try:
        with engine.begin() as conn:
            if previous is None:
                conn.execute(sa.insert(cells).values(cell_id=cell_id, grid=grid, attempts=1, **values))
                return token
            done = conn.execute(  # the row as read: its claim and its status (a holder may have finished since)
                sa.update(cells)
                .where(cells.c.cell_id == cell_id, cells.c.token == previous.token, cells.c.status == previous.status)
                .values(attempts=cells.c.attempts + 1, **values)
            )
            return token if done.rowcount == 1 else None
    except sa.exc.IntegrityError:  # another worker inserted the row first
        return None


def claim_decision(row: Any, *, alive: Callable[[Any], bool], retry_failed: bool, since: datetime) -> str:
    """What a worker does with a cell, given its ledger row (None: no row yet).

    A ``running`` row whose worker is dead (killed by a signal, or lost: its heartbeat stopped) is
    taken over, however many attempts died before: a kill is not the cell's fault, and only the
    cell's own error (recorded as ``failed`` by the worker that saw it) ends it as failed.

    Args:
        row: the cell's ``cells`` row.
        alive: whether the worker holding a ``running`` row is alive.
        retry_failed: run again cells that failed before ``since``.
        since: when this run started.

    Returns:
        ``run`` (claim it and run it), ``skip`` (finished) or ``wait`` (a live worker holds it).
    """
    if row is None:
        return "run"
    if row.status == "ok":
        return "skip"
    if row.status == "failed":
        retry = retry_failed and (row.finished_at is None or row.finished_at < since)
        return "run" if retry else "skip"
    return "wait" if alive(row) else "run"


def _clean(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int, datetime)):
        return value
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def finish_cell(
    engine: sa.Engine,
    cell_id: str,
    token: str,
    *,
    status: str,
    rows: Sequence[Mapping[str, Any]],
    error: str | None = None,
) -> None:
    """Record a cell's outcome: its result rows and its ledger status, in one transaction.

    Earlier rows of the cell (a failed attempt being retried) are replaced.

    Raises:
        ValueError: if ``status`` is not ``ok`` or ``failed``.
        ClaimLost: if the claim ``token`` no longer holds the cell (nothing is written).
    """
    if status not in ("ok", "failed"):
        raise ValueError(f"The 'status' parameter of finish_cell must be 'ok' or 'failed'. Got {status!r} instead.")
    names = set(results.c.keys()) - {"id"}
    clean = [{k: _clean(r.get(k)) for k in names} for r in rows]
    with engine.begin() as conn:
        done = conn.execute(
            sa.update(cells)
            .where(cells.c.cell_id == cell_id, cells.c.token == token, cells.c.status == "running")
            .values(status=status, finished_at=utcnow(), error=error)
        )
        if done.rowcount != 1:
            raise ClaimLost(f"Cell {cell_id!r} was taken over by another worker; its results were not written.")
        conn.execute(sa.delete(results).where(results.c.cell_id == cell_id))
        if clean:
            conn.execute(sa.insert(results), clean)


def forget_cells(engine: sa.Engine, grid: str, cell_ids: Sequence[str]) -> int:
    """Delete finished cells of ``grid`` (their ledger rows and result rows), so that they run again.

    For cells whose configuration changed since they ran (``textcause benchmark --rerun-changed``):
    their old rows describe a configuration the grid no longer has, so they go, in one transaction,
    rather than stay readable beside the new ones. Only ``ok`` and ``failed`` cells are deleted; a
    ``running`` cell is left to its worker.

    Returns:
        The number of cells deleted.
    """
    ids = list(dict.fromkeys(cell_ids))
    if not ids:
        return 0
    with engine.begin() as conn:
        found = [
            r.cell_id
            for r in conn.execute(
                sa.select(cells.c.cell_id).where(
                    cells.c.grid == grid, cells.c.cell_id.in_(ids), cells.c.status.in_(("ok", "failed"))
                )
            )
        ]
        if found:
            conn.execute(sa.delete(results).where(results.c.cell_id.in_(found)))
            conn.execute(sa.delete(cells).where(cells.c.cell_id.in_(found)))
    return len(found)


def cell_rows(engine: sa.Engine, cell_id: str) -> list[dict[str, Any]]:
    """The stored result rows of one cell (every column but the row id), in estimator order of storage."""
    with reading(engine) as conn:
        found = conn.execute(sa.select(results).where(results.c.cell_id == cell_id).order_by(results.c.id)).all()
    return [{k: v for k, v in r._mapping.items() if k != "id"} for r in found]


# ---------------------------------------------------------------------------------------- reading
@dataclass(frozen=True)
class Progress:
    """Counts of a grid's cells in the ledger (``*_since``: finished at or after a given time)."""

    total: int
    ok: int
    failed: int
    running: int
    ok_since: int = 0
    failed_since: int = 0

    def describe(
        self, name: str, elapsed: float, *, retry_failed: bool = False, eta: float | None | str = "rate"
    ) -> str:
        """``smoke: 40/98 cells done (2 failed, 2 running), elapsed 0:01:02, ETA 0:01:30``.

        With ``retry_failed``, cells that failed before this run count as not done. ``eta``: the
        seconds left as the caller estimated them (None: unknown, said as ``?``), or ``"rate"``: the
        remaining cells take as long as those finished in this run.
        """
        failed = self.failed_since if retry_failed else self.failed
        done = self.ok + failed
        finished = self.ok_since + self.failed_since
        remaining = self.total - done
        if remaining <= 0:
            eta_text = _clock(0)
        elif eta != "rate":
            eta_text = "?" if eta is None or isinstance(eta, str) else _clock(eta)
        elif finished == 0:
            eta_text = "?"
        else:
            eta_text = _clock(elapsed / finished * remaining)
        return (
            f"{name}: {done}/{self.total} cells done ({failed} failed, {self.running} running), "
            f"elapsed {_clock(elapsed)}, ETA {eta_text}"
        )


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def progress(
    engine: sa.Engine,
    grid: str,
    cell_ids: Iterable[str],
    since: datetime | None = None,
    *,
    rows: Mapping[str, Any] | None = None,
) -> Progress:
    """How many of ``cell_ids`` are ok, failed and running, and how many finished since ``since``
    (from ``rows``, the grid's :func:`ledger` as just read, when given)."""
    wanted = set(cell_ids)
    found = [r for r in (ledger(engine, grid) if rows is None else rows).values() if r.cell_id in wanted]

    def recent(r: Any) -> bool:
        return since is not None and r.finished_at is not None and r.finished_at >= since

    return Progress(
        total=len(wanted),
        ok=sum(r.status == "ok" for r in found),
        failed=sum(r.status == "failed" for r in found),
        running=sum(r.status == "running" for r in found),
        ok_since=sum(r.status == "ok" and recent(r) for r in found),
        failed_since=sum(r.status == "failed" and recent(r) for r in found),
    )

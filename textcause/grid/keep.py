"""A running grid's archive kept current: ``textcause benchmark --archive FILE``.

With ``--archive``, the run first adds the archive's cells to the store (those it lacks;
:func:`textcause.store.archive.import_grid`), then rewrites the archive with the grid's finished
cells as they come in, at most once every :data:`ARCHIVE_EVERY` seconds and once at the end
(:func:`textcause.store.archive.export_grid`: a temporary file, then a rename). A machine that
keeps nothing but the archive (a git checkout, a job's output folder) goes on where the last
rewrite left it by running the same command.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from textcause.store.archive import ArchiveSummary, check_archive_path, export_grid, import_grid
from textcause.store.db import reading
from textcause.store.tables import cells

__all__ = [
    "ARCHIVE_EVERY",
    "GridArchive",
]

#: The fewest seconds between two rewrites of a running grid's archive.
ARCHIVE_EVERY = 60.0


class GridArchive:
    """The archive file of one grid in one store, restored once and rewritten as cells finish.

    Args:
        path: the archive (``*.jsonl.gz``).
        engine: the grid's store.
        grid: the grid's name.
        every: the fewest seconds between two rewrites (the last one is always written).
        stream: where a failed rewrite is said (default ``sys.stderr``).
    """

    def __init__(self, path: str | Path, engine: Any, grid: str, *, every: float = ARCHIVE_EVERY, stream: Any = None):
        check_archive_path(path)  # a bad name or folder is said before any cell runs
        self.path, self.engine, self.grid, self.every = Path(path), engine, grid, every
        self.stream = stream or sys.stderr
        self.written: Any = None  # the ledger's fingerprint at the last rewrite (None: none yet)
        self.last = float("-inf")

    def restore(self) -> ArchiveSummary | None:
        """Add the archive's cells the store lacks (None when there is no archive yet)."""
        if not self.path.exists():
            return None
        return import_grid(self.engine, self.path, grid=self.grid)

    def _fingerprint(self) -> Any:
        """What changes whenever a cell of the grid finishes, is retried or is forgotten."""
        finished = cells.c.status.in_(("ok", "failed"))
        query = sa.select(
            sa.func.count(),
            sa.func.max(cells.c.finished_at),
            sa.func.sum(sa.case((cells.c.status == "ok", 1), else_=0)),
        )
        with reading(self.engine) as conn:  # no write lock: the workers never wait for it
            return tuple(conn.execute(query.where(cells.c.grid == self.grid, finished)).one())

    def update(self, *, final: bool = False) -> ArchiveSummary | None:
        """Rewrite the archive if ``every`` seconds have passed since the last rewrite and a cell of the
        grid finished, was retried or was forgotten since (``final``: at once, whatever changed). A failed
        rewrite is said on ``stream`` and the grid goes on: the store still holds every cell.

        Returns:
            What was written, or None.
        """
        now = time.monotonic()
        if not final and now - self.last < self.every:
            return None
        try:
            mark = self._fingerprint()
            if mark == self.written and not final:
                self.last = now
                return None
            summary = export_grid(self.engine, self.grid, self.path)
        except Exception as err:  # whatever failed, the grid goes on and says so
            print(
                f"warning: the archive '{self.path}' was not rewritten ({type(err).__name__}: {err}); the grid goes on.",
                file=self.stream,
                flush=True,
            )
            self.last = now
            return None
        self.written, self.last = mark, now
        return summary

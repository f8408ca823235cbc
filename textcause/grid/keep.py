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

from textcause.store.archive import ArchiveSummary, export_grid, import_grid

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
        self.path, self.engine, self.grid, self.every = Path(path), engine, grid, every
        self.stream = stream or sys.stderr
        self.written: int | None = None  # finished cells at the last rewrite (None: none yet)
        self.last = float("-inf")

    def restore(self) -> ArchiveSummary | None:
        """Add the archive's cells the store lacks (None when there is no archive yet)."""
        if not self.path.exists():
            return None
        return import_grid(self.engine, self.path, grid=self.grid)

    def update(self, finished: int, *, final: bool = False) -> ArchiveSummary | None:
        """Rewrite the archive if ``finished`` (the grid's ok + failed cells) moved since the last
        rewrite and ``every`` seconds have passed (``final``: whatever the time). A failed rewrite is
        said on ``stream`` and the grid goes on: the store still holds every cell.

        Returns:
            What was written, or None.
        """
        now = time.monotonic()
        if finished == self.written or (not final and now - self.last < self.every):
            return None
        try:
            summary = export_grid(self.engine, self.grid, self.path)
        except (OSError, ValueError) as err:
            print(f"warning: the archive '{self.path}' was not rewritten ({err}); the grid goes on.", file=self.stream)
            self.last = now
            return None
        self.written, self.last = finished, now
        return summary

"""A grid's finished cells as one portable file: :func:`export_grid` and :func:`import_grid`.

A benchmark grid's results live in its store (:func:`textcause.store.open_store`). To carry them
to another machine, to keep them with a paper, or to go on with a grid in a later sitting on a
machine that keeps nothing but a git checkout, export the grid's finished cells (their ``cells``
ledger rows and ``results`` rows) to a gzipped JSON-lines archive; import it into any store and
rerun the same ``textcause benchmark`` command: the imported cells count as done, and only the
rest run.

The archive is a header line (the format, its version, the grid, the row counts) followed by one
line per row (``{"table": "cells", ...}`` or ``{"table": "results", ...}``), sorted by cell and
estimator, gzipped with no timestamp, so the same cells always give the same bytes. It is written to
a temporary file and renamed, and verified when read: a damaged or cut file (gzip's checksum, the
header's counts), rows of another grid, a column this version does not know, or a result row
without its cell is refused in one sentence, and nothing is imported. Columns renamed since the
archive was written (:data:`textcause.metrics.schema.RENAMED_COLUMNS`) take their new names, as in a
migrated store; columns added since then read empty.

Only finished cells travel (``ok`` and ``failed``): a ``running`` cell belongs to a worker that may
still write it. Run folders (checkpoints, logs) stay where they are; every figure and table of
``textcause report`` reads the store only.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from textcause.metrics.schema import AD_COLUMNS, AD_ESTIMATORS, RENAMED_COLUMNS
from textcause.store.db import open_store, reading
from textcause.store.tables import cells, results

__all__ = [
    "FORMAT",
    "VERSION",
    "ArchiveSummary",
    "export_grid",
    "grids_in",
    "import_grid",
    "read_archive",
]

#: The ``format`` of an archive's header line.
FORMAT = "textcause-grid-archive"
#: The archive layout this version writes and reads.
VERSION = 1
#: The ledger states an archive holds.
FINISHED = ("ok", "failed")

_TABLES = {"cells": cells, "results": results}
#: Columns a row of each table cannot do without.
_REQUIRED = {
    "cells": ("cell_id", "grid", "status", "token", "attempts"),
    "results": ("cell_id", "grid", "status", "estimator"),
}


@dataclass(frozen=True)
class ArchiveSummary:
    """What an export wrote or an import did.

    Attributes:
        grid: the grid's name.
        path: the archive file.
        cells: the cells written (export) or added to the store (import).
        results: their result rows.
        skipped: (import) cells of the archive that the store already held, left as they were.
        renamed: (import) old column names of the archive that were read under their new names.
    """

    grid: str
    path: str
    cells: int
    results: int
    skipped: int = 0
    renamed: tuple[str, ...] = ()

    def describe(self, verb: str) -> str:
        """One line: ``weld: 412 cells (1,648 result rows) exported to FILE``."""
        line = f"{self.grid}: {self.cells:,} cells ({self.results:,} result rows) {verb} {self.path}"
        if self.skipped:
            line += f"; {self.skipped:,} cells already in the store were left as they were"
        return line


def _engine(source: str | sa.Engine, *, create: bool) -> tuple[sa.Engine, bool]:
    if isinstance(source, sa.Engine):
        return source, False
    return open_store(source, create=create), True


def grids_in(source: str | sa.Engine) -> list[str]:
    """The names of the grids with finished cells in a store, sorted."""
    engine, own = _engine(source, create=False)
    try:
        with reading(engine) as conn:
            found = conn.execute(sa.select(cells.c.grid).where(cells.c.status.in_(FINISHED)).distinct()).scalars()
            return sorted(found)
    finally:
        if own:
            engine.dispose()


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def export_grid(source: str | sa.Engine, grid: str, path: str | os.PathLike[str]) -> ArchiveSummary:
    """Write the finished cells of ``grid`` in the store ``source`` to the archive ``path``.

    >>> import tempfile, os
    >>> store = open_store("sqlite://")
    >>> folder = tempfile.mkdtemp()
    >>> export_grid(store, "smoke", os.path.join(folder, "smoke.jsonl.gz")).cells  # an empty grid
    0

    Raises:
        ValueError: ``path`` does not end in ``.jsonl.gz``, or its folder cannot be written.
    """
    path = Path(path)
    if not path.name.endswith(".jsonl.gz"):
        raise ValueError(f"A grid archive is a gzipped JSON-lines file: name it '*.jsonl.gz'. Got '{path}'.")
    engine, own = _engine(source, create=True)  # an older store is migrated first, as every reader does
    try:
        with reading(engine) as conn:
            cell_rows = [
                dict(r._mapping)
                for r in conn.execute(
                    sa.select(cells).where(cells.c.grid == grid, cells.c.status.in_(FINISHED)).order_by(cells.c.cell_id)
                )
            ]
            ids = {r["cell_id"] for r in cell_rows}
            result_rows = [
                {k: v for k, v in r._mapping.items() if k != "id"}
                for r in conn.execute(
                    sa.select(results)
                    .where(results.c.grid == grid)
                    .order_by(results.c.cell_id, results.c.estimator, results.c.id)
                )
                if r.cell_id in ids
            ]
    finally:
        if own:
            engine.dispose()
    header = {"format": FORMAT, "version": VERSION, "grid": grid, "cells": len(cell_rows), "results": len(result_rows)}
    lines = [header] + [{"table": "cells", **r} for r in cell_rows] + [{"table": "results", **r} for r in result_rows]
    _write_atomically(path, lines)
    return ArchiveSummary(grid=grid, path=str(path), cells=len(cell_rows), results=len(result_rows))


def _write_atomically(path: Path, lines: list[dict[str, Any]]) -> None:
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as err:
        raise ValueError(f"Cannot write the archive '{path}': {err.strerror or err}.") from None
    try:
        with os.fdopen(handle, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
            for line in lines:
                out.write(json.dumps({k: _plain(v) for k, v in line.items()}, sort_keys=True).encode() + b"\n")
            out.close()
            raw.flush()
            os.fsync(raw.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # as an ordinary new file (mkstemp's is private)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        with gzip.open(path, "rb") as stream:
            for number, raw in enumerate(stream, start=1):
                try:
                    line = json.loads(raw)
                except json.JSONDecodeError:
                    raise ValueError(
                        f"Line {number} of the archive '{path}' is not JSON: the file is damaged."
                    ) from None
                if not isinstance(line, dict):
                    raise ValueError(
                        f"Line {number} of the archive '{path}' is not a JSON object: the file is damaged."
                    )
                yield number, line
    except FileNotFoundError:
        raise ValueError(f"The archive '{path}' does not exist.") from None
    except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as err:
        raise ValueError(f"The archive '{path}' is damaged or cut short ({err}): export it again.") from None


def _column_types(table: sa.Table) -> dict[str, Any]:
    return {c.name: c.type for c in table.c if c.name != "id"}


def _revive(row: dict[str, Any], types: dict[str, Any]) -> dict[str, Any]:
    for name, value in row.items():
        if isinstance(value, str) and isinstance(types[name], sa.DateTime):
            row[name] = datetime.fromisoformat(value)
    return row


def read_archive(
    path: str | os.PathLike[str],
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """An archive's header, cell rows and result rows, verified (see the module); and the old column
    names it used.

    Raises:
        ValueError: one sentence naming what is wrong with the file.
    """
    path = Path(path)
    lines = _read_lines(path)
    first = next(lines, None)
    if first is None:
        raise ValueError(f"The archive '{path}' is empty: export it again.")
    header = first[1]
    if header.get("format") != FORMAT:
        raise ValueError(f"'{path}' is not a textcause grid archive (its first line names no format {FORMAT!r}).")
    if header.get("version") != VERSION:
        raise ValueError(
            f"The archive '{path}' has layout version {header.get('version')!r}; this textcause reads version "
            f"{VERSION}: import it with the textcause that wrote it."
        )
    grid = header.get("grid")
    rows: dict[str, list[dict[str, Any]]] = {"cells": [], "results": []}
    renamed: set[str] = set()
    for number, line in lines:
        table = line.pop("table", None)
        if table not in _TABLES:
            raise ValueError(f"Line {number} of the archive '{path}' names no table 'cells' or 'results'.")
        if line.get("grid") != grid:
            raise ValueError(
                f"Line {number} of the archive '{path}' belongs to grid {line.get('grid')!r}, not to its grid {grid!r}."
            )
        if table == "results":
            for old in [k for k in line if k in RENAMED_COLUMNS]:
                renamed.add(old)
                value = line.pop(old)
                line.setdefault(RENAMED_COLUMNS[old], value)
        types = _column_types(_TABLES[table])
        unknown = sorted(set(line) - set(types))
        if unknown:
            raise ValueError(
                f"Line {number} of the archive '{path}' has columns this textcause does not know ({unknown}): "
                "it was written by a newer version; import it with that one."
            )
        missing = [name for name in _REQUIRED[table] if line.get(name) is None]
        if missing:
            raise ValueError(f"Line {number} of the archive '{path}' lacks {missing}: the file is damaged.")
        if table == "cells" and line["status"] not in FINISHED:
            raise ValueError(
                f"Line {number} of the archive '{path}' is a cell with status {line['status']!r}; an archive holds "
                "finished cells only ('ok' or 'failed')."
            )
        rows[table].append(_revive(line, types))
    if (len(rows["cells"]), len(rows["results"])) != (header.get("cells"), header.get("results")):
        raise ValueError(
            f"The archive '{path}' holds {len(rows['cells'])} cells and {len(rows['results'])} result rows where its "
            f"header says {header.get('cells')} and {header.get('results')}: the file is damaged."
        )
    ids = {r["cell_id"] for r in rows["cells"]}
    orphans = sorted({r["cell_id"] for r in rows["results"]} - ids)
    if orphans:
        raise ValueError(f"The archive '{path}' has result rows of cells it does not hold (e.g. {orphans[0]!r}).")
    if renamed:  # as a migrated store: the Arbour-Dimmery interval stays on the IPW rows only
        for r in rows["results"]:
            if r.get("estimator") not in AD_ESTIMATORS:
                for name in AD_COLUMNS:
                    r[name] = None
    return header, rows["cells"], rows["results"], sorted(renamed)


def import_grid(target: str | sa.Engine, path: str | os.PathLike[str], *, grid: str | None = None) -> ArchiveSummary:
    """Add the cells of the archive ``path`` to the store ``target`` (a SQLAlchemy URL or engine).

    Cells the store already holds (finished or running) are left as they are; the others are added
    with their result rows, all in one transaction. A later ``textcause benchmark`` run of the same
    grid counts them as done, or as changed if its configuration moved on since they ran.

    Args:
        target: the store.
        path: the archive.
        grid: the grid the archive must hold (None: any).

    Raises:
        ValueError: a damaged archive or one of another version (see :func:`read_archive`), an
            archive of another grid than ``grid``, or a store that cannot be written.
    """
    header, cell_rows, result_rows, renamed = read_archive(path)
    if grid is not None and header["grid"] != grid:
        raise ValueError(f"The archive '{path}' holds the cells of grid {header['grid']!r}, not of grid {grid!r}.")
    engine, own = _engine(target, create=True)
    try:
        with engine.begin() as conn:
            have = set(conn.execute(sa.select(cells.c.cell_id).where(cells.c.grid == header["grid"])).scalars())
            new_cells = [r for r in cell_rows if r["cell_id"] not in have]
            new_ids = {r["cell_id"] for r in new_cells}
            new_results = [r for r in result_rows if r["cell_id"] in new_ids]
            for table, rows in ((cells, new_cells), (results, new_results)):
                if rows:
                    columns = _column_types(table)
                    conn.execute(sa.insert(table), [{k: r.get(k) for k in columns} for r in rows])
    finally:
        if own:
            engine.dispose()
    return ArchiveSummary(
        grid=header["grid"],
        path=str(path),
        cells=len(new_cells),
        results=len(new_results),
        skipped=len(cell_rows) - len(new_cells),
        renamed=tuple(renamed),
    )

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
import math
import os
import tempfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from textcause.metrics.schema import AD_COLUMNS, AD_ESTIMATORS, RENAMED_COLUMNS
from textcause.store.db import open_store, read_only_engine, reading
from textcause.store.tables import cells, results

__all__ = [
    "FORMAT",
    "VERSION",
    "ArchiveSummary",
    "check_archive_path",
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
        replaced: (import) of ``cells``, those the store held as failed or running.
        renamed: (import) old column names of the archive that were read under their new names.
    """

    grid: str
    path: str
    cells: int
    results: int
    skipped: int = 0
    renamed: tuple[str, ...] = ()
    replaced: int = 0

    def describe(self, verb: str) -> str:
        """One line: ``weld: 412 cells (1,648 result rows) exported to FILE``."""
        line = f"{self.grid}: {self.cells:,} cells ({self.results:,} result rows) {verb} {self.path}"
        if self.replaced:
            line += f" ({self.replaced:,} of them finished there where the store had them failed or running)"
        if self.skipped:
            line += f"; {self.skipped:,} cells already in the store were left as they were"
        return line


def _reader(source: str | sa.Engine) -> tuple[sa.Engine, bool]:
    """An engine that reads ``source`` and writes nothing (no tables made, no migration, no lock)."""
    if isinstance(source, sa.Engine):
        return source, False
    return read_only_engine(source), True


def _reflected(conn: sa.Connection) -> tuple[sa.Table, sa.Table]:
    """The store's ``cells`` and ``results`` tables as they are on disk (an older store's column names
    included: :func:`read_archive` renames them)."""
    meta = sa.MetaData()
    try:
        return sa.Table("cells", meta, autoload_with=conn), sa.Table("results", meta, autoload_with=conn)
    except sa.exc.NoSuchTableError:
        raise ValueError("The store has no 'cells' and 'results' tables: no benchmark grid ever wrote to it.") from None


def grids_in(source: str | sa.Engine) -> list[str]:
    """The names of the grids with finished cells in a store, sorted."""
    engine, own = _reader(source)
    try:
        with reading(engine) as conn:
            cell_table, _ = _reflected(conn)
            query = sa.select(cell_table.c.grid).where(cell_table.c.status.in_(FINISHED)).distinct()
            return sorted(conn.execute(query).scalars())
    finally:
        if own:
            engine.dispose()


def _plain(value: Any) -> Any:
    """A value as JSON holds it: datetimes in ISO 8601, non-finite floats as strings (strict JSON)."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # 'inf', '-inf', 'nan'
    return value


def _read_grid(engine: sa.Engine, grid: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The finished cells of ``grid`` and their result rows, read as one consistent picture.

    Both reads are one read-only transaction (:func:`textcause.store.db.reading`: on SQLite a
    deferred ``BEGIN``, which takes no write lock and, in WAL mode, sees one snapshot). Where a
    transaction does not pin one (PostgreSQL's READ COMMITTED), the ledger is read first, then the
    result rows: a cell's rows and its status are committed together
    (:func:`textcause.store.ledger.finish_cell`), so every cell read as finished has its rows by
    then, and a cell retried or forgotten between the two reads (its rows then disagree with its
    status) makes the whole read start again.
    """
    for _ in range(5):
        with reading(engine) as conn:
            cell_table, result_table = _reflected(conn)
            cell_rows = [
                dict(r._mapping)
                for r in conn.execute(
                    sa.select(cell_table).where(cell_table.c.grid == grid, cell_table.c.status.in_(FINISHED))
                )
            ]
            status = {r["cell_id"]: r["status"] for r in cell_rows}
            result_rows = [
                {k: v for k, v in r._mapping.items() if k != "id"}
                for r in conn.execute(sa.select(result_table).where(result_table.c.grid == grid))
                if r.cell_id in status
            ]
        has_rows = {r["cell_id"] for r in result_rows}
        agree = all(r.get("status") == status[r["cell_id"]] for r in result_rows)
        if agree and all(c in has_rows for c, st in status.items() if st == "ok"):
            cell_rows.sort(key=lambda r: str(r["cell_id"]))
            result_rows.sort(key=lambda r: (str(r["cell_id"]), str(r.get("estimator"))))
            return cell_rows, result_rows
        time.sleep(0.2)
    raise ValueError(f"The cells of grid '{grid}' kept changing while they were read: export them again.")


def export_grid(source: str | sa.Engine, grid: str, path: str | os.PathLike[str]) -> ArchiveSummary:
    """Write the finished cells of ``grid`` in the store ``source`` to the archive ``path``.

    The store is only read: an older store's columns are written under their old names and take
    their new ones when the archive is read (:func:`read_archive`).

    >>> import tempfile, os
    >>> store = open_store("sqlite://")
    >>> folder = tempfile.mkdtemp()
    >>> export_grid(store, "smoke", os.path.join(folder, "smoke.jsonl.gz")).cells  # an empty grid
    0

    Raises:
        ValueError: ``path`` does not end in ``.jsonl.gz`` or cannot be written, or the store holds no
            grid tables.
    """
    path = Path(path)
    check_archive_path(path)
    engine, own = _reader(source)
    try:
        cell_rows, result_rows = _read_grid(engine, grid)
    finally:
        if own:
            engine.dispose()
    header = {"format": FORMAT, "version": VERSION, "grid": grid, "cells": len(cell_rows), "results": len(result_rows)}
    lines = [header] + [{"table": "cells", **r} for r in cell_rows] + [{"table": "results", **r} for r in result_rows]
    _write_atomically(path, lines)
    return ArchiveSummary(grid=grid, path=str(path), cells=len(cell_rows), results=len(result_rows))


def check_archive_path(path: str | os.PathLike[str]) -> None:
    """Refuse, in one sentence, an archive path that is not ``*.jsonl.gz``, is a folder, or lies in a
    folder that cannot be made or written."""
    path = Path(path)
    if not path.name.endswith(".jsonl.gz"):
        raise ValueError(f"A grid archive is a gzipped JSON-lines file: name it '*.jsonl.gz'. Got '{path}'.")
    if path.is_dir():
        raise ValueError(f"The archive '{path}' is a folder: give a file name ending in '.jsonl.gz'.")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"Cannot make the archive's folder '{path.parent}': {err.strerror or err}.") from None
    if not os.access(path.parent, os.W_OK):
        raise ValueError(f"Cannot write the archive '{path}': its folder is not writable.")


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
                out.write(
                    json.dumps({k: _plain(v) for k, v in line.items()}, sort_keys=True, allow_nan=False).encode()
                    + b"\n"
                )
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
                except (json.JSONDecodeError, UnicodeDecodeError):
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
    except (IsADirectoryError, PermissionError) as err:
        raise ValueError(f"Cannot read the archive '{path}': {err.strerror or err}.") from None
    except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as err:
        raise ValueError(f"The archive '{path}' is damaged or cut short ({err}): export it again.") from None


def _column_types(table: sa.Table) -> dict[str, Any]:
    return {c.name: c.type for c in table.c if c.name != "id"}


def _revive(row: dict[str, Any], types: dict[str, Any], where: str) -> dict[str, Any]:
    """JSON values back in their column's type: ISO datetimes, non-finite floats written as strings."""
    for name, value in row.items():
        kind = types[name]
        if isinstance(value, str) and isinstance(kind, sa.DateTime):
            try:
                row[name] = datetime.fromisoformat(value)
            except ValueError:
                raise ValueError(f"{where} has {value!r} in '{name}', which is not a date and time.") from None
        elif isinstance(value, str) and isinstance(kind, sa.Float) and value in ("inf", "-inf", "nan"):
            row[name] = float(value)
        elif value is not None and isinstance(kind, (sa.DateTime, sa.Float, sa.Integer)) and isinstance(value, str):
            raise ValueError(f"{where} has the text {value!r} in the number or time column '{name}'.")
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
    if not isinstance(grid, str) or not grid:
        raise ValueError(f"The archive '{path}' names no grid in its first line: the file is damaged.")
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
                if line.get(RENAMED_COLUMNS[old]) is None:  # as a migrated store: a non-empty new value wins
                    line[RENAMED_COLUMNS[old]] = value
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
        rows[table].append(_revive(line, types, f"Line {number} of the archive '{path}'"))
    if (len(rows["cells"]), len(rows["results"])) != (header.get("cells"), header.get("results")):
        raise ValueError(
            f"The archive '{path}' holds {len(rows['cells'])} cells and {len(rows['results'])} result rows where its "
            f"header says {header.get('cells')} and {header.get('results')}: the file is damaged."
        )
    ids = {r["cell_id"] for r in rows["cells"]}
    pairs = {(r["cell_id"], r["estimator"]) for r in rows["results"]}
    if len(ids) < len(rows["cells"]) or len(pairs) < len(rows["results"]):
        raise ValueError(f"The archive '{path}' holds a cell, or a cell's estimator, twice: the file is damaged.")
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

    A cell the store lacks is added with its result rows; a cell the archive holds as ``ok`` replaces
    the store's ``failed`` or ``running`` one (a live worker of a replaced running cell then writes
    nothing: its claim is gone, :func:`textcause.store.ledger.finish_cell`); every other cell the
    store holds is left as it is. All in one transaction. A later ``textcause benchmark`` run of the
    same grid counts the imported cells as done, or as changed if its configuration moved on since.

    Args:
        target: the store.
        path: the archive.
        grid: the grid the archive must hold (None: any).

    Raises:
        ValueError: a damaged archive or one of another version (see :func:`read_archive`), an
            archive of another grid than ``grid``, a store that cannot be written, or another process
            adding the same cells at the same moment (run the import again).
    """
    header, cell_rows, result_rows, renamed = read_archive(path)
    if grid is not None and header["grid"] != grid:
        raise ValueError(f"The archive '{path}' holds the cells of grid {header['grid']!r}, not of grid {grid!r}.")
    engine, own = _engine(target)
    try:
        with engine.begin() as conn:
            have = dict(
                conn.execute(sa.select(cells.c.cell_id, cells.c.status).where(cells.c.grid == header["grid"])).all()
            )
            replace = {
                r["cell_id"]
                for r in cell_rows
                if r["status"] == "ok" and have.get(r["cell_id"]) in ("failed", "running")
            }
            new_cells = [r for r in cell_rows if r["cell_id"] not in have or r["cell_id"] in replace]
            new_ids = {r["cell_id"] for r in new_cells}
            new_results = [r for r in result_rows if r["cell_id"] in new_ids]
            if replace:
                conn.execute(sa.delete(results).where(results.c.cell_id.in_(sorted(replace))))
                conn.execute(sa.delete(cells).where(cells.c.cell_id.in_(sorted(replace))))
            for table, rows in ((cells, new_cells), (results, new_results)):
                if rows:
                    columns = _column_types(table)
                    conn.execute(sa.insert(table), [{k: r.get(k) for k in columns} for r in rows])
    except sa.exc.IntegrityError:
        raise ValueError(
            f"Another process added cells of grid {header['grid']!r} to the store while '{path}' was imported; "
            "nothing was imported: run the import again."
        ) from None
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
        replaced=len(replace),
    )


def _engine(target: str | sa.Engine) -> tuple[sa.Engine, bool]:
    if isinstance(target, sa.Engine):
        return target, False
    return open_store(target), True

"""``textcause results``: carry a grid's finished cells between stores as one file.

    textcause results export --db runs/benchmark/weld/results.db --grid weld --out weld.jsonl.gz
    textcause results import weld.jsonl.gz --db runs/benchmark/weld/results.db

An export writes the grid's finished cells (ledger and result rows) to a gzipped JSON-lines archive;
an import adds the cells a store does not hold yet. Rerun the grid's ``textcause benchmark``
command after an import and only the missing or changed cells run (:mod:`textcause.store.archive`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from textcause.cli.parsing import CommandParser

__all__ = [
    "results_main",
    "store_url",
]


def store_url(db: str, *, must_exist: bool) -> str:
    """A SQLAlchemy URL for ``--db``: a URL as given, a file path as ``sqlite:///<absolute path>``.

    Raises:
        ValueError: ``must_exist`` and the SQLite file is not there.
    """
    if "://" in db:
        if must_exist and db.startswith("sqlite:///"):
            return store_url(db.removeprefix("sqlite:///"), must_exist=True)
        return db
    path = Path(db)
    if must_exist and not path.is_file():
        raise ValueError(f"The results database '{db}' does not exist: give the --db a grid wrote to.")
    return f"sqlite:///{path.resolve()}"


def build_parser() -> CommandParser:
    """The ``textcause results`` arguments (sub-commands ``export`` and ``import``)."""
    parser = CommandParser(prog="textcause results", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="{export,import}")
    out = verbs.add_parser("export", help="write a grid's finished cells to an archive")
    out.add_argument("--db", required=True, help="the results store: a SQLite file or a SQLAlchemy URL")
    out.add_argument("--grid", default=None, help="the grid to export (default: the store's only grid)")
    out.add_argument("--out", required=True, help="the archive to write (*.jsonl.gz)")
    into = verbs.add_parser("import", help="add an archive's cells to a store")
    into.add_argument("archive", help="a file written by `textcause results export`")
    into.add_argument(
        "--db", required=True, help="the results store: a SQLite file or a SQLAlchemy URL (made if missing)"
    )
    return parser


def results_main(argv: Sequence[str]) -> int:
    """The ``textcause results`` command; returns the exit code."""
    args = build_parser().parse_args(list(argv))
    from textcause.cli.errors import command

    return command(
        lambda: _export(args.db, args.grid, args.out) if args.verb == "export" else _import(args.archive, args.db)
    )


def _export(db: str, grid: str | None, out: str) -> int:
    from textcause.store.archive import export_grid, grids_in

    url = store_url(db, must_exist=True)
    found = grids_in(url)
    if grid is None and len(found) != 1:
        held = f"finished cells of the grids {found}" if found else "no finished cells"
        raise ValueError(f"The store '{db}' holds {held}: name one with --grid.")
    if grid is not None and grid not in found:
        raise ValueError(f"The store '{db}' has no finished cells of grid '{grid}' (it has finished cells of {found}).")
    summary = export_grid(url, grid or found[0], out)
    print(summary.describe("exported to"))
    return 0


def _import(archive: str, db: str) -> int:
    from textcause.store.archive import import_grid

    summary = import_grid(store_url(db, must_exist=False), archive)
    print(summary.describe("imported from"))
    if summary.renamed:
        print(f"  columns read under their new names: {', '.join(summary.renamed)}")
    return 0


if __name__ == "__main__":
    sys.exit(results_main(sys.argv[1:]))

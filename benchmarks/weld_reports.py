#!/usr/bin/env python
"""Regenerate the weld grids' committed reports from the committed archives, in one command.

    python benchmarks/weld_reports.py                       # every weld report, agreement and matrix
    python benchmarks/weld_reports.py --only weld-blogs     # one report (the agreement table comes with blogs)
    python benchmarks/weld_reports.py --check               # only say how many cells each grid has

Each archive (what ``make weld`` and the other weld grids carry between sittings, in
``benchmarks/archive/``) is imported into a throwaway SQLite store (``textcause results import``),
so the pages are built from exactly the cells committed beside them, never from a store that has
moved on. Each report folder under ``docs/reports/`` gets the report's figures (PNG and SVG),
``report.md`` and ``seed_summary.csv`` (not ``report.html``: the documentation site renders the
Markdown); ``docs/reports/weld-blogs/agreement.md`` gets appendix G's agreement table
(``benchmarks/corpus_table.py --agreement``). A report whose grid is not whole gets a banner that
says how many of the grid's cells it holds: the count is of the cells that the grid's config and
its 20-seed references (``weld_*_seeds20.yaml``) define and the archive holds finished with the
config's own hash, so a cell run under an older config does not count. The findings matrix for ``docs/results.md`` is printed last
(``benchmarks/findings_table.py --matrix`` over the weld and variant grids).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: report folder -> (archive, the grid's config, corpora kept (None: every one), the status anchor)
REPORTS: dict[str, tuple[str, str, list[str] | None, str]] = {
    "weld-twitter": ("benchmarks/archive/weld.jsonl.gz", "configs/benchmark/weld_twitter.yaml", ["twitter"], ""),
    "weld-blogs": ("benchmarks/archive/weld.jsonl.gz", "configs/benchmark/weld_blogs.yaml", ["blogs"], "blogs-status"),
    "weld-twitter-robust": (
        "benchmarks/archive/weld_robust.jsonl.gz",
        "configs/benchmark/weld_twitter_robust.yaml",
        None,
        "",
    ),
    "weld-twitter-refit": (
        "benchmarks/archive/weld_refit.jsonl.gz",
        "configs/benchmark/weld_twitter_refit.yaml",
        None,
        "",
    ),
}


def source(archive: str) -> str:
    """The report's source line: the committed archive it was built from."""
    return f"`{archive}` as committed with it, imported by `textcause results import`"


#: The 20-seed references that run beside a grid into the same store (their seeds 0-4 are its cells).
REFERENCES = {
    "configs/benchmark/weld_twitter.yaml": "configs/benchmark/weld_twitter_seeds20.yaml",
    "configs/benchmark/weld_blogs.yaml": "configs/benchmark/weld_blogs_seeds20.yaml",
    "configs/benchmark/weld_twitter_robust.yaml": "configs/benchmark/weld_twitter_robust_seeds20.yaml",
}


def done_cells(db: Path, config: str) -> tuple[int, int, int, int]:
    """Finished cells of ``config`` in ``db`` (with the config's hash) and the cells it defines, then the
    same for the cells its 20-seed references add (their seeds 5-19)."""
    from textcause.grid.spec import load_grid

    main = {c.cell_id: c.config_hash for c in load_grid(ROOT / config).cells}
    extra: dict[str, str] = {}
    if config in REFERENCES:
        extra = {c.cell_id: c.config_hash for c in load_grid(ROOT / REFERENCES[config]).cells if c.cell_id not in main}
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
        done = dict(con.execute("select cell_id, config_hash from cells where status = 'ok'").fetchall())

    def count(cells: dict[str, str]) -> int:
        return sum(done.get(cell) == digest for cell, digest in cells.items())

    return count(main), len(main), count(extra), len(extra)


def write_one(db: Path, name: str, out: Path, counts: tuple[int, int, int, int], today: str) -> None:
    """Write the report folder ``out`` from ``db``: figures, report.md, seed_summary.csv."""
    from textcause.reports.report import write_report

    archive, config, corpora, anchor = REPORTS[name]
    with tempfile.TemporaryDirectory(prefix=f"{name}-") as tmp:
        write_report(str(db), tmp, corpora=corpora, formats=("png", "svg"))
        built = Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        for old in [*out.glob("*.png"), *out.glob("*.svg"), out / "report.md", out / "seed_summary.csv"]:
            old.unlink(missing_ok=True)
        for new in [*built.glob("*.png"), *built.glob("*.svg"), built / "seed_summary.csv"]:
            shutil.copy2(new, out / new.name)
        kept = f" (corpora {', '.join(corpora)})" if corpora else ""
        lines = (built / "report.md").read_text(encoding="utf-8").splitlines()
        lines = [f"- Source: {source(archive)}{kept}" if line.startswith("- Source: ") else line for line in lines]
        done, total, extra_done, extra_total = counts
        if done < total or extra_done < extra_total:
            status = f", [status](../../results.md#{anchor})" if anchor else ""
            refs = f", and {extra_done} of the {extra_total} cells of its 20-seed references" if extra_total else ""
            banner = (
                f"> **Partial: {done} of the grid's {total} cells{refs}** ({today}, `{config}`; the rerun goes on "
                f'between sittings{status}). Findings read "no data" or "not judged" where models or '
                "seeds are still missing."
            )
            lines[1:1] = ["", banner]
        (out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_agreement(db: Path, out: Path, counts: tuple[int, int, int, int], today: str) -> None:
    """Write ``out/agreement.md``: appendix G's table, Twitter beside blogs."""
    from corpus_table import agreement

    archive = REPORTS["weld-blogs"][0]
    done, total = counts[0], counts[1]
    partial = f", with **{done} of the Blogs grid's {total} cells**: the pairs below are those both corpora have"
    head = [
        "# Appendix G: Twitter vs blogs (the weld grid" + (", partial)" if done < total else ")"),
        "",
        f"Produced by `python benchmarks/corpus_table.py --agreement` from {source(archive)} on {today}"
        + (partial + " so far." if done < total else ", both grids whole."),
        "",
    ]
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        agreement(str(db), "twitter", "blogs", ["all", "family", "task", "model"])
    (out / "agreement.md").write_text("\n".join(head) + "\n" + text.getvalue().rstrip() + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=list(REPORTS), default=list(REPORTS), metavar="REPORT")
    parser.add_argument(
        "--archives",
        default="benchmarks/archive",
        help="the folder holding the archives, by their committed names (default: %(default)s)",
    )
    parser.add_argument("--out", default="docs/reports", help="where the report folders are (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="only count each grid's cells")
    args = parser.parse_args()
    folder = Path(args.archives) if Path(args.archives).is_absolute() else ROOT / args.archives
    out = Path(args.out) if Path(args.out).is_absolute() else ROOT / args.out
    names = sorted({Path(REPORTS[name][0]).name for name in REPORTS})
    for name in names:
        if not (folder / name).is_file():
            sys.exit(f"error: no archive {name!r} in {str(folder)!r}: run its grid first (or pass --archives).")
    from textcause.store.archive import import_grid

    sys.path.insert(0, str(ROOT / "benchmarks"))
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    with tempfile.TemporaryDirectory(prefix="weld-reports-") as tmp:
        stores = {}
        for name in names:
            stores[name] = Path(tmp) / name.replace(".jsonl.gz", ".db")
            got = import_grid(f"sqlite:///{stores[name]}", folder / name)
            print(f"{name}: {got.cells:,} cells ({got.results:,} result rows) imported", file=sys.stderr)
        counts = {}
        for report, (archive, config, _, _) in REPORTS.items():
            counts[report] = done_cells(stores[Path(archive).name], config)
            done, total, extra_done, extra_total = counts[report]
            refs = f"; {extra_done} of the {extra_total} more of its 20-seed references" if extra_total else ""
            print(f"{report}: {done} of {total} cells of {config}{refs}", file=sys.stderr)
        if args.check:
            return
        for report in args.only:
            db = stores[Path(REPORTS[report][0]).name]
            write_one(db, report, out / report, counts[report], today)
            print(f"wrote {out / report}/", file=sys.stderr)
            if report == "weld-blogs":
                write_agreement(db, out / report, counts[report], today)
                print(f"wrote {out / report / 'agreement.md'}", file=sys.stderr)
        from findings_table import main as findings_main

        weld, robust = (stores[Path(REPORTS[r][0]).name] for r in ("weld-twitter", "weld-twitter-robust"))
        sys.argv = ["findings_table.py", "--db", str(weld), "--db", str(robust), "--matrix"]
        findings_main()


if __name__ == "__main__":
    main()

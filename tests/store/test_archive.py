"""``textcause results export|import``: a grid's finished cells carried between stores as one file."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from tinygrid import grid_spec, write_grid_spec

from textcause import store
from textcause.cli.benchmark import benchmark_main
from textcause.cli.main import main
from textcause.store.archive import FORMAT, export_grid, import_grid, read_archive

URL = "sqlite://"


def fake_store(url: str = URL, *, grid: str = "g", n: int = 3, running: int = 1) -> sa.Engine:
    """A store with ``n`` finished cells of ``grid`` (two result rows each) and ``running`` unfinished ones."""
    engine = store.open_store(url)
    start = store.utcnow()
    with engine.begin() as conn:
        for k in range(n + running):
            cell_id = f"{grid}/c{k}"
            status = "ok" if k < n else "running"
            conn.execute(
                sa.insert(store.cells),
                {"cell_id": cell_id, "grid": grid, "status": status, "config_hash": f"h{k}", "token": f"t{k}",
                 "attempts": 1, "host": "h", "pid": 7, "started_at": start, "finished_at": start},
            )  # fmt: skip
            for estimator in ("ipw", "stratified"):
                conn.execute(
                    sa.insert(store.results),
                    {"cell_id": cell_id, "grid": grid, "status": status, "estimator": estimator, "model": "m",
                     "seed": k, "ate": 0.1 * k + (estimator == "ipw") / 3, "true_ate": 0.4, "started_at": start,
                     "ad_low": 0.0 if estimator == "ipw" else None},
                )  # fmt: skip
    return engine


def table(engine: sa.Engine, t: sa.Table) -> list[dict]:
    with engine.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(sa.select(t))]
    return sorted(({k: v for k, v in r.items() if k != "id"} for r in rows), key=lambda r: sorted(map(str, r.items())))


def archive_lines(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        return [json.loads(line) for line in stream]


def write_lines(path: Path, lines: list[dict]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.writelines(json.dumps(line, default=str) + "\n" for line in lines)
    return path


def test_export_then_import_gives_the_same_rows_and_the_same_bytes(tmp_path):
    source = fake_store()
    summary = export_grid(source, "g", tmp_path / "g.jsonl.gz")
    assert (summary.cells, summary.results) == (3, 6)  # the running cell stays behind
    copy = store.open_store(f"sqlite:///{tmp_path / 'copy.db'}")
    assert import_grid(copy, tmp_path / "g.jsonl.gz").cells == 3
    finished = [r for r in table(source, store.cells) if r["status"] == "ok"]
    assert table(copy, store.cells) == finished  # datetimes, floats (1/3) and ints come back exactly
    assert table(copy, store.results) == [r for r in table(source, store.results) if r["status"] == "ok"]
    export_grid(copy, "g", tmp_path / "again.jsonl.gz")
    assert (tmp_path / "again.jsonl.gz").read_bytes() == (tmp_path / "g.jsonl.gz").read_bytes()
    assert oct((tmp_path / "g.jsonl.gz").stat().st_mode & 0o777) != oct(0o600)  # an ordinary file, not mkstemp's


def test_an_import_leaves_the_cells_a_store_holds_and_adds_the_rest(tmp_path):
    export_grid(fake_store(n=3, running=0), "g", tmp_path / "g.jsonl.gz")
    target = fake_store(f"sqlite:///{tmp_path / 't.db'}", n=1, running=1)  # c0 finished, c1 running here
    with target.begin() as conn:
        conn.execute(sa.update(store.results).where(store.results.c.cell_id == "g/c0").values(ate=9.0))
    summary = import_grid(target, tmp_path / "g.jsonl.gz")
    assert (summary.cells, summary.results, summary.skipped) == (1, 2, 2)
    assert "1 cells (2 result rows) imported from" in summary.describe("imported from")
    assert "2 cells already in the store were left as they were" in summary.describe("imported from")
    ledger = store.ledger(target, "g")
    assert {k: r.status for k, r in ledger.items()} == {"g/c0": "ok", "g/c1": "running", "g/c2": "ok"}
    ate = {(r["cell_id"], r["estimator"]): r["ate"] for r in table(target, store.results)}
    assert ate[("g/c0", "ipw")] == 9.0 and ate[("g/c2", "stratified")] == pytest.approx(0.2)


def test_an_archive_is_verified_before_anything_is_imported(tmp_path):
    path = tmp_path / "g.jsonl.gz"
    export_grid(fake_store(), "g", path)
    header, *rows = archive_lines(path)
    target = tmp_path / "t.db"

    def refused(lines: list[dict], message: str) -> None:
        with pytest.raises(ValueError, match=message):
            import_grid(f"sqlite:///{target}", write_lines(tmp_path / "bad.jsonl.gz", lines))
        assert not target.exists()  # the store is not even made

    refused([header, *rows[:-1]], r"holds 3 cells and 5 result rows where its header says 3 and 6: the file is damaged")
    refused([{**header, "format": "x"}, *rows], f"is not a textcause grid archive .*{FORMAT}")
    refused([{**header, "version": 9}, *rows], "has layout version 9; this textcause reads version 1")
    refused(
        [header, *rows[:-1], {**rows[-1], "nosuch": 1}],
        r"Line 10 .* columns this textcause does not know \(\['nosuch'\]\)",
    )
    refused(
        [header, *rows[:-1], {**rows[-1], "grid": "other"}], "Line 10 .* belongs to grid 'other', not to its grid 'g'"
    )
    refused([header, {**rows[0], "status": "running"}, *rows[1:]], "Line 2 .* a cell with status 'running'")
    refused([header, {**rows[0], "token": None}, *rows[1:]], r"Line 2 .* lacks \['token'\]")
    refused([header, *rows[:-1], {**rows[-1], "cell_id": "g/zz"}], "result rows of cells it does not hold")
    refused([], "is empty")
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(ValueError, match="is damaged or cut short"):
        import_grid(f"sqlite:///{target}", cut)
    with pytest.raises(ValueError, match="does not exist"):
        read_archive(tmp_path / "nosuch.jsonl.gz")
    with pytest.raises(ValueError, match=r"name it '\*.jsonl.gz'"):
        export_grid(fake_store(), "g", tmp_path / "g.json")


def test_an_archive_with_old_column_names_reads_as_a_migrated_store(tmp_path):
    path = tmp_path / "g.jsonl.gz"
    export_grid(fake_store(), "g", path)
    header, *rows = archive_lines(path)
    old = [
        {("bound_low" if k == "ad_low" else k): v for k, v in r.items()}
        | ({"bound_low": -1.0} if r["table"] == "results" else {})
        for r in rows
    ]  # every row had the IPW-centred interval under its old name, as older code wrote it
    _, _, results, renamed = read_archive(write_lines(tmp_path / "old.jsonl.gz", [header, *old]))
    assert renamed == ["bound_low"]
    assert {r["estimator"]: r["ad_low"] for r in results} == {"ipw": -1.0, "stratified": None}


def test_the_command_carries_a_grid_and_the_benchmark_resumes_from_it(tmp_path, tiny_corpus, capsys):
    spec = grid_spec(tiny_corpus, name="tiny", tasks={"linguistic_complexity": [1, 2]}, models=("oracle", "unadjusted"))
    config = write_grid_spec(tmp_path, spec)
    first, second = tmp_path / "first", tmp_path / "second"
    assert benchmark_main(["--config", str(config), "--out", str(first)]) == 0
    archive = tmp_path / "carried" / "tiny.jsonl.gz"
    assert main(["results", "export", "--db", str(first / "results.db"), "--out", str(archive)]) == 0
    assert f"tiny: 4 cells (16 result rows) exported to {archive}" in capsys.readouterr().out
    assert main(["results", "import", str(archive), "--db", str(second / "results.db")]) == 0
    assert "tiny: 4 cells (16 result rows) imported from" in capsys.readouterr().out
    assert benchmark_main(["--config", str(config), "--out", str(second), "--dry-run"]) == 0
    assert "(4 done" in capsys.readouterr().out
    before = store.ledger(store.open_store(store.default_url(second)), "tiny")
    assert benchmark_main(["--config", str(config), "--out", str(second)]) == 0  # nothing is run again
    after = store.ledger(store.open_store(store.default_url(second)), "tiny")
    assert {k: r.token for k, r in after.items()} == {k: r.token for k, r in before.items()}
    assert not (second / "runs").exists() or not any((second / "runs").iterdir())


def test_command_errors(tmp_path, capsys):
    assert main(["results", "export", "--db", str(tmp_path / "nosuch.db"), "--out", "x.jsonl.gz"]) == 2
    assert "error: The results database" in capsys.readouterr().err
    db = tmp_path / "two.db"
    fake_store(f"sqlite:///{db}", grid="a")
    fake_store(f"sqlite:///{db}", grid="b")
    assert main(["results", "export", "--db", str(db), "--out", str(tmp_path / "x.jsonl.gz")]) == 2
    assert "holds finished cells of the grids ['a', 'b']: name one with --grid." in capsys.readouterr().err
    assert main(["results", "export", "--db", str(db), "--grid", "c", "--out", str(tmp_path / "x.jsonl.gz")]) == 2
    assert "has no finished cells of grid 'c' (it has finished cells of ['a', 'b'])" in capsys.readouterr().err
    assert not (tmp_path / "x.jsonl.gz").exists()
    assert main(["results", "import", str(tmp_path / "nosuch.jsonl.gz"), "--db", str(db)]) == 2
    assert "error: The archive" in capsys.readouterr().err


def test_a_grid_run_with_an_archive_restores_from_it_and_keeps_it_current(tmp_path, tiny_corpus, capsys):
    spec = grid_spec(tiny_corpus, name="tiny", tasks={"linguistic_complexity": [1, 2]}, models=("oracle", "unadjusted"))
    config = write_grid_spec(tmp_path, spec)
    archive = tmp_path / "kept" / "tiny.jsonl.gz"
    assert benchmark_main(["--config", str(config), "--out", str(tmp_path / "a"), "--archive", str(archive)]) == 0
    assert f"tiny: 4 cells (16 result rows) kept in {archive}" in capsys.readouterr().err
    written = archive.read_bytes()
    # another machine with nothing but the archive: the same command imports it and runs nothing
    assert benchmark_main(["--config", str(config), "--out", str(tmp_path / "b"), "--archive", str(archive)]) == 0
    err = capsys.readouterr().err
    assert f"tiny: 4 cells (16 result rows) imported from {archive}" in err and "4/4 cells done" in err
    assert archive.read_bytes() == written
    assert not (tmp_path / "b" / "runs").exists() or not any((tmp_path / "b" / "runs").iterdir())
    (tmp_path / "o").mkdir()
    other = write_grid_spec(tmp_path / "o", grid_spec(tiny_corpus, name="other", tasks={"linguistic_complexity": [1]}))
    assert benchmark_main(["--config", str(other), "--out", str(tmp_path / "c"), "--archive", str(archive)]) == 2
    assert "holds the cells of grid 'tiny', not of grid 'other'" in capsys.readouterr().err


def test_the_archive_is_rewritten_when_cells_finish_at_most_once_a_period(tmp_path, monkeypatch):
    from textcause.grid.keep import GridArchive

    engine, path = fake_store(n=2, running=0), tmp_path / "g.jsonl.gz"
    keep = GridArchive(path, engine, "g", every=3600.0)
    assert keep.restore() is None  # no archive yet
    assert keep.update(2).cells == 2  # the first rewrite
    assert keep.update(3) is None and keep.update(2, final=True) is None  # too soon; nothing new
    assert keep.update(3, final=True).cells == 2  # the last one is always written
    monkeypatch.setattr("textcause.grid.keep.export_grid", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    stream = io.StringIO()
    keep.stream = stream
    assert keep.update(4, final=True) is None
    assert "warning: the archive" in stream.getvalue() and "disk full" in stream.getvalue()

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


def set_status(engine: sa.Engine, cell_id: str, status: str, **values) -> None:
    """A cell's ledger row and result rows moved to ``status`` together, as a worker's finish does."""
    with engine.begin() as conn:
        conn.execute(sa.update(store.cells).where(store.cells.c.cell_id == cell_id).values(status=status, **values))
        conn.execute(sa.update(store.results).where(store.results.c.cell_id == cell_id).values(status=status))


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


def test_an_import_adds_the_cells_a_store_lacks_and_keeps_its_finished_ones(tmp_path):
    export_grid(fake_store(n=3, running=0), "g", tmp_path / "g.jsonl.gz")
    target = fake_store(f"sqlite:///{tmp_path / 't.db'}", n=1, running=1)  # c0 finished, c1 running here
    with target.begin() as conn:
        conn.execute(sa.update(store.results).where(store.results.c.cell_id == "g/c0").values(ate=9.0))
    summary = import_grid(target, tmp_path / "g.jsonl.gz")
    assert (summary.cells, summary.results, summary.skipped, summary.replaced) == (2, 4, 1, 1)
    assert "2 cells (4 result rows) imported from" in summary.describe("imported from")
    assert "1 cells already in the store were left as they were" in summary.describe("imported from")
    ledger = store.ledger(target, "g")  # the running c1 (a dead worker's, or a live one that will write nothing)
    assert {k: r.status for k, r in ledger.items()} == {"g/c0": "ok", "g/c1": "ok", "g/c2": "ok"}
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


def test_a_sigterm_gives_the_archive_its_last_write_as_ctrl_c_does(tmp_path, tiny_corpus, capsys, monkeypatch):
    """``kill`` (or a scheduler's SIGTERM) of ``textcause benchmark`` used to end it before the archive's
    last rewrite, leaving the file behind its store; now it ends as Ctrl-C does."""
    import os
    import signal
    import time

    import textcause.grid.runner as runner
    from textcause.grid.keep import GridArchive

    class FinalOnly(GridArchive):  # no periodic rewrite: only the last one can hold the cells
        def update(self, *, final: bool = False):
            return super().update(final=True) if final else None

    real_worker, received = runner.run_worker, []

    def worker_then_killed(*args, **kwargs):
        real_worker(*args, **kwargs)  # every cell finishes in the store
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the run is stopped here, before it ends by itself
        received.append("slept through")

    monkeypatch.setattr(runner, "GridArchive", FinalOnly)
    monkeypatch.setattr(runner, "run_worker", worker_then_killed)
    spec = grid_spec(tiny_corpus, name="tiny", tasks={"linguistic_complexity": [1, 2]}, models=("oracle", "unadjusted"))
    config = write_grid_spec(tmp_path, spec)
    archive = tmp_path / "kept" / "tiny.jsonl.gz"
    recorder = lambda *a: received.append(True)  # noqa: E731 - without the fix, a failed test, not pytest's end
    previous = signal.signal(signal.SIGTERM, recorder)
    try:
        code = benchmark_main(["--config", str(config), "--out", str(tmp_path / "a"), "--archive", str(archive)])
        assert code == 143 and not received
        assert signal.getsignal(signal.SIGTERM) is recorder  # put back
    finally:
        signal.signal(signal.SIGTERM, previous)
    err = capsys.readouterr().err
    assert f"tiny: 4 cells (16 result rows) kept in {archive}" in err and "terminated (SIGTERM)" in err
    assert len(archive_lines(archive)) == 1 + 4 + 16  # the header, the cells and their rows


def test_a_sigterm_during_a_fit_in_process_stops_the_grid_and_leaves_the_cell_to_the_rerun(
    tmp_path, tiny_corpus, capsys, monkeypatch
):
    """With one worker (in the command's process), Lightning catches the SIGTERM's KeyboardInterrupt in
    its fit and exits with code 1; that is a stop, not the cell's failure: the grid ends (143), the
    cell stays claimed for the rerun, and the archive holds the cell that finished before."""
    import os
    import signal
    import time

    import lightning.pytorch as pl
    import torch

    import textcause.grid.cell as cell_module

    class Boring(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(2, 1)

        def training_step(self, batch, index):
            if index == 1:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)  # the stop comes here
                received.append("slept through")
            return self.layer(batch).sum()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    real_fit, received, calls = cell_module.fit_and_evaluate, [], []

    def fit_then_killed(settings):
        calls.append(settings)
        if len(calls) == 1:
            return real_fit(settings)  # the first cell finishes
        trainer = pl.Trainer(
            max_epochs=1,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        trainer.fit(Boring(), torch.utils.data.DataLoader(torch.randn(8, 2), batch_size=2))
        received.append("fit ended")

    monkeypatch.setattr(cell_module, "fit_and_evaluate", fit_then_killed)
    spec = grid_spec(tiny_corpus, name="tiny", tasks={"linguistic_complexity": [1, 3]}, models=("unadjusted",))
    config = write_grid_spec(tmp_path, spec)
    archive = tmp_path / "kept" / "tiny.jsonl.gz"
    recorder = lambda *a: received.append("previous handler")  # noqa: E731
    previous = signal.signal(signal.SIGTERM, recorder)
    interrupt = signal.getsignal(signal.SIGINT)
    try:
        code = benchmark_main(["--config", str(config), "--out", str(tmp_path / "a"), "--archive", str(archive)])
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, interrupt)  # Lightning ignores Ctrl-C after an interrupt, for good
    err = capsys.readouterr().err
    assert code == 143 and len(calls) == 2 and received == [], err
    assert "terminated (SIGTERM)" in err and "failed" not in err
    ledger = store.ledger(store.open_store(f"sqlite:///{tmp_path / 'a' / 'results.db'}"), "tiny")
    assert sorted(r.status for r in ledger.values()) == ["ok", "running"]  # not "failed": the rerun runs it
    assert archive_lines(archive)[0]["cells"] == 1


def test_the_archive_is_rewritten_when_the_ledger_changes_at_most_once_a_period(tmp_path, monkeypatch):
    from textcause.grid.keep import GridArchive

    engine, path = fake_store(n=2, running=1), tmp_path / "g.jsonl.gz"
    keep = GridArchive(path, engine, "g", every=3600.0)
    assert keep.restore() is None  # no archive yet
    assert keep.update().cells == 2  # the first rewrite
    set_status(engine, "g/c2", "ok")  # the running cell finishes
    assert keep.update() is None  # too soon
    assert keep.update(final=True).cells == 3  # the last one is always written
    keep.every = 0.0
    assert keep.update() is None  # nothing changed since
    set_status(engine, "g/c0", "failed")  # a cell fails, is retried and ends ok: the same count of finished cells
    assert keep.update().cells == 3
    set_status(engine, "g/c0", "ok", finished_at=store.utcnow())
    assert keep.update().cells == 3
    assert {r["cell_id"]: r["status"] for r in archive_lines(path)[1:4]}["g/c0"] == "ok"
    monkeypatch.setattr(
        "textcause.grid.keep.export_grid", lambda *a: (_ for _ in ()).throw(sa.exc.OperationalError("x", {}, "gone"))
    )
    stream = io.StringIO()
    keep.stream = stream
    assert keep.update(final=True) is None  # a database error is a warning: the grid goes on
    assert "warning: the archive" in stream.getvalue() and "OperationalError" in stream.getvalue()
    set_status(engine, "g/c1", "ok")  # a cell read as ok whose rows say otherwise: read again, then refused
    with engine.begin() as conn:
        conn.execute(sa.update(store.results).where(store.results.c.cell_id == "g/c1").values(status="failed"))
    with pytest.raises(ValueError, match="kept changing while they were read"):
        export_grid(engine, "g", tmp_path / "x.jsonl.gz")
    with pytest.raises(ValueError, match=r"name it '\*.jsonl.gz'"):
        GridArchive(tmp_path / "g.json", engine, "g")
    with pytest.raises(ValueError, match="is a folder"):
        GridArchive(tmp_path / "dir.jsonl.gz", engine, "g") if (tmp_path / "dir.jsonl.gz").mkdir() is None else None


def test_an_ok_cell_of_the_archive_replaces_a_failed_or_running_one(tmp_path):
    export_grid(fake_store(n=3, running=0), "g", tmp_path / "g.jsonl.gz")
    target = fake_store(f"sqlite:///{tmp_path / 't.db'}", n=2, running=1)  # c2 running here (a dead worker)
    set_status(target, "g/c1", "failed")
    summary = import_grid(target, tmp_path / "g.jsonl.gz")
    assert (summary.cells, summary.replaced, summary.skipped) == (2, 2, 1)
    assert "(2 of them finished there where the store had them failed or running)" in summary.describe("imported")
    assert {k: r.status for k, r in store.ledger(target, "g").items()} == {"g/c0": "ok", "g/c1": "ok", "g/c2": "ok"}
    assert len(table(target, store.results)) == 6


def test_values_keep_their_types_and_the_file_is_strict_json(tmp_path):
    engine = fake_store(n=1, running=0)
    with engine.begin() as conn:
        conn.execute(sa.update(store.results).where(store.results.c.estimator == "ipw").values(ate=float("inf")))
    path = tmp_path / "g.jsonl.gz"
    export_grid(engine, "g", path)
    assert path.read_bytes()[4:8] == b"\0\0\0\0"  # no timestamp in the gzip header

    def strict(text):
        raise AssertionError(f"not strict JSON: {text}")

    with gzip.open(path, "rt", encoding="utf-8") as stream:
        for line in stream:
            json.loads(line, parse_constant=strict)
    copy = store.open_store("sqlite://")
    import_grid(copy, path)
    back, before = table(copy, store.results), table(engine, store.results)
    assert back == before and [type(v) for r in back for v in r.values()] == [
        type(v) for r in before for v in r.values()
    ]
    assert sorted(r["ate"] for r in back)[-1] == float("inf")


def test_an_old_store_is_exported_as_it_is_and_read_under_the_new_names(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    meta = sa.MetaData()
    columns = [
        sa.Column("bound_low" if c.name == "ad_low" else c.name, c.type, primary_key=c.primary_key)
        for c in store.results.columns
    ]
    old = sa.Table("results", meta, *columns)
    store.cells.to_metadata(meta)
    engine = sa.create_engine(url)
    meta.create_all(engine)
    start = store.utcnow()
    with engine.begin() as conn:
        conn.execute(
            sa.insert(store.cells),
            {"cell_id": "g/c", "grid": "g", "status": "ok", "token": "t", "attempts": 1, "finished_at": start},
        )
        conn.execute(
            sa.insert(old),
            [
                {"cell_id": "g/c", "grid": "g", "status": "ok", "estimator": e, "bound_low": -1.0}
                for e in ("ipw", "matching")
            ],
        )
    before = (tmp_path / "old.db").read_bytes()
    assert main(["results", "export", "--db", str(tmp_path / "old.db"), "--out", str(tmp_path / "g.jsonl.gz")]) == 0
    assert (tmp_path / "old.db").read_bytes() == before  # the store was only read
    summary = import_grid(store.open_store("sqlite://"), tmp_path / "g.jsonl.gz")
    assert summary.renamed == ("bound_low",)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda h, rows: [{**h, "grid": None}, *rows], "names no grid in its first line"),
        (lambda h, rows: [{**h, "cells": 4}, *rows[:1], *rows], "holds a cell, or a cell's estimator, twice"),
        (
            lambda h, rows: [h, {**rows[0], "finished_at": "yesterday"}, *rows[1:]],
            "Line 2 .* has 'yesterday' in 'finished_at', which is not a date and time",
        ),
        (
            lambda h, rows: [h, *rows[:-1], {**rows[-1], "ate": "lots"}],
            "Line 10 .* the text 'lots' in the number or time column 'ate'",
        ),
    ],
)
def test_damaged_rows_are_named(tmp_path, edit, message):
    path = tmp_path / "g.jsonl.gz"
    export_grid(fake_store(), "g", path)
    header, *rows = archive_lines(path)
    with pytest.raises(ValueError, match=message):
        read_archive(write_lines(tmp_path / "bad.jsonl.gz", edit(header, rows)))


def test_a_line_that_is_not_utf8_is_named(tmp_path):
    bad = tmp_path / "bad.jsonl.gz"
    with gzip.open(bad, "wb") as out:
        out.write(json.dumps({"format": FORMAT, "version": 1, "grid": "g", "cells": 0, "results": 0}).encode() + b"\n")
        out.write(b"\xff\xfe{}\n")
    with pytest.raises(ValueError, match="Line 2 of the archive .* is not JSON"):
        read_archive(bad)


def test_an_export_during_a_workers_write_neither_waits_nor_sees_it(tmp_path):
    """The runner rewrites the archive while workers write: its reads take no write lock on SQLite."""
    import time

    from textcause.grid.keep import GridArchive

    engine = fake_store(f"sqlite:///{tmp_path / 's.db'}", n=2, running=0)
    keep = GridArchive(tmp_path / "g.jsonl.gz", engine, "g", every=0.0)
    with engine.begin() as writer:  # a worker's transaction (BEGIN IMMEDIATE), not yet committed
        writer.execute(
            sa.insert(store.cells),
            {"cell_id": "g/new", "grid": "g", "status": "ok", "token": "t", "attempts": 1},
        )
        writer.execute(sa.insert(store.results), {"cell_id": "g/new", "grid": "g", "status": "ok", "estimator": "ipw"})
        start = time.perf_counter()
        assert keep.update().cells == 2  # the committed cells only
        assert time.perf_counter() - start < 5
    assert keep.update().cells == 3  # committed now: the fingerprint moved

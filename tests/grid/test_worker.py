"""A benchmark worker's failure budget: a cell killed with its worker is run again, never failed."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from tinygrid import grid_spec, write_grid_spec

from textcause import store
from textcause.grid.spec import load_grid
from textcause.grid.worker import _choose, open_study, worker_loop

ROOT = Path(__file__).resolve().parents[2]


def _grid(tmp_path: Path, corpus: str) -> Path:
    return write_grid_spec(tmp_path, grid_spec(corpus, name="budget", epochs=None, n_boot=5))


def _claim_then_sigkill(url: str, cell_id: str, config_hash: str) -> int:
    """A worker process that claims the cell (taking it over from a dead holder) and is SIGKILLed."""
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(ROOT)!r})
        from textcause import store
        engine = store.open_store({url!r})
        row = store.ledger(engine, "budget").get({cell_id!r})
        assert store.try_claim(engine, {cell_id!r}, "budget", {config_hash!r}, store.Claimant.current(), previous=row)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120).returncode


def test_a_cell_killed_three_times_with_its_worker_still_runs_and_is_not_failed(tmp_path, tiny_corpus):
    """Before: the fourth worker found attempts == MAX_ATTEMPTS (3) and recorded the cell as failed."""
    grid = load_grid(_grid(tmp_path, tiny_corpus))
    url = store.default_url(tmp_path / "out")
    (cell,) = grid.cells
    open_study(grid, url, create=True)
    for _ in range(3):
        assert _claim_then_sigkill(url, cell.cell_id, cell.config_hash) == -signal.SIGKILL
    engine = store.open_store(url)
    row = store.ledger(engine, "budget")[cell.cell_id]
    assert (row.status, row.attempts) == ("running", 3)  # three attempts, each lost to a kill
    stats = worker_loop(grid, url, tmp_path / "out", since=store.utcnow())
    row = store.ledger(engine, "budget")[cell.cell_id]
    assert stats.ran == [cell.cell_id]
    assert (row.status, row.attempts, row.error, row.pid) == ("ok", 4, None, os.getpid())
    results = store.read_results(engine, "budget")
    assert set(results["status"]) == {"ok"} and set(results["attempt"]) == {4}


def test_freeze_gc_freezes_what_lives_after_the_first_cell_and_only_when_asked(tmp_path, tiny_corpus):
    import gc

    import lightning.pytorch  # noqa: F401 - a worker freezes once a cell has imported the training stack

    gc.unfreeze()
    try:
        grid = load_grid(_grid(tmp_path, tiny_corpus))
        for freeze, name in ((False, "plain"), (True, "frozen")):
            url = store.default_url(tmp_path / name)
            open_study(grid, url, create=True)
            stats = worker_loop(grid, url, tmp_path / name, since=store.utcnow(), freeze_gc=freeze)
            assert stats.ran == [grid.cells[0].cell_id]
            assert set(store.read_results(store.open_store(url), "budget")["status"]) == {"ok"}
            assert (gc.get_freeze_count() > 0) is freeze
    finally:
        gc.unfreeze()


def test_a_worker_waiting_on_a_running_twin_looks_again_soon_then_less_often(tmp_path, tiny_corpus, monkeypatch):
    """Before: a fixed 2 s sleep, so the end of a grid could wait 2 s on a twin that had just finished."""
    from textcause.grid import worker

    spec = yaml.safe_load(_grid(tmp_path, tiny_corpus).read_text(encoding="utf-8"))
    spec["tasks"] = {"linguistic_complexity": [2], "selection_strength": [1]}  # twins: one experiment
    config = tmp_path / "twins.yaml"
    config.write_text(yaml.safe_dump({**spec, "name": "budget"}), encoding="utf-8")
    grid = load_grid(config)
    url = store.default_url(tmp_path / "out")
    open_study(grid, url, create=True)
    sleeps: list[float] = []
    monkeypatch.setattr(worker, "_running", lambda row, alive: len(sleeps) < 9)  # each twin runs elsewhere
    monkeypatch.setattr(worker.store, "claim_decision", lambda row, **kw: "run" if len(sleeps) < 9 else "skip")
    monkeypatch.setattr(worker, "code_version", lambda: "test")  # no git subprocess: its wait sleeps too
    monkeypatch.setattr(worker.time, "sleep", sleeps.append)
    stats = worker_loop(grid, url, tmp_path / "out", since=store.utcnow(), poll=1.0)
    assert stats.ran == []
    assert sleeps == pytest.approx([0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.0, 1.0, 1.0])


def test_each_trial_runs_the_cell_its_worker_chose_and_a_requeued_trial_comes_first(tmp_path, tiny_corpus):
    spec = yaml.safe_load(_grid(tmp_path, tiny_corpus).read_text(encoding="utf-8"))
    spec["tasks"] = {"linguistic_complexity": [1, 2, 3]}
    (tmp_path / "budget.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    grid = load_grid(tmp_path / "budget.yaml")
    a, b, c = grid.cells
    url = store.default_url(tmp_path / "out")
    open_study(grid, url, create=True)
    study = open_study(grid, url, create=False)  # as a worker opens it
    seen = []

    def objective(trial):
        params = {name: trial.suggest_categorical(name, values) for name, values in grid.search_space.items()}
        seen.append(grid.cell_for(params).cell_id)
        return 0.0

    for chosen in (b, a):
        study.sampler.next_params = chosen.params
        study.optimize(objective, n_trials=1)
    study.enqueue_trial(c.params)  # as RetryHeartbeatStaleTrialCallback re-queues a dead worker's cell
    study.optimize(objective, n_trials=1)  # the choice is still a: the waiting trial comes first
    assert seen == [b.cell_id, a.cell_id, c.cell_id]
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 3


def test_a_worker_fits_the_first_twin_prefers_its_corpora_and_runs_long_models_first():
    from datetime import datetime, timedelta
    from types import SimpleNamespace

    def cell(corpus, model="m"):
        return SimpleNamespace(corpus=corpus, model=model)

    by_id = {"a": cell("x"), "b": cell("x"), "c": cell("y")}
    twin_ids = {"a": ("b",), "b": ("a",), "c": ()}  # a and b: one experiment under two task labels
    rng = random.Random(0)

    def picks(plan, corpora=(), rows=None, cells=by_id, twins=twin_ids):
        return {_choose(plan, cells, twins, rows or {}, set(corpora), rng) for _ in range(60)}

    assert picks({"a": "run", "b": "run", "c": "run"}) == {"a", "c"}  # b would fit a's experiment again
    assert picks({"a": "skip", "b": "run", "c": "run"}) == {"b", "c"}  # a is done: b copies its rows
    assert picks({"a": "run", "b": "run", "c": "run"}, corpora=("y",)) == {"c"}
    assert picks({"a": "run", "b": "run", "c": "skip"}, corpora=("y",)) == {"a"}

    t0 = datetime(2026, 1, 1)

    def done(seconds, start=0.0):
        began = t0 + timedelta(seconds=start)
        return SimpleNamespace(status="ok", started_at=began, finished_at=began + timedelta(seconds=seconds))

    cells = {"s1": cell("x", "slow"), "s2": cell("x", "slow"), "f1": cell("x", "fast"), "f2": cell("x", "fast")}
    cells |= {"n1": cell("x", "new")}
    lone = {c: () for c in cells}
    rows = {"s1": done(9.0), "f1": done(0.1)}
    plan = {"s1": "skip", "f1": "skip", "s2": "run", "f2": "run", "n1": "run"}
    assert picks(plan, rows=rows, cells=cells, twins=lone) == {"n1"}  # a model not timed yet goes first
    plan["n1"] = "skip"
    assert picks(plan, rows=rows, cells=cells, twins=lone) == {"s2"}  # then the one whose cells took longest
    cells |= {"s3": cell("x", "slow"), "s4": cell("x", "slow")}  # s1's twins: their rows were copies
    twins = {**lone, "s1": ("s3", "s4"), "s3": ("s1", "s4"), "s4": ("s1", "s3")}
    rows |= {"s3": done(0.001, start=9.5), "s4": done(0.001, start=9.6)}  # started after s1 finished
    plan |= {"s3": "skip", "s4": "skip"}
    assert picks(plan, rows=rows, cells=cells, twins=twins) == {"s2"}  # copies do not make "slow" look fast


def test_trials_record_their_cells_the_chosen_ones_claimed_first_and_an_enqueued_one_by_its_values(
    tmp_path, tiny_corpus, monkeypatch
):
    from optuna.trial import TrialState

    from textcause.grid import worker

    spec = yaml.safe_load(_grid(tmp_path, tiny_corpus).read_text(encoding="utf-8"))
    spec["tasks"] = {"linguistic_complexity": [1, 2, 3]}
    (tmp_path / "budget.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    grid = load_grid(tmp_path / "budget.yaml")
    url = store.default_url(tmp_path / "out")
    study = open_study(grid, url, create=True)
    study.enqueue_trial(grid.cells[2].params)  # as RetryHeartbeatStaleTrialCallback re-queues a cell
    order: list[tuple[str, int]] = []  # (what happened, how many params the trial had recorded then)
    claim = store.try_claim

    def spy(engine, cell_id, *args, **kwargs):
        trial = study._storage.get_trial(args[2].trial_id)  # args: grid, config hash, claimant
        order.append((cell_id, len(trial.params)))
        return claim(engine, cell_id, *args, **kwargs)

    monkeypatch.setattr(worker.store, "try_claim", spy)
    stats = worker_loop(grid, url, tmp_path / "out", since=store.utcnow())
    assert sorted(stats.ran) == sorted(c.cell_id for c in grid.cells)
    assert order[0] == (grid.cells[2].cell_id, len(grid.search_space))  # the enqueued trial: its values first
    assert [n for _, n in order[1:]] == [0, 0]  # the chosen cells: claimed before any value is recorded
    trials = [t for t in study.get_trials() if t.state == TrialState.COMPLETE]
    assert len(trials) == 3
    for t in trials:  # every finished trial holds its grid point and names its cell
        assert grid.cell_for(t.params).cell_id == t.user_attrs["cell_id"]

"""The grid's ETA: each unfinished cell at its model's median time, twins free, over the workers."""

from __future__ import annotations

from datetime import datetime, timedelta
from types import SimpleNamespace

import pytest

from textcause import store
from textcause.grid.eta import draw_keys, remaining_work
from textcause.grid.spec import grid_from_dict

NOW = datetime(2026, 12, 7, 12, 0, 0)


def cells(*models: str, tasks=None, corpora=("a",)):
    spec = {
        "name": "g",
        "corpora": {c: "unused.jsonl" for c in corpora},
        "tasks": tasks or {"linguistic_complexity": [1, 3, 4]},
        "models": list(models),
        "seeds": [0, 1],
    }
    return {c.cell_id: c for c in grid_from_dict(spec).cells}


def row(status: str, seconds: float | None = None, *, ago: float = 0.0) -> SimpleNamespace:
    """A ledger row: ``seconds`` long (finished) or started ``ago`` seconds before NOW (running)."""
    if status == "running":
        return SimpleNamespace(status=status, started_at=NOW - timedelta(seconds=ago), finished_at=None)
    end = NOW - timedelta(seconds=ago)
    return SimpleNamespace(status=status, started_at=end - timedelta(seconds=seconds or 0.0), finished_at=end)


def test_each_cell_left_costs_its_models_median_over_the_workers():
    grid = cells("unadjusted", "lr_unigram_binary")
    ids = sorted(grid)
    lr = [i for i in ids if "/lr_unigram_binary/" in i]
    un = [i for i in ids if "/unadjusted/" in i]
    rows = {lr[0]: row("ok", 100.0), lr[1]: row("ok", 300.0), lr[2]: row("ok", 200.0), un[0]: row("ok", 1.0)}
    work = remaining_work(list(grid.values()), rows, workers=2, now=NOW)
    # 3 lr cells at the median 200 s and 5 unadjusted at 1 s, on 2 workers
    assert (work.fits, work.unknown) == (8, 0)
    assert work.cell_seconds == pytest.approx(3 * 200 + 5 * 1)
    assert work.seconds == pytest.approx((3 * 200 + 5) / 2)
    # a running lr cell 150 s in has 50 s left; a failed cell is done (unless the caller says otherwise)
    rows[lr[3]], rows[lr[4]] = row("running", ago=150.0), row("failed", 5.0)
    work = remaining_work(list(grid.values()), rows, workers=2, now=NOW)
    assert work.cell_seconds == pytest.approx(50 + 200 + 5)
    retried = remaining_work(
        list(grid.values()), rows, workers=2, now=NOW, is_done=lambda r: r is not None and r.status == "ok"
    )
    assert retried.cell_seconds == pytest.approx(50 + 2 * 200 + 5)
    # one worker, or one long cell left: never less than that cell
    assert remaining_work(list(grid.values()), rows, workers=1, now=NOW).seconds == pytest.approx(255)
    assert remaining_work(list(grid.values()), rows, workers=100, now=NOW).seconds == pytest.approx(200)


def test_twin_levels_are_fitted_once_and_a_finished_twin_makes_its_twins_free():
    # Linguistic Complexity 2 and Sample Size 1 are the same draw (twins), Linguistic Complexity 1 is not
    grid = cells("lr_unigram_binary", tasks={"linguistic_complexity": [1, 2], "sample_size": [1]})
    keys = draw_keys(list(grid.values()))
    ids = sorted(grid)
    lc1 = [i for i in ids if "linguistic_complexity-1/" in i]
    lc2 = [i for i in ids if "linguistic_complexity-2/" in i]
    ss1 = [i for i in ids if "sample_size-1/" in i]
    assert keys[lc2[0]] == keys[ss1[0]] != keys[lc1[0]]
    rows = {lc1[0]: row("ok", 60.0)}
    work = remaining_work(list(grid.values()), rows, workers=1, now=NOW, keys=keys)
    assert work.fits == 3 and work.cell_seconds == pytest.approx(3 * 60)  # lc1 s1, and lc2 = ss1 for s0 and s1
    rows[lc2[0]] = row("ok", 90.0)  # ss1 s0 is now a copy; the copy's own time is no cell's estimate
    rows[ss1[0]] = row("ok", 0.1)
    work = remaining_work(list(grid.values()), rows, workers=1, now=NOW, keys=keys)
    assert work.fits == 2 and work.cell_seconds == pytest.approx(2 * 75)  # median of 60 and 90
    rows[ss1[1]] = row("running", ago=10.0)  # a twin being fitted: its twin is counted once, from it
    work = remaining_work(list(grid.values()), rows, workers=1, now=NOW, keys=keys)
    assert work.fits == 2 and work.cell_seconds == pytest.approx(75 + 65)


def test_a_model_not_seen_on_this_corpus_takes_its_time_elsewhere_then_any_cells():
    grid = cells("unadjusted", "lr_unigram_binary", corpora=("a", "b"))
    ids = sorted(grid)
    rows = {
        next(i for i in ids if i.startswith("g/a/") and "/lr_" in i): row("ok", 40.0),
        next(i for i in ids if i.startswith("g/b/") and "/unadjusted/" in i): row("ok", 2.0),
    }
    work = remaining_work(list(grid.values()), rows, workers=1, now=NOW)
    # lr: 11 left at 40 s (5 on a, 6 on b, from a); unadjusted: 11 left at 2 s (6 on a from b, 5 on b)
    assert work.cell_seconds == pytest.approx(11 * 40 + 11 * 2)
    lone = cells("unadjusted", "lr_unigram_binary")
    some = next(i for i in sorted(lone) if "/unadjusted/" in i)
    work = remaining_work(list(lone.values()), {some: row("ok", 3.0)}, workers=1, now=NOW)
    assert work.cell_seconds == pytest.approx(11 * 3)  # no lr cell anywhere: every finished cell's median


def test_without_a_finished_cell_the_eta_is_unknown_and_said_so():
    grid = cells("unadjusted")
    work = remaining_work(list(grid.values()), {}, workers=2, now=NOW)
    assert work.seconds is None and work.unknown == work.fits == 6
    p = store.Progress(6, 0, 0, 0)
    assert p.describe("g", 5.0, eta=work.seconds).endswith("ETA ?")
    assert p.describe("g", 5.0, eta=3725.0).endswith("ETA 1:02:05")
    assert store.Progress(6, 6, 0, 0).describe("g", 5.0, eta=None).endswith("ETA 0:00:00")

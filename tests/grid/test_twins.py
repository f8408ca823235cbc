"""Twin cells: task levels with the same spec are one experiment; a finished twin's rows are copied, exactly."""

from __future__ import annotations

from pathlib import Path

import pytest
from tinygrid import grid_spec, write_grid_spec

from textcause import store
from textcause.cli.benchmark import benchmark_main
from textcause.grid.cell import draw_key, twins
from textcause.grid.spec import grid_from_dict, load_grid
from textcause.grid.worker import run_cell

ROOT = Path(__file__).resolve().parents[2]
NUMBERS = ["ate", "ci_low", "ci_high", "bias", "true_ate", "sample_ate", "n_used", "treatment_accuracy", "spearman"]


def test_the_weld_grid_has_eleven_experiments_per_model_and_seed():
    grid = load_grid(ROOT / "configs" / "benchmark" / "weld_twitter.yaml")
    one = [c for c in grid.cells if c.model == "lr_tuned_bigram_binary" and c.seed == 0]
    assert len(one) == 14 and len({draw_key(c) for c in one}) == 11
    by_task = {c.cell_id.split("/")[2]: c for c in one}
    pairs = twins(one)
    assert {i.split("/")[2] for i in pairs[by_task["linguistic_complexity-2"].cell_id]} == {
        "selection_strength-1",
        "sample_size-1",
        "order_of_text-1",
    }
    assert pairs[by_task["linguistic_complexity-1"].cell_id] == ()  # the fixed post: another task
    assert pairs[by_task["sample_size-2"].cell_id] == ()  # half the training users
    other_seed = next(c for c in grid.cells if c.model == "lr_tuned_bigram_binary" and c.seed == 1)
    assert draw_key(other_seed) not in {draw_key(c) for c in one}


def test_another_configuration_is_another_experiment():
    base = {
        "corpora": ["twitter"],
        "models": ["oracle"],
        "tasks": {"linguistic_complexity": [2], "selection_strength": [1]},
    }
    plain = grid_from_dict(base).cells
    assert draw_key(plain[0]) == draw_key(plain[1])
    changed = grid_from_dict({**base, "model_overrides": {"oracle": {"trainer.max_epochs": 2}}}).cells
    assert draw_key(changed[0]) != draw_key(plain[0])


def test_a_twin_copies_the_rows_fitting_would_give(tmp_path, tiny_corpus):
    tasks = {"linguistic_complexity": [2], "selection_strength": [1], "order_of_text": [2]}
    spec = grid_spec(tiny_corpus, name="twins", tasks=tasks, models=["lr_unigram_binary"])
    config = write_grid_spec(tmp_path, spec)
    out = tmp_path / "out"
    assert benchmark_main(["--config", str(config), "--out", str(out)]) == 0
    df = store.read_results(store.open_store(store.default_url(out)), "twins")
    assert (df.status == "ok").all() and df.cell_id.nunique() == 3
    fitted = df[df.train_seconds > 0]
    assert set(fitted.task) in ({"linguistic_complexity", "order_of_text"}, {"selection_strength", "order_of_text"})
    copied = df[df.train_seconds == 0]
    assert len(copied) == 4 and copied.cell_id.nunique() == 1 and set(copied.eval_seconds) == {0.0}
    source = fitted[fitted.task != "order_of_text"]
    pair = copied.set_index("estimator")[NUMBERS].join(source.set_index("estimator")[NUMBERS], rsuffix="_twin")
    for col in NUMBERS:
        assert pair[col].tolist() == pair[f"{col}_twin"].tolist(), col
    assert set(copied.run) == set(source.run)  # the numbers' own run folder, where their checkpoint lives

    # the premise: fitting the copied cell itself gives the same numbers
    grid = load_grid(config)
    cell = next(c for c in grid.cells if c.cell_id == copied.cell_id.iloc[0])
    outcome = run_cell(cell, tmp_path / "refit")
    refit = {r["estimator"]: r for r in outcome.rows}
    for _, row in copied.iterrows():
        for col in NUMBERS:
            assert refit[row.estimator][col] == pytest.approx(row[col], rel=1e-9, abs=1e-12), col


def test_same_draw_groups_and_the_report_line():
    import pandas as pd

    from textcause.reports.report import _same_draw_bullets
    from textcause.simulation.tasks import list_tasks, same_draw_groups, spec_key

    assert spec_key("linguistic_complexity", 2) == spec_key("order_of_text", 1) != spec_key("order_of_text", 2)
    assert spec_key("no_such_task", 1) is None
    groups = same_draw_groups(list_tasks())
    assert groups == [
        [("linguistic_complexity", 2), ("selection_strength", 1), ("sample_size", 1), ("order_of_text", 1)]
    ]
    data = pd.DataFrame({"task": [t for t, _ in list_tasks()], "level": [lv for _, lv in list_tasks()]})
    (line,) = _same_draw_bullets(data)
    assert "11 distinct experiments among 14 task levels" in line
    assert "Linguistic Complexity 2 = Strength of Selection Effect 1 = Sample Size 1 = Order of Text 1" in line
    assert _same_draw_bullets(data[data.task == "linguistic_complexity"]) == []

"""configs/benchmark/weld_twitter_dr.yaml: the weld grid's doubly robust cells, beside (never instead of)
the propensity-only cells of configs/benchmark/weld_twitter.yaml."""

from __future__ import annotations

from textcause.grid.spec import load_grid
from textcause.paths import config_dir


def test_doubly_robust_cells_join_the_weld_grid_without_touching_its_cells():
    old = load_grid(config_dir() / "benchmark" / "weld_twitter.yaml")
    new = load_grid(config_dir() / "benchmark" / "weld_twitter_dr.yaml")
    assert new.name == old.name == "weld"
    assert len(new.cells) == 2 * 14 * 5 and len(old.cells) == 840
    assert not {c.cell_id for c in new.cells} & {c.cell_id for c in old.cells}
    assert {c.model for c in new.cells} == {"joint_pooled", "joint_lr_bigram_binary"}
    assert {c.estimators for c in new.cells} == {("ipw", "stratified", "matching", "aipw", "tmle")}
    assert {(c.n_boot, c.split) for c in new.cells} == {(1000, "test")}
    assert {c.seed for c in new.cells} == {0, 1, 2, 3, 4}
    settings = new.cells[0].run_settings("/tmp/unused")
    assert settings.evaluation.estimators == ("ipw", "stratified", "matching", "aipw", "tmle")

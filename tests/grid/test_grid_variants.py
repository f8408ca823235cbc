"""Grid variants: the same models under different data overrides, each variant a corpus of its own."""

from __future__ import annotations

import pytest

from textcause.grid.spec import grid_from_dict, load_grid
from textcause.paths import config_dir

BASE = {"name": "g", "corpora": ["twitter"], "tasks": {"placebo": [1]}, "models": ["oracle"], "seeds": [0, 1]}


def test_variants_multiply_the_cells_and_leave_a_plain_grid_as_it_was():
    plain = grid_from_dict(BASE)
    grid = grid_from_dict({**BASE, "variants": {"human": {"data.meta_filter": {"kind": "human"}}, "fixed": None}})
    assert [c.corpus for c in plain.cells] == ["twitter", "twitter"]
    assert sorted({c.corpus for c in grid.cells}) == ["twitter_fixed", "twitter_human"] and len(grid.cells) == 4
    human = [c for c in grid.cells if c.corpus == "twitter_human"]
    assert all(dict(c.overrides)["data.meta_filter"] == {"kind": "human"} and c.source == "twitter" for c in human)
    fixed = [c for c in grid.cells if c.corpus == "twitter_fixed"]
    assert [c.config_hash for c in fixed] == [c.config_hash for c in plain.cells]  # no options: the same config
    assert human[0].config_hash != plain.cells[0].config_hash
    assert grid.cell_for({"corpus": "twitter_human", "task": "placebo-1", "model": "oracle", "seed": 1}) is human[1]


@pytest.mark.parametrize("variants", [{}, {"bad name!": {}}, {"v": ["data.insertion"]}])
def test_bad_variants_are_refused(variants):
    with pytest.raises(ValueError, match="'variants' must be a non-empty mapping from variant names"):
        grid_from_dict({**BASE, "variants": variants})


def test_the_robust_twitter_grid():
    grid = load_grid(config_dir() / "benchmark" / "weld_twitter_robust.yaml")
    assert len(grid.cells) == 6 * 5 * 5 * 3
    overrides = {c.corpus: dict(c.overrides) for c in grid.cells}
    assert overrides["twitter_fixed_length"]["data.insertion"] == "replace"
    assert overrides["twitter_human"]["data.meta_filter"] == {"kind": "human"}
    assert overrides["twitter_held_out_bank"]["data.held_out_bank"] == 0.5

"""Grids that run part of the weld grid land in its database: their cells are its cells, same ids and hashes."""

from __future__ import annotations

from pathlib import Path

import pytest

from textcause.grid.spec import load_grid

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "configs" / "benchmark"


@pytest.fixture(scope="module")
def weld_twitter() -> dict[str, str]:
    return {c.cell_id: c.config_hash for c in load_grid(BENCH / "weld_twitter.yaml").cells}


def test_seed0_grid_is_the_weld_grids_first_seed(weld_twitter):
    part = load_grid(BENCH / "weld_twitter_seed0.yaml")
    cells = {c.cell_id: c.config_hash for c in part.cells}
    assert len(cells) == 14 * 12
    assert all(weld_twitter.get(cid) == h for cid, h in cells.items())
    assert {c.params["seed"] for c in part.cells} == {0}

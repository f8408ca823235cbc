"""The one-cell grids that the run-path tests build on the tiny corpus (``tiny_corpus`` fixture)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from textcause.grid.spec import grid_from_dict


def tiny_cells(
    corpus: str, models: Sequence[str], *, epochs: int = 2, evaluation: Mapping[str, Any] = {}, **extra: Any
) -> tuple[Any, ...]:
    """The cells of a grid of ``models`` on Linguistic Complexity 2, seed 1, ``epochs`` epochs, 30 bootstrap
    replicates (``evaluation`` adds to that block; ``extra`` replaces any other top-level key)."""
    spec = {
        "name": "g",
        "corpora": {"tiny": corpus},
        "tasks": {"linguistic_complexity": [2]},
        "models": list(models),
        "seeds": [1],
        "overrides": {"trainer.max_epochs": epochs},
        "evaluation": {"n_boot": 30, **evaluation},
        **extra,
    }
    return grid_from_dict(spec).cells

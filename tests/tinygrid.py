"""The small grids that the run-path tests build on the tiny corpus (``tiny_corpus`` fixture)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from textcause.grid.spec import grid_from_dict

#: The linguistic-complexity-1 task alone, the tasks most tiny grids run.
LC1 = {"linguistic_complexity": [1]}


def grid_spec(
    corpus: str,
    *,
    name: str | None = "tiny",
    tasks: Mapping[str, Sequence[int]] = LC1,
    models: Sequence[str] = ("unadjusted",),
    seeds: Sequence[int] = (0,),
    epochs: int | None = 1,
    n_boot: int = 20,
    threads: int | None = 1,
    **extra: Any,
) -> dict[str, Any]:
    """A benchmark-grid spec over the corpus ``corpus`` (named ``tiny``): ``epochs`` epochs, ``n_boot``
    bootstrap replicates; a None ``name``, ``epochs`` or ``threads`` leaves that key out, and ``extra``
    adds or replaces top-level keys (``overrides`` included)."""
    spec: dict[str, Any] = {
        "name": name,
        "corpora": {"tiny": corpus},
        "tasks": dict(tasks),
        "models": list(models),
        "seeds": list(seeds),
        "overrides": None if epochs is None else {"trainer.max_epochs": epochs},
        "evaluation": {"n_boot": n_boot},
        "threads": threads,
    }
    spec.update(extra)
    return {k: v for k, v in spec.items() if v is not None}


def write_grid_spec(folder: Path, spec: Mapping[str, Any]) -> Path:
    """Write ``spec`` to ``folder/<its name>.yaml`` and return that path."""
    path = Path(folder) / f"{spec['name']}.yaml"
    path.write_text(yaml.safe_dump(dict(spec)), encoding="utf-8")
    return path


def tiny_cells(
    corpus: str, models: Sequence[str], *, epochs: int = 2, evaluation: Mapping[str, Any] = {}, **extra: Any
) -> tuple[Any, ...]:
    """The cells of a grid of ``models`` on Linguistic Complexity 2, seed 1, ``epochs`` epochs, 30 bootstrap
    replicates (``evaluation`` adds to that block; ``extra`` replaces any other top-level key)."""
    spec = grid_spec(
        corpus,
        name="g",
        tasks={"linguistic_complexity": [2]},
        models=models,
        seeds=(1,),
        epochs=epochs,
        threads=None,
        evaluation={"n_boot": 30, **evaluation},
        **extra,
    )
    return grid_from_dict(spec).cells

"""Stage 1: a compact benchmark grid on the study's own users, run by the grid machinery.

:func:`grid_spec` writes the grid as ``textcause benchmark`` reads it (``calibration.yaml``): the
calibration corpus (the studied users' texts, :mod:`textcause.advise.inputs`), the calibration task
levels, every candidate model and method, ``seeds`` seeds, the posts per user as in the data.
:func:`run_calibration` runs it through :func:`textcause.grid.runner.run_benchmark` into the
results store (SQLite beside the output by default, or a shared PostgreSQL URL): a rerun skips the
finished cells, so a killed run resumes where it stopped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from textcause.advise._runs import default_url, run_benchmark
from textcause.advise.inputs import Prepared
from textcause.advise.spec import AdviseSpec
from textcause.io import atomic_write_text

__all__ = ["grid_spec", "load_calibration", "run_calibration"]


def grid_spec(spec: AdviseSpec, prepared: Prepared) -> dict[str, Any]:
    """The calibration grid as a benchmark config mapping (see :mod:`textcause.grid.spec`)."""
    info = prepared.info
    overrides = {
        "data.min_posts": int(info["min_posts"]),
        "data.max_posts": int(info["max_posts"]),
        **dict(spec.overrides),
        **dict(spec.calibration_overrides),
    }
    grid: dict[str, Any] = {
        "name": f"advise_{spec.name}",
        "corpora": {spec.name: str(prepared.users)},
        "tasks": {t: list(v) for t, v in spec.tasks.items()},
        "seeds": list(range(spec.seeds)),
        "overrides": overrides,
        "evaluation": {"n_boot": spec.n_boot, "split": "test", "estimators": list(spec.estimators)},
        "threads": None,
    }
    if spec.candidates:
        grid["models"] = [str(p) for _, p in spec.candidates]
    if spec.methods:
        grid["methods"] = list(spec.methods)
    per_model = {n: dict(v) for n, v in spec.model_overrides.items() if v}
    if per_model:
        grid["model_overrides"] = per_model
    if spec.tune:
        grid["tune"] = {n: {k: list(v) for k, v in space} for n, space in spec.tune.items()}
    grid.pop("threads")
    return grid


def run_calibration(
    spec: AdviseSpec, prepared: Prepared, out: Path, *, db: str | None = None, workers: int = 1
) -> tuple[str, str]:
    """Write ``calibration.yaml`` and run (or resume) it; returns ``(database URL, grid name)``.

    Finished cells are reused while their configuration holds; a cell whose candidate's model YAML,
    options or evaluation changed since it ran is run again (``rerun_changed``), as the estimate
    stage refits a changed model.

    Raises:
        ValueError: a cell that cannot run (checked before any cell runs).
    """
    grid = grid_spec(spec, prepared)
    path = out / "calibration.yaml"
    text = "# Written by textcause advise: the calibration grid (textcause benchmark --config <this>)\n"
    text += yaml.safe_dump(grid, sort_keys=False)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        atomic_write_text(path, text)
    url = db or default_url(out)
    run_benchmark(path, db=url, out=out / "calibration", workers=workers, rerun_changed=True)
    return url, grid["name"]


def load_calibration(url: str, grid: str) -> pd.DataFrame:
    """The calibration grid's result rows (normalised: :func:`textcause.analysis.frame.load_results`)."""
    from textcause.analysis.frame import load_results

    return load_results(url, grid=grid)

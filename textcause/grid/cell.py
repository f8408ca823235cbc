"""One cell of a grid: its identity, its settings on the one run path, and running a model-config cell.

A :class:`Cell` is one (corpus, task, level, model, seed) of a benchmark grid (or of
:func:`textcause.evaluate`). :meth:`Cell.run_settings` turns it into the
:class:`~textcause.run.fit.RunSettings` of :func:`~textcause.run.fit.fit_and_evaluate`;
:func:`run_config_cell` runs it and returns a :class:`CellOutcome` (the rows the results store
keeps). Method cells are run by :mod:`textcause.grid.method_cell`; a cell with a search space is tuned on
its validation split first (:mod:`textcause.grid.tuning`).

Twin cells: task levels whose :class:`~textcause.simulation.tasks.TaskSpec` is the same (the paper's
Linguistic Complexity 2, Strength of Selection 1, Sample Size 1 and Order of Text 1 all insert one
sickness post with the standard probabilities) draw the same task under the same seed, because every
draw comes from the seed and the spec alone (:mod:`textcause.simulation.generate`). With the same
model config (the same config hash) such cells give identical rows, so :func:`draw_key` groups them
and a worker copies a finished twin's rows (:func:`twin_rows`) instead of fitting again: the Twitter
weld grid has 11 distinct experiments per model and seed, not 14.
"""

from __future__ import annotations

import gc
import io
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textcause import store
from textcause.estimators.registry import DEFAULT_ESTIMATORS
from textcause.grid.tuning import fit_tuned
from textcause.interrupts import interrupt_behind
from textcause.paths import PROJECT_ROOT
from textcause.run.fit import EvaluationSettings, RunSettings, captured, fit_and_evaluate
from textcause.simulation.tasks import spec_key

__all__ = [
    "GC_GROWTH_BYTES",
    "Cell",
    "CellOutcome",
    "cell_meta",
    "code_version",
    "draw_key",
    "release_memory",
    "rss_bytes",
    "run_config_cell",
    "twin_rows",
    "twins",
]


@dataclass(frozen=True)
class Cell:
    """One fit + evaluation of the grid.

    Attributes:
        grid: the grid's name.
        corpus: the corpus name used in ids and tables.
        source: what ``--data.corpus`` receives (a short name or a path).
        task, level: the semi-synthetic task.
        model: the model config's name (``lr_bigram_binary``).
        model_path: the model config file.
        seed: the task and training seed.
        overrides: train.py options as ``(dotted key, value)`` pairs, grid-wide first.
        n_boot, split, estimators: evaluation settings (an effect method's cell has its own
            estimator label as its only estimator).
        config_hash: content key of everything above except the cell's own coordinates.
        method: for a method cell, its ``"package.module:Name"`` spec (None: a model config cell).
        effect_n_boot: bootstrap resamples re-running an effect method that gives no interval (0: none).
        search: options tuned on the cell's validation split before it is evaluated
            (:mod:`textcause.grid.tuning`; empty: none), as ``((dotted key, (value, ...)), ...)``.
        refit_reps: replicates of the refitting interval (:mod:`textcause.run.refitting`; 0: none).
    """

    grid: str
    corpus: str
    source: str
    task: str
    level: int
    model: str
    model_path: Path
    seed: int
    overrides: tuple[tuple[str, Any], ...] = ()
    n_boot: int = 1000
    split: str = "test"
    estimators: tuple[str, ...] = DEFAULT_ESTIMATORS
    config_hash: str = ""
    method: str | None = None
    effect_n_boot: int = 0
    search: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    refit_reps: int = 0

    @property
    def cell_id(self) -> str:
        """``<grid>/<corpus>/<task>-<level>/<model>/s<seed>``: unique in a results database."""
        return f"{self.grid}/{self.corpus}/{self.task}-{self.level}/{self.model}/s{self.seed}"

    @property
    def params(self) -> dict[str, Any]:
        """The cell's coordinates as Optuna grid parameters."""
        return {"corpus": self.corpus, "task": f"{self.task}-{self.level}", "model": self.model, "seed": self.seed}

    @property
    def result_estimators(self) -> tuple[str, ...]:
        """The ``estimator`` values of this cell's result rows (``unadjusted`` always comes first)."""
        return ("unadjusted",) + tuple(e for e in self.estimators if e != "unadjusted")

    def run_settings(self, run_dir: str | Path) -> RunSettings:
        """The cell on the one run path: its model config, overrides and coordinates, its outputs under ``run_dir``."""
        overrides = {
            **dict(self.overrides),
            "data.corpus": self.source,
            "data.task": self.task,
            "data.level": self.level,
            "seed_everything": self.seed,
        }
        evaluation = EvaluationSettings(
            n_boot=self.n_boot, split=self.split, estimators=self.estimators, seed=self.seed, refit_reps=self.refit_reps
        )
        return RunSettings(
            configs=(self.model_path,), overrides=overrides, run_dir=Path(run_dir), evaluation=evaluation, quiet=True
        )


@dataclass
class CellOutcome:
    """What running a cell gives: the rows to store and how the cell went."""

    status: str
    rows: list[dict[str, Any]]
    error: str | None = None
    seconds: float = 0.0


def code_version() -> str:
    """``git describe --always --dirty`` of the checkout, else the installed package's version."""
    try:
        out = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        if out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"textcause-{version('textcause')}"
    except PackageNotFoundError:
        return "textcause-unknown"


def cell_meta(
    cell: Cell, *, version: str, attempt: int, started: Any, train_s: float | None, eval_s: float | None
) -> dict[str, Any]:
    """The store columns every row of a cell carries (who ran it, when, how long)."""
    return {
        "cell_id": cell.cell_id,
        "grid": cell.grid,
        "model": cell.model,
        "config_hash": cell.config_hash,
        "code_version": version,
        "n_boot": cell.n_boot,
        "attempt": attempt,
        "host": socket.gethostname(),
        "started_at": started,
        "finished_at": store.utcnow(),
        "train_seconds": train_s,
        "eval_seconds": eval_s,
        "corpus": cell.corpus,
        "task": cell.task,
        "level": cell.level,
        "seed": cell.seed,
        "split": cell.split,
    }


#: A cell that trained nothing collects garbage only when the process grew by this much since the last collection.
GC_GROWTH_BYTES = 256 * 2**20
_last_collected_rss: list[int] = [0]


def rss_bytes() -> int | None:
    """The process's resident memory (``/proc/self/statm``; None where there is none)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def release_memory(*, trained: bool = True) -> None:
    """Drop the tasks and features built in this process (GBs for token tables; a shuffled grid rarely
    reuses them), so a long-lived worker does not grow from cell to cell.

    ``gc.collect()`` frees what a Trainer run leaves in reference cycles (models, loaders, callbacks
    holding the features); it costs about 0.4 s in a process with Lightning loaded, so after a cell that
    trained nothing (``trained=False``) it runs only when the process grew by :data:`GC_GROWTH_BYTES`
    since the last collection (or its size cannot be read); Python's own collector runs meanwhile.
    """
    from textcause.data.build import clear_built

    clear_built()
    rss = rss_bytes()
    if trained or rss is None or rss > _last_collected_rss[0] + GC_GROWTH_BYTES:
        gc.collect()
        _last_collected_rss[0] = rss_bytes() or 0


def run_config_cell(cell: Cell, out_dir: str | Path, *, version: str = "", attempt: int = 1) -> CellOutcome:
    """Fit and evaluate a model-config cell in-process; its output goes to ``<out>/runs/<cell_id>/cell.log``.

    Never raises for a cell's own error: it comes back as ``status='failed'`` with one row per
    planned estimator carrying the error. A stop is re-raised: it is not the cell's fault, and a
    rerun runs the cell again. That is Lightning's ``SIGTERMException`` (a worker told to stop), and
    a Ctrl-C or :class:`~textcause.interrupts.Terminated` (the command's SIGTERM) that Lightning's fit
    turned into ``sys.exit(1)``, or that anything else raised an error while handling
    (:func:`~textcause.interrupts.interrupt_behind`): its ``KeyboardInterrupt`` is raised again.
    """
    run_dir = Path(out_dir) / "runs" / cell.cell_id
    shutil.rmtree(run_dir, ignore_errors=True)  # a previous attempt's checkpoints must not be picked up
    run_dir.mkdir(parents=True)
    started, t0 = store.utcnow(), time.perf_counter()
    train_s = eval_s = None
    rows: list[dict[str, Any]] = []
    error = None
    trained = True
    log = io.StringIO()
    try:
        if not Path(cell.model_path).is_file():
            raise FileNotFoundError(f"No model config '{cell.model}': expected a YAML file at {cell.model_path}.")
        with captured(log):
            if cell.search:
                result, _, _ = fit_tuned(cell.run_settings(run_dir), cell.search)
            else:
                result = fit_and_evaluate(cell.run_settings(run_dir))
        train_s, eval_s, trained = result.train_seconds, result.eval_seconds, result.via_trainer
        rows = [dict(r) for r in result.rows]
    except SystemExit as err:
        from lightning.pytorch.utilities.exceptions import SIGTERMException

        if isinstance(err, SIGTERMException):
            raise
        stop = interrupt_behind(err)  # Lightning's exit(1) after a Ctrl-C or SIGTERM in a fit
        if stop is not None:
            raise stop from None
        error = f"the run exited with code {err.code}: {_last_line(log.getvalue())}"
    except Exception as err:
        stop = interrupt_behind(err)  # e.g. a callback that failed while Lightning handled the interrupt
        if stop is not None:
            raise stop from None
        error = f"{type(err).__name__}: {err}"
    finally:
        (run_dir / "cell.log").write_text(log.getvalue(), encoding="utf-8")
        release_memory(trained=trained)
    seconds = time.perf_counter() - t0
    meta = cell_meta(cell, version=version, attempt=attempt, started=started, train_s=train_s, eval_s=eval_s)
    if error is None:  # the run's `model` is the network's class; the grid's model is the config name
        rows = [{**r, "model_class": r.get("model"), **meta, "status": "ok"} for r in rows]
        return CellOutcome("ok", rows, seconds=seconds)
    failed = [
        {**meta, "run": str(run_dir), "estimator": e, "status": "failed", "error": error}
        for e in cell.result_estimators
    ]
    return CellOutcome("failed", failed, error=error, seconds=seconds)


def draw_key(cell: Cell) -> tuple[Any, ...] | None:
    """What makes two cells the same experiment: equal keys give identical rows (see the module docstring).

    The task level enters through :func:`~textcause.simulation.tasks.spec_key` (its spec, summary
    aside), everything else a cell runs through its config hash, corpus, model and seed. None for a
    task the registry does not know (it is then its own experiment).
    """
    spec = spec_key(cell.task, cell.level)
    if spec is None:
        return None
    return (cell.grid, cell.corpus, cell.source, spec, cell.model, cell.seed, cell.config_hash, cell.method)


def twins(cells: Sequence[Cell]) -> dict[str, tuple[str, ...]]:
    """For each cell id, the ids of the other cells with its :func:`draw_key` (empty: none)."""
    groups: dict[tuple[Any, ...], list[str]] = {}
    for c in cells:
        key = draw_key(c)
        if key is not None:
            groups.setdefault(key, []).append(c.cell_id)
    return {c.cell_id: tuple(i for i in groups.get(draw_key(c), ()) if i != c.cell_id) for c in cells}


def twin_rows(cell: Cell, rows: Sequence[Mapping[str, Any]], *, version: str, attempt: int) -> list[dict[str, Any]]:
    """A finished twin's result rows as this cell's: its coordinates and bookkeeping, the twin's numbers.

    ``run`` keeps pointing at the twin's run folder (where the checkpoint that produced the numbers
    lives), and the timings are zero: nothing was fitted or evaluated for this cell.
    """
    now = store.utcnow()
    meta = cell_meta(cell, version=version, attempt=attempt, started=now, train_s=0.0, eval_s=0.0)
    return [{**dict(r), **meta, "status": "ok"} for r in rows]


def _last_line(log: str) -> str:
    from textcause.run.fit import error_line

    return error_line(log)

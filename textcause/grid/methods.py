"""``textcause.evaluate``: run any method over task levels and seeds, and return the benchmark's table.

    >>> import textcause
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.feature_extraction.text import TfidfVectorizer
    >>> from sklearn.linear_model import LogisticRegression
    >>> table = textcause.evaluate(make_pipeline(TfidfVectorizer(), LogisticRegression()),
    ...                            tasks={"linguistic_complexity": [1]}, seeds=[0])   # doctest: +SKIP

Each (task, level, seed) is one cell, ``<grid>/<corpus>/<task>-<level>/<model>/s<seed>``, exactly as
in ``textcause benchmark``; with ``db=`` its rows go into the benchmark's ``results`` table through
the same claim ledger (finished cells are skipped when the call is repeated, so a killed run resumes),
and ``textcause report`` / ``textcause compare`` show the method beside the built-in models.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from textcause.estimators.registry import DEFAULT_ESTIMATORS
from textcause.grid.cell import Cell
from textcause.grid.entries import method_config_hash, model_config_hash
from textcause.grid.spec import Grid, _corpus_name, parse_plan
from textcause.methods.adapters import ConfigPropensity, as_method, describe_method
from textcause.metrics.schema import RESULT_COLUMNS
from textcause.specs import is_name
from textcause.store import EXTRA_COLUMNS
from textcause.validation import check_int

__all__ = [
    "COLUMNS",
    "DEFAULT_GRID",
    "evaluate",
    "plan_cells",
]

#: The columns of :func:`evaluate`'s table: the benchmark's result columns, then the store's.
COLUMNS = tuple(RESULT_COLUMNS) + tuple(c for c in EXTRA_COLUMNS if c not in RESULT_COLUMNS)
DEFAULT_GRID = "evaluate"
_SOURCE = "evaluate"


def _plain(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a grid parser, turning its "Benchmark config 'evaluate': ..." prefix into "textcause.evaluate: ..."."""
    try:
        return fn(*args, **kwargs)
    except ValueError as err:
        raise ValueError(str(err).replace(f"Benchmark config '{_SOURCE}': ", "textcause.evaluate: ")) from None


def _database_url(db: str | os.PathLike) -> str:
    text = os.fspath(db)
    return text if "://" in text else f"sqlite:///{os.path.abspath(text)}"


def plan_cells(
    method: Any,
    *,
    corpus: str | os.PathLike = "twitter",
    tasks: Any = "all",
    seeds: Any = (0,),
    estimators: Iterable[str] = DEFAULT_ESTIMATORS,
    n_boot: int = 1000,
    name: str | None = None,
    n_users: int | None = None,
    max_posts: int = 60,
    effect_n_boot: int = 0,
) -> tuple[Any, Grid]:
    """The coerced method and the :class:`~textcause.grid.spec.Grid` of cells :func:`evaluate` runs.

    Raises:
        ValueError: for an unusable method, an unknown task or level, or a malformed setting.
    """
    method = as_method(method)
    info = describe_method(method)
    grid_name = DEFAULT_GRID if name is None else name
    if not is_name(grid_name):
        raise ValueError(
            f"The 'name' parameter of evaluate must be made of letters, digits, '_', '.', '-'. Got {name!r} instead."
        )
    if not isinstance(corpus, (str, os.PathLike)) or not os.fspath(corpus):
        raise ValueError(f"The 'corpus' parameter of evaluate must be a corpus name or path. Got {corpus!r} instead.")
    source = os.fspath(corpus)
    label = _corpus_name(source)
    est = list(estimators) if not isinstance(estimators, str) else [estimators]
    plan = _plain(
        parse_plan,
        {
            "tasks": tasks,
            "seeds": list(seeds) if isinstance(seeds, (tuple, range)) else seeds,
            "evaluation": {"n_boot": n_boot, "estimators": est, "effect_n_boot": effect_n_boot},
        },
        source=_SOURCE,
    )
    pairs, seed_list = plan.task_levels, plan.seed_list
    n_boot, split, est_tuple = plan.evaluation.n_boot, plan.evaluation.split, plan.evaluation.estimators
    effect_n_boot = plan.evaluation.effect_n_boot
    overrides: dict[str, Any] = {}
    if n_users is not None:
        overrides["data.n_users"] = check_int(n_users, "n_users", "evaluate", low=1)
    if max_posts != 60:
        overrides["data.max_posts"] = check_int(max_posts, "max_posts", "evaluate", low=1)
    if isinstance(method, ConfigPropensity):
        merged = {**overrides, **method.overrides}
        path, spec, cell_est = method.config, None, est_tuple
        config_hash = model_config_hash(path, source, merged, n_boot, split, est_tuple)
    else:
        merged = overrides
        cell_est = (info.estimator,) if info.kind == "effect" else est_tuple
        path, spec = info.source_file or Path("."), "<in-memory>"
        config_hash = method_config_hash(info.fingerprint, source, merged, n_boot, split, cell_est, effect_n_boot)
    cells = tuple(
        Cell(
            grid=grid_name,
            corpus=label,
            source=source,
            task=task,
            level=level,
            model=info.name,
            model_path=path,
            seed=seed,
            overrides=tuple(merged.items()),
            n_boot=n_boot,
            split=split,
            estimators=cell_est,
            config_hash=config_hash,
            method=spec,
            effect_n_boot=effect_n_boot,
        )
        for task, level in pairs
        for seed in seed_list
    )
    space = {"corpus": [label], "task": [f"{t}-{lv}" for t, lv in pairs], "model": [info.name], "seed": seed_list}
    return method, Grid(name=grid_name, cells=cells, search_space=space, source=_SOURCE)


def evaluate(
    method: Any,
    corpus: str | os.PathLike = "twitter",
    tasks: Any = "all",
    seeds: Any = (0,),
    estimators: Iterable[str] = DEFAULT_ESTIMATORS,
    n_boot: int = 1000,
    db: str | os.PathLike | None = None,
    name: str | None = None,
    n_users: int | None = None,
    max_posts: int = 60,
    progress: bool = True,
    *,
    effect_n_boot: int = 0,
    retry_failed: bool = False,
    out: str | os.PathLike | None = None,
) -> Any:
    """Evaluate a method on semi-synthetic tasks of a real corpus, as the benchmark evaluates its models.

    Args:
        method: a propensity or effect method, a scikit-learn classifier / ``Pipeline``, a class, a
            function ``f(texts, t, y)``, a ``"package.module:Name"`` string, or a model config name or
            path (see :func:`textcause.methods.as_method`).
        corpus: a short corpus name (``twitter``, ``blogs``, ``reddit-drunk``) or a path.
        tasks: ``"all"``, a task name, a list of task names, or a mapping ``{task: [levels]}``.
        seeds: a list of seeds, or an int n (seeds 0 .. n-1). Each seed redraws the task and the split.
        estimators: for propensity methods, a non-empty subset of ``ipw``, ``stratified``, ``matching``
            (``unadjusted`` is always reported first).
        n_boot: bootstrap replicates of each interval (0: no interval).
        db: a results database (an SQLAlchemy URL or an SQLite file path): rows go to its ``results``
            table and finished cells are skipped on the next call.
        name: the grid name in cell ids (default ``evaluate``).
        n_users: sample this many users of the corpus (None: every user).
        max_posts: keep each user's first ``max_posts`` posts.
        progress: show a progress bar over cells.
        effect_n_boot: for an effect method that returns no interval, re-run it on this many bootstrap
            resamples of its users for a percentile interval (0: no interval; it can be slow).
        retry_failed: with ``db``, run again cells that failed before (a cell whose method changed is
            always run again).
        out: folder for run files (``<out>/runs/<cell_id>/``): a method's printed output, a model
            config's checkpoints. Default: none for methods, a temporary folder for model configs.

    Returns:
        A pandas DataFrame with one row per cell x estimator and the columns :data:`COLUMNS`.

    Raises:
        ValueError: for an unusable method or setting, or (with ``db``) finished cells of the same grid
            that were run with another configuration.
    """
    import pandas as pd

    method, grid = plan_cells(
        method,
        corpus=corpus,
        tasks=tasks,
        seeds=seeds,
        estimators=estimators,
        n_boot=n_boot,
        name=name,
        n_users=n_users,
        max_posts=max_posts,
        effect_n_boot=effect_n_boot,
    )
    with tempfile.TemporaryDirectory(prefix="textcause-evaluate-") as tmp:
        run_out = out if out is not None else (tmp if isinstance(method, ConfigPropensity) else None)
        if db is None:
            rows = _run_all(method, grid, run_out, progress)
            return pd.DataFrame(rows).reindex(columns=list(COLUMNS))
        from textcause import store

        engine = store.open_store(_database_url(db))
        _run_stored(method, grid, engine, run_out, progress, retry_failed)
        frame = store.read_results(engine, grid.name)
    order = {c.cell_id: i for i, c in enumerate(grid.cells)}
    frame = frame[frame["cell_id"].isin(order)]
    frame = frame.assign(_order=frame["cell_id"].map(order)).sort_values(["_order", "id"], kind="stable")
    return frame.reindex(columns=list(COLUMNS)).reset_index(drop=True)


def _bar(grid: Grid, progress: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(
        total=len(grid.cells), desc=grid.cells[0].model if grid.cells else "", unit="cell", disable=not progress
    )


def _run_one(method: Any, cell: Cell, out: Any, version: str, attempt: int) -> Any:
    from textcause.grid.method_cell import run_method_cell

    return run_method_cell(cell, method, out, version=version, attempt=attempt)


def _report(bar: Any, cell: Cell, outcome: Any) -> None:
    if outcome.status == "failed":
        bar.write(f"failed: {cell.cell_id}: {outcome.error}", file=sys.stderr)


def _run_all(method: Any, grid: Grid, out: Any, progress: bool) -> list[dict[str, Any]]:
    from textcause.grid.cell import code_version

    version = code_version()
    rows: list[dict[str, Any]] = []
    with _bar(grid, progress) as bar:
        for cell in grid.cells:
            bar.set_postfix_str(f"{cell.task}-{cell.level} s{cell.seed}")
            outcome = _run_one(method, cell, out, version, 1)
            _report(bar, cell, outcome)
            rows += outcome.rows
            bar.update()
    return rows


def _check_unchanged(grid: Grid, ledger: dict[str, Any]) -> None:
    changed = grid.reconfigured(ledger, ("ok",))  # a failed cell of a changed method is simply run again
    if changed:
        raise ValueError(
            f"{len(changed)} finished cells of grid '{grid.name}' (e.g. {changed[0]}) were run with another "
            "configuration (the method's code or parameters, or the evaluation settings, changed): pass another "
            "name= or db=."
        )


def _run_stored(method: Any, grid: Grid, engine: Any, out: Any, progress: bool, retry_failed: bool) -> None:
    from textcause import store
    from textcause.grid.cell import code_version
    from textcause.grid.worker import holder_alive

    ledger = store.ledger(engine, grid.name)
    _check_unchanged(grid, ledger)
    since = store.utcnow()
    version = code_version()

    def alive(row: Any) -> bool:  # a benchmark worker's claim (an Optuna trial) is presumed alive
        return holder_alive(row, None) if row.trial_id is None else True

    with _bar(grid, progress) as bar:
        for cell in grid.cells:
            row = store.ledger(engine, grid.name).get(cell.cell_id)
            decision = store.claim_decision(row, alive=alive, retry_failed=retry_failed, since=since)
            if row is not None and row.status == "failed" and row.config_hash != cell.config_hash:
                decision = "run"  # the method changed since it failed: run it again
            token = None
            if decision == "run":
                token = store.try_claim(
                    engine, cell.cell_id, grid.name, cell.config_hash, store.Claimant.current(), previous=row
                )
            if token is None:
                if decision in ("wait", "run"):
                    bar.write(f"skipped: {cell.cell_id} is being run by another process.", file=sys.stderr)
                bar.update()
                continue
            bar.set_postfix_str(f"{cell.task}-{cell.level} s{cell.seed}")
            outcome = _run_one(method, cell, out, version, (row.attempts + 1) if row is not None else 1)
            try:
                store.finish_cell(
                    engine, cell.cell_id, token, status=outcome.status, rows=outcome.rows, error=outcome.error
                )
            except store.ClaimLost:
                bar.write(
                    f"skipped: {cell.cell_id} was taken over by another process; its rows were not written.",
                    file=sys.stderr,
                )
            _report(bar, cell, outcome)
            bar.update()

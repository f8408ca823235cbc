"""The tidy results table the inference and the report read: loading and normalising it.

One row per cell x estimator, where a cell is ``(corpus, task, level, model, seed)`` and each seed
redraws the class assignment, treatments, outcomes and the train / validation / test split. The
table comes from a DataFrame, an SQLite file, an SQLAlchemy URL (table ``results``), or a CSV /
Parquet export of it. :func:`normalise` gives every optional column a value and derives ``abs_bias``,
``usable``, ``n_test`` and ``n_train`` so that every later step reads one shape; it also reads a table
written with older column names (:data:`textcause.metrics.schema.RENAMED_COLUMNS`) under today's.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from textcause.metrics.schema import AD_COLUMNS, AD_ESTIMATORS, RENAMED_COLUMNS, RESULT_SCHEMA

__all__ = [
    "CELL",
    "INFLUENCE_LABEL",
    "METHOD",
    "PAPER_TRAIN_PER_TEST",
    "ci_label",
    "load_results",
    "normalise",
    "task_order",
]

#: The columns a results table must have.
_REQUIRED_COLUMNS = ("corpus", "task", "level", "model", "seed", "estimator", "ate", "ci_low", "ci_high", "true_ate")
#: Numeric columns (missing ones are added as NaN): every int / float column of the result schema
#: but the ``level`` and ``seed`` keys, and the store's timing and split sizes.
_NUMERIC_COLUMNS = tuple(
    c for c, kind in RESULT_SCHEMA.items() if kind in (int, float) and c not in ("level", "seed")
) + ("train_seconds", "n_train", "n_test")
#: Yes / no columns (the schema's bool columns), kept as floats 1.0 / 0.0 / NaN so that a mean is a share.
_FLAG_COLUMNS = tuple(c for c, kind in RESULT_SCHEMA.items() if kind is bool)
#: A cell: one model trained and evaluated on one draw of one task level of one corpus.
CELL = ["corpus", "task", "level", "model", "seed"]
#: A method on a task level, summarised over seeds.
METHOD = ["corpus", "task", "level", "model", "estimator"]
#: The paper's split (3,200 / 800 / 4,000 of 8,000 users): training users per test user.
PAPER_TRAIN_PER_TEST = 0.4 / 0.5
#: Paper order of the tasks (section 5.2, then Appendix H).


def load_results(source: Any, table: str = "results", *, grid: str | None = None) -> pd.DataFrame:
    """Read a results table and normalise it.

    Args:
        source: a DataFrame; a path to an SQLite database, ``.csv`` or ``.parquet`` file; or an
            SQLAlchemy URL (``sqlite:///results.db``, ``postgresql://...``).
        table: the table to read from a database.
        grid: keep only this grid's rows (column ``grid``; a database may hold several grids).

    Returns:
        The normalised table (see :func:`normalise`).
    """
    frame = _read(source, table)
    if grid is not None:
        grids = sorted(set(frame["grid"].dropna().astype(str))) if "grid" in frame else []
        if grid not in grids:
            raise ValueError(f"No results for grid {grid!r}; the table has grids {grids}.")
        frame = frame[frame["grid"].astype(str) == grid]
    return normalise(frame)


def _read(source: Any, table: str) -> pd.DataFrame:
    if isinstance(source, pd.DataFrame):
        return source
    if not isinstance(source, (str, Path)):
        raise ValueError(
            f"The 'source' parameter of load_results must be a DataFrame, a path or a database URL. "
            f"Got {type(source).__name__} instead."
        )
    text = str(source)
    if "://" in text:
        return _read_url(text, table)
    path = Path(text)
    if not path.exists():
        raise FileNotFoundError(
            f"No results database or file at '{path}': give an SQLite file, a CSV or a database URL."
        )
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return pd.read_csv(path)
    if suffix == ".parquet":
        return pd.read_parquet(path)
    return _read_sqlite(path, table)


def _read_sqlite(path: Path, table: str) -> pd.DataFrame:
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as con:
            return pd.read_sql(f'SELECT * FROM "{table}"', con)
    except (pd.errors.DatabaseError, sqlite3.DatabaseError) as err:
        raise ValueError(f"Could not read table '{table}' from '{path}': {err}.") from err


def _read_url(url: str, table: str) -> pd.DataFrame:
    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///") :])
        if not path.exists():
            raise FileNotFoundError(f"No results database at '{path}' (from the URL '{url}').")
        return _read_sqlite(path, table)
    try:
        import sqlalchemy
    except ImportError as err:
        raise ValueError(
            f"Reading '{url.split('://')[0]}://' URLs needs SQLAlchemy (pip install sqlalchemy); "
            "SQLite paths and sqlite:/// URLs work without it."
        ) from err
    engine = sqlalchemy.create_engine(url)
    try:
        return pd.read_sql_table(table, engine)
    except ValueError as err:
        raise ValueError(f"Could not read table '{table}' from the database: {err}.") from err
    finally:
        engine.dispose()


def _as_flag(values: pd.Series) -> pd.Series:
    mapping = {"true": 1.0, "false": 0.0, "1": 1.0, "0": 0.0, "1.0": 1.0, "0.0": 0.0, "yes": 1.0, "no": 0.0}

    def one(v: Any) -> float:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return np.nan
        if isinstance(v, (bool, np.bool_, int, np.integer, float, np.floating)):
            return float(bool(v))
        return mapping.get(str(v).strip().lower(), np.nan)

    return values.map(one).astype(np.float64)


def _train_fraction(task: str, level: int) -> float:
    """The share of the training split a task level keeps (Sample Size task), 1.0 if unknown."""
    try:
        from textcause.simulation.tasks import get_spec

        return float(get_spec(task, level).train_fraction)
    except (ValueError, KeyError, TypeError):
        return 1.0


def _renamed(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` with the columns of :data:`RENAMED_COLUMNS` under their new names."""
    out = df.copy()
    for old, new in RENAMED_COLUMNS.items():
        if old in out:
            values = out.pop(old)
            out[new] = out[new].where(out[new].notna(), values) if new in out else values
    return out


def normalise(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` with every column the inference uses, typed and derived.

    Adds (when missing) ``status`` (``ok`` / ``failed``), ``error``, ``split``, ``bias`` (``ate -
    true_ate``), ``abs_bias``, ``sq_bias``, ``n_test`` (``n_used + n_dropped``), ``n_train`` (the
    paper's 40/50 train/test fractions, times the task level's kept training share) and ``usable``
    (status ``ok`` with a finite ATE and bias). Columns with an older name
    (:data:`~textcause.metrics.schema.RENAMED_COLUMNS`) get today's (where both are present, a missing
    new value is taken from the old column), and the Arbour-Dimmery columns are NaN on every row but
    the IPW rows' (older tables copied the IPW-centred interval onto every estimator's row).

    Raises:
        ValueError: if a required column is missing or the table is empty.
    """
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"Expected a pandas DataFrame of result rows. Got {type(df).__name__} instead.")
    present = set(df.columns) | ({"model"} if "config" in df.columns else set())
    missing = [c for c in _REQUIRED_COLUMNS if c not in present]
    if missing:
        raise ValueError(f"The results table lacks the columns {missing}; it needs {list(_REQUIRED_COLUMNS)}.")
    if len(df) == 0:
        raise ValueError("The results table is empty: run the grid first.")
    out = _renamed(df)
    if "config" in out:  # the grid's store: ``config`` is the model config name, ``model`` its class
        out["model_class"] = out["model"] if "model" in out else None
        out["model"] = out["config"].fillna(out["model_class"]) if "model" in out else out["config"]
        out = out.drop(columns=["config"])
    for col in ("corpus", "task", "model"):
        out[col] = out[col].astype(str)
    # A cell that failed before any estimator ran may come as one row without an estimator.
    out["estimator"] = out["estimator"].fillna("").astype(str)
    for col in ("level", "seed"):
        values = pd.to_numeric(out[col], errors="coerce")
        if values.isna().any():
            raise ValueError(f"The '{col}' column of the results table must hold integers; some rows have none.")
        out[col] = values.astype(np.int64)
    for col in _NUMERIC_COLUMNS:
        out[col] = pd.to_numeric(out[col], errors="coerce").astype(np.float64) if col in out else np.nan
    for col in _FLAG_COLUMNS:
        out[col] = _as_flag(out[col]) if col in out else np.nan
    out.loc[~out["estimator"].isin(AD_ESTIMATORS), list(AD_COLUMNS)] = np.nan
    out["error"] = out["error"].fillna("").astype(str) if "error" in out else ""
    out["split"] = out["split"].fillna("test").astype(str) if "split" in out else "test"
    if "status" in out:
        out["status"] = out["status"].fillna("ok").astype(str)
    else:
        out["status"] = np.where(out["ate"].notna() & (out["error"] == ""), "ok", "failed")
    out["bias"] = out["bias"].fillna(out["ate"] - out["true_ate"])
    out["abs_bias"] = out["bias"].abs()
    out["sq_bias"] = out["bias"] ** 2
    out["usable"] = (out["status"] == "ok") & np.isfinite(out["ate"]) & np.isfinite(out["bias"])
    derived_test = out["n_used"] + out["n_dropped"].fillna(0.0)
    out["n_test"] = out["n_test"].fillna(derived_test)
    fractions = {key: _train_fraction(*key) for key in set(zip(out["task"], out["level"]))}
    kept = np.array([fractions[key] for key in zip(out["task"], out["level"])], dtype=np.float64)
    out["n_train"] = out["n_train"].fillna(out["n_test"] * PAPER_TRAIN_PER_TEST * kept)
    return out


def ci_label(df: pd.DataFrame) -> str:
    """How the per-cell intervals (``ci_low``, ``ci_high``) were made, e.g. "percentile bootstrap over test
    units"; AIPW's and TMLE's influence-function intervals are in their own columns (:data:`INFLUENCE_LABEL`)."""
    splits = sorted(set(df["split"])) if "split" in df else ["test"]
    return f"percentile bootstrap over {'/'.join(splits)} units"


#: What the ``influence_ci_low`` / ``influence_ci_high`` columns hold (AIPW and TMLE only).
INFLUENCE_LABEL = "influence-function normal approximation"


def task_order(tasks: Any) -> list[str]:
    """``tasks`` in the paper's order, unknown tasks last (alphabetically)."""
    tasks = set(tasks)
    from textcause.simulation.tasks import TASKS

    known = [t for t in TASKS if t in tasks]
    return known + sorted(tasks - set(known))

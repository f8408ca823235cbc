"""The results store: one database (any SQLAlchemy URL; SQLite by default) for every experiment.

* :mod:`textcause.store.tables`: the one table registry (``cells``, ``results`` and each
  experiment's own table, on one ``MetaData``).
* :mod:`textcause.store.db`: :func:`open_store`, the one opener; locks, URLs, reads.
* :mod:`textcause.store.ledger`: a benchmark grid's claim ledger and its cells' outcomes.
* :mod:`textcause.store.migration`, :mod:`textcause.store.rdb`, :mod:`textcause.store.sqlite_reads`:
  renamed columns, Optuna's storage, SQLite reads that take no write lock.

The names below are importable from here (``from textcause import store; store.open_store(url)``).
"""

from textcause.store.db import (
    SQLITE_TIMEOUT,
    add_missing_columns,
    default_url,
    make_sqlite_transactional,
    open_store,
    optuna_storage,
    parse_url,
    read_only_engine,
    read_results,
    read_table,
    reading,
    schema_lock,
    utcnow,
)
from textcause.store.ledger import (
    Claimant,
    ClaimLost,
    Progress,
    cell_rows,
    claim_decision,
    finish_cell,
    forget_cells,
    ledger,
    progress,
    try_claim,
)
from textcause.store.tables import EXTRA_COLUMNS, STATUSES, cells, results

__all__ = [
    "EXTRA_COLUMNS",
    "SQLITE_TIMEOUT",
    "STATUSES",
    "ClaimLost",
    "Claimant",
    "Progress",
    "add_missing_columns",
    "cell_rows",
    "cells",
    "claim_decision",
    "default_url",
    "finish_cell",
    "forget_cells",
    "ledger",
    "make_sqlite_transactional",
    "open_store",
    "optuna_storage",
    "parse_url",
    "progress",
    "read_only_engine",
    "read_results",
    "read_table",
    "reading",
    "results",
    "schema_lock",
    "try_claim",
    "utcnow",
]

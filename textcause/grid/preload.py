"""What a benchmark worker imports, loaded once by the fork server that the runner starts.

:func:`textcause.grid.runner.run_benchmark` with more than one worker starts its workers from
Python's ``forkserver`` (:mod:`multiprocessing`) with this module as its preload: the server
imports Lightning, Optuna, the worker and what a cell's first fit imports (scikit-learn for the
n-grams, the networks) once (the collector paused, then everything frozen, as
:func:`textcause.startup.imports` does, which is what the ``gc`` documentation recommends before
forking), and each worker is a fork of it, with nothing left to import. The server runs no torch
operation, so it has no OpenMP thread pool (GNU OpenMP's does not survive a fork; the threads
that numpy's OpenBLAS starts at import are reset by OpenBLAS's own fork handler, as for any
DataLoader worker). The same offline defaults as a worker process of its own are set before the
imports (``huggingface_hub`` reads them then). Python keeps the server for the rest of the
runner's process: a later run in it forks from the same server, already loaded.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")

import importlib

from textcause import startup  # after the environment above

__all__ = [
    "MODULES",
]

MODULES = (
    "optuna",
    "textcause.grid.worker",
    "textcause.store.rdb",
    "textcause.run.lightning_cli",
    # what a cell's first fit would import: the networks, the n-gram featurizer (scikit-learn), the
    # post-embedding tables, the feature cache, the metrics and the callbacks
    "textcause.models",
    "textcause.features.ngrams",
    "textcause.features.embeddings",
    "textcause.features.representation",
    "textcause.features.torch_sparse",
    "textcause.metrics.evaluation",
    "textcause.callbacks",
    # what writing and reading the first checkpoint imports
    "torch.utils.serialization",
    "fsspec.implementations.chained",
    "encodings.cp437",
    # what Optuna's RDBStorage imports when a worker opens it
    "optuna.storages._rdb.models",
    "alembic.command",
    "alembic.config",
    "alembic.migration",
    "alembic.script",
)

with startup.imports():
    for _name in MODULES:
        importlib.import_module(_name)
    import sqlalchemy.orm

    sqlalchemy.orm.configure_mappers()  # Optuna's ORM classes: done here, not at each worker's first query

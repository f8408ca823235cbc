"""Everything advise takes from the grid, store and experiments rooms, in one import block."""

from __future__ import annotations

from textcause.experiments.observational import load_records, run_study
from textcause.grid.runner import run_benchmark
from textcause.store.db import default_url
from textcause.store.db import open_store as connect_store
from textcause.store.ledger import ledger

__all__ = ["connect_store", "default_url", "ledger", "load_records", "run_benchmark", "run_study"]

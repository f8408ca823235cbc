"""Everything advise takes from :mod:`textcause.runs`, in one import block (one place to follow it when runs moves)."""

from __future__ import annotations

from textcause.runs.runner import run_benchmark
from textcause.runs.store import connect as connect_store
from textcause.runs.store import default_url, ledger
from textcause.runs.study import load_records, run_study

__all__ = ["connect_store", "default_url", "ledger", "load_records", "run_benchmark", "run_study"]

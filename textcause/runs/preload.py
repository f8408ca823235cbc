"""What a benchmark worker imports, loaded once by the fork server that the runner starts.

:func:`textcause.runs.runner.run_benchmark` with more than one worker starts its workers from
Python's ``forkserver`` (:mod:`multiprocessing`) with this module as its preload: the server
imports Lightning, Optuna and the worker once (the collector paused, then everything frozen, as
:func:`textcause.startup.preload` does, which is what the ``gc`` documentation recommends before
forking), and each worker is a fork of it, with nothing left to import. The server runs no torch
operation, so no OpenMP thread pool exists to be copied into a fork. The same offline defaults as
a worker process of its own are set before the imports (``huggingface_hub`` reads them then).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")

from textcause import startup  # after the environment above

startup.preload("optuna", "textcause.runs.worker", "textcause.runs.lightning_cli")

"""What a benchmark worker imports, loaded once by the fork server that the runner starts.

:func:`textcause.runs.runner.run_benchmark` with more than one worker starts its workers from
Python's ``forkserver`` (:mod:`multiprocessing`) with this module as its preload: the server
imports Lightning, Optuna and the worker once (the collector paused, then everything frozen, as
:func:`textcause.startup.preload` does, which is what the ``gc`` documentation recommends before
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

from textcause import startup  # after the environment above

startup.preload("optuna", "textcause.runs.worker", "textcause.runs.lightning_cli")

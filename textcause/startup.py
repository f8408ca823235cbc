"""Process start and end for the entry points (``train.py``, ``evaluate.py``, ``textcause``, workers).

Importing Lightning, torch and what they pull in leaves hundreds of thousands of objects that the
cyclic garbage collector tracks and scans again and again, during the imports and while the
interpreter tears them down at exit, without ever finding anything to free (what that costs a run:
``bench_startup.py`` in ``benchmarks/README.md``).

* :func:`imports`: a block of imports with the collector paused, after which everything they built
  is frozen (``gc.freeze()``), so later collections skip it.
* :func:`preload`: :func:`imports` around ``import_module`` of the given modules.
* :func:`quick_exit`: at interpreter exit (an ``atexit`` handler), one full collection (the
  finalizers of leftover garbage run as before) and then ``gc.freeze()``, so the teardown does not
  scan the live heap once more per stage. Reference cycles still alive then are not collected
  (Python does not promise to finalize objects alive at exit).

Frozen objects are still freed when their last reference goes; only reference cycles among them stay
until the process ends. Library code never calls these, only a process's own entry point. This module
imports nothing beyond the standard library.
"""

from __future__ import annotations

import atexit
import gc
import importlib
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "imports",
    "preload",
    "quick_exit",
]

_exit_registered = [False]


@contextmanager
def imports() -> Iterator[None]:
    """Run a block of imports with the cyclic collector paused, then freeze what exists.

    The collector is restored to its previous state (enabled or not) on the way out, also when the
    block raises.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def preload(*modules: str) -> None:
    """Import ``modules`` (dotted names) inside :func:`imports`."""
    with imports():
        for name in modules:
            importlib.import_module(name)


def _collect_and_freeze() -> None:
    gc.collect()
    gc.freeze()


def quick_exit() -> None:
    """Register :func:`_collect_and_freeze` at exit (once per process).

    ``atexit`` runs its handlers last registered first, so a handler registered after this one
    (a logger's, wandb's) still runs before it.
    """
    if not _exit_registered[0]:
        atexit.register(_collect_and_freeze)
        _exit_registered[0] = True

"""Process start and end for the entry points (``train.py``, ``evaluate.py``, ``textcause``, workers).

Importing Lightning, torch and what they pull in (torchmetrics, transformers, scipy, sympy) leaves
about 790,000 objects that the cyclic garbage collector tracks (``len(gc.get_objects())`` after
``import lightning, textcause.run.lightning_cli``). The collector runs its full collection
over all of them again and again while they are being made, and several more times while the
interpreter tears them down at exit. None of those collections finds anything to free. On this
project's 2-core machine they cost a ``train.py fit`` of logistic regression about 2 of its 6.6
seconds (``benchmarks/README.md``, ``bench_startup.py``).

* :func:`imports`: a block of imports with the collector paused, after which everything they
  built is frozen (``gc.freeze()``), so later collections skip it; the collector then runs as
  before.
* :func:`preload`: :func:`imports` around ``import_module`` of the given modules.
* :func:`quick_exit`: at interpreter exit (an ``atexit`` handler: after those registered later,
  before those registered earlier, such as logging's), one full collection (the finalizers of
  whatever garbage is left run as before) and then ``gc.freeze()``, so the teardown that follows
  the ``atexit`` handlers does not scan the live heap once more per stage. Reference cycles still
  alive then are not collected at all (Python does not promise to finalize objects alive at exit).

Frozen objects are still freed when their last reference goes; only reference cycles among them
stay until the process ends (garbage cycles made during the imports among them: a one-off).
Library code never calls these: only a process's own entry point does. The ``gc`` module's
documentation describes freezing for the same purpose (pre-fork servers). This module imports
nothing beyond the standard library.
"""

from __future__ import annotations

import atexit
import gc
import importlib
from collections.abc import Iterator
from contextlib import contextmanager

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

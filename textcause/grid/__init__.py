"""Benchmark grids and their workers: many runs, scheduled, resumable, on many processes.

* :mod:`textcause.grid.spec`: a grid read from YAML (``configs/benchmark/*.yaml``), its cells'
  model and method entries in :mod:`textcause.grid.entries`.
* :mod:`textcause.grid.cell`, :mod:`textcause.grid.method_cell`: one cell (a model config or an
  outside method) and its rows; :mod:`textcause.grid.tuning` a tuned cell's search on validation.
* :mod:`textcause.grid.runner`, :mod:`textcause.grid.worker`: ``textcause benchmark``, Optuna-scheduled
  workers (:mod:`textcause.grid.preload`, :mod:`textcause.grid.precheck`: their start and first check).
* :mod:`textcause.grid.methods`: :func:`textcause.evaluate`, outside methods over task levels and seeds.

Importing this package is cheap (no torch, Lightning or Optuna).
"""

__all__: list[str] = []

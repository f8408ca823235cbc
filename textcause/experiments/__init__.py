"""Grid runs, resampling inference, results store, figures and reports.

* :mod:`textcause.experiments.grid`: a benchmark grid read from YAML (``configs/benchmark/*.yaml``),
  corpora x tasks x levels x models x seeds, one :class:`~textcause.experiments.grid.Cell` each.
* :mod:`textcause.experiments.store`: the results database (any SQLAlchemy URL; SQLite by default):
  the ``cells`` claim ledger and the ``results`` table, one row per cell x estimator.
* :mod:`textcause.experiments.runner`: ``textcause benchmark``: Optuna-scheduled, resumable workers.
* :mod:`textcause.experiments.worker`: one worker's loop: claim a cell, fit and evaluate it, store its rows.

Importing this package is cheap (no torch, Lightning or Optuna).
"""

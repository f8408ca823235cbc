"""Runs: the one fit-and-evaluate path, and everything that schedules it.

* :mod:`textcause.runs.fit`: :class:`~textcause.runs.fit.RunSettings` -> result rows
  (:func:`~textcause.runs.fit.fit_and_evaluate`, :func:`~textcause.runs.fit.evaluate_run`).
* :mod:`textcause.runs.lightning_cli`: the LightningCLI that turns YAML configs into objects.
* :mod:`textcause.runs.cell`, :mod:`textcause.runs.method_cell`: one grid cell (a model config or an
  outside method) and its rows.
* :mod:`textcause.runs.grid`: a benchmark grid read from YAML (``configs/benchmark/*.yaml``).
* :mod:`textcause.runs.store`: the results database (any SQLAlchemy URL; SQLite by default).
* :mod:`textcause.runs.worker`, :mod:`textcause.runs.runner`: Optuna-scheduled, resumable workers.
* :mod:`textcause.runs.study`: the models of an observational study.
* :mod:`textcause.runs.methods`: :func:`textcause.evaluate`, outside methods over task levels and seeds.

Importing this package is cheap (no torch, Lightning or Optuna).
"""

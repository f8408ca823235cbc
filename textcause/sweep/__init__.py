"""Hyperparameter sweeps (``textcause sweep``): a wandb-style sweep YAML run offline on Optuna.

* :mod:`textcause.sweep.spec`: the sweep YAML (``configs/sweeps/*.yaml``), parsed and checked; its
  ``command`` line read by :mod:`textcause.sweep.command`.
* :mod:`textcause.sweep.runner`: the trials, each a run on the one path, stored in the results store.
"""

__all__: list[str] = []

"""One run: a model config fitted and evaluated on the one path, and what it leaves behind.

* :mod:`textcause.run.fit`: :class:`~textcause.run.fit.RunSettings` -> result rows
  (:func:`~textcause.run.fit.fit_and_evaluate`, :func:`~textcause.run.fit.evaluate_run`);
  :mod:`textcause.run.settings` its settings, :mod:`textcause.run.untrained` a model with nothing
  to train.
* :mod:`textcause.run.lightning_cli`: the LightningCLI that turns YAML configs into objects
  (:mod:`textcause.run.class_paths` checks a saved config's classes; :mod:`textcause.run.resume`
  finds the run a ``fit`` continues).
* :mod:`textcause.run.evaluation`, :mod:`textcause.run.refitting`: result rows and their intervals.
* :mod:`textcause.run.model_card`, :mod:`textcause.run.figure`: a run's card and overlap figure.
* :mod:`textcause.run.predict`: ``textcause predict`` with a trained run.

Importing this package is cheap (no torch, Lightning or Optuna).
"""

__all__: list[str] = []

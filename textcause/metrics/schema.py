"""The result schema: the columns of one evaluation row (one estimator on one run), and their types.

:func:`textcause.metrics.evaluation.evaluate_propensities` fills the estimate and metric columns;
the run that produced them adds its identity (``run`` ... ``split``, ``true_ate``, ``sample_ate``);
a benchmark cell that tuned its model on validation data records the chosen values in ``tuned``
(JSON, e.g. ``{"model.init_args.weight_decay": 0.003}``; empty for a model with nothing tuned).
``evaluate.py`` writes these columns to ``results.csv``, the benchmark's results store makes one
database column of each, and ``textcause.evaluate`` returns them as its table's first columns.

Three intervals, each in its own columns and labelled by its own ``*ci_method`` column:

- ``ci_low``, ``ci_high``, ``covers_truth``, ``ci_tighter_than_bound``, ``ci_method``: the percentile
  bootstrap over the evaluation units, for every estimator (None when ``n_boot=0``). This is what
  these columns have always held, so rows written before the influence-function columns existed
  keep their meaning.
- ``influence_ci_low``, ``influence_ci_high``, ``influence_covers_truth``, ``influence_ci_method``:
  the influence-function (normal-approximation) interval of the doubly robust estimators (``aipw``,
  ``tmle``), computed from the same units; None for every other estimator and in older rows.
- ``refit_ci_low``, ``refit_ci_high``, ``refit_covers_truth``, ``refit_ci_method``, ``refit_reps``:
  the refitting interval (:mod:`textcause.estimators.refit`): training and evaluation users both
  resampled and the propensity model refit on each replicate, so it describes the method (fit,
  then estimate) rather than one fitted model; only when asked for (``refit_reps > 0``) and only for
  models that refit cheaply (full-batch L-BFGS), on the propensity estimators' rows.

:data:`ADDED_COLUMNS` are the columns added after results stores were first written: a store that
lacks them gains them empty (NULL) when it is opened for writing (:func:`textcause.runs.store.connect`),
and readers treat a missing one as empty.
"""

from __future__ import annotations

#: Column name -> Python type of its values (None is always allowed), in table order.
RESULT_SCHEMA: dict[str, type] = {
    "run": str,
    "model": str,
    "corpus": str,
    "task": str,
    "level": int,
    "seed": int,
    "representation": str,
    "split": str,
    "estimator": str,
    "ate": float,
    "ci_low": float,
    "ci_high": float,
    "bias": float,
    "true_ate": float,
    "sample_ate": float,
    "n_used": int,
    "n_dropped": int,
    "treatment_accuracy": float,
    "ece": float,
    "brier": float,
    "iptw_weight_mse": float,
    "spearman": float,
    "bound_low": float,
    "bound_high": float,
    "ci_tighter_than_bound": bool,
    "covers_truth": bool,
    "ci_method": str,
    "influence_ci_low": float,
    "influence_ci_high": float,
    "influence_covers_truth": bool,
    "influence_ci_method": str,
    "refit_ci_low": float,
    "refit_ci_high": float,
    "refit_covers_truth": bool,
    "refit_ci_method": str,
    "refit_reps": int,
    "rank_agreement": float,
    "tuned": str,
    "error": str,
}

#: The result columns, in table order.
RESULT_COLUMNS = tuple(RESULT_SCHEMA)
#: Columns added after the first results stores were written (all nullable: older rows hold None).
ADDED_COLUMNS = (
    "influence_ci_low",
    "influence_ci_high",
    "influence_covers_truth",
    "influence_ci_method",
    "refit_ci_low",
    "refit_ci_high",
    "refit_covers_truth",
    "refit_ci_method",
    "refit_reps",
    "rank_agreement",
)

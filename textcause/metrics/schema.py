"""The result schema: the columns of one evaluation row (one estimator on one run), and their types.

:func:`textcause.metrics.evaluation.evaluate_propensities` fills the estimate and metric columns; the
run adds its identity (``run`` ... ``split``, ``true_ate``, ``sample_ate``) and a tuned cell its chosen
values in ``tuned`` (JSON). ``evaluate.py`` writes these columns to ``results.csv``, the results store
makes one database column of each, and ``textcause.evaluate`` returns them first in its table.

Three intervals, each labelled by its own ``*ci_method`` column: ``ci_*`` (the percentile bootstrap
over the evaluation units, every estimator; None when ``n_boot=0``), ``influence_ci_*`` (the
normal-approximation interval of ``aipw`` and ``tmle``) and ``refit_ci_*`` (the refitting interval of
:mod:`textcause.estimators.refit`, training users resampled and the model refit; only when asked for).
On the IPW rows alone (:data:`AD_ESTIMATORS`, given the true propensities) ``ad_low``, ``ad_high`` and
``ci_narrower_than_ad`` hold the Arbour-Dimmery interval of the paper's appendix A: an IPW-centred
heuristic, not a bound (it can exclude the true ATE; tests/metrics/test_honest_metrics.py).

:data:`ADDED_COLUMNS` came after the first results stores: a store that lacks them gains them empty when
opened for writing, and readers treat a missing one as empty. :data:`RENAMED_COLUMNS` were written under
another name: a store is migrated when opened, and CSV readers rename them as they read
(:func:`migrate_row`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "RESULT_SCHEMA",
    "RESULT_COLUMNS",
    "ADDED_COLUMNS",
    "RENAMED_COLUMNS",
    "AD_COLUMNS",
    "AD_ESTIMATORS",
    "migrate_row",
]

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
    "ad_low": float,
    "ad_high": float,
    "ci_narrower_than_ad": bool,
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
#: Old column name -> its name now. The Arbour-Dimmery interval was stored as ``bound_low``,
#: ``bound_high`` and ``ci_tighter_than_bound`` on every estimator's row; it is not a bound.
RENAMED_COLUMNS = {
    "bound_low": "ad_low",
    "bound_high": "ad_high",
    "ci_tighter_than_bound": "ci_narrower_than_ad",
}
#: The columns of the Arbour-Dimmery interval (filled on :data:`AD_ESTIMATORS` rows only).
AD_COLUMNS = ("ad_low", "ad_high", "ci_narrower_than_ad")
#: The estimators whose rows carry the Arbour-Dimmery interval: it is centred on the IPW estimate.
AD_ESTIMATORS = ("ipw",)


def migrate_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A result row (a dict, e.g. a CSV line) with today's column names and meaning.

    Each column of :data:`RENAMED_COLUMNS` is renamed; where a row holds both names, a non-empty new
    value wins. The :data:`AD_COLUMNS` of a row whose ``estimator`` is not in :data:`AD_ESTIMATORS`
    are emptied (None): older code copied the IPW-centred interval onto every estimator's row.
    Every other key and value is kept as it is.
    """
    out = {key: value for key, value in row.items() if key not in RENAMED_COLUMNS}
    for old, new in RENAMED_COLUMNS.items():
        if old in row and out.get(new) in (None, ""):
            out[new] = row[old]
    if any(c in out for c in AD_COLUMNS) and out.get("estimator") not in AD_ESTIMATORS:
        out.update({c: None for c in AD_COLUMNS if c in out})
    return out

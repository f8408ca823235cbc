"""ATE estimates, their bias and propensity metrics after every validation (and test) epoch.

:class:`CausalMetricsCallback` gathers the model's collected ``index, propensity, t, y, p_true``
(``val_outputs`` / ``test_outputs``) across DDP ranks, de-duplicated by unit index, evaluates them
with :func:`textcause.metrics.evaluation.evaluate_propensities` (the function ``evaluate.py`` uses,
so the numbers agree by construction) and logs the same values on every rank:
``<prefix>/ate_<estimator>``, ``<prefix>/bias_<estimator>`` (when the true ATE is known), the
propensity metrics, and, for a model with outcome predictions, AIPW and TMLE with their
influence-function intervals (and bootstrap intervals with ``n_boot > 0``). The result rows are
kept in ``last_rows``. A quantity undefined on the data is skipped with a warning that names it:
training never stops and NaN is never logged. An evaluation whose inputs are identical to the last
one of the same prefix is logged again without being recomputed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Optional

import lightning as L
import numpy as np
from lightning.pytorch.utilities import rank_zero_warn

from textcause.estimators import ESTIMATORS
from textcause.estimators.registry import DEFAULT_ESTIMATORS, ESTIMATOR_DEFAULTS, OUTCOME_ESTIMATORS
from textcause.metrics.evaluation import (
    ECE_BINS,
    OUTCOME_KINDS,
    PROPENSITY_METRICS,
    TRUTH_METRICS,
    evaluate_propensities,
)
from textcause.metrics.torch import PredictionCollector
from textcause.validation import check_int, check_options, check_real

__all__ = [
    "CausalMetricsCallback",
]

#: The interval ends a result row may carry, logged as ``<column>_<estimator>`` when present.
_INTERVAL_COLUMNS = ("ci_low", "ci_high", "influence_ci_low", "influence_ci_high")


class CausalMetricsCallback(L.Callback):
    """Log ATE estimates, biases and propensity metrics on the whole validation / test split.

    Args:
        true_ate: the true ATE; None to read ``trainer.datamodule.true_ate`` (no bias is logged
            when neither is available).
        estimators: estimator names among ``unadjusted``, ``ipw``, ``stratified``, ``matching``,
            ``aipw``, ``tmle`` (the doubly robust AIPW and TMLE need outcome predictions and are
            added automatically when the model gives them); the default is the estimator
            registry's ``DEFAULT_ESTIMATORS``.
        n_strata: strata of the stratification estimator (>= 2; default: the registry's).
        caliper: caliper of the matching estimator, in standard deviations of the propensity
            (None: no caliper; default: the registry's).
        n_bins: bins of the expected calibration error (>= 1).
        prefix: the name prefix of the validation metrics (``<prefix>/ate_ipw``, ...); test
            metrics are always prefixed ``test``.
        n_boot: bootstrap replicates of each estimator's percentile interval (>= 0; 0: none, the
            default, since resampling every epoch is slow; the influence-function intervals of AIPW
            and TMLE cost nothing and are always computed).
        outcome: ``binary`` or ``continuous``, the outcome kind TMLE is run with; None reads the
            data module's ``outcome_kind`` (binary when it has none).
    """

    def __init__(
        self,
        true_ate: Optional[float] = None,
        estimators: Sequence[str] = DEFAULT_ESTIMATORS,
        n_strata: int = ESTIMATOR_DEFAULTS["stratified"]["n_strata"],
        caliper: Optional[float] = ESTIMATOR_DEFAULTS["matching"]["caliper"],
        n_bins: int = ECE_BINS,
        prefix: str = "val",
        n_boot: int = 0,
        outcome: Optional[str] = None,
    ) -> None:
        super().__init__()
        owner = "CausalMetricsCallback"
        self.true_ate = None if true_ate is None else check_real(true_ate, "true_ate", owner)
        if isinstance(estimators, str) or not all(e in ESTIMATORS for e in estimators) or not estimators:
            raise ValueError(
                f"The 'estimators' parameter of {owner} must be a non-empty list of names among "
                f"{sorted(ESTIMATORS)}. Got {estimators!r} instead."
            )
        self.estimators = tuple(dict.fromkeys(estimators))
        self.n_strata = check_int(n_strata, "n_strata", owner, low=2)
        self.caliper = None if caliper is None else check_real(caliper, "caliper", owner, low=0.0)
        self.n_bins = check_int(n_bins, "n_bins", owner, low=1)
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"The 'prefix' parameter of {owner} must be a non-empty str. Got {prefix!r} instead.")
        self.prefix = prefix
        self.n_boot = check_int(n_boot, "n_boot", owner, low=0)
        self.outcome = None if outcome is None else check_options(outcome, "outcome", owner, OUTCOME_KINDS)
        self.last_metrics: dict[str, float] = {}
        #: The result rows of the last evaluation of each prefix (``val`` / ``test``), as
        #: :func:`~textcause.metrics.evaluation.evaluate_propensities` returned them.
        self.last_rows: dict[str, list[dict[str, Any]]] = {}
        #: Per prefix, the inputs and numbers of the last evaluation (reused when the inputs repeat).
        self._memo: dict[str, tuple[dict[str, np.ndarray], tuple[Any, ...], dict[str, float]]] = {}

    # ------------------------------------------------------------------ hooks
    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        self._run(trainer, pl_module, getattr(pl_module, "val_outputs", None), self.prefix)

    def on_test_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._run(trainer, pl_module, getattr(pl_module, "test_outputs", None), "test")

    def _run(self, trainer: L.Trainer, pl_module: L.LightningModule, collector: Any, prefix: str) -> None:
        if not isinstance(collector, PredictionCollector):
            rank_zero_warn(
                f"{type(pl_module).__name__} has no PredictionCollector for the {prefix} split: "
                "CausalMetricsCallback logs nothing (use a textcause.models.PropensityModule)."
            )
            return
        outputs = collector.compute()  # gathered over ranks, de-duplicated, sorted by index
        if outputs["index"].size == 0:
            rank_zero_warn(f"No {prefix} outputs were collected: CausalMetricsCallback logs nothing.")
            return
        true_ate = self.true_ate
        if true_ate is None:
            value = getattr(trainer.datamodule, "true_ate", None) if trainer.datamodule is not None else None
            true_ate = None if value is None else float(value)
        outcome = self.outcome
        if outcome is None:
            outcome = _datamodule_outcome(trainer.datamodule)
        key = (true_ate, outcome, self.estimators, self.n_strata, self.caliper, self.n_bins, self.n_boot)
        memo = self._memo.get(prefix)
        if memo is not None and memo[1] == key and _same_outputs(memo[0], outputs):
            metrics = memo[2]  # the same inputs: the same numbers (last_rows[prefix] holds their rows)
        else:
            rows: list[dict[str, Any]] = []
            metrics = self.compute(outputs, true_ate, outcome=outcome, rows=rows)
            self.last_rows[prefix] = rows
            self._memo[prefix] = (outputs, key, metrics)
        self.last_metrics = {f"{prefix}/{k}": v for k, v in metrics.items()}
        for name, value in self.last_metrics.items():
            # Every rank holds the same gathered data, hence the same value: the mean over ranks is
            # that value, and sync_dist keeps Lightning's epoch-level logging consistent.
            pl_module.log(name, value, on_step=False, on_epoch=True, sync_dist=True)

    # ------------------------------------------------------------------ the numbers
    def compute(
        self,
        outputs: dict[str, np.ndarray],
        true_ate: Optional[float] = None,
        *,
        outcome: Optional[str] = None,
        rows: Optional[list[dict[str, Any]]] = None,
    ) -> dict[str, float]:
        """Estimates, biases, intervals and metrics for one set of collected outputs (names without prefix).

        Args:
            outputs: arrays ``propensity``, ``t``, ``y``, ``p_true`` (and optionally ``mu0``,
                ``mu1``), as returned by :meth:`PredictionCollector.compute`.
            true_ate: the true ATE, or None for no bias.
            outcome: the outcome kind for TMLE (None: the callback's ``outcome``, else binary).
            rows: a list that receives the result rows of the estimators logged (None: not kept).

        Returns:
            ``{"ate_<est>": ..., "bias_<est>": ..., "influence_ci_low_aipw": ..., "treatment_accuracy":
            ..., ...}``; quantities that are undefined on these data are left out (with a warning).
        """
        has_mu = "mu0" in outputs and "mu1" in outputs
        names = list(self.estimators)
        if has_mu:  # a model with an outcome model is evaluated with both doubly robust estimators
            names += [n for n in OUTCOME_ESTIMATORS if n not in names]
        outcome = outcome or self.outcome or "binary"
        needs_mu = [n for n in names if n in OUTCOME_ESTIMATORS]
        if not has_mu and needs_mu:
            who = " and ".join(n.upper() for n in needs_mu) + (" needs" if len(needs_mu) == 1 else " need")
            rank_zero_warn(f"{who} outcome predictions (mu0, mu1) from the model: skipped.")
            names = [n for n in names if n not in OUTCOME_ESTIMATORS]
        p_true = outputs["p_true"]
        # Observational data have no true propensities: nothing to compare against.
        truth = p_true if np.isfinite(p_true).all() else None
        metrics = PROPENSITY_METRICS + (TRUTH_METRICS if truth is not None else ())
        try:
            result = evaluate_propensities(
                outputs["t"],
                outputs["y"],
                outputs["propensity"],
                true_propensity=truth,
                true_ate=true_ate,
                estimators=names,
                n_boot=self.n_boot,
                n_strata=self.n_strata,
                caliper=self.caliper,
                n_bins=self.n_bins,
                mu0=outputs.get("mu0"),
                mu1=outputs.get("mu1"),
                outcome=outcome,
            )
        except ValueError as err:  # the data admit no evaluation at all (e.g. one treatment class)
            _skip([f"ate_{n}" for n in names] + list(metrics), str(err))
            return {}
        out: dict[str, float] = {}
        for row in result:
            name = row["estimator"]
            if name not in names:
                continue  # unadjusted is always evaluated; it is logged when asked for
            if rows is not None:
                rows.append(row)
            if "error" in row:
                _skip([f"ate_{name}"], row["error"])
            elif _finite(f"ate_{name}", row["ate"]):
                out[f"ate_{name}"] = row["ate"]
                if row["bias"] is not None:
                    out[f"bias_{name}"] = row["bias"]
                for column in _INTERVAL_COLUMNS:
                    value = row.get(column)
                    if value is not None and _finite(f"{column}_{name}", value):
                        out[f"{column}_{name}"] = value
        for name in metrics:
            if _finite(name, result[0][name]):
                out[name] = result[0][name]
        return out


def _same_outputs(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    """Whether two sets of collected outputs hold the same arrays (NaN equal to NaN)."""
    if a.keys() != b.keys():
        return False
    for key, x in a.items():
        y = b[key]
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if not np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"):
            return False
    return True


def _datamodule_outcome(datamodule: Any) -> Optional[str]:
    """The data module's ``outcome_kind`` (None: it has none, or its task does not say)."""
    try:
        kind = getattr(datamodule, "outcome_kind", None) if datamodule is not None else None
    except ValueError as err:
        rank_zero_warn(f"CausalMetricsCallback runs TMLE with a binary outcome: {err}")
        return None
    return kind if kind in OUTCOME_KINDS else None


def _skip(names: Sequence[str], reason: str) -> None:
    rank_zero_warn(f"CausalMetricsCallback skipped {', '.join(names)}: {reason}")


def _finite(name: str, value: float) -> bool:
    if math.isfinite(value):
        return True
    _skip([name], "the value is not finite.")
    return False

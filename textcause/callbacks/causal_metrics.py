"""ATE estimates, their bias and propensity metrics after every validation (and test) epoch.

The model collects ``index, propensity, t, y, p_true`` per unit (its ``val_outputs`` /
``test_outputs``, a :class:`~textcause.metrics.torch.PredictionCollector`); at the end of the epoch
this callback gathers them across DDP ranks, de-duplicated by unit index, evaluates them with
:func:`textcause.metrics.evaluation.evaluate_propensities` (``n_boot=0``: the function ``evaluate.py``
and every run use, so the numbers agree by construction) and logs, with the same value on every
rank (so a 2-process run logs the numbers of a 1-process run):

- ``<prefix>/ate_<estimator>`` and, when the true ATE is known, ``<prefix>/bias_<estimator>``;
- ``<prefix>/treatment_accuracy``, ``<prefix>/ece``, ``<prefix>/brier``,
  ``<prefix>/iptw_weight_mse`` and ``<prefix>/spearman`` (the last two against the true propensity).

AIPW is added when the model gives outcome predictions (``predict_outcomes`` -> ``mu0, mu1``).
A quantity that is undefined on the data (one treatment class in a tiny validation split, no
match within the caliper, ...) is skipped with a warning that names it; training never stops and
NaN is never logged.
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
from textcause.metrics.evaluation import ECE_BINS, PROPENSITY_METRICS, TRUTH_METRICS, evaluate_propensities
from textcause.metrics.torch import PredictionCollector
from textcause.validation import check_int, check_real


class CausalMetricsCallback(L.Callback):
    """Log ATE estimates, biases and propensity metrics on the whole validation / test split.

    Args:
        true_ate: the true ATE; None to read ``trainer.datamodule.true_ate`` (no bias is logged
            when neither is available).
        estimators: estimator names among ``unadjusted``, ``ipw``, ``stratified``, ``matching``,
            ``aipw`` (AIPW needs outcome predictions and is added automatically when the model
            gives them); the default is the estimator registry's ``DEFAULT_ESTIMATORS``.
        n_strata: strata of the stratification estimator (>= 2; default: the registry's).
        caliper: caliper of the matching estimator, in standard deviations of the propensity
            (None: no caliper; default: the registry's).
        n_bins: bins of the expected calibration error (>= 1).
        prefix: the name prefix of the validation metrics (``<prefix>/ate_ipw``, ...); test
            metrics are always prefixed ``test``.
    """

    def __init__(
        self,
        true_ate: Optional[float] = None,
        estimators: Sequence[str] = DEFAULT_ESTIMATORS,
        n_strata: int = ESTIMATOR_DEFAULTS["stratified"]["n_strata"],
        caliper: Optional[float] = ESTIMATOR_DEFAULTS["matching"]["caliper"],
        n_bins: int = ECE_BINS,
        prefix: str = "val",
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
        self.last_metrics: dict[str, float] = {}

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
        metrics = self.compute(outputs, true_ate)
        self.last_metrics = {f"{prefix}/{k}": v for k, v in metrics.items()}
        for name, value in self.last_metrics.items():
            # Every rank holds the same gathered data, hence the same value: the mean over ranks is
            # that value, and sync_dist keeps Lightning's epoch-level logging consistent.
            pl_module.log(name, value, on_step=False, on_epoch=True, sync_dist=True)

    # ------------------------------------------------------------------ the numbers
    def compute(self, outputs: dict[str, np.ndarray], true_ate: Optional[float] = None) -> dict[str, float]:
        """Estimates, biases and metrics for one set of collected outputs (names without prefix).

        Args:
            outputs: arrays ``propensity``, ``t``, ``y``, ``p_true`` (and optionally ``mu0``,
                ``mu1``), as returned by :meth:`PredictionCollector.compute`.
            true_ate: the true ATE, or None for no bias.

        Returns:
            ``{"ate_<est>": ..., "bias_<est>": ..., "treatment_accuracy": ..., ...}``; quantities
            that are undefined on these data are left out (with a warning).
        """
        has_mu = "mu0" in outputs and "mu1" in outputs
        names = list(self.estimators)
        if has_mu and "aipw" not in names:
            names.append("aipw")
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
            rows = evaluate_propensities(
                outputs["t"],
                outputs["y"],
                outputs["propensity"],
                true_propensity=truth,
                true_ate=true_ate,
                estimators=names,
                n_boot=0,
                n_strata=self.n_strata,
                caliper=self.caliper,
                n_bins=self.n_bins,
                mu0=outputs.get("mu0"),
                mu1=outputs.get("mu1"),
            )
        except ValueError as err:  # the data admit no evaluation at all (e.g. one treatment class)
            _skip([f"ate_{n}" for n in names] + list(metrics), str(err))
            return {}
        out: dict[str, float] = {}
        for row in rows:
            name = row["estimator"]
            if name not in names:
                continue  # unadjusted is always evaluated; it is logged when asked for
            if "error" in row:
                _skip([f"ate_{name}"], row["error"])
            elif _finite(f"ate_{name}", row["ate"]):
                out[f"ate_{name}"] = row["ate"]
                if row["bias"] is not None:
                    out[f"bias_{name}"] = row["bias"]
        for name in metrics:
            if _finite(name, rows[0][name]):
                out[name] = rows[0][name]
        return out


def _skip(names: Sequence[str], reason: str) -> None:
    rank_zero_warn(f"CausalMetricsCallback skipped {', '.join(names)}: {reason}")


def _finite(name: str, value: float) -> bool:
    if math.isfinite(value):
        return True
    _skip([name], "the value is not finite.")
    return False

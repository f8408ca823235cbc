"""ATE estimates, their bias and propensity metrics after every validation (and test) epoch.

The model collects ``index, propensity, t, y, p_true`` per unit (its ``val_outputs`` /
``test_outputs``, a :class:`~textcause.metrics.torch.PredictionCollector`); at the end of the epoch
this callback gathers them across DDP ranks, de-duplicated by unit index, and logs, with the same
value on every rank (so a 2-process run logs the numbers of a 1-process run):

- ``<prefix>/ate_<estimator>`` and, when the true ATE is known, ``<prefix>/bias_<estimator>``;
- ``<prefix>/treatment_accuracy``, ``<prefix>/ece``, ``<prefix>/brier``,
  ``<prefix>/iptw_weight_mse`` and ``<prefix>/spearman`` (the last two against the true propensity).

AIPW is added when the model gives outcome predictions (``predict_outcomes`` -> ``mu0, mu1``).
A quantity that is undefined on the data (one treatment class in a tiny validation split, no
match within the caliper, ...) is skipped with a warning; training never stops and NaN is never
logged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Callable, Optional

import lightning as L
import numpy as np
from lightning.pytorch.utilities import rank_zero_warn

from textcause.estimators import ESTIMATORS, aipw, ipw, matching, stratified, unadjusted
from textcause.metrics import (
    bias,
    brier_score,
    expected_calibration_error,
    iptw_weight_mse,
    spearman,
    treatment_accuracy,
)
from textcause.metrics.torch import PredictionCollector
from textcause.validation import check_int, check_real

DEFAULT_ESTIMATORS = ("ipw", "stratified", "matching")


class CausalMetricsCallback(L.Callback):
    """Log ATE estimates, biases and propensity metrics on the whole validation / test split.

    Args:
        true_ate: the true ATE; None to read ``trainer.datamodule.true_ate`` (no bias is logged
            when neither is available).
        estimators: estimator names among ``unadjusted``, ``ipw``, ``stratified``, ``matching``,
            ``aipw`` (AIPW needs outcome predictions and is added automatically when the model
            gives them).
        n_strata: strata of the stratification estimator (>= 2).
        caliper: caliper of the matching estimator, in standard deviations of the propensity
            (None: no caliper).
        n_bins: bins of the expected calibration error (>= 1).
        prefix: the name prefix of the validation metrics (``<prefix>/ate_ipw``, ...); test
            metrics are always prefixed ``test``.
    """

    def __init__(
        self,
        true_ate: Optional[float] = None,
        estimators: Sequence[str] = DEFAULT_ESTIMATORS,
        n_strata: int = 10,
        caliper: Optional[float] = 0.2,
        n_bins: int = 15,
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
        t, y, p, p_true = outputs["t"], outputs["y"], outputs["propensity"], outputs["p_true"]
        has_mu = "mu0" in outputs and "mu1" in outputs
        names = list(self.estimators)
        if has_mu and "aipw" not in names:
            names.append("aipw")
        out: dict[str, float] = {}
        for name in names:
            if name == "aipw" and not has_mu:
                rank_zero_warn("AIPW needs outcome predictions (mu0, mu1) from the model: skipped.")
                continue
            ate = self._safe(f"ate_{name}", self._estimator(name, t, y, p, outputs))
            if ate is None:
                continue
            out[f"ate_{name}"] = ate
            if true_ate is not None:
                out[f"bias_{name}"] = bias(ate, true_ate)
        metrics: dict[str, Callable[[], float]] = {
            "treatment_accuracy": lambda: treatment_accuracy(t, p),
            "ece": lambda: expected_calibration_error(t, p, self.n_bins),
            "brier": lambda: brier_score(t, p),
        }
        if np.isfinite(p_true).all():  # observational data have no true propensities: nothing to compare
            metrics["iptw_weight_mse"] = lambda: iptw_weight_mse(t, p, p_true)
            metrics["spearman"] = lambda: spearman(p, p_true)
        for name, fn in metrics.items():
            value = self._safe(name, fn)
            if value is not None:
                out[name] = value
        return out

    def _estimator(self, name: str, t: np.ndarray, y: np.ndarray, p: np.ndarray,
                   outputs: dict[str, np.ndarray]) -> Callable[[], float]:
        """A thunk computing the ATE of estimator ``name`` on the collected outputs."""
        if name == "unadjusted":
            return lambda: unadjusted(t, y).ate
        if name == "ipw":
            return lambda: ipw(t, y, p).ate
        if name == "stratified":
            return lambda: stratified(t, y, p, n_strata=self.n_strata).ate
        if name == "matching":
            return lambda: matching(t, y, p, caliper=self.caliper).ate
        return lambda: aipw(t, y, p, outputs["mu0"], outputs["mu1"]).ate

    @staticmethod
    def _safe(name: str, fn: Callable[[], float]) -> Optional[float]:
        try:
            value = float(fn())
        except ValueError as err:
            rank_zero_warn(f"CausalMetricsCallback skipped {name}: {err}")
            return None
        if not math.isfinite(value):
            rank_zero_warn(f"CausalMetricsCallback skipped {name}: the value is not finite.")
            return None
        return value

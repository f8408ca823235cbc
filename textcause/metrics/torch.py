"""torchmetrics wrappers: gather every unit's propensity, treatment and outcome, then compute.

An ATE needs all units at once, so the states are lists concatenated across processes
(``dist_reduce_fx="cat"``): under DDP, ``compute()`` sees every rank's units. The math is in the
pure functions of :mod:`textcause.metrics` and :mod:`textcause.estimators`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from textcause.metrics.causal import causal_metrics

_FIELDS = ("propensity", "t", "y", "true_propensity")


class PropensityOutputs(Metric):
    """Accumulates ``(propensity, t, y[, true_propensity])`` of every unit seen.

    Call :meth:`update` once per batch; :meth:`compute` returns the concatenated arrays as float64
    numpy arrays (keys ``propensity``, ``t``, ``y`` and, if it was given, ``true_propensity``).
    Calling the metric object (``forward``) only updates and returns None: an ATE of one batch is
    not meaningful and may be undefined (one treatment class).

    Args:
        **kwargs: passed to ``torchmetrics.Metric`` (e.g. ``dist_sync_on_step``).
    """

    is_differentiable = False
    higher_is_better = None
    full_state_update = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name in _FIELDS:
            self.add_state(name, default=[], dist_reduce_fx="cat")

    def update(
        self,
        propensity: torch.Tensor,
        t: torch.Tensor,
        y: torch.Tensor,
        true_propensity: torch.Tensor | None = None,
    ) -> None:
        """Append one batch (any shape; flattened). Give ``true_propensity`` always or never."""
        values = {"propensity": propensity, "t": t, "y": y, "true_propensity": true_propensity}
        for name, value in values.items():
            if value is not None:
                getattr(self, name).append(torch.as_tensor(value).detach().reshape(-1).to(torch.float64))

    def forward(self, *args: Any, **kwargs: Any) -> None:  # noqa: D102 - see class docstring
        self.update(*args, **kwargs)

    def compute(self) -> dict[str, np.ndarray]:
        """The accumulated units as numpy arrays (same order within each process)."""
        out = {}
        for name in _FIELDS:
            state = getattr(self, name)
            if isinstance(state, list) and not state:
                continue
            out[name] = dim_zero_cat(state).cpu().numpy()
        if "propensity" not in out:
            raise ValueError(f"{type(self).__name__}.compute() was called before any update: no units to evaluate.")
        return out


class CausalMetrics(PropensityOutputs):
    """Every causal metric of the accumulated units (:func:`textcause.metrics.causal_metrics`).

    ``compute()`` returns a dict of floats: treatment accuracy, Brier score, ECE, the unadjusted,
    IPW, stratified and matching ATEs, their biases when ``true_ate`` is set, and the
    true-propensity metrics when ``true_propensity`` was passed to :meth:`update`.

    Args:
        true_ate: the task's true ATE, or None.
        n_strata: strata of the stratified estimator.
        caliper: caliper of the matching estimator (standard deviations; None for none).
        n_bins: bins of the expected calibration error.
        threshold: decision threshold of the treatment accuracy.
        **kwargs: passed to ``torchmetrics.Metric``.
    """

    def __init__(
        self,
        true_ate: float | None = None,
        n_strata: int = 10,
        caliper: float | None = 0.2,
        n_bins: int = 15,
        threshold: float = 0.5,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.options = {"true_ate": true_ate, "n_strata": n_strata, "caliper": caliper,
                        "n_bins": n_bins, "threshold": threshold}

    def compute(self) -> dict[str, float]:  # type: ignore[override]
        """The metrics of all accumulated units."""
        a = super().compute()
        return causal_metrics(a["t"], a["y"], a["propensity"], a.get("true_propensity"), **self.options)

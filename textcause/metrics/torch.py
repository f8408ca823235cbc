"""A torchmetrics collector of per-unit predictions for whole-sample statistics (ATE, calibration).

Under DDP the states are concatenated across ranks (``dist_reduce_fx="cat"``) on ``compute()``.
``DistributedSampler`` pads a split whose size is not divisible by the world size with repeated
units, so ``compute()`` de-duplicates by unit index: a 2-process run sees exactly the units, and
gets exactly the numbers, of a 1-process run.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

__all__ = [
    "PredictionCollector",
]

_FIELDS = ("index", "propensity", "t", "y", "p_true")
_OPTIONAL_FIELDS = ("mu0", "mu1")


class PredictionCollector(Metric):
    """Collects ``index, propensity, t, y, p_true`` (and optionally ``mu0, mu1``) per unit.

    ``compute()`` returns numpy arrays de-duplicated by ``index`` and sorted by it: ``index``
    (int64) and float64 ``propensity``, ``t``, ``y``, ``p_true``, plus ``mu0`` and ``mu1`` when
    outcome predictions were given for every unit. Nothing collected gives empty arrays.
    """

    full_state_update = False
    is_differentiable = False
    higher_is_better: Optional[bool] = None

    def __init__(self) -> None:
        super().__init__()
        for name in _FIELDS + _OPTIONAL_FIELDS:
            self.add_state(name, default=[], dist_reduce_fx="cat")

    def update(
        self,
        index: torch.Tensor,
        propensity: torch.Tensor,
        t: torch.Tensor,
        y: torch.Tensor,
        p_true: torch.Tensor,
        mu0: Optional[torch.Tensor] = None,
        mu1: Optional[torch.Tensor] = None,
    ) -> None:
        """Add one batch (all 1-D tensors of the same length; ``mu0``/``mu1`` together or not at all).

        Raises:
            ValueError: tensors of different lengths, or only one of ``mu0``/``mu1``.
        """
        values = {"index": index, "propensity": propensity, "t": t, "y": y, "p_true": p_true}
        if (mu0 is None) != (mu1 is None):
            raise ValueError("Pass both 'mu0' and 'mu1' to PredictionCollector.update, or neither.")
        if mu0 is not None and mu1 is not None:
            values.update(mu0=mu0, mu1=mu1)
        lengths = [int(v.reshape(-1).shape[0]) for v in values.values()]
        if len(set(lengths)) > 1:
            raise ValueError(f"Found input variables with inconsistent numbers of samples: {lengths}")
        for name, v in values.items():
            v = v.detach().reshape(-1)
            v = v.long() if name == "index" else v.to(torch.float64)
            getattr(self, name).append(v)

    def compute(self) -> dict[str, np.ndarray]:
        """The collected units, one row per distinct index, sorted by index."""
        index = self._cat("index").to(torch.int64).cpu().numpy()
        uniq, first = np.unique(index, return_index=True)
        out: dict[str, np.ndarray] = {"index": uniq}
        for name in _FIELDS[1:]:
            out[name] = self._cat(name).cpu().numpy().astype(np.float64)[first]
        mu = [self._cat(name).cpu().numpy().astype(np.float64) for name in _OPTIONAL_FIELDS]
        if all(m.shape[0] == index.shape[0] for m in mu) and index.shape[0] > 0:
            out["mu0"], out["mu1"] = mu[0][first], mu[1][first]
        return out

    def _cat(self, name: str) -> torch.Tensor:
        state: torch.Tensor | list[torch.Tensor] = getattr(self, name)
        if isinstance(state, list):
            return dim_zero_cat(state) if state else torch.zeros(0, dtype=torch.float64)
        return state

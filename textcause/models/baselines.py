"""The paper's two reference "models" (Weld et al., section 6.1), run through the same Lightning
fit / validate / test / predict path as the trained propensity models.

- ``OracleModel`` returns the true propensity of each unit (known in a semi-synthetic task): the
  upper bound on what any propensity model can do.
- ``UnadjustedModel`` returns one constant, the share of treated units in the training data. A
  constant propensity makes IPW and stratification return the naive difference in means.

Neither has anything to learn (``requires_training = False``); ``trainer.fit`` still works on them,
single-process and under DDP (manual optimisation, no optimizer, and one unused parameter so that
DDP can wrap the module).
"""

from __future__ import annotations

import math
from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import nn

from textcause.metrics.torch import PredictionCollector
from textcause.models.propensity import Batch, PropensityModule, clamp_propensity
from textcause.validation import check_real

__all__ = [
    "OracleModel",
    "UnadjustedModel",
]


class _Baseline(PropensityModule):
    """A propensity model with nothing to learn.

    Attributes:
        requires_training: False: the model has no weights to learn, so ``textcause.run.fit``
            evaluates it without a checkpoint (it saves none, as it takes no optimizer step).
    """

    requires_training = False

    def __init__(self) -> None:
        super().__init__()
        self.automatic_optimization = False
        # DistributedDataParallel refuses a module without a trainable parameter.
        self.ddp_anchor = nn.Parameter(torch.zeros(()))

    def _loss(self, p: torch.Tensor, batch: Batch) -> torch.Tensor:
        return F.binary_cross_entropy(p, batch["t"].to(p.dtype))

    def training_step(self, batch: Batch, batch_idx: int) -> None:
        return None

    def configure_optimizers(self) -> Any:
        return None


class OracleModel(_Baseline):
    """Propensity = the unit's true propensity ``batch["p_true"]`` (clamped to [1e-6, 1 - 1e-6]).

    ``requires_training`` is False: there is nothing to learn, and no checkpoint is needed to evaluate it.
    """

    def __init__(self) -> None:
        super().__init__()
        self.save_hyperparameters()

    def propensity_and_loss(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        p = clamp_propensity(batch["p_true"].to(torch.float32))
        return p, self._loss(p, batch)


class UnadjustedModel(_Baseline):
    """Propensity = the share of treated units in the training data, the same for every unit.

    The share is taken, in order of preference, from ``treated_share`` if given; else at
    ``on_fit_start`` from the data module's training truth (``trainer.datamodule.truth("train")``);
    else from the training batches of the first epoch (de-duplicated by unit index, so DDP padding
    does not bias it). It is stored as a buffer and saved in checkpoints. Before any training data
    has been seen (Lightning's sanity check) the model predicts 0.5; evaluating or predicting with
    a model that never saw its training data is an error. ``requires_training`` is False: without a
    checkpoint the share is read from the data module again.

    Args:
        treated_share: a fixed share of treated units in (0, 1); None to learn it from the data.
    """

    def __init__(self, treated_share: Optional[float] = None) -> None:
        super().__init__()
        if treated_share is not None:
            treated_share = check_real(
                treated_share, "treated_share", "UnadjustedModel", low=0.0, high=1.0, low_open=True, high_open=True
            )
        self.save_hyperparameters()
        value = math.nan if treated_share is None else treated_share
        self.register_buffer("treated_share", torch.tensor(value, dtype=torch.float64))
        self.train_outputs = PredictionCollector()
        self._counting = False

    @property
    def share_known(self) -> bool:
        return bool(torch.isfinite(self.treated_share))

    def _share_from_datamodule(self) -> bool:
        """Take the treated share of the data module's training split, when it exposes one."""
        truth = getattr(getattr(self.trainer, "datamodule", None), "truth", None)
        if not callable(truth):
            return False
        self._set_share(torch.as_tensor(truth("train")["t"], dtype=torch.float64).mean())
        return True

    def on_fit_start(self) -> None:
        if self.hparams.treated_share is not None:
            return
        self._counting = not self._share_from_datamodule()
        if self._counting:
            self.train_outputs.reset()

    def on_predict_start(self) -> None:
        # A constant is not a learned weight: evaluating without a checkpoint (baselines save none,
        # as they take no optimizer step) reads the training split's share again.
        if not self.share_known:
            self._share_from_datamodule()

    on_test_start = on_predict_start

    def training_step(self, batch: Batch, batch_idx: int) -> None:
        if self._counting:
            t = batch["t"].to(torch.float64)
            self.train_outputs.update(batch["index"], torch.full_like(t, 0.5), t, batch["y"], batch["p_true"])
        return None

    def _share_from_batches(self) -> None:
        if self._counting and self.train_outputs.update_count > 0:
            self._set_share(torch.as_tensor(self.train_outputs.compute()["t"]).mean())

    def on_validation_epoch_start(self) -> None:
        super().on_validation_epoch_start()
        if not self.trainer.sanity_checking:
            self._share_from_batches()  # validation runs before on_train_epoch_end

    def on_train_epoch_end(self) -> None:
        self._share_from_batches()
        if self._counting:
            self._counting = False
            self.train_outputs.reset()

    def _set_share(self, share: torch.Tensor) -> None:
        share = float(share)
        if not 0.0 < share < 1.0:
            raise ValueError(
                f"The training data of UnadjustedModel has a treated share of {share!r}: it needs treated "
                "and untreated units."
            )
        self.treated_share.fill_(share)

    def _sanity_checking(self) -> bool:
        try:
            return bool(self.trainer.sanity_checking)
        except RuntimeError:  # not attached to a Trainer
            return False

    def propensity_and_loss(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        if self.share_known:
            share = float(self.treated_share)
        elif self._sanity_checking():
            share = 0.5
        else:
            raise ValueError(
                "UnadjustedModel has not seen its training data: run trainer.fit first, load a fitted "
                "checkpoint, or pass treated_share."
            )
        p = clamp_propensity(torch.full_like(batch["t"], share, dtype=torch.float32))
        return p, self._loss(p, batch)

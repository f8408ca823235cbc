"""The joint model: a propensity head and two outcome heads trained together (CausalBERT-style).

:class:`JointModel` trains an injected network whose output has three columns per unit: the
propensity logit (binary cross-entropy on T), then the outcome heads for T=0 and T=1 (mu0 before
mu1, as everywhere in textcause). A unit trains only the head of the arm it received: the outcome
loss is one mean of ``loss(head[T], Y)`` over the batch (binary cross-entropy on the logit for a
binary outcome, squared error for a continuous one), so a mini-batch loss is an unbiased estimate of
the full-sample loss. Its outcome predictions (:meth:`JointModel.predict_outcomes`) make the
evaluation run AIPW and TMLE beside the propensity-only estimators.

Networks: :class:`~textcause.models.components.JointLinear` and
:class:`~textcause.models.components.JointSHERBERT`; configs ``configs/joint_*.yaml``.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import nn

from textcause.models.propensity import Batch, PropensityModel, clamp_propensity
from textcause.validation import check_options, check_real

__all__ = [
    "JointModel",
    "OUTCOMES",
]

#: The outcome kinds: ``binary`` (Y in {0, 1}, or proportions in [0, 1]: logit heads and
#: cross-entropy) and ``normal`` (continuous Y: linear heads and squared error), as the data's
#: ``outcome`` option.
OUTCOMES = ("binary", "normal")
_N_HEADS = 3


class JointModel(PropensityModel):
    """A propensity head and two outcome heads on one network, trained on a weighted sum of their losses.

    ``loss = propensity_weight * BCE(head_0, T) + outcome_weight * mean_i loss(head_{1 + T_i}, Y_i)``.

    The defaults weigh both losses 1. CausalBERT (Veitch et al. 2020) trains ``g_weight * g_loss +
    Q_weight * Q_loss + mlm_weight * mlm_loss``; rpryzant/causal-bert-pytorch's ``CausalBertWrapper``
    defaults to g 1.0, Q 0.1 and MLM 1.0 (its example script uses 0.1, 0.1 and 1), small task weights
    sized against the masked-language-model loss that keeps its fine-tuned encoder near the
    pretrained one. There is no such loss here (the encoder is frozen, or its top layers are
    fine-tuned on these two losses alone), so nothing calls for scaling them down. And the
    propensity head is judged on its own by the same propensity-only estimators as every
    :class:`PropensityModel` (IPW, stratification, matching): at weight 1 the joint linear model's
    propensity head solves exactly ``lr_bigram_binary``'s regularised problem (the heads share no
    parameters), so its propensity rows are that model's. Lower ``propensity_weight`` to let the
    outcome heads shape a shared representation more.

    Args:
        net: the network, features -> heads of shape (B, 3): the propensity logit, the outcome head
            for T=0, the outcome head for T=1 (``textcause.models.components.JointLinear`` or
            ``JointSHERBERT``); picked in YAML by ``class_path``. A ``{"class_path", "init_args"}``
            dict, as stored in checkpoints, is also accepted.
        lr: learning rate (> 0); for ``lbfgs`` the initial step length (1.0 is usual).
        weight_decay: L2 penalty (>= 0) on every parameter, as in :class:`PropensityModel`.
        optimizer: ``adam`` (mini-batch) or ``lbfgs`` (full batch, for the linear network; under
            DDP every rank sees the loss averaged over ranks, as in :class:`PropensityModel`).
        lbfgs_max_iter: L-BFGS iterations per optimizer step (per batch).
        outcome: ``binary`` (the outcome heads are logits; ``mu = sigmoid(head)``; Y must lie in
            [0, 1]) or ``normal`` (a continuous outcome: the heads are means, trained with squared
            error). Set it as the data's ``outcome``.
        propensity_weight: the weight of the propensity loss (> 0).
        outcome_weight: the weight of the outcome loss (> 0).
    """

    def __init__(
        self,
        net: nn.Module,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        optimizer: str = "adam",
        lbfgs_max_iter: int = 50,
        outcome: str = "binary",
        propensity_weight: float = 1.0,
        outcome_weight: float = 1.0,
    ) -> None:
        outcome = check_options(outcome, "outcome", "JointModel", OUTCOMES)
        propensity_weight = check_real(propensity_weight, "propensity_weight", "JointModel", low=0.0, low_open=True)
        outcome_weight = check_real(outcome_weight, "outcome_weight", "JointModel", low=0.0, low_open=True)
        super().__init__(net, lr=lr, weight_decay=weight_decay, optimizer=optimizer, lbfgs_max_iter=lbfgs_max_iter)
        self.outcome = outcome
        self.propensity_weight = propensity_weight
        self.outcome_weight = outcome_weight
        # The heads of the last evaluation batch, so that predict_outcomes does not run the net again.
        self._eval_heads: Optional[tuple[Any, torch.Tensor]] = None

    def setup(self, stage: str) -> None:
        """Refuse data whose outcome kind is not the model's ``outcome`` (the heads would be fitted with the wrong loss).

        Raises:
            ValueError: the data module's task has a continuous outcome and ``outcome="binary"``, or
                a binary one and ``outcome="normal"``.
        """
        super().setup(stage)
        datamodule = getattr(self._trainer, "datamodule", None) if self._trainer is not None else None
        try:
            kind = getattr(datamodule, "outcome_kind", None)
        except (AttributeError, ValueError):  # a data module not set up, or a task that does not say
            kind = None
        want = {"binary": "binary", "continuous": "normal"}.get(kind) if isinstance(kind, str) else None
        if want is not None and want != self.outcome:
            raise ValueError(
                f"JointModel has outcome={self.outcome!r} but the data's outcome is {kind}: set "
                f"model.init_args.outcome to {want!r} (the data's outcome setting and the model's must agree)."
            )

    def forward(self, x: Any) -> torch.Tensor:
        """The three heads, shape (B, 3): propensity logit, outcome head for T=0, outcome head for T=1.

        Raises:
            ValueError: the network does not return a (B, 3) tensor.
        """
        heads = self.net(x)
        if not isinstance(heads, torch.Tensor) or heads.dim() != 2 or heads.shape[1] != _N_HEADS:
            shape = tuple(heads.shape) if isinstance(heads, torch.Tensor) else type(heads).__name__
            raise ValueError(
                f"JointModel needs a net that returns heads of shape (batch, {_N_HEADS}) (propensity logit, "
                f"outcome under T=0, outcome under T=1). Got {shape} from {type(self.net).__name__} instead: "
                "use a joint network such as textcause.models.components.JointLinear or JointSHERBERT."
            )
        return heads

    def losses(self, heads: torch.Tensor, t: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The propensity loss and the outcome loss of float32 heads (B, 3) for treatments and outcomes (B,).

        The outcome loss of unit i uses only the head of its arm, ``heads[i, 1 + T_i]``: the other
        head receives no gradient from it.

        Raises:
            ValueError: a binary outcome outside [0, 1].
        """
        propensity_loss = F.binary_cross_entropy_with_logits(heads[:, 0], t)
        observed = torch.where(t > 0.5, heads[:, 2], heads[:, 1])
        if self.outcome == "normal":
            return propensity_loss, F.mse_loss(observed, y)
        if len(y) and bool(((y < 0) | (y > 1)).any()):
            raise ValueError(
                f"JointModel with outcome='binary' needs outcomes in [0, 1]. Got values in "
                f"[{float(y.min()):g}, {float(y.max()):g}] instead: set outcome='normal' for a continuous outcome."
            )
        return propensity_loss, F.binary_cross_entropy_with_logits(observed, y)

    def propensity_and_loss(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Clamped propensities (B,) and the weighted joint loss on ``batch['t']`` and ``batch['y']``."""
        heads = self(batch["x"]).float()  # float32 even under bf16 autocast: 1 - 1e-6 must stay < 1
        propensity_loss, outcome_loss = self.losses(heads, batch["t"].float(), batch["y"].float())
        loss = self.propensity_weight * propensity_loss + self.outcome_weight * outcome_loss
        if not self.training:
            self._eval_heads = (batch["x"], heads.detach())
        return clamp_propensity(torch.sigmoid(heads[:, 0])), loss

    def predict_outcomes(self, batch: Batch) -> Optional[tuple[torch.Tensor, torch.Tensor]]:
        """``(mu0, mu1)``, float32 (B,) each, detached: E[Y | T=0, X] and E[Y | T=1, X] on the outcome's scale.

        Probabilities (the sigmoid of the heads) for ``outcome="binary"``, the heads themselves for
        ``outcome="normal"``. Reuses the heads of :meth:`propensity_and_loss` on the same batch in
        evaluation; otherwise runs the network.
        """
        cached, self._eval_heads = self._eval_heads, None
        if cached is not None and cached[0] is batch["x"]:
            heads = cached[1]
        else:
            heads = self(batch["x"]).detach().float()
        mu = heads[:, 1:]
        if self.outcome == "binary":
            mu = torch.sigmoid(mu)
        return mu[:, 0].contiguous(), mu[:, 1].contiguous()

"""What the fine-tuned encoder models (masked gender, SemEval) share: AdamW with linear warmup and
decay, and :class:`FineTunedEncoder`, their LightningModule base.

Biases and normalisation weights get no weight decay (the BERT recipe); the learning rate rises
linearly over the first ``warmup`` share of the training steps, then falls linearly to 0.
"""

from __future__ import annotations

from typing import Any

import lightning as L
import torch
from torch import nn

from textcause.models.nets import as_net
from textcause.validation import check_real

__all__ = [
    "FineTunedEncoder",
    "adamw_with_warmup",
]

#: Parameter-name endings that get no weight decay.
_NO_DECAY = ("bias", "LayerNorm.weight", "layer_norm.weight", "norm.weight")


def adamw_with_warmup(
    net: nn.Module, *, lr: float, weight_decay: float, warmup: float, total_steps: int
) -> dict[str, Any]:
    """What ``configure_optimizers`` returns: AdamW over ``net``'s trainable parameters and a per-step schedule."""
    decay, no_decay = [], []
    for name, param in net.named_parameters():
        if param.requires_grad:
            (no_decay if name.endswith(_NO_DECAY) else decay).append(param)
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}], lr=lr
    )
    total = max(int(total_steps), 1)
    warm = int(warmup * total)

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / (warm + 1)
        return max(0.0, (total - step) / max(total - warm, 1))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}


class FineTunedEncoder(L.LightningModule):
    """The base of the fine-tuned encoder models: the network, the encoder check against the data
    module, AdamW with warmup, and the logging of torchmetrics objects.

    A subclass names itself in ``owner`` (the messages' subject) and may reword
    ``encoder_mismatch``, the refusal when the data module's settings name another encoder than the
    network's (``{data}`` and ``{net}``: the two encoders).

    Args:
        net: the network, ``(input_ids, attention_mask) -> logits``.
        lr: AdamW's peak learning rate (> 0).
        weight_decay: AdamW's weight decay (>= 0; none on biases and LayerNorm weights).
        warmup: the fraction of the training steps of linear warmup, in [0, 1).

    Raises:
        ValueError: an option out of its range, or a network that is not a module.
    """

    owner = "FineTunedEncoder"
    encoder_mismatch = (
        "The data were tokenised with the encoder {data!r}, but the network's encoder is {net!r}: set "
        "data.init_args.encoder to the network's encoder (null: all-MiniLM-L6-v2)."
    )

    def __init__(self, net: nn.Module, lr: float, weight_decay: float, warmup: float) -> None:
        super().__init__()
        owner = self.owner
        self.lr = check_real(lr, "lr", owner, low=0.0, low_open=True)
        self.weight_decay = check_real(weight_decay, "weight_decay", owner, low=0.0)
        self.warmup = check_real(warmup, "warmup", owner, low=0.0, high=1.0, high_open=True)
        self.net = as_net(net, owner)

    def _datamodule(self) -> Any:
        return getattr(self._trainer, "datamodule", None) if self._trainer is not None else None

    def setup(self, stage: str) -> None:
        """Refuse a data module whose typed settings name another encoder than the network's (a data
        module without settings, or a network that declares no encoder, is not checked)."""
        settings = getattr(self._datamodule(), "settings", None)
        declared = getattr(self.net, "data_requirements", None)
        needs = declared() if callable(declared) else {}
        if settings is None or "encoder" not in needs or not hasattr(settings, "encoder"):
            return
        from textcause.features.encoder_spec import check_same_encoder

        message = self.encoder_mismatch.format(data=settings.encoder, net=needs["encoder"])
        check_same_encoder(settings.encoder, needs["encoder"], message)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The network's logits of a batch of token ids."""
        return self.net(input_ids, attention_mask)

    def configure_optimizers(self) -> Any:
        return adamw_with_warmup(
            self.net,
            lr=self.lr,
            weight_decay=self.weight_decay,
            warmup=self.warmup,
            total_steps=self.trainer.estimated_stepping_batches,
        )

    def _log_metrics(self, metrics: nn.ModuleDict, stage: str) -> None:
        """Log each metric object as ``<stage>_<name>`` (computed, synced over ranks, at the epoch's end)."""
        for name, metric in metrics.items():
            self.log(f"{stage}_{name}", metric, on_step=False, on_epoch=True, prog_bar=stage == "val")

    @staticmethod
    def _reset_metrics(metrics: nn.ModuleDict) -> None:
        """Fresh states that are normal tensors: states reset under one run's inference mode would be
        inference tensors, which a later run under no_grad (DDP with gloo) cannot update in place."""
        with torch.inference_mode(False):
            for metric in metrics.values():
                metric.reset()

"""The optimizer of the fine-tuned encoder models (masked gender, SemEval): AdamW with linear warmup and decay.

Biases and normalisation weights get no weight decay (the BERT recipe); the learning rate rises
linearly over the first ``warmup`` share of the training steps, then falls linearly to 0.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = [
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

"""Dropout whose CPU masks are drawn fast: a drop-in for ``nn.Dropout`` on large activations.

:class:`FastDropout` draws the Bernoulli mask from numpy's PCG64 raw bits (16 bits per element)
instead of torch's serial ``bernoulli_``, and applies it as ``nn.Dropout`` does: ``x * mask / (1 - p)``
in training, the identity in evaluation. The drop probability is ``p`` rounded to a multiple of
1/65,536 (at most 7.6e-6 off) and the scale uses that exact rate, so the output stays unbiased.

It is random in the same way, not in the same values: the PCG64 stream is seeded from torch's
default generator, so ``seed_everything`` makes a run reproducible, but not with ``nn.Dropout``'s
masks. Off CPU and on tensors under :data:`MIN_ELEMENTS` it calls torch's own dropout. Timings:
benchmarks/README.md, ``bench_train_step.py``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from textcause.validation import check_real

__all__ = [
    "FastDropout",
    "MIN_ELEMENTS",
    "fast_dropout_mask",
]

#: Tensors with fewer elements use torch's own dropout.
MIN_ELEMENTS = 65_536
_LEVELS = 1 << 16
#: The bit pattern of 1.0 in the 16-bit float types: their 0/1 masks are built in numpy as integers.
_ONE_BITS = {torch.bfloat16: 0x3F80, torch.float16: 0x3C00}


def fast_dropout_mask(
    shape: torch.Size | tuple[int, ...], p: float, dtype: torch.dtype = torch.bool
) -> tuple[torch.Tensor, float]:
    """A keep-mask of ``shape`` (1 / True with probability ``1 - p_used``, else 0) and ``p_used``.

    Args:
        shape: the tensor shape.
        p: the drop probability in [0, 1).
        dtype: ``torch.bool``, or the floating dtype of the tensor the mask multiplies: a 0/1
            mask of that dtype multiplies in one same-type pass (in its backward too), where a
            boolean mask takes torch's slower mixed-type path (3.0 against 0.44 ms on a bf16
            (32, 60, 1,000) tensor, one thread). The same draws give the same mask in any dtype.

    Returns:
        ``(keep, p_used)``: the mask and the exact drop probability (``p`` rounded to 1/65,536).
    """
    n = int(np.prod(shape, dtype=np.int64))
    threshold = min(int(round(p * _LEVELS)), _LEVELS - 1)  # p_used < 1: the scale stays finite
    seed = int(torch.randint(0, 2**63 - 1, (1,), dtype=torch.int64))
    raw = np.random.PCG64(seed).random_raw((n + 3) // 4)
    # 16 raw bits read as int16 are uniform on -32,768 .. 32,767, so keeping those >= threshold - 32,768
    # keeps (65,536 - threshold) of the 65,536 values: probability 1 - p_used.
    keep = raw.view(np.int16)[:n] >= threshold - _LEVELS // 2
    if dtype == torch.bool:
        mask = torch.from_numpy(keep)
    elif dtype in _ONE_BITS:  # 0 or the bits of 1.0, reinterpreted: numpy has no 16-bit float of each kind
        mask = torch.from_numpy(np.multiply(keep.view(np.uint8), np.uint16(_ONE_BITS[dtype]), dtype=np.uint16))
        mask = mask.view(dtype)
    elif dtype.is_floating_point:
        mask = torch.from_numpy(keep).to(dtype)
    else:
        raise ValueError(
            f"The 'dtype' parameter of fast_dropout_mask must be torch.bool or a floating dtype. Got {dtype}."
        )
    return mask.view(shape), threshold / _LEVELS


class FastDropout(nn.Module):
    """``nn.Dropout`` with fast CPU masks (see the module docstring).

    Args:
        p: the drop probability, in [0, 1).
    """

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = check_real(p, "p", "FastDropout", low=0.0, high=1.0, high_open=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` with each element zeroed with probability ``p`` and the rest scaled by ``1 / (1 - p)``."""
        if not self.training or self.p == 0.0:
            return x
        if x.device.type != "cpu" or x.numel() < MIN_ELEMENTS:
            return nn.functional.dropout(x, self.p, training=True)
        keep, p_used = fast_dropout_mask(x.shape, self.p, dtype=x.dtype)
        # x * 0/1 is exact, then one rounding of the scaling: the values of x * bool_mask * scale
        return (x * keep).mul_(1.0 / (1.0 - p_used))

    def extra_repr(self) -> str:
        return f"p={self.p}"

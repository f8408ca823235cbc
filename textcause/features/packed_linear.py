"""A frozen encoder's Linear layers with their weights packed once for oneDNN (bf16 on CPU).

``torch.nn.Linear`` in bf16 on CPU calls oneDNN's matmul, which rearranges the weight into its
blocked layout on every call. :func:`pack_linears` does that once per layer
(``torch.ops.mkldnn._reorder_linear_weight``, what ``torch.compile``'s CPU backend inserts for a
frozen Linear) and runs each product with the packed weight (``torch.ops.mkldnn._linear_pointwise``):
the same kernel and the same result to the bit, 5-12% less time for all-MiniLM-L6-v2's forward
pass on one thread of a 2-core Xeon with AMX (``benchmarks/README.md``, ``bench_encode.py``).

Inference only: a packed layer has no gradient and keeps no ``weight`` parameter. Where oneDNN
cannot take bf16 (no ``mkldnn`` build, a CPU without bf16 support) or a probe product differs
from ``torch.nn.functional.linear``, nothing is replaced.
"""

from __future__ import annotations

from typing import Any

import torch


class PackedLinear(torch.nn.Module):
    """``linear`` (a bf16 ``torch.nn.Linear``) with its weight packed for oneDNN, for inference."""

    def __init__(self, linear: torch.nn.Linear) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.packed_weight = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), None)
        self.bias_value = None if linear.bias is None else linear.bias.detach()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.bfloat16 or x.device.type != "cpu" or torch.is_grad_enabled():
            raise RuntimeError("PackedLinear is for bf16 inference on CPU (no gradient).")
        return torch.ops.mkldnn._linear_pointwise(x.contiguous(), self.packed_weight, self.bias_value, "none", [], "")

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, packed for oneDNN"


def can_pack() -> bool:
    """Whether this torch and CPU run oneDNN's bf16 products (the ops exist and bf16 is supported)."""
    try:
        return bool(
            torch.backends.mkldnn.is_available()
            and torch.ops.mkldnn._is_mkldnn_bf16_supported()
            and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
            and hasattr(torch.ops.mkldnn, "_linear_pointwise")
        )
    except (AttributeError, RuntimeError):
        return False


def pack_linears(model: Any) -> int:
    """Replace the bf16 ``torch.nn.Linear`` layers of ``model`` (on CPU) by :class:`PackedLinear`.

    The first layer is checked on a probe input first: if its packed product is not the plain
    one (to bf16 rounding), nothing is replaced. Returns how many layers were packed.
    """
    if not can_pack():
        return 0
    targets = [
        (parent, name, child)
        for parent in model.modules()
        for name, child in parent.named_children()
        if type(child) is torch.nn.Linear and child.weight.dtype == torch.bfloat16 and child.weight.device.type == "cpu"
    ]
    if not targets:
        return 0
    with torch.inference_mode():
        first = targets[0][2]
        probe = torch.randn(5, first.in_features, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
        try:
            packed = PackedLinear(first)(probe).float()
        except RuntimeError:
            return 0
        plain = torch.nn.functional.linear(probe, first.weight, first.bias).float()
        if not torch.allclose(packed, plain, rtol=2**-7, atol=1e-2):
            return 0
        for parent, name, child in targets:
            setattr(parent, name, PackedLinear(child))
    return len(targets)

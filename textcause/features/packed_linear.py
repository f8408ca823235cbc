"""A frozen encoder's Linear layers with their weights packed once for oneDNN (bf16 on CPU).

``torch.nn.Linear`` in bf16 on CPU calls oneDNN's matmul, which rearranges the weight into its
blocked layout on every call. :func:`pack_linears` does that once per layer
(``torch.ops.mkldnn._reorder_linear_weight``, what ``torch.compile``'s CPU backend inserts for a
frozen Linear) and runs each product with the packed weight (``torch.ops.mkldnn._linear_pointwise``):
the same kernel, 5-12% less time for all-MiniLM-L6-v2's forward pass on one thread of a 2-core Xeon
with AMX, and there the same vectors to the bit on 20,000 Twitter posts (``benchmarks/README.md``,
``bench_encode.py --ab-packed``).

A packed layer keeps its bf16 weight (in ``state_dict``, for ``.weight`` readers) and uses the
packed copy only for bf16 inference on CPU without gradients; anything else (fp32 inputs after
``.float()``, gradients, another device) goes through ``torch.nn.functional.linear``. The packed copy
is made again when the weight or bias changes (another tensor after a cast or ``load_state_dict(...,
assign=True)``, an in-place change such as ``load_state_dict``'s copy) and after a copy or a pickle. Where oneDNN cannot take bf16 (no
``mkldnn`` build, a CPU without bf16 support) or the first layer's packed product on a probe
input is not the plain one to the bit, nothing is replaced.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = [
    "PackedLinear",
    "can_pack",
    "pack_linears",
]


class PackedLinear(torch.nn.Module):
    """``linear`` (a bf16 ``torch.nn.Linear``) whose bf16 CPU inference uses a weight packed for oneDNN."""

    weight: torch.Tensor  # buffers (registered in __init__)
    bias: torch.Tensor | None

    def __init__(self, linear: torch.nn.Linear) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        with torch.inference_mode(False):  # ordinary tensors (a cast under inference mode makes inference ones):
            # their version counters tell in-place changes, and load_state_dict may write them
            self.register_buffer("weight", linear.weight.detach().clone())
            self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().clone())
        self._packed: Any = None
        self._packed_for: Any = None  # the weights the packed copy was made from (_state)

    def _state(self) -> tuple[Any, ...]:
        """Which weight and bias tensors, at which in-place version: a change means packing again."""

        def of(t: torch.Tensor | None) -> tuple[Any, ...]:
            if t is None:
                return ()
            try:
                version = t._version
            except RuntimeError:  # an inference tensor has no version counter (nor in-place changes outside it)
                version = -1
            return (t.data_ptr(), version, t.dtype, t.device)

        return of(self.weight) + of(self.bias)

    def pack(self) -> None:
        """Make the packed copy of the current weight (done again by :meth:`forward` when it changes)."""
        self._packed = torch.ops.mkldnn._reorder_linear_weight(self.weight, None)
        self._packed_for = self._state()

    def _fast(self, x: torch.Tensor) -> bool:
        return (
            x.dtype == torch.bfloat16
            and self.weight.dtype == torch.bfloat16
            and x.device.type == "cpu"
            and self.weight.device.type == "cpu"
            and not torch.is_grad_enabled()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self._fast(x):
            return torch.nn.functional.linear(x, self.weight, self.bias)
        if self._packed is None or self._packed_for != self._state():  # new, cast, moved or loaded weights
            self.pack()
        out: torch.Tensor = torch.ops.mkldnn._linear_pointwise(x.contiguous(), self._packed, self.bias, "none", [], "")
        return out

    def __getstate__(self) -> dict[str, Any]:  # copy and pickle without the opaque packed tensor
        state = super().__getstate__()  # type: ignore[no-untyped-call]  # torch leaves Module.__getstate__ unannotated
        return {**state, "_packed": None, "_packed_for": None}

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, packed for oneDNN"


def can_pack() -> bool:
    """Whether this torch and CPU run oneDNN's bf16 products (the ops exist and bf16 is supported)."""
    try:
        return bool(
            torch.backends.mkldnn.is_available()  # type: ignore[no-untyped-call]  # unannotated in torch
            and torch.ops.mkldnn._is_mkldnn_bf16_supported()
            and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
            and hasattr(torch.ops.mkldnn, "_linear_pointwise")
        )
    except (AttributeError, RuntimeError):
        return False


def pack_linears(model: Any) -> int:
    """Replace the bf16 ``torch.nn.Linear`` layers of ``model`` (on CPU) by :class:`PackedLinear`.

    The first layer is checked on a probe input first: if its packed product is not the plain one
    to the bit, nothing is replaced. Returns how many layers were packed.
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
        probe = torch.randn(37, first.in_features, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
        try:
            packed = PackedLinear(first)(probe)
        except RuntimeError:
            return 0
        if not torch.equal(packed, torch.nn.functional.linear(probe, first.weight, first.bias)):
            return 0
    for parent, name, child in targets:
        layer = PackedLinear(child)
        with torch.inference_mode():  # packed now: worker processes forked later share it
            layer.pack()
        setattr(parent, name, layer)
    return len(targets)

"""A CPU attention for a frozen encoder's short inputs, and how an encoder is given it.

:func:`short_attention` has the signature of a transformers ``AttentionInterface`` function;
:func:`set_attention` registers it (with transformers' eager mask) under :data:`SHORT_ATTENTION`
and gives it to a model whose attention layers take a registered function (BERT and
all-MiniLM-L6-v2 among them), on CPU. Its speed against ``scaled_dot_product_attention``'s CPU
kernel is measured by ``benchmarks/bench_encode.py`` (``benchmarks/README.md``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ATTENTION_CHUNK_BYTES", "SHORT_ATTENTION", "SHORT_ATTENTION_MAX_TOKENS", "set_attention", "short_attention"]

#: The attention function :class:`~textcause.features.encoder.Encoder` registers with transformers' ``AttentionInterface``
#: (:func:`short_attention`), used with ``attention="auto"`` on CPU by models that take one.
SHORT_ATTENTION = "textcause_short"
#: :func:`short_attention` works through a batch a few posts at a time, so that each group's
#: float32 attention scores take about this many bytes (they stay in a core's L2 cache).
ATTENTION_CHUNK_BYTES = 1 << 20
#: :func:`short_attention` hands longer sequences to transformers' SDPA function.
SHORT_ATTENTION_MAX_TOKENS = 256
_MASKED = -1e4  # a masked position's score: exp(-1e4) is 0 in float32, and -1e4 fits bf16 and fp16


def short_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """Scaled dot-product attention for a frozen encoder's short inputs on CPU (inference only).

    The signature of a transformers ``AttentionInterface`` function: ``query`` (batch, heads,
    length, head size), ``key`` and ``value`` (batch, heads, key length, head size), and
    ``attention_mask`` additive (batch, 1, length, key length) or None, as transformers'
    ``eager_mask`` builds it. Returns the output as (batch, length, heads, head size).

    A few posts at a time (:data:`ATTENTION_CHUNK_BYTES` of float32 scores), the scores are one
    batched product with the mask added (``baddbmm``, in the states' dtype), the softmax runs in
    float32 and the weighted sum is a second batched product. Masked positions get -1e4 (their
    weight is exactly 0 in float32, as with the mask's own ``finfo.min``, and a row with every key
    masked stays finite). On posts of 20-60 tokens this took 1.3-2.4 ms a layer against 2.4-11.4 ms
    for ``scaled_dot_product_attention``'s CPU kernel (whose blocks are sized for long sequences),
    the whole forward pass about 10% less (``benchmarks/README.md``, ``bench_encode.py``). In bf16
    its outputs differ from that kernel's by bf16 rounding.

    Anything else goes to transformers' own SDPA function: sequences longer than
    :data:`SHORT_ATTENTION_MAX_TOKENS` (the kernel's blocks pay off; these scores would not fit a
    cache), fewer key than query heads (grouped-query attention), a causal module, and the extras
    some models pass (``softcap``, ``s_aux``, ``sliding_window``, ``position_bias``).
    """
    import torch

    if module.training and dropout:
        raise ValueError("short_attention is for inference: the model is in training mode with attention dropout.")
    batch, heads, length, size = query.shape
    keys = key.shape[2]
    extras = any(kwargs.get(name) is not None for name in ("softcap", "s_aux", "sliding_window", "position_bias"))
    if (
        max(length, keys) > SHORT_ATTENTION_MAX_TOKENS
        or key.shape[1] != heads
        or getattr(module, "is_causal", False)
        or extras
        or (attention_mask is not None and not attention_mask.is_floating_point())
    ):
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout, scaling, **kwargs)
    scaling = size**-0.5 if scaling is None else scaling
    if attention_mask is not None:  # once, before it is expanded over the heads
        attention_mask = attention_mask.clamp(min=_MASKED).to(query.dtype)
    step = max(1, ATTENTION_CHUNK_BYTES // (heads * length * keys * 4))
    out = torch.empty(batch, length, heads, size, dtype=value.dtype, device=query.device)
    for i in range(0, batch, step):
        j = min(i + step, batch)
        n = (j - i) * heads
        q = query[i:j].reshape(n, length, size)
        k = key[i:j].reshape(n, keys, size).transpose(1, 2)
        if attention_mask is None:
            scores = torch.bmm(q, k).mul_(scaling)
        else:
            mask = attention_mask[i:j].expand(j - i, heads, length, keys).reshape(n, length, keys)
            scores = torch.baddbmm(mask, q, k, alpha=scaling)
        weights = torch.softmax(scores, -1, dtype=torch.float32).to(value.dtype)
        out[i:j] = (
            torch.bmm(weights, value[i:j].reshape(n, keys, size)).view(j - i, heads, length, size).transpose(1, 2)
        )
    return out, None


def set_attention(model: Any, attention: str) -> str:
    """Give ``model`` the attention ``attention`` asks for; return the name it uses.

    Args:
        model: a transformers model (loaded, in eval mode).
        attention: ``"auto"`` (:func:`short_attention` on CPU for a model that takes a registered
            attention function, else the model's own) or a name for the model's
            ``set_attn_implementation`` (``"sdpa"``, ``"eager"``).
    """
    current = getattr(model.config, "_attn_implementation", None) or "eager"
    if attention == "auto":
        supports = getattr(type(model), "_supports_attention_backend", False)
        if not supports or model.device.type != "cpu":
            return current
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface, eager_mask

        AttentionInterface.register(SHORT_ATTENTION, short_attention)
        AttentionMaskInterface.register(SHORT_ATTENTION, eager_mask)
        attention = SHORT_ATTENTION
    if attention != current:
        model.set_attn_implementation(attention)
    name: str = model.config._attn_implementation
    return name

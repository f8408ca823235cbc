"""Would fused kernels make the encoder's forward pass cheaper? One thread, the encoder's own batches.

Issue 46 asks for the elementwise steps between the encoder's products (GELU, LayerNorm, softmax,
additions, copies: about half of a one-thread forward pass) to be fused. This script measures the
fusions within reach on this machine's stack, each against the encoder's current path
(``textcause.features.encoder.Encoder`` with its packed Linear layers and short-sequence attention),
alternately in one process, on one torch thread (a grid worker's setting):

- ``--micro``: single operations on a batch of 64 posts x 36 tokens (2,304 rows, bf16, weights packed
  for oneDNN): the feed-forward product with GELU apart and as oneDNN's epilogue, the output product
  with the residual addition apart and as oneDNN's binary epilogue, Q, K and V as three products and
  as one (and with the heads laid out for the attention), LayerNorm. Best of 5 x 30 calls, in ms.
- ``--layer``: a hand-fused BERT layer (Q, K and V in one product, the residual additions as
  epilogues, the same attention as the encoder's; and the same with the GELU as an epilogue too)
  against the current path, on ``--n`` Twitter posts
  in the encoder's length-sorted batches: posts/s per round and the lowest cosine to the current vectors.
- ``--compile``: ``torch.compile(dynamic=True)`` with inductor's freezing, on the encoder as it is
  and on the plain layers with SDPA attention (``packed=False, attention="sdpa"``): the compilation
  plus first pass in seconds, then posts/s per round beside the same model uncompiled. Inductor's
  cache goes to a temporary folder (``TORCHINDUCTOR_CACHE_DIR``), so every run compiles cold.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_fusion.py --micro --layer --compile

Results: ``benchmarks/README.md``, "Issue 46: idle and busy with the machine to itself".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def best_ms(fn: Callable[[], Any], calls: int = 30, repeats: int = 5) -> float:
    """The best mean milliseconds of ``calls`` calls, over ``repeats`` repeats (after one warm-up)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return round(best * 1e3, 3)


def micro() -> dict[str, float]:
    """Milliseconds of single operations of one all-MiniLM-L6-v2 layer, plain and fused."""
    import torch

    linear = torch.ops.mkldnn._linear_pointwise
    pack = torch.ops.mkldnn._reorder_linear_weight
    rows, hidden, inner, heads = 64 * 36, 384, 1536, 12
    gen = torch.Generator().manual_seed(0)

    def rand(*shape: int) -> Any:
        return (torch.randn(*shape, generator=gen) * 0.05).to(torch.bfloat16)

    x, h, residual = rand(rows, hidden), rand(rows, inner), rand(rows, hidden)
    w_in, b_in, w_out, b_out = rand(inner, hidden), rand(inner), rand(hidden, inner), rand(hidden)
    w_q, b_q, w_qkv, b_qkv = rand(hidden, hidden), rand(hidden), rand(3 * hidden, hidden), rand(3 * hidden)
    p_in, p_out, p_q, p_qkv = (pack(w, None) for w in (w_in, w_out, w_q, w_qkv))
    ln_w, ln_b = rand(hidden), rand(hidden)
    cases: dict[str, Callable[[], Any]] = {
        "feed-forward product": lambda: linear(x, p_in, b_in, "none", [], ""),
        "feed-forward product, then GELU": lambda: torch.nn.functional.gelu(linear(x, p_in, b_in, "none", [], "")),
        "feed-forward product, GELU epilogue (erf)": lambda: linear(x, p_in, b_in, "gelu", [], "none"),
        "feed-forward product, GELU epilogue (tanh)": lambda: linear(x, p_in, b_in, "gelu", [], "tanh"),
        "output product": lambda: linear(h, p_out, b_out, "none", [], ""),
        "output product, then + residual": lambda: linear(h, p_out, b_out, "none", [], "") + residual,
        "output product, + residual epilogue": lambda: torch.ops.mkldnn._linear_pointwise.binary(
            h, residual, p_out, b_out, "add"
        ),
        "Q, K, V: three products": lambda: [linear(x, p_q, b_q, "none", [], "") for _ in range(3)],
        "Q, K, V: one product": lambda: linear(x, p_qkv, b_qkv, "none", [], ""),
        "Q, K, V: one product, heads laid out": lambda: (
            linear(x, p_qkv, b_qkv, "none", [], "")
            .view(64, 36, 3, heads, hidden // heads)
            .permute(2, 0, 3, 1, 4)
            .contiguous()
        ),
        "LayerNorm": lambda: torch.nn.functional.layer_norm(residual, (hidden,), ln_w, ln_b),
    }
    with torch.inference_mode():
        return {name: best_ms(fn) for name, fn in cases.items()}


def twitter_batches(n: int, **encoder_args: Any) -> tuple[Any, list[tuple[Any, Any]]]:
    """An encoder (weights loaded, precision chosen) and ``n`` Twitter posts in its padded length-sorted batches."""
    import numpy as np
    from bench_encode import corpus_posts

    from textcause.features.encoder import Encoder
    from textcause.features.encoder_inputs import length_batches, pad_batch

    posts = corpus_posts("twitter", 60, with_bank=False)
    keep = np.sort(np.random.default_rng(0).choice(len(posts), size=min(n, len(posts)), replace=False))
    encoder = Encoder(processes=1, num_threads=1, **encoder_args)
    ids = encoder.tokenize([posts[i] for i in keep])
    encoder.encode_ids(ids[:256])  # loads the weights, chooses the precision, casts and packs
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    order = np.argsort(lengths, kind="stable")
    pad_id = encoder.tokenizer.pad_token_id or 0
    batches = [pad_batch(ids, lengths, idx, pad_id) for idx in length_batches(order, lengths, encoder.batch_size, None)]
    return encoder, batches


def fused_forward(model: Any, gelu_epilogue: bool = False) -> Callable[[Any, Any], Any]:
    """A forward pass of a bf16 BERT ``model`` with Q, K, V in one product and the residual additions as
    epilogues (and the GELU too with ``gelu_epilogue``)."""
    import torch

    from textcause.features.attention import short_attention

    linear, binary = torch.ops.mkldnn._linear_pointwise, torch.ops.mkldnn._linear_pointwise.binary

    def pack(w: Any) -> Any:
        return torch.ops.mkldnn._reorder_linear_weight(w.contiguous(), None)

    def weight(layer: Any) -> Any:  # a PackedLinear keeps its bf16 weight as ``weight``
        return layer.weight

    layers = []
    for block in model.encoder.layer:
        att = block.attention
        qkv = [att.self.query, att.self.key, att.self.value]
        layers.append(
            (
                pack(torch.cat([weight(m) for m in qkv])),
                torch.cat([m.bias for m in qkv]),
                pack(weight(att.output.dense)),
                att.output.dense.bias,
                att.output.LayerNorm,
                pack(weight(block.intermediate.dense)),
                block.intermediate.dense.bias,
                pack(weight(block.output.dense)),
                block.output.dense.bias,
                block.output.LayerNorm,
            )
        )
    heads = model.config.num_attention_heads
    hidden = model.config.hidden_size
    size = hidden // heads
    module = model.encoder.layer[0].attention.self

    def forward(input_ids: Any, mask: Any) -> Any:
        batch, length = input_ids.shape
        x = model.embeddings(input_ids=input_ids).reshape(batch * length, hidden)
        additive = ((1.0 - mask.to(torch.float32)) * -1e4).to(x.dtype).view(batch, 1, 1, length)
        additive = additive.expand(batch, 1, length, length)
        for w_qkv, b_qkv, w_o, b_o, ln1, w_i, b_i, w_out, b_out, ln2 in layers:
            qkv = linear(x, w_qkv, b_qkv, "none", [], "").view(batch, length, 3, heads, size)
            qkv = qkv.permute(2, 0, 3, 1, 4).contiguous()
            context = short_attention(module, qkv[0], qkv[1], qkv[2], additive)[0].view(batch * length, hidden)
            x = ln1(binary(context, x, w_o, b_o, "add"))
            if gelu_epilogue:
                inner = linear(x, w_i, b_i, "gelu", [], "none")
            else:
                inner = torch.nn.functional.gelu(linear(x, w_i, b_i, "none", [], ""))
            x = ln2(binary(inner, x, w_out, b_out, "add"))
        return x.view(batch, length, hidden)

    return forward


def timed_rounds(variants: dict[str, Callable[[], Any]], posts: int, rounds: int) -> dict[str, list[float]]:
    """posts/s of each variant in every round, the variants alternated."""
    out: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            start = time.perf_counter()
            fn()
            out[name].append(round(posts / (time.perf_counter() - start), 1))
    return out


def layer(n: int, rounds: int) -> dict[str, Any]:
    """The hand-fused layer against the encoder's current path."""
    import torch

    encoder, batches = twitter_batches(n)
    model, fused, fused_gelu = encoder.model, fused_forward(encoder.model), fused_forward(encoder.model, True)

    def run(forward: Callable[[Any, Any], Any]) -> Any:
        return torch.cat([encoder._pool(forward(i, m).float(), m) for i, m in batches])

    def current(i: Any, m: Any) -> Any:
        return model(input_ids=i, attention_mask=m).last_hidden_state

    with torch.inference_mode():
        reference = run(current)
        cosines = {
            name: torch.nn.functional.cosine_similarity(reference, run(f)).min()
            for name, f in (("fused layer", fused), ("fused layer, GELU epilogue", fused_gelu))
        }
        variants = {
            "current": lambda: run(current),
            "fused layer": lambda: run(fused),
            "fused layer, GELU epilogue": lambda: run(fused_gelu),
        }
        speed = timed_rounds(variants, n, rounds)
    return {"posts": n, "posts_per_s": speed, "cosine_min": {k: round(float(v), 6) for k, v in cosines.items()}}


def compiled_one(n: int, rounds: int, **settings: Any) -> dict[str, Any]:
    """``torch.compile(dynamic=True)`` of the encoder's model built with ``settings``, against it uncompiled."""
    import torch

    torch._dynamo.reset()
    encoder, batches = twitter_batches(n, **settings)
    model = encoder.model
    fast = torch.compile(model, dynamic=True)

    def run(m: Any) -> Any:
        return torch.cat(
            [encoder._pool(m(input_ids=i, attention_mask=k).last_hidden_state.float(), k) for i, k in batches]
        )

    with torch.inference_mode():
        reference = run(model)
        start = time.perf_counter()
        first = run(fast)
        compile_s = time.perf_counter() - start
        cosine = torch.nn.functional.cosine_similarity(reference, first).min()
        speed = timed_rounds({"uncompiled": lambda: run(model), "compiled": lambda: run(fast)}, n, rounds)
    return {
        "compile_and_first_pass_s": round(compile_s, 1),
        "posts_per_s": speed,
        "cosine_min": round(float(cosine), 6),
    }


def compiled(n: int, rounds: int) -> dict[str, Any]:
    """``torch.compile(dynamic=True)`` (inductor, freezing) on the encoder as it is and on plain SDPA layers."""
    import torch._inductor.config as inductor

    inductor.freezing = True
    return {
        "encoder as it is": compiled_one(n, rounds),
        "plain layers, SDPA": compiled_one(n, rounds, packed=False, attention="sdpa"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--micro", action="store_true", help="single operations, plain and fused")
    parser.add_argument("--layer", action="store_true", help="the hand-fused BERT layer against the encoder")
    parser.add_argument("--compile", action="store_true", help="torch.compile(dynamic=True) against uncompiled")
    parser.add_argument("--n", type=int, default=3000, help="Twitter posts for --layer and --compile")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not (args.micro or args.layer or args.compile):
        parser.error("choose at least one of --micro, --layer, --compile")
    if args.n < 257:
        parser.error(f"--n must be more than 256 (the warm-up). Got {args.n}.")
    import torch

    from textcause.features.packed_linear import can_pack

    if not can_pack():
        print("This torch build or CPU has no oneDNN bf16 products: nothing to measure.", file=sys.stderr)
        return 1
    torch.set_num_threads(1)
    result: dict[str, Any] = {"load_average_before": round(os.getloadavg()[0], 2), "torch": torch.__version__}
    with tempfile.TemporaryDirectory(prefix="bench-fusion-inductor-") as folder:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
        if args.micro:
            result["micro_ms"] = micro()
        if args.layer:
            result["layer"] = layer(args.n, args.rounds)
        if args.compile:
            result["compile"] = compiled(args.n, args.rounds)
    result["load_average_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

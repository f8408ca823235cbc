"""Speed of the frozen-encoder post-embedding cache: posts/s, fraction of the FLOP ceiling, peak memory.

The ceiling is measured, not assumed: the best of a few timed square matmuls gives this machine's
fp32 and bf16 GFLOP/s, and the model's FLOPs per token come from its config. Per layer and token,
the projections cost 2 x (4 h^2 + 2 h i) FLOPs (Q, K, V, output: 4 h^2 multiply-adds; the feed-forward
block: 2 h i) and attention 2 x 2 h s (scores and weighted sum over s tokens): 24 h^2 + 4 h s when
i = 4 h, about 21.5 MFLOP for all-MiniLM-L6-v2 at s = 34. The ceiling in posts/s is the matmul peak
divided by (FLOPs per token x mean real tokens per post); padding and everything that is not a
matmul count against the fraction. A second, lower ceiling is the encoder's own layout: one
single-threaded process per core, all multiplying at once, each process's median product rate
summed (``side_by_side_peak``): on a host whose cores share their matrix units it is what the
encoder's worker processes can get at most, and the script prints the fraction of both.

    .venv/bin/python benchmarks/bench_encode.py                       # 20,000 distinct Twitter posts, temp cache
    .venv/bin/python benchmarks/bench_encode.py --n 5000
    .venv/bin/python benchmarks/bench_encode.py --all --corpus twitter # fill the real cache (corpus + bank)
    .venv/bin/python benchmarks/bench_encode.py --all --corpus twitter --store-tokens --token-cap 32

    .venv/bin/python benchmarks/bench_encode.py --busy 2 --n 3000      # under contention (_encode_busy.py)

``--busy N`` runs only the contention benchmark of ``benchmarks/_encode_busy.py``: N extra
single-threaded matmul processes while textcause's new and old defaults and both peers
(sentence-transformers, Hugging Face ``AutoModel`` with sorted batches) encode, alternately.

``--all`` encodes every distinct post of the corpus's users (first 60 posts each) and of the
synthetic post bank into ``textcause.paths.cache_root()/embeddings`` (resumable: rerun after a kill).

Without ``--all`` the timed encode follows a warm-up of 256 posts into a throwaway cache (as the
peer gets one), and the same run also times the peer a user would pick instead, on the identical
posts and token cap: sentence-transformers' ``SentenceTransformer.encode`` with the model in bf16
and batch 128 (its own length sorting), after a warm-up, and prints the ratio and the cosine of
its vectors to the cache's (1st percentile). ``--processes 1`` is the in-process encode of before
issue 18's worker processes (two torch threads in one process); ``--attention sdpa`` the model's own
attention kernel instead of textcause's (``--ab-attention N``: both, N rounds each, alternately,
in this run); ``--ab-packed N`` the plain Linear layers against those packed once for oneDNN;
``--onnx`` ONNX Runtime too (fp32 with BERT's fused operators, and int8 by dynamic quantisation), on
the same posts, batch size and cap (its batches sorted by length over all the posts; skipped unless
``onnxruntime`` is installed); ``--openvino`` OpenVINO too (the model converted from PyTorch, bf16
inference precision, one request on every core and one single-threaded stream per core; skipped
unless ``openvino`` is installed). It also reports the truncation:
the share of posts longer than the token cap, from the untruncated token counts.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
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


def matmul_peak(dtype_name: str, n: int = 2048, min_s: float = 1.0, repeats: int = 5) -> tuple[float, float]:
    """GFLOP/s of the best timed (n x n) @ (n x n) product: per wall second and per CPU second of this
    process (the second is what a busy machine leaves comparable). Products are repeated for at least
    ``min_s`` seconds and ``repeats`` times. In bf16 the product is timed both as ``torch.mm`` and in
    the form the encoder's packed layers use (oneDNN's pre-packed weight,
    ``textcause.features.packed_linear``), and the faster form counts: a ceiling that the encoder's
    own products could beat would not be one."""
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    best = best_cpu = float("inf")
    with torch.inference_mode():  # as the encoder runs (a packed layer's fast path needs it)
        for product in _products(dtype_name, n):
            product()  # warm-up
            start, done = time.perf_counter(), 0
            while done < repeats or time.perf_counter() - start < min_s:
                t0, c0 = time.perf_counter(), time.process_time()
                product()
                best = min(best, time.perf_counter() - t0)
                best_cpu = min(best_cpu, time.process_time() - c0)
                done += 1
    return 2 * n**3 / best / 1e9, 2 * n**3 / best_cpu / 1e9


def _products(dtype_name: str, n: int) -> list:
    """The timed forms of an (n x n) @ (n x n) product: ``torch.mm``, then in bf16 (where oneDNN can
    pack) the encoder's packed layer (:class:`textcause.features.packed_linear.PackedLinear`, which
    packs its weight on its first call: the callers' warm-up)."""
    import torch

    from textcause.features.packed_linear import PackedLinear, can_pack

    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=gen).to(dtype)
    b = torch.randn(n, n, generator=gen).to(dtype)
    products = [functools.partial(torch.mm, a, b)]
    if dtype is torch.bfloat16 and can_pack():
        linear = torch.nn.Linear(n, n, bias=False, dtype=dtype)
        linear.weight.data = b
        products.append(functools.partial(PackedLinear(linear), a))
    return products


def _side_by_side_child(n: int, seconds: float, barrier, queue) -> None:
    """One of :func:`side_by_side_peak`'s processes: one torch thread, bf16 (n x n) products for
    ``seconds``, in the form the encoder's layers use (the packed one where there is one)."""
    import torch

    torch.set_num_threads(1)
    product = _products("bf16", n)[-1]
    rates = []
    with torch.inference_mode():
        product()  # warm-up (and the packing)
        barrier.wait()
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            t0 = time.perf_counter()
            product()
            rates.append(2 * n**3 / (time.perf_counter() - t0) / 1e9)
    queue.put(rates)


def side_by_side_peak(n: int = 2048, seconds: float = 3.0) -> dict[str, float]:
    """bf16 GFLOP/s in the encoder's own layout: one single-threaded process per core (as its worker
    processes run), all repeating an (n x n) product for ``seconds`` at the same time. ``sustained``
    sums each process's median product rate, ``best`` each one's fastest product. Where the cores
    share their matrix units (seen on a host with AMX: two single-threaded products side by side
    each ran at 400-500 GFLOP/s instead of about 1,100 for much of a 30 s run), this is the most
    the encoder's products can reach; ``matmul_peak`` (one process on every core, its fastest
    product) can be twice it."""
    import multiprocessing
    import queue as queues
    import statistics

    k = os.cpu_count() or 1
    ctx = multiprocessing.get_context("fork")
    barrier, queue = ctx.Barrier(k), ctx.Queue()
    procs = [ctx.Process(target=_side_by_side_child, args=(n, seconds, barrier, queue)) for _ in range(k)]
    for proc in procs:
        proc.start()
    try:  # a process that failed before the barrier leaves the others waiting there: give up, say so
        rates = [queue.get(timeout=seconds + 120) for _ in procs]
    except queues.Empty:
        for proc in procs:
            proc.kill()
        raise SystemExit("side_by_side_peak: a product process did not report back (see its traceback above)") from None
    for proc in procs:
        proc.join()
    return {
        "processes": k,
        "sustained": sum(statistics.median(r) for r in rates),
        "best": sum(max(r) for r in rates),
    }


def flops_per_token(config: dict, seq: float) -> float:
    """Forward FLOPs per token of a BERT-style encoder at sequence length ``seq`` (see module doc)."""
    h = config["hidden_size"]
    i = config.get("intermediate_size", 4 * h)
    layers = config["num_hidden_layers"]
    return layers * (2 * (4 * h * h + 2 * h * i) + 4 * h * seq)


def corpus_posts(corpus: str, max_posts: int, with_bank: bool) -> list[str]:
    """Every distinct post of ``corpus`` (first ``max_posts`` per user) and of the synthetic bank."""
    from textcause.corpus import load_histories

    posts: dict[str, None] = {}
    for history in load_histories(corpus, max_posts=max_posts):
        posts.update(dict.fromkeys(history.posts))
    if with_bank:
        from textcause.simulation import load_bank

        posts.update(dict.fromkeys(load_bank().all_posts()))
    return list(posts)


def _round_cache(args: argparse.Namespace, folder: str, **settings):
    """A cache in ``folder`` with the run's encoder settings and ``settings`` (one A/B round)."""
    from textcause.features.embeddings import PostEmbeddingCache

    return PostEmbeddingCache(
        args.encoder,
        max_tokens=args.max_tokens,
        batch_size=args.batch_size,
        precision=args.precision,
        cache_dir=folder,
        progress=False,
        **settings,
    )


def ab_rounds(args: argparse.Namespace, posts: list[str]) -> dict:
    """posts/s of a cold-cache encode in this process (``processes=1``, as before issue 18) and with
    worker processes, alternately, each into a fresh temporary cache: the best round of each and the ratio."""
    rates: dict[str, list[float]] = {"in_process": [], "workers": []}
    for _ in range(args.ab):
        for name, processes in (("in_process", 1), ("workers", args.processes)):
            with tempfile.TemporaryDirectory(prefix="bench-encode-ab-") as folder:
                cache = _round_cache(args, folder, processes=processes)
                rates[name].append(round(cache.ensure(posts)["posts_per_s"], 1))
    best = {k: max(v) for k, v in rates.items()}
    return {**rates, "workers_over_in_process_best": round(best["workers"] / best["in_process"], 3)}


def _ab_rounds(
    posts: list[str],
    rounds: int,
    names: tuple[str, str],
    tag: str,
    make_cache: Callable[[str, str], Any],
    read: Callable[[Any], Any],
) -> tuple[dict[str, list[float]], dict[str, Any], dict[str, Any]]:
    """``rounds`` rounds of a cold-cache encode of ``posts`` by each of ``names`` in turn, each into a fresh
    temporary cache ``make_cache(name, folder)``: each name's posts/s per round, its last vectors and
    ``read(cache)``."""
    rates: dict[str, list[float]] = {name: [] for name in names}
    vectors: dict[str, Any] = {}
    read_back: dict[str, Any] = {}
    for _ in range(rounds):
        for name in names:
            with tempfile.TemporaryDirectory(prefix=f"bench-encode-{tag}-") as folder:
                cache = make_cache(name, folder)
                rates[name].append(round(cache.ensure(posts)["posts_per_s"], 1))
                vectors[name], read_back[name] = cache.embed(posts), read(cache)
    return rates, vectors, read_back


def attention_rounds(args: argparse.Namespace, posts: list[str]) -> dict:
    """posts/s of a cold-cache encode with the model's own attention (``sdpa``, as before issue 18's
    attention change) and with ``attention="auto"`` (:func:`textcause.features.encoder.short_attention`),
    alternately, each into a fresh temporary cache: the best round of each, the ratio, and how far
    the two caches' vectors are apart (cosine)."""
    import numpy as np

    rates, vectors, used = _ab_rounds(
        posts,
        args.ab_attention,
        ("sdpa", "auto"),
        "attention",
        lambda name, folder: _round_cache(args, folder, processes=args.processes, attention=name),
        lambda cache: cache.encoder.attention_used,
    )
    a, b = vectors["sdpa"], vectors["auto"]
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    best = {k: max(v) for k, v in rates.items()}
    return {
        **rates,
        "attention_used": used,
        "auto_over_sdpa_best": round(best["auto"] / best["sdpa"], 3),
        "cosine_between_caches_min": round(float(cos.min()), 5),
        "cosine_between_caches_p1": round(float(np.percentile(cos, 1)), 5),
    }


def packed_rounds(args: argparse.Namespace, posts: list[str]) -> dict:
    """posts/s of a cold-cache encode with the plain Linear layers (``Encoder(packed=False)``, as
    before) and with their weights packed once for oneDNN (:mod:`textcause.features.packed_linear`),
    alternately, each into a fresh temporary cache: the best round of each, the ratio, and the
    largest difference between the two caches' vectors."""
    import numpy as np

    def packed_cache(name: str, folder: str) -> Any:
        cache = _round_cache(args, folder, processes=args.processes)
        cache.encoder.packed = name == "packed"  # read when the weights are cast, on the first encode
        return cache

    rates, vectors, layers = _ab_rounds(
        posts, args.ab_packed, ("plain", "packed"), "packed", packed_cache, lambda cache: cache.encoder.packed_layers
    )
    best = {k: max(v) for k, v in rates.items()}
    return {
        **rates,
        "packed_layers": layers,
        "packed_over_plain_best": round(best["packed"] / best["plain"], 3),
        "max_abs_difference_between_caches": float(np.abs(vectors["packed"] - vectors["plain"]).max()),
    }


def peer_run(cache, posts: list[str], max_tokens: int, batch_size: int, rate: float) -> dict:
    """sentence-transformers on the same posts: posts/s, the ratio textcause / peer, cosine to the cache."""
    import numpy as np
    import torch

    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return {"skipped": "sentence-transformers is not installed (pip install --no-deps sentence-transformers)"}
    model = SentenceTransformer(str(cache.spec.path), device="cpu").to(torch.bfloat16)
    model.max_seq_length = max_tokens
    torch.set_num_threads(os.cpu_count() or 1)
    model.encode(posts[:256], batch_size=batch_size, show_progress_bar=False)  # warm-up
    t0 = time.perf_counter()
    vec = model.encode(posts, batch_size=batch_size, show_progress_bar=False, convert_to_numpy=True)
    seconds = time.perf_counter() - t0
    ours = cache.embed(posts)
    vec = vec.astype(np.float32)
    cos = (vec * ours).sum(1) / np.linalg.norm(vec, axis=1) / np.linalg.norm(ours, axis=1)
    return {
        "what": f"sentence-transformers {__import__('sentence_transformers').__version__}, bf16, batch {batch_size}",
        "posts_per_s": round(len(posts) / seconds, 1),
        "textcause_over_peer": round(rate / (len(posts) / seconds), 2),
        "cosine_to_cache_p1": round(float(np.percentile(cos, 1)), 5),
    }


def _last_hidden(model):
    """``model`` as a module of (input_ids, attention_mask) with one output, the last hidden state:
    what the exporters trace."""
    import torch

    class LastHidden(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    return LastHidden(model)


def _sorted_batches(tokenizer, texts: list[str], max_tokens: int, batch_size: int):
    """(indices, input ids, attention mask) of batches of ``texts`` sorted by length over all of them,
    each padded to its longest post (int64 numpy arrays), as the engines below take them."""
    import numpy as np

    ids = tokenizer(texts, truncation=True, max_length=max_tokens, padding=False)["input_ids"]
    order = np.argsort([len(i) for i in ids], kind="stable")
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        width = max(len(ids[i]) for i in idx)
        batch = np.full((len(idx), width), tokenizer.pad_token_id, np.int64)
        mask = np.zeros((len(idx), width), np.int64)
        for row, i in enumerate(idx):
            batch[row, : len(ids[i])] = ids[i]
            mask[row, : len(ids[i])] = 1
        yield idx, batch, mask


def _mean_pool(states, mask):
    """Mean over the attention mask, L2-normalised (all-MiniLM-L6-v2's pooling), as float32."""
    import numpy as np

    m = mask[:, :, None].astype(np.float32)
    pooled = (np.asarray(states, dtype=np.float32) * m).sum(1) / np.maximum(m.sum(1), 1.0)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def _engine_row(vec, ours, seconds: float, rate: float) -> dict:
    """posts/s of an engine's encode, the ratio textcause / engine and the cosines of its vectors to the cache."""
    import numpy as np

    cos = (vec * ours).sum(1) / np.linalg.norm(ours, axis=1)
    return {
        "posts_per_s": round(len(vec) / seconds, 1),
        "textcause_over_peer": round(rate / (len(vec) / seconds), 2),
        "cosine_to_cache_p1": round(float(np.percentile(cos, 1)), 5),
        "cosine_to_cache_min": round(float(cos.min()), 5),
    }


def onnx_peer_run(cache, posts: list[str], max_tokens: int, batch_size: int, rate: float) -> dict:
    """ONNX Runtime on the same posts: the model exported to ONNX (fp32), BERT's fusions applied by
    ONNX Runtime's transformer optimizer, then also quantised to int8 (dynamic, per-channel weights):
    posts/s of each with mean pooling and the same length-sorted batches and cap as ours, the ratio
    textcause / peer, and cosines (to the cache; int8 also to ONNX Runtime's fp32 vectors)."""
    import numpy as np
    import torch

    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from onnxruntime.transformers.optimizer import optimize_model
    except ImportError:
        return {"skipped": "onnxruntime is not installed (pip install onnxruntime onnx)"}
    from transformers import AutoModel

    tokenizer = cache.encoder.tokenizer
    config = json.loads((cache.spec.path / "config.json").read_text(encoding="utf-8"))
    threads = os.cpu_count() or 1
    out: dict = {"what": f"onnxruntime {ort.__version__}, CPUExecutionProvider, {threads} threads, batch {batch_size}"}
    with tempfile.TemporaryDirectory(prefix="bench-encode-onnx-") as folder:
        plain = os.path.join(folder, "model.onnx")
        model = AutoModel.from_pretrained(str(cache.spec.path), attn_implementation="eager").eval()
        example = tokenizer(["a post", "another post, longer"], padding=True, return_tensors="pt")
        with torch.no_grad():
            torch.onnx.export(
                _last_hidden(model),
                (example["input_ids"], example["attention_mask"]),
                plain,
                input_names=["input_ids", "attention_mask"],
                output_names=["last_hidden_state"],
                dynamic_axes={k: {0: "batch", 1: "seq"} for k in ("input_ids", "attention_mask", "last_hidden_state")},
                opset_version=17,
                dynamo=False,
            )
        optimized = optimize_model(
            plain, model_type="bert", num_heads=config["num_attention_heads"], hidden_size=config["hidden_size"]
        )
        out["fused_operators"] = {k: v for k, v in optimized.get_fused_operator_statistics().items() if v}
        fp32_path = os.path.join(folder, "model-opt.onnx")
        optimized.save_model_to_file(fp32_path)
        int8_path = os.path.join(folder, "model-int8.onnx")
        import onnx

        quantize_dynamic(  # the fused operators' outputs have no inferred type: float, as the message asks
            fp32_path,
            int8_path,
            weight_type=QuantType.QInt8,
            per_channel=True,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        ours = cache.embed(posts)

        def encode(session, texts: list[str]) -> np.ndarray:
            vec = np.empty((len(texts), config["hidden_size"]), np.float32)
            for idx, batch, mask in _sorted_batches(tokenizer, texts, max_tokens, batch_size):
                (states,) = session.run(None, {"input_ids": batch, "attention_mask": mask})
                vec[idx] = _mean_pool(states, mask)
            return vec

        vectors = {}
        for name, path in (("fp32", fp32_path), ("int8", int8_path)):
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            encode(session, posts[:256])  # warm-up
            t0 = time.perf_counter()
            vectors[name] = encode(session, posts)
            out[name] = _engine_row(vectors[name], ours, time.perf_counter() - t0, rate)
        first = slice(0, min(1000, len(posts)))  # issue 18's int8 criterion: cosine to fp32 on 1,000 real posts
        cos = (vectors["int8"][first] * vectors["fp32"][first]).sum(1)
        out["int8"]["cosine_to_fp32_p1_first_1000"] = round(float(np.percentile(cos, 1)), 5)
    return out


def openvino_peer_run(cache, posts: list[str], max_tokens: int, batch_size: int, rate: float) -> dict:
    """OpenVINO on the same posts: the model converted from PyTorch (``openvino.convert_model``, the
    eager attention graph, which OpenVINO fuses into its own attention; dynamic batch and length) and
    compiled for the CPU with bf16 inference precision (AMX / AVX-512 bf16 where the CPU has them),
    run two ways: one inference request on every core (the ``LATENCY`` hint), and one stream of one
    thread per core with batches queued asynchronously (the ``THROUGHPUT`` hint: the analogue of our
    worker processes). Same length-sorted batches (over all the posts), cap and mean pooling as
    :func:`onnx_peer_run`: posts/s, the ratio textcause / peer, cosines to the cache."""
    import numpy as np
    import torch

    try:
        import openvino as ov
    except ImportError:
        return {"skipped": "openvino is not installed (pip install openvino)"}
    from transformers import AutoModel

    tokenizer = cache.encoder.tokenizer
    hidden = json.loads((cache.spec.path / "config.json").read_text(encoding="utf-8"))["hidden_size"]
    threads = os.cpu_count() or 1
    model = AutoModel.from_pretrained(str(cache.spec.path), attn_implementation="eager").eval()
    example = tokenizer(["a post", "another post, longer"], padding=True, return_tensors="pt")
    t0 = time.perf_counter()
    with torch.no_grad():
        converted = ov.convert_model(
            _last_hidden(model), example_input=(example["input_ids"], example["attention_mask"])
        )
    out: dict = {"what": f"openvino {ov.get_version()}, CPU, bf16 hint, batch {batch_size}"}
    out["convert_s"] = round(time.perf_counter() - t0, 1)
    ours = cache.embed(posts)
    core = ov.Core()
    for name, hint in (("latency", "LATENCY"), ("throughput", "THROUGHPUT")):
        settings = {"PERFORMANCE_HINT": hint, "INFERENCE_PRECISION_HINT": "bf16"}
        settings.update({"INFERENCE_NUM_THREADS": threads} if hint == "LATENCY" else {"NUM_STREAMS": threads})
        compiled = core.compile_model(converted, "CPU", settings)
        queue = ov.AsyncInferQueue(compiled, 1 if hint == "LATENCY" else threads)

        def encode(texts: list[str], queue=queue) -> np.ndarray:
            vec = np.empty((len(texts), hidden), np.float32)

            def done(request, userdata):
                idx, mask = userdata
                vec[idx] = _mean_pool(request.get_output_tensor(0).data, mask)

            queue.set_callback(done)
            for idx, batch, mask in _sorted_batches(tokenizer, texts, max_tokens, batch_size):
                queue.start_async([batch, mask], (idx, mask))
            queue.wait_all()
            return vec

        encode(posts[:256])  # warm-up
        t0 = time.perf_counter()
        vec = encode(posts)
        out[name] = _engine_row(vec, ours, time.perf_counter() - t0, rate)
        out[name]["inference_precision"] = str(compiled.get_property("INFERENCE_PRECISION_HINT"))
        out[name]["streams"] = int(compiled.get_property("NUM_STREAMS"))
    return out


_ENGINES = ("textcause", "textcause-old", "sentence-transformers", "hf-automodel")


def busy_main(args: argparse.Namespace) -> None:
    """``--busy N``: textcause (new and old default) against both peers with N extra busy processes."""
    import numpy as np
    from _encode_busy import run_busy

    posts = corpus_posts(args.corpus, args.max_posts, with_bank=False)
    rng = np.random.default_rng(0)
    posts = [posts[i] for i in np.sort(rng.choice(len(posts), size=min(args.n, len(posts)), replace=False))]
    threads = args.peer_threads or len(os.sched_getaffinity(0))
    out = run_busy(posts, args.busy, args.rounds, args.engines.split(","), args.max_tokens, threads, args.old_ref)
    print(json.dumps(out, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="twitter", help="a corpus name or path for load_histories")
    parser.add_argument("--encoder", default=None, help="a Hugging Face name or path (default all-MiniLM-L6-v2)")
    parser.add_argument("--n", type=int, default=20000, help="distinct posts to encode (ignored with --all)")
    parser.add_argument("--all", action="store_true", help="encode the whole corpus + bank into the real cache")
    parser.add_argument("--max-posts", type=int, default=60, help="posts per user read from the corpus")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=64, help="at most this many posts per batch")
    parser.add_argument(
        "--batch-tokens",
        type=int,
        default=0,
        help="at most this many padded tokens per batch (0: --batch-size posts whatever their length)",
    )
    parser.add_argument("--precision", default="auto", choices=("auto", "bf16", "bf16-full", "fp32"))
    parser.add_argument("--store-tokens", action="store_true", help="also store token states")
    parser.add_argument("--token-cap", type=int, default=32)
    parser.add_argument(
        "--processes", type=int, default=None, help="encoder worker processes (default: one per core; 1: none)"
    )
    parser.add_argument("--no-peer", action="store_true", help="skip the sentence-transformers peer")
    parser.add_argument(
        "--ab",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="also encode the posts ROUNDS times each in process and with worker processes, alternately",
    )
    parser.add_argument(
        "--ab-attention",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="also encode the posts ROUNDS times each with attention 'sdpa' and 'auto', alternately",
    )
    parser.add_argument(
        "--ab-packed",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="also encode the posts ROUNDS times each with plain and packed Linear layers, alternately",
    )
    parser.add_argument(
        "--attention", default="auto", help="the encoder's attention: auto (textcause's on CPU), sdpa, eager"
    )
    parser.add_argument("--peer-batch-size", type=int, default=128)
    parser.add_argument(
        "--onnx",
        action="store_true",
        help="also time ONNX Runtime (fp32 with BERT's fusions, and int8) on the same posts (needs onnxruntime)",
    )
    parser.add_argument(
        "--openvino",
        action="store_true",
        help="also time OpenVINO (bf16, one request on all cores and one stream per core) on the same posts",
    )
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument(
        "--busy",
        type=int,
        default=None,
        metavar="N",
        help="only the contention benchmark (benchmarks/_encode_busy.py): N extra single-threaded matmul "
        "processes while textcause's old and new defaults and both peers encode, alternately (0: no extra load)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every engine with --busy")
    parser.add_argument("--peer-threads", type=int, default=0, help="the peers' torch threads (0: available CPUs)")
    parser.add_argument("--old-ref", default="226ce67", help="git ref of the old default's package (--busy)")
    parser.add_argument(
        "--engines", default=",".join(_ENGINES), help="with --busy: the engines, comma-separated, textcause first"
    )
    args = parser.parse_args()
    if args.busy is not None:
        return busy_main(args)

    import numpy as np

    from textcause.features.embeddings import PostEmbeddingCache

    load = os.getloadavg()[0]
    peak = {p: matmul_peak(p) for p in ("fp32", "bf16")}
    side_before = side_by_side_peak()
    t0 = time.perf_counter()
    posts = corpus_posts(args.corpus, args.max_posts, with_bank=args.all)
    read_s = time.perf_counter() - t0
    n_corpus = len(posts)
    if not args.all:
        rng = np.random.default_rng(0)
        posts = [posts[i] for i in np.sort(rng.choice(len(posts), size=min(args.n, len(posts)), replace=False))]
    tmp = None if args.all else tempfile.TemporaryDirectory(prefix="bench-encode-")
    cache = PostEmbeddingCache(
        args.encoder,
        max_tokens=args.max_tokens,
        batch_size=args.batch_size,
        batch_tokens=args.batch_tokens or None,
        precision=args.precision,
        store_tokens=args.store_tokens,
        token_cap=args.token_cap,
        cache_dir=None if tmp is None else tmp.name,
        progress=False if args.no_progress else None,
        processes=args.processes,
        attention=args.attention,
    )
    if not args.all:  # a warm-up in this process, as the peer's below: 256 posts into a throwaway cache
        with tempfile.TemporaryDirectory(prefix="bench-encode-warm-") as folder:
            _round_cache(args, folder, processes=args.processes, attention=args.attention).ensure(posts[:256])
    c0 = time.process_time()
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    stats = cache.ensure(posts)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the encoder's worker processes, once reaped
    encode_cpu_s = (
        time.process_time() - c0 + children.ru_utime + children.ru_stime - children0.ru_utime - children0.ru_stime
    )
    # The load changes while we run: the ceiling uses the higher of the peaks before and after (the
    # stricter ceiling; both are printed).
    after = {p: matmul_peak(p) for p in ("fp32", "bf16")}
    side_after = side_by_side_peak()
    side = max(side_before["sustained"], side_after["sustained"])
    before = peak
    peak_cpu = {p: max(before[p][1], after[p][1]) for p in before}
    peak = {p: max(before[p][0], after[p][0]) for p in before}
    config = json.loads((cache.spec.path / "config.json").read_text(encoding="utf-8"))
    usage = cache.disk_usage()
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {
        "encoder": cache.spec.name,
        "corpus": args.corpus,
        "distinct_posts_in_corpus": n_corpus,
        "posts": len(posts),
        "encoded": stats["n_encoded"],
        "read_s": round(read_s, 1),
        "load_average_1min_before": round(load, 2),
        "matmul_gflops_before": {k: round(v[0]) for k, v in before.items()},
        "matmul_gflops_after": {k: round(v[0]) for k, v in after.items()},
        "matmul_gflops_ceiling": {k: round(v) for k, v in peak.items()},
        "bf16_side_by_side_gflops": {
            when: {k: round(v) for k, v in r.items()} for when, r in (("before", side_before), ("after", side_after))
        },
        "cache_folder": str(cache.folder),
        "disk_bytes": usage,
        "peak_rss_mb": round(peak_rss_mb),
    }
    if stats["n_encoded"]:
        mean_tokens = stats["tokens"] / stats["n_encoded"]
        fpt = flops_per_token(config, mean_tokens)
        ceiling = {k: v * 1e9 / (fpt * mean_tokens) for k, v in peak.items()}
        rate = stats["posts_per_s"]
        out.update(
            {
                "encode_s": round(stats["seconds"], 1),
                "posts_per_s": round(rate, 1),
                "precision": stats["precision"],
                "attention": cache.encoder.attention_used,
                "packed_linear_layers": cache.encoder.packed_layers,
                "mean_tokens_per_post": round(mean_tokens, 1),
                "mflop_per_token": round(fpt / 1e6, 2),
                "ceiling_posts_per_s": {k: round(v) for k, v in ceiling.items()},
                "fraction_of_bf16_ceiling": round(rate / ceiling["bf16"], 3),
                # Against the sustained products of one single-threaded process per core side by side
                # (the encoder's layout; the higher of before and after): where the cores share their
                # matrix units this ceiling is lower than the one above.
                "fraction_of_side_by_side_bf16": round(rate * fpt * mean_tokens / (side * 1e9), 3),
                "achieved_gflops": round(rate * mean_tokens * fpt / 1e9, 1),
                # The same fraction per CPU second of this process: robust to other processes' load.
                "fraction_of_bf16_ceiling_cpu_time": round(
                    stats["n_encoded"] * mean_tokens * fpt / encode_cpu_s / (peak_cpu["bf16"] * 1e9), 3
                ),
                "load_average_1min_after": round(os.getloadavg()[0], 2),
            }
        )
        if not args.all:
            per_post = sum(usage.values()) / len(posts)
            out["estimate_whole_corpus"] = {
                "posts": n_corpus,
                "minutes": round(n_corpus / rate / 60, 1),
                "gb": round(per_post * n_corpus / 1e9, 2),
            }
    full = cache.encoder.tokenizer(posts, truncation=False, padding=False, return_attention_mask=False)["input_ids"]
    full_len = np.fromiter(map(len, full), dtype=np.int64, count=len(full))
    out["truncation"] = {
        "max_tokens": args.max_tokens,
        "share_longer_than_cap": round(float((full_len > args.max_tokens).mean()), 4),
        "mean_tokens_untruncated": round(float(full_len.mean()), 1),
        "share_of_tokens_cut": round(float(np.maximum(full_len - args.max_tokens, 0).sum() / full_len.sum()), 4),
    }
    if args.ab and not args.all:
        out["in_process_vs_workers"] = ab_rounds(args, posts)
    if args.ab_attention and not args.all:
        out["attention_sdpa_vs_auto"] = attention_rounds(args, posts)
    if args.ab_packed and not args.all:
        out["linear_plain_vs_packed"] = packed_rounds(args, posts)
    if not args.all and not args.no_peer and stats["n_encoded"]:
        out["peer"] = peer_run(cache, posts, args.max_tokens, args.peer_batch_size, rate)
    if args.onnx and not args.all and stats["n_encoded"]:
        out["onnxruntime"] = onnx_peer_run(cache, posts, args.max_tokens, args.batch_size, rate)
    if args.openvino and not args.all and stats["n_encoded"]:
        out["openvino"] = openvino_peer_run(cache, posts, args.max_tokens, args.batch_size, rate)
    print(json.dumps(out, indent=2))
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()

"""``bench_encode.py --busy N``: textcause's encoder and its peers on a machine kept busy on purpose.

N extra processes (numpy float32 matmuls, one thread each: ``OMP/OPENBLAS/MKL_NUM_THREADS=1``) run
for the whole of the timed rounds, started and stopped by this script, so the contention is
reproducible (``--busy 0``: no extra load; the machine's own load is printed either way). Each
engine runs in a fresh child process per round (its own OpenMP wait policy and threads, read when
torch loads), the engines alternated within every round, on the same posts and token cap:

- ``textcause-old``: the encoder's default before issue 46 (one worker process of one thread per
  core, ``os.cpu_count()``, whatever the load), the package as of ``--old-ref`` (``git archive``
  into a temporary folder), in the environment as given;
- ``textcause``: the default now (:func:`textcause.features.encoder_workers.encode_plan`);
- ``sentence-transformers``: ``SentenceTransformer.encode``, bf16, batch 128, its own length sorting;
- ``hf-automodel``: ``AutoModel`` bf16, batches of 64 sorted by length over all the posts, mean pooling.

The peers run with their best settings: ``OMP_WAIT_POLICY=PASSIVE`` and ``--peer-threads`` torch
threads (default: the CPUs this process may use, ``os.sched_getaffinity``). Every engine encodes
256 posts first (warm-up, untimed). Per engine and round: posts/s, and what the child and its
worker processes spent: CPU seconds (user + system) over wall seconds, voluntary and involuntary
context switches (``resource.getrusage``), the 1-minute load average before and after.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["ENGINES", "busy_processes", "child_main", "run_busy"]

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ("textcause-old", "textcause", "sentence-transformers", "hf-automodel")
_SPIN = (
    "import numpy as np\n"
    "a = np.random.default_rng(0).standard_normal((384, 384), dtype=np.float32)\n"
    "while True:\n"
    "    a = np.tanh(a @ a * 1e-2)\n"
)


def busy_processes(n: int) -> list[subprocess.Popen]:
    """Start ``n`` single-threaded matmul loops (the caller stops them: :func:`stop`)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return [subprocess.Popen([sys.executable, "-c", _SPIN], env=env) for _ in range(n)]


def stop(procs: list[subprocess.Popen]) -> None:
    """Stop the processes that :func:`busy_processes` started."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.wait(timeout=30)


def _usage() -> dict[str, float]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "cpu_s": own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime,
        "own_cpu_s": own.ru_utime + own.ru_stime,
        "vol_cs": own.ru_nvcsw + kids.ru_nvcsw,
        "invol_cs": own.ru_nivcsw + kids.ru_nivcsw,
    }


def _options(engine: str) -> dict[str, Any]:
    """The settings of a diagnostic engine ``tc:p=2,t=1,omp=ACTIVE`` (processes, threads, wait policy)."""
    if not engine.startswith("tc:"):
        return {}
    pairs = dict(kv.split("=") for kv in engine[3:].split(",") if kv)
    return {k: (v if k == "omp" else int(v)) for k, v in pairs.items()}


def _textcause(engine: str, posts: list[str], spec: dict) -> tuple[float, Any, dict]:
    import numpy as np

    from textcause.features.embeddings import PostEmbeddingCache

    opts = _options(engine)
    processes = opts.get("p")
    with tempfile.TemporaryDirectory(prefix="bench-busy-") as folder:
        cache = PostEmbeddingCache(None, max_tokens=spec["max_tokens"], cache_dir=folder, progress=False)
        cache.encoder.processes = processes
        cache.encoder.num_threads = opts.get("t")
        cache.encoder.encode(posts[:256])  # warm-up: weights, precision probe, packing
        u0, t0 = _usage(), time.perf_counter()
        stats = cache.ensure(posts)  # the pool (if any) is closed and reaped at its end
        seconds, u1 = time.perf_counter() - t0, _usage()
        vec = np.asarray(cache.embed(posts), np.float32)
        plan = getattr(cache.encoder, "last_plan", None)
    return (
        seconds,
        vec,
        {
            "usage": {k: u1[k] - u0[k] for k in u0},
            "precision": stats["precision"],
            "plan": None if plan is None else plan.describe(),
        },
    )


def _peer(engine: str, posts: list[str], spec: dict) -> tuple[float, Any, dict]:
    import numpy as np
    import torch

    from textcause.features.encoder_spec import resolve_encoder

    torch.set_num_threads(spec["peer_threads"])
    path = str(resolve_encoder(None).path)
    if engine == "sentence-transformers":
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(path, device="cpu").to(torch.bfloat16)
        model.max_seq_length = spec["max_tokens"]

        def run(texts: list[str]) -> np.ndarray:
            return model.encode(texts, batch_size=128, show_progress_bar=False, convert_to_numpy=True)
    else:
        from transformers import AutoModel, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModel.from_pretrained(path, torch_dtype=torch.bfloat16).eval()

        def run(texts: list[str]) -> np.ndarray:
            ids = tok(texts, truncation=True, max_length=spec["max_tokens"])["input_ids"]
            order = np.argsort([len(i) for i in ids], kind="stable")
            out = np.empty((len(texts), model.config.hidden_size), np.float32)
            with torch.inference_mode():
                for lo in range(0, len(order), 64):
                    idx = order[lo : lo + 64]
                    batch = tok.pad({"input_ids": [ids[i] for i in idx]}, return_tensors="pt")
                    states = model(**batch).last_hidden_state.float()
                    m = batch["attention_mask"].unsqueeze(-1).float()
                    out[idx] = torch.nn.functional.normalize((states * m).sum(1) / m.sum(1), dim=-1).numpy()
            return out

    run(posts[:256])  # warm-up
    u0, t0 = _usage(), time.perf_counter()
    vec = run(posts)
    seconds, u1 = time.perf_counter() - t0, _usage()
    return (
        seconds,
        np.asarray(vec, np.float32),
        {"usage": {k: u1[k] - u0[k] for k in u0}, "threads": spec["peer_threads"]},
    )


def child_main(spec_path: str) -> None:
    """One engine's timed encode in this (child) process; prints one JSON line."""
    import numpy as np

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    posts = json.loads(Path(spec["posts"]).read_text(encoding="utf-8"))
    engine = spec["engine"]
    load = os.getloadavg()[0]
    import textcause

    print(f"textcause from {textcause.__file__}", file=sys.stderr)
    fn = _peer if engine in ("sentence-transformers", "hf-automodel") else _textcause
    seconds, vec, extra = fn(engine, posts, spec)
    np.save(spec["vectors"], vec)
    usage = extra.pop("usage")
    print(
        json.dumps(
            {
                "engine": engine,
                "posts_per_s": round(len(posts) / seconds, 1),
                "wall_s": round(seconds, 2),
                "cpu_over_wall": round(usage["cpu_s"] / seconds, 2),
                "own_cpu_over_wall": round(usage["own_cpu_s"] / seconds, 2),
                "vol_cs": int(usage["vol_cs"]),
                "invol_cs": int(usage["invol_cs"]),
                "load_before": round(load, 2),
                "load_after": round(os.getloadavg()[0], 2),
                **extra,
            }
        )
    )


def _run_child(engine: str, folder: str, spec: dict) -> dict:
    env = dict(os.environ)
    if engine in ("sentence-transformers", "hf-automodel"):
        env["OMP_WAIT_POLICY"] = "PASSIVE"  # the peers' best setting
    omp = _options(engine).get("omp")
    if omp == "unset":
        env.pop("OMP_WAIT_POLICY", None)
    elif omp:
        env["OMP_WAIT_POLICY"] = omp
    if engine == "textcause-old":
        env["BENCH_TEXTCAUSE_ROOT"] = spec["old_root"]
    name = engine.replace(":", "_").replace(",", "_").replace("=", "")
    path = Path(folder) / f"{name}.json"
    path.write_text(json.dumps({**spec, "engine": engine, "vectors": str(Path(folder) / f"{name}.npy")}))
    done = subprocess.run(
        [sys.executable, str(Path(__file__)), "--child", str(path)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"{engine} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def old_package(ref: str, folder: str) -> str:
    """``textcause/`` as of git ``ref``, extracted into ``folder``; returns ``folder``."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "textcause"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
    return folder


def run_busy(
    posts: list[str],
    busy: int,
    rounds: int,
    engines: list[str],
    max_tokens: int,
    peer_threads: int,
    old_ref: str = "226ce67",
) -> dict:
    """``rounds`` rounds of every engine in turn (a fresh child each) with ``busy`` extra matmul
    processes running: per-round rows, medians, the ratios of textcause's posts/s to each peer's
    and to the old default, and the cosines of the peers' vectors to textcause's."""
    import numpy as np

    rows: dict[str, list[dict]] = {e: [] for e in engines}
    with tempfile.TemporaryDirectory(prefix="bench-busy-run-") as folder:
        spec = {"posts": str(Path(folder) / "posts.json"), "max_tokens": max_tokens, "peer_threads": peer_threads}
        if "textcause-old" in engines:
            spec["old_root"] = old_package(old_ref, str(Path(folder) / "old"))
        Path(spec["posts"]).write_text(json.dumps(posts), encoding="utf-8")
        load0 = os.getloadavg()
        procs = busy_processes(busy)
        try:
            time.sleep(2.0 if busy else 0.0)
            for r in range(rounds):
                order = engines if r % 2 == 0 else engines[::-1]  # alternate who goes first
                for engine in order:
                    rows[engine].append(_run_child(engine, folder, spec))
                    print(json.dumps(rows[engine][-1]), file=sys.stderr, flush=True)
        finally:
            stop(procs)
        vec = {
            e: np.load(Path(folder) / (e.replace(":", "_").replace(",", "_").replace("=", "") + ".npy"))
            for e in engines
        }
    med = {e: statistics.median(r["posts_per_s"] for r in rows[e]) for e in engines}
    out: dict[str, Any] = {
        "busy_processes": busy,
        "old_ref": old_ref,
        "cpus": sorted(os.sched_getaffinity(0)),
        "load_average_before": [round(x, 2) for x in load0],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "rounds": rows,
        "median_posts_per_s": med,
    }
    ours = "textcause" if "textcause" in engines else engines[0]
    out["ratios_of_medians"] = {f"{ours}/{e}": round(med[ours] / med[e], 2) for e in engines if e != ours}
    out["per_round_ratios"] = {
        f"{ours}/{e}": [round(a["posts_per_s"] / b["posts_per_s"], 2) for a, b in zip(rows[ours], rows[e])]
        for e in engines
        if e != ours
    }
    ref = vec[ours] / np.linalg.norm(vec[ours], axis=1, keepdims=True)
    out["cosine_to_textcause_min"] = {
        e: round(float(((vec[e] / np.linalg.norm(vec[e], axis=1, keepdims=True)) * ref).sum(1).min()), 5)
        for e in engines
        if e != ours
    }
    if "textcause-old" in vec and ours == "textcause":
        out["old_default_max_abs_difference"] = float(np.abs(vec["textcause-old"] - vec[ours]).max())
    return out


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        sys.path.insert(0, str(ROOT))
        if os.environ.get("BENCH_TEXTCAUSE_ROOT"):  # the old default's package
            sys.path.insert(0, os.environ["BENCH_TEXTCAUSE_ROOT"])
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        child_main(sys.argv[2])

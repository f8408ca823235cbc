"""A CFR evaluation run: pairs -> frozen-encoder representations (the embedding cache) -> rows in the store.

:func:`run_cfr` builds the experiment's pairs (:mod:`textcause.counterfactual.cfr.pairs`), embeds
every original and counterfactual text with the frozen encoder through
:class:`~textcause.features.embeddings.PostEmbeddingCache` (each distinct text encoded once, cached
under the cache root: a rerun encodes nothing), evaluates the interventions
(:func:`textcause.counterfactual.cfr.evaluate.evaluate_cfr`) and writes the rows to the results
database (``<out>/results.db`` by default; any SQLAlchemy URL), table ``cfr_results``: one row per
(section, method, metric, class), keyed by the run id ``<name>:seed<seed>``. A run's rows are
written in one transaction and replace the rows of the same run id (a rerun after a config change
replaces them; the rows carry the config hash).
"""

from __future__ import annotations

import math
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import numpy as np
import sqlalchemy as sa

from textcause.counterfactual.cfr.spec import CFRExperiment
from textcause.io import atomic_write_json
from textcause.store import default_url, open_store, read_table, utcnow
from textcause.store.tables import cfr_results

__all__ = [
    "blas_threads",
    "read_cfr",
    "run_cfr",
]


def _write_run(engine: sa.Engine, rows: list[dict[str, Any]]) -> None:
    """Replace a run's rows in one transaction (all or nothing)."""
    clean = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()} for r in rows]
    with engine.begin() as conn:
        conn.execute(sa.delete(cfr_results).where(cfr_results.c.run_id.in_(sorted({r["run_id"] for r in clean}))))
        conn.execute(sa.insert(cfr_results), clean)


def read_cfr(source: str | sa.Engine, run_id: Optional[str] = None) -> Any:
    """The ``cfr_results`` rows (optionally of one run) as a DataFrame, ordered by id."""
    return read_table(source, cfr_results, run_id=run_id)


def _build_pairs(experiment: CFRExperiment) -> Any:
    """The experiment's :class:`~textcause.counterfactual.cfr.pairs.CounterfactualPairs`."""
    from textcause.counterfactual.cfr.pairs import blog_pairs, read_pairs_csv, template_pairs

    s = experiment.spec
    rng = np.random.default_rng([s.seed, 5])
    if s.data == "pairs":
        return read_pairs_csv(s.pairs_file, concept_values=s.concept_values)
    if s.data == "templates":
        return template_pairs(s.n_documents, rng, templates=s.templates_file, bias=s.bias, bias_mode=s.bias_mode)
    from textcause.corpus import read_corpus
    from textcause.counterfactual.cfr.swap import load_swap_map

    corpus = read_corpus(s.corpus)
    return blog_pairs(
        corpus,
        load_swap_map(s.swap_map),
        rng,
        n_documents=s.n_documents,
        concept_field=s.concept_field,
        concept_source=s.concept_source,
        concept_values=s.concept_values,
        label_field=s.label_field,
        label_bins=s.label_bins,
        max_words=s.max_words,
        min_swaps=s.min_swaps,
    )


def _embed_pairs(
    experiment: CFRExperiment, pairs: Any, *, progress: Optional[bool] = None
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """(x, x_cf, info): the frozen encoder's pooled vectors of the originals and counterfactuals."""
    from textcause.features.embeddings import PostEmbeddingCache

    s = experiment.spec
    cache = PostEmbeddingCache(s.encoder, max_tokens=s.max_tokens, batch_size=s.batch_size, progress=progress)
    started = time.perf_counter()
    texts = list(pairs.original) + list(pairs.counterfactual)
    vectors = cache.embed(texts)
    seconds = time.perf_counter() - started
    n = len(pairs)
    info = {
        "encoder": cache.spec.name,
        "encode_seconds": seconds,
        "n_texts": len(texts),
        "n_distinct": len(set(texts)),
        "n_encoded": int(cache.last_stats.get("n_encoded", 0)),
    }
    return vectors[:n], vectors[n:], info


def blas_threads(threads: Optional[int]) -> Any:
    """A context that caps the BLAS / OpenMP thread pools at ``threads`` (None: leaves them as they are).

    The evaluation's logistic regressions multiply small matrices thousands of times; a BLAS pool
    of several threads on a shared machine waits for each of them at every product (threadpoolctl,
    scikit-learn's own dependency, sets the cap).
    """
    import contextlib

    if threads is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=threads)


def run_cfr(
    experiment: CFRExperiment,
    out_dir: str | Path,
    *,
    db: Optional[str] = None,
    progress: Optional[bool] = None,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Build, embed, evaluate and record one CFR evaluation; return its summary.

    Returns:
        ``{"url", "run_id", "result" (CFRResult), "pairs_info", "embed_info", "seconds"}``; the
        summary is also written to ``<out>/<name>_summary.json``.
    """
    from textcause.counterfactual.cfr.evaluate import evaluate_cfr

    s = experiment.spec
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    url = db or default_url(out)
    started_at, started = utcnow(), time.perf_counter()
    if s.threads is not None:
        import torch

        torch.set_num_threads(s.threads)
    pairs = _build_pairs(experiment)
    echo(f"{experiment.name}: {len(pairs)} units, classes {pairs.classes}, concept {list(pairs.concept_values)}")
    x, x_cf, embed_info = _embed_pairs(experiment, pairs, progress=progress)
    echo(f"{experiment.name}: embedded {embed_info['n_texts']} texts in {embed_info['encode_seconds']:.1f} s")
    with blas_threads(s.threads):
        result = evaluate_cfr(x, x_cf, pairs, experiment.settings)
    seconds = time.perf_counter() - started
    base = {
        "run_id": experiment.run_id,
        "experiment": experiment.name,
        "data": s.data,
        "seed": s.seed,
        "config_hash": experiment.config_hash,
        "n_units": result.info["n_units"],
        "n_train": result.info["n_train"],
        "n_test": result.info["n_test"],
        "encoder": embed_info["encoder"],
        "encode_seconds": embed_info["encode_seconds"],
        "seconds": seconds,
        "host": socket.gethostname(),
        "started_at": started_at,
        "finished_at": utcnow(),
    }
    engine = open_store(url, cfr_results)
    try:
        _write_run(engine, [{**base, **r} for r in result.rows])
    finally:
        engine.dispose()
    summary = {
        "url": url,
        "run_id": experiment.run_id,
        "config_hash": experiment.config_hash,
        "pairs_info": pairs.info,
        "embed_info": embed_info,
        "evaluate_info": result.info,
        "classes": result.classes,
        "concept_values": list(result.concept_values),
        "seconds": seconds,
    }
    atomic_write_json(out / f"{experiment.name}_summary.json", summary)
    return {**summary, "result": result}

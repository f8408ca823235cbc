"""A results table made of simulated numbers, shaped like the grid's: for tests, docs and demos.

Nothing here trains a model. Each model gets a "quality" in [0, 1]; a cell's treatment accuracy and
its estimators' biases follow from that quality, the task level's difficulty and seeded noise, so a
report drawn from it shows the paper's patterns (better propensities, smaller bias; IPTW noisier
than stratification) without claiming anything about real models.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from textcause.estimators.registry import DEFAULT_ESTIMATORS
from textcause.validation import check_int

__all__ = [
    "simulate_results",
]

#: The paper's task levels (section 5.2 and Appendix H).
_PAPER_TASK_LEVELS = {
    "linguistic_complexity": 4,
    "signal_intensity": 2,
    "selection_strength": 2,
    "sample_size": 3,
    "placebo": 1,
    "order_of_text": 2,
}
#: Simulated quality of each model's propensities (1: the truth).
_QUALITY = {
    "oracle": 1.0,
    "unadjusted": 0.0,
    "lr_unigram_binary": 0.7,
    "lr_bigram_binary": 0.8,
    "lr_bigram_counts": 0.78,
    "lr_lda": 0.2,
    "nn_unigram_binary": 0.68,
    "nn_bigram_binary": 0.8,
    "nn_bigram_counts": 0.77,
    "nn_lda": 0.22,
    "sherbert": 0.88,
    "sherbert_pooled": 0.85,
    "order_count": 0.75,
}
#: Simulated sampling noise (sd of the ATE over test units) per estimator.
_ESTIMATOR_SE = {"unadjusted": 0.02, "ipw": 0.05, "stratified": 0.03, "matching": 0.035, "aipw": 0.03, "tmle": 0.03}
#: The doubly robust estimators: their simulated outcome model removes most of the confounding bias a
#: poor propensity model leaves, and their rows carry an influence-function interval too.
_DOUBLY_ROBUST = {"aipw": 0.3, "tmle": 0.25}


def simulate_results(
    *,
    corpora: Sequence[str] = ("reddit",),
    task_levels: dict[str, int] | None = None,
    models: Sequence[str] = ("oracle", "unadjusted", "lr_bigram_binary", "lr_lda", "sherbert"),
    estimators: Sequence[str] = ("unadjusted", *DEFAULT_ESTIMATORS),
    n_seeds: int = 5,
    n_test: int = 400,
    with_sizes: bool = True,
    n_failed: int = 0,
    seed: int = 0,
) -> pd.DataFrame:
    """Simulate one results row per corpus x task level x model x seed x estimator.

    Args:
        corpora: corpus names.
        task_levels: ``{task: number of levels}`` (default: the paper's tasks).
        models: model config names (unknown names get quality 0.5).
        estimators: estimator names (``aipw`` / ``tmle`` rows also get an influence-function interval).
        n_seeds: seeds per cell.
        n_test: test users per cell (``n_train`` is 0.8 of it, times the Sample Size share).
        with_sizes: include the ``n_train`` / ``n_test`` columns.
        n_failed: how many cells (the last ones) are marked failed, with an error and no numbers.
        seed: seed of the noise.

    Returns:
        A DataFrame with the grid's columns (``status`` ``ok`` or ``failed``).
    """
    n_seeds = check_int(n_seeds, "n_seeds", "simulate_results", low=1)
    n_test = check_int(n_test, "n_test", "simulate_results", low=2)
    n_failed = check_int(n_failed, "n_failed", "simulate_results", low=0)
    levels = dict(_PAPER_TASK_LEVELS if task_levels is None else task_levels)
    rng = np.random.default_rng(seed)
    rows = []
    for corpus in corpora:
        shift = 0.01 * rng.standard_normal()
        for task, n_levels in levels.items():
            for level in range(1, n_levels + 1):
                difficulty = (level - 1) / max(n_levels - 1, 1)
                truth = 0.0 if task == "placebo" else 0.4
                confounding = -0.3 if task == "placebo" else 0.3 + 0.1 * (task == "selection_strength") * difficulty
                keep = {1: 1.0, 2: 0.5, 3: 0.25}.get(level, 1.0) if task == "sample_size" else 1.0
                for s in range(n_seeds):
                    naive = truth + confounding + _ESTIMATOR_SE["unadjusted"] * rng.standard_normal()
                    for model in models:
                        q = (
                            _QUALITY.get(model, 0.5)
                            * (1.0 - 0.35 * difficulty)
                            * (task != "order_of_text" or level == 1)
                        )
                        if model == "oracle":
                            q = 1.0
                        acc = 0.5 + 0.42 * q + shift + 0.01 * rng.standard_normal()
                        for name in estimators:
                            if name == "unadjusted":
                                ate = naive
                            else:
                                scale = {"ipw": 0.9, "matching": 1.05, **_DOUBLY_ROBUST}.get(name, 1.0)
                                noise = _ESTIMATOR_SE.get(name, 0.03) * rng.standard_normal()
                                ate = truth + scale * confounding * (1.0 - q) + noise
                            half = 1.96 * _ESTIMATOR_SE.get(name, 0.03) * (1.0 + 0.2 * rng.random())
                            wide = 0.05 + 0.6 * rng.random()  # drawn for every estimator: the stream stays as it was
                            ad = {}
                            if name == "ipw":  # the Arbour-Dimmery interval is centred on IPW: its rows only
                                ad = {
                                    "ad_low": ate - wide,
                                    "ad_high": ate + wide,
                                    "ci_narrower_than_ad": bool(half < wide),
                                }
                            influence = {}
                            if name in _DOUBLY_ROBUST:
                                if_half = half * (0.8 + 0.4 * rng.random())
                                influence = {
                                    "influence_ci_low": ate - if_half,
                                    "influence_ci_high": ate + if_half,
                                    "influence_covers_truth": bool(ate - if_half <= truth <= ate + if_half),
                                    "influence_ci_method": "influence function (normal approximation)",
                                }
                            rows.append(
                                {
                                    "corpus": corpus,
                                    "task": task,
                                    "level": level,
                                    "model": model,
                                    "seed": s,
                                    "estimator": name,
                                    "ate": ate,
                                    "ci_low": ate - half,
                                    "ci_high": ate + half,
                                    "bias": ate - truth,
                                    "true_ate": truth,
                                    "sample_ate": truth + 0.01 * rng.standard_normal(),
                                    "n_used": n_test,
                                    "n_dropped": 0,
                                    "treatment_accuracy": acc,
                                    "ece": 0.05 + 0.1 * (1 - q),
                                    "brier": 0.25 - 0.15 * q,
                                    "iptw_weight_mse": 2.0 * (1 - q) + 0.1 * rng.random(),
                                    "spearman": 0.2 + 0.78 * q,
                                    **ad,
                                    "covers_truth": bool(ate - half <= truth <= ate + half),
                                    "ci_method": "percentile bootstrap over evaluation units",
                                    "status": "ok",
                                    "error": None,
                                    "train_seconds": 1.0 + rng.random(),
                                    "split": "test",
                                    **({"n_train": round(0.8 * n_test * keep), "n_test": n_test} if with_sizes else {}),
                                    **influence,
                                }
                            )
    df = pd.DataFrame(rows)
    if n_failed:
        cells = df[["corpus", "task", "level", "model", "seed"]].drop_duplicates().tail(n_failed)
        hit = df.merge(cells, how="left", indicator=True)["_merge"].eq("both").to_numpy()
        for col in ("ate", "ci_low", "ci_high", "bias", "treatment_accuracy", "covers_truth", "ci_narrower_than_ad"):
            if col not in df:
                continue
            df[col] = df[col].astype(object if df[col].dtype == bool else np.float64)
            df.loc[hit, col] = np.nan
        df.loc[hit, "status"] = "failed"
        df.loc[hit, "error"] = "RuntimeError: simulated failure (out of memory)"
    return df

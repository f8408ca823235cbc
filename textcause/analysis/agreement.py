"""Appendix A and G summaries: IPW's empirical interval vs the Arbour-Dimmery interval; agreement across corpora."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from textcause.analysis.findings import distinct_levels
from textcause.analysis.frame import load_results, task_order
from textcause.analysis.names import MODEL_FREE, estimator_order, model_family, model_order

__all__ = [
    "MIN_PAIRS_FOR_R",
    "MIN_SPREAD_FOR_R",
    "PAIR_COLUMNS",
    "agreement_pairs",
    "cross_corpus_agreement",
    "largest_disagreements",
    "narrower_than_ad",
]

#: Appendix G's quantities: (label, estimator or None for a cell-level metric, column).
_AGREEMENT_QUANTITIES = (
    ("Treatment accuracy", None, "treatment_accuracy"),
    ("ATE (stratified)", "stratified", "ate"),
    ("ATE (IPTW)", "ipw", "ate"),
)
#: Pearson r is printed only over at least this many pairs (appendix G: r miscommunicates clustered values).
MIN_PAIRS_FOR_R = 5
#: ... and only where each corpus's values span at least this much: values that all sit within a band
#: this narrow (every model at chance on Order of Text 2, say) make r a correlation of noise (appendix G's
#: clustered values), whatever the number of pairs. The findings' tolerance on bias, ±0.05, is the scale.
MIN_SPREAD_FOR_R = 0.05
#: The columns of :func:`agreement_pairs`.
PAIR_COLUMNS = [
    "task",
    "level",
    "model",
    "family",
    "model_free",
    "quantity",
    "value_a",
    "value_b",
    "diff",
    "n_seeds_a",
    "n_seeds_b",
    "one_seed",
]


def narrower_than_ad(df: Any) -> pd.DataFrame:
    """How often IPW's empirical interval is narrower than the Arbour-Dimmery interval (Appendix A).

    Only IPW rows carry the Arbour-Dimmery interval (it is centred on the IPW estimate; see
    :mod:`textcause.metrics.schema`), so no other estimator's row is counted.

    Returns:
        One row per estimator and a final ``all`` row: ``k`` (intervals narrower than the
        Arbour-Dimmery interval), ``n`` (cells with both), ``share`` and ``text`` ("k of n cells").
    """
    data = load_results(df)
    data = data[data["usable"] & data["ci_narrower_than_ad"].notna()]
    rows = []
    for est in estimator_order(data["estimator"]):
        g = data[data["estimator"] == est]
        rows.append((est, int(g["ci_narrower_than_ad"].sum()), len(g)))
    rows.append(("all", int(data["ci_narrower_than_ad"].sum()), len(data)))
    out = pd.DataFrame(rows, columns=["estimator", "k", "n"])
    out["share"] = np.where(out["n"] > 0, out["k"] / out["n"].clip(lower=1), np.nan)
    out["text"] = [f"{k} of {n} cells" for k, n in zip(out["k"], out["n"])]
    return out


def _cell_means(data: pd.DataFrame) -> pd.DataFrame:
    """Per (corpus, task, level, model): each Appendix G quantity averaged over seeds, and the seeds."""
    keys = ["corpus", "task", "level", "model"]
    ok = data[data["usable"]]
    parts = []
    for label, est, col in _AGREEMENT_QUANTITIES:
        if est is None:  # one value per cell (the same on each estimator row): average cells, then seeds
            per_cell = ok.groupby(keys + ["seed"], as_index=False)[col].mean()
        else:
            per_cell = ok[ok["estimator"] == est][keys + ["seed", col]]
        per_cell = per_cell.dropna(subset=[col])
        means = per_cell.groupby(keys, as_index=False).agg(value=(col, "mean"), n_seeds=("seed", "nunique"))
        parts.append(means.assign(quantity=label))
    return pd.concat(parts, ignore_index=True)


def _agree(g: pd.DataFrame) -> dict[str, float]:
    a, b = g["value_a"].to_numpy(), g["value_b"].to_numpy()
    nonzero = a != 0
    r = float("nan")
    clustered = bool(a.size and min(np.ptp(a), np.ptp(b)) < MIN_SPREAD_FOR_R)
    if a.size >= MIN_PAIRS_FOR_R and not clustered:
        r = float(stats.pearsonr(a, b).statistic)
    return {
        "n": int(a.size),
        "clustered": clustered,
        "n_one_seed": int(g["one_seed"].sum()),
        "mean_abs_diff": float(np.mean(np.abs(b - a))),
        "mean_ratio": float(np.mean(b[nonzero] / a[nonzero])) if nonzero.any() else float("nan"),
        "pearson_r": r,
    }


def _corpora(data: pd.DataFrame, corpus_a: str | None, corpus_b: str | None) -> tuple[str, str]:
    corpora = sorted(set(data["corpus"]))
    if corpus_a is None and corpus_b is None:
        if len(corpora) != 2:
            raise ValueError(f"Cross-corpus agreement needs two corpora; the table has {corpora}: name two.")
        corpus_a, corpus_b = corpora
    for name in (corpus_a, corpus_b):
        if name not in corpora:
            raise ValueError(f"No results for corpus {name!r}; the table has {corpora}.")
    if corpus_a == corpus_b:
        raise ValueError(f"Compare two different corpora; both are {corpus_a!r}.")
    return str(corpus_a), str(corpus_b)


def agreement_pairs(df: Any, corpus_a: str | None = None, corpus_b: str | None = None) -> pd.DataFrame:
    """The (task level, model, quantity) values both corpora have, side by side (:data:`PAIR_COLUMNS`).

    Each quantity is averaged over seeds per (task, level, model) on each corpus, twin levels once
    under their first name (:func:`textcause.analysis.findings.distinct_levels`); ``diff`` is ``b - a``,
    ``family`` is :func:`textcause.analysis.names.model_family`, ``model_free`` marks the oracle and the
    unadjusted estimate (no text model: the same draw gives the same number at every level that shares
    it), ``one_seed`` a pair with a single seed on either side.

    Raises:
        ValueError: not two corpora to compare, or none of their (task, level, model) in common.
    """
    data = load_results(df)
    corpus_a, corpus_b = _corpora(data, corpus_a, corpus_b)
    means = _cell_means(distinct_levels(data))
    keys = ["task", "level", "model", "quantity"]
    paired = (
        means[means["corpus"] == corpus_a][keys + ["value", "n_seeds"]]
        .merge(means[means["corpus"] == corpus_b][keys + ["value", "n_seeds"]], on=keys, suffixes=("_a", "_b"))
        .dropna(subset=["value_a", "value_b"])
    )
    if paired.empty:
        raise ValueError(f"Corpora {corpus_a!r} and {corpus_b!r} share no (task, level, model) with results.")
    paired["family"] = [model_family(m) for m in paired["model"]]
    paired["model_free"] = paired["model"].isin(MODEL_FREE)
    paired["diff"] = paired["value_b"] - paired["value_a"]
    paired["one_seed"] = (paired["n_seeds_a"] <= 1) | (paired["n_seeds_b"] <= 1)
    out = paired[PAIR_COLUMNS].reset_index(drop=True)
    out.attrs.update(corpus_a=corpus_a, corpus_b=corpus_b)
    return out


def cross_corpus_agreement(df: Any, corpus_a: str | None = None, corpus_b: str | None = None) -> pd.DataFrame:
    """Agreement between two corpora's results (Appendix G, Table 2 and Fig. 10), model-dependent rows apart.

    The pairs of :func:`agreement_pairs` are summarised per quantity over every model-dependent pair
    (scope ``all``), per model family (``family``), per task (``task``) and per model (``model``); the
    model-free pairs (oracle, unadjusted: no model involved, one draw repeated across levels) only in
    their own scope ``model-free``, so they cannot inflate the agreement of the models.

    Args:
        df: the results.
        corpus_a: the first corpus (default: the first of the table's two corpora, alphabetically).
        corpus_b: the second corpus (default: the second, alphabetically).

    Returns:
        Rows ``scope``, ``group``, ``quantity``, ``n`` (pairs), ``n_one_seed`` (pairs with one seed on
        a side), ``mean_abs_diff`` (``|b - a|``), ``mean_ratio`` (``b / a``, over ``a != 0``) and
        ``pearson_r`` (NaN with fewer than :data:`MIN_PAIRS_FOR_R` pairs, or where ``clustered``: a
        corpus's values span less than :data:`MIN_SPREAD_FOR_R`); the pairs themselves in ``attrs["pairs"]``.
    """
    pairs = agreement_pairs(df, corpus_a, corpus_b)
    labels = [q[0] for q in _AGREEMENT_QUANTITIES]
    models, free = pairs[~pairs["model_free"]], pairs[pairs["model_free"]]
    families = list(dict.fromkeys(model_family(m) for m in model_order(models["model"])))
    rows = []
    for scope, sub_all, col, groups in (
        ("all", models, None, ["all"]),
        ("family", models, "family", families),
        ("task", models, "task", task_order(models["task"])),
        ("model", models, "model", model_order(models["model"])),
        ("model-free", free, "model", model_order(free["model"])),
    ):
        for group in groups:
            sub = sub_all if col is None else sub_all[sub_all[col] == group]
            for label in labels:
                g = sub[sub["quantity"] == label]
                if len(g):
                    rows.append({"scope": scope, "group": group, "quantity": label, **_agree(g)})
    columns = ["scope", "group", "quantity", "n", "clustered", "n_one_seed", "mean_abs_diff", "mean_ratio", "pearson_r"]
    out = pd.DataFrame(rows, columns=columns)
    out.attrs.update(corpus_a=pairs.attrs["corpus_a"], corpus_b=pairs.attrs["corpus_b"], pairs=pairs)
    return out


def largest_disagreements(pairs: pd.DataFrame, k: int = 5, *, model_free: bool = False) -> pd.DataFrame:
    """The ``k`` model-dependent pairs (``model_free``: also the model-free ones) whose corpora differ most,
    largest ``|diff|`` first, ties in the pairs' order."""
    sub = pairs if model_free else pairs[~pairs["model_free"]]
    order = sub["diff"].abs().sort_values(ascending=False, kind="stable").index
    return sub.loc[order[:k]].reset_index(drop=True)

"""Appendix A and G summaries: IPW's empirical interval vs the Arbour-Dimmery interval; agreement across corpora."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from textcause.analysis.findings import distinct_levels
from textcause.analysis.frame import load_results, task_order
from textcause.analysis.names import estimator_order, model_order

#: Appendix G's quantities: (label, estimator or None for a cell-level metric, column).
AGREEMENT_QUANTITIES = (
    ("Treatment accuracy", None, "treatment_accuracy"),
    ("ATE (stratified)", "stratified", "ate"),
    ("ATE (IPTW)", "ipw", "ate"),
)


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
    """Per (corpus, task, level, model): each Appendix G quantity averaged over seeds."""
    keys = ["corpus", "task", "level", "model"]
    ok = data[data["usable"]]
    parts = []
    for label, est, col in AGREEMENT_QUANTITIES:
        if est is None:  # one value per cell (the same on each estimator row): average cells, then seeds
            per_cell = ok.groupby(keys + ["seed"], as_index=False)[col].mean()
        else:
            per_cell = ok[ok["estimator"] == est][keys + ["seed", col]]
        means = per_cell.groupby(keys, as_index=False)[col].mean().rename(columns={col: "value"})
        parts.append(means.assign(quantity=label))
    return pd.concat(parts, ignore_index=True)


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if x.size < 2 or np.std(x) == 0 or np.std(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def _agree(g: pd.DataFrame) -> dict[str, float]:
    a, b = g["value_a"].to_numpy(), g["value_b"].to_numpy()
    nonzero = a != 0
    return {
        "n": int(a.size),
        "mean_abs_diff": float(np.mean(np.abs(b - a))),
        "mean_ratio": float(np.mean(b[nonzero] / a[nonzero])) if nonzero.any() else float("nan"),
        "pearson_r": _pearson(a, b),
    }


def cross_corpus_agreement(df: Any, corpus_a: str | None = None, corpus_b: str | None = None) -> pd.DataFrame:
    """Agreement between two corpora's results (Appendix G, Table 2 and Fig. 10).

    Each quantity (treatment accuracy, stratified ATE, IPTW ATE) is first averaged over seeds per
    (task, level, model); the two corpora's values are then paired on (task, level, model). Twin
    levels (one task spec, so one draw per seed: Linguistic Complexity 2 = Strength of Selection 1 =
    Sample Size 1 = Order of Text 1) count once, under their first name
    (:func:`textcause.analysis.findings.distinct_levels`), so a repeated draw does not weigh four times.

    Args:
        df: the results.
        corpus_a, corpus_b: the corpora (default: the two corpora of the table, alphabetically).

    Returns:
        Rows ``scope`` (``all`` / ``task`` / ``model``), ``group``, ``quantity``, ``n`` (paired
        points), ``mean_abs_diff`` (``|b - a|``), ``mean_ratio`` (``b / a``, over ``a != 0``) and
        ``pearson_r`` (NaN with fewer than two points or a constant side).
    """
    data = load_results(df)
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
    means = _cell_means(distinct_levels(data))
    keys = ["task", "level", "model", "quantity"]
    paired = (
        means[means["corpus"] == corpus_a][keys + ["value"]]
        .merge(means[means["corpus"] == corpus_b][keys + ["value"]], on=keys, suffixes=("_a", "_b"))
        .dropna(subset=["value_a", "value_b"])
    )
    if paired.empty:
        raise ValueError(f"Corpora {corpus_a!r} and {corpus_b!r} share no (task, level, model) with results.")
    labels = [q[0] for q in AGREEMENT_QUANTITIES]
    rows = []
    for scope, col, groups in (
        ("all", None, ["all"]),
        ("task", "task", task_order(paired["task"])),
        ("model", "model", model_order(paired["model"])),
    ):
        for group in groups:
            sub = paired if col is None else paired[paired[col] == group]
            for label in labels:
                g = sub[sub["quantity"] == label]
                if len(g):
                    rows.append({"scope": scope, "group": group, "quantity": label, **_agree(g)})
    out = pd.DataFrame(rows)
    out.attrs.update(corpus_a=corpus_a, corpus_b=corpus_b)
    return out

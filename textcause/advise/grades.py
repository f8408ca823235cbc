"""Grade every candidate model x estimator on the calibration cells, rank them, choose one.

Pure functions of the results frame (:func:`textcause.analysis.frame.load_results`): one row per
(cell, estimator) with ``model``, ``estimator``, ``task``, ``seed``, ``ate``, ``bias``,
``ci_low``, ``ci_high``, ``covers_truth``.

A pair's grades: **bias**, the mean absolute bias over every calibration cell (the placebo's bias
is its ATE, its truth being 0), with its standard error across cells; **coverage**, the share of
cells whose 95% interval holds the true ATE; **placebo false discoveries**, the share of placebo
cells whose interval excludes 0. The rank is by bias; a pair is *usable* when its coverage is at
least :data:`MIN_COVERAGE` and at most :data:`MAX_PLACEBO_FD` of its placebo cells are false
discoveries. The recommendation is the best-ranked usable pair (else the best-ranked, flagged).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MAX_PLACEBO_FD", "MIN_COVERAGE", "candidate_pairs", "grade", "recommend", "seed_support"]

MIN_COVERAGE = 0.5
MAX_PLACEBO_FD = 1 / 3
PLACEBO = "placebo"


def candidate_pairs(results: pd.DataFrame) -> pd.DataFrame:
    """The rows of distinct method pairs: the ``unadjusted`` estimator, which every cell reports and
    which ignores the propensity, is kept once (as the ``unadjusted`` model's), else dropped; an
    ``unadjusted`` model's other estimators repeat it and are dropped too."""
    unadj_est = results["estimator"] == "unadjusted"
    unadj_model = results["model"] == "unadjusted"
    if not unadj_model.any():  # no unadjusted candidate: keep the naive estimate once, as its own pair
        first = results.loc[unadj_est, "model"].min() if unadj_est.any() else None
        keep = ~unadj_est | (results["model"] == first)
        out = results[keep].copy()
        out.loc[out["estimator"] == "unadjusted", "model"] = "unadjusted"
        return out
    return results[unadj_est == unadj_model]


def grade(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, estimator): n_cells, bias, bias_se, coverage, placebo_fd, usable, rank.

    Rows without an ATE (failed cells) count as cells that were not graded (``n_failed``).

    >>> df = pd.DataFrame({"model": ["a", "a", "b", "b"], "estimator": "ipw", "task": ["x", "placebo"] * 2,
    ...     "seed": 0, "ate": [0.4, 0.0, 0.0, 0.3], "bias": [0.0, 0.0, -0.4, 0.3], "ci_low": [0.3, -0.1, -0.1, 0.2],
    ...     "ci_high": [0.5, 0.1, 0.1, 0.4], "covers_truth": [True, True, False, False]})
    >>> grade(df)[["model", "rank", "usable"]].values.tolist()
    [['a', 1, True], ['b', 2, False]]
    """
    need = {"model", "estimator", "task", "ate", "bias", "ci_low", "ci_high", "covers_truth"}
    missing = sorted(need - set(results.columns))
    if missing:
        raise ValueError(f"The calibration results lack the column(s) {missing}: run the calibration grid first.")
    out = []
    for (model, est), g in results.groupby(["model", "estimator"], sort=True):
        ok = g[g["ate"].notna() & g["bias"].notna()]
        absb = ok["bias"].abs().to_numpy(dtype=float)
        placebo = ok[ok["task"] == PLACEBO]
        fd = ((placebo["ci_low"] > 0) | (placebo["ci_high"] < 0)).to_numpy(dtype=float)
        covers = ok["covers_truth"].dropna().astype(float).to_numpy()
        out.append(
            {
                "model": model,
                "estimator": est,
                "n_cells": len(ok),
                "n_failed": len(g) - len(ok),
                "bias": float(absb.mean()) if absb.size else math.nan,
                "bias_se": float(absb.std(ddof=1) / math.sqrt(absb.size)) if absb.size > 1 else math.nan,
                "coverage": float(covers.mean()) if covers.size else math.nan,
                "placebo_fd": float(fd.mean()) if fd.size else math.nan,
                "n_placebo": int(fd.size),
            }
        )
    table = pd.DataFrame(out)
    if table.empty:
        raise ValueError("No calibration cell gave an ATE: every candidate failed (see the grid's error column).")
    table["usable"] = (table["coverage"] >= MIN_COVERAGE) & ~(table["placebo_fd"] > MAX_PLACEBO_FD)
    table = table.sort_values(["bias", "coverage"], ascending=[True, False], na_position="last", kind="stable")
    table["rank"] = np.arange(1, len(table) + 1)
    return table.reset_index(drop=True)


def seed_support(results: pd.DataFrame, graded: pd.DataFrame) -> dict[str, Any]:
    """How many seeds and cells the verdict rests on, and whether the top pair's lead exceeds its noise.

    The lead of the best usable pair over the next pair is the mean of their paired differences in
    absolute bias (same task, level and seed); it is *resolved* when it exceeds twice its standard error.
    """
    seeds = int(results["seed"].nunique()) if "seed" in results else 0
    levels = int(results[["task", "level"]].drop_duplicates().shape[0]) if "level" in results else 0
    info: dict[str, Any] = {"seeds": seeds, "levels": levels, "cells_per_pair": seeds * levels}
    pool = graded[graded["usable"]] if graded["usable"].any() else graded
    if len(graded) < 2:
        return info
    first = pool.iloc[0]
    second = graded[(graded["model"] != first["model"]) | (graded["estimator"] != first["estimator"])].iloc[0]
    keys = ["task", "level", "seed"]

    def cells(row: Any) -> pd.Series:
        g = results[(results["model"] == row["model"]) & (results["estimator"] == row["estimator"])]
        return g.set_index(keys)["bias"].abs()

    diff = (cells(second) - cells(first)).dropna().to_numpy(dtype=float)
    if diff.size > 1:
        se = float(diff.std(ddof=1) / math.sqrt(diff.size))
        info.update(lead=float(diff.mean()), lead_se=se, resolved=bool(diff.mean() > 2 * se), next=dict(second))
    return info


def recommend(graded: pd.DataFrame) -> dict[str, Any]:
    """The best-ranked usable pair, or the best-ranked pair flagged ``usable: False`` when none is."""
    pool = graded[graded["usable"]]
    row = (pool if not pool.empty else graded).iloc[0]
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}

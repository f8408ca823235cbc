"""Stage 2: every candidate on the real treatment and outcome, ranked by its calibration grades.

The candidates are fitted by :func:`textcause.experiments.observational.run_study` (the ``textcause observe``
path: one record per model, a killed run resumes) on the study config that
:func:`textcause.advise.inputs.prepare` wrote. Each (model, estimator) estimate is joined to its
grades, ranked as the calibration ranked it, and :func:`disagreement` says in words where the
usable pairs disagree on the real question (signs, intervals that exclude 0 and those that do not,
intervals that do not overlap).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from textcause.advise._runs import load_records, run_study
from textcause.advise.inputs import Prepared

__all__ = ["disagreement", "ranked_estimates", "run_estimates"]


def run_estimates(prepared: Prepared, out: Path, echo: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Fit (or resume) every candidate on the real T and Y; one row per (model, estimator)."""
    from textcause.analysis.study import result_rows

    ran = run_study(prepared.study, out, echo=echo)
    return result_rows(load_records(ran["spec"], out), study=ran["spec"].name, corpus=ran["spec"].corpus)


def ranked_estimates(rows: list[dict[str, Any]], graded: pd.DataFrame) -> pd.DataFrame:
    """The real estimates joined to their calibration grades, in calibration rank order.

    A pair graded but not estimated (a method: the estimate stage fits model configs) keeps its
    grades with an empty estimate; an estimate whose pair was not graded comes last.
    """
    est = pd.DataFrame(
        [r for r in rows if r.get("estimator") and (r["estimator"] == "unadjusted") == (r["model"] == "unadjusted")]
    )
    keep = ["model", "estimator", "ate", "ci_low", "ci_high", "treatment_accuracy"]
    est = est[[c for c in keep if c in est]] if not est.empty else pd.DataFrame(columns=keep)
    table = graded.merge(est, on=["model", "estimator"], how="outer")
    table["rank"] = table["rank"].fillna(len(graded) + 1).astype(int)
    return table.sort_values(["rank", "model", "estimator"], kind="stable").reset_index(drop=True)


def _excludes_zero(row: Any) -> bool:
    return bool(row["ci_low"] > 0 or row["ci_high"] < 0)


def disagreement(table: pd.DataFrame) -> list[str]:
    """Sentences on where the usable, estimated pairs disagree on the real question (empty: they agree)."""
    pool = table[table["usable"].fillna(False).astype(bool) & table["ate"].notna()]
    if len(pool) < 2:
        return []
    name = lambda r: f"{r['model']} / {r['estimator']}"  # noqa: E731
    out = []
    pos, neg = pool[pool["ate"] > 0], pool[pool["ate"] < 0]
    if len(pos) and len(neg):
        out.append(
            f"The usable methods disagree on the sign: {len(pos)} estimate a positive effect "
            f"(e.g. {name(pos.iloc[0])}), {len(neg)} a negative one (e.g. {name(neg.iloc[0])})."
        )
    sig = [_excludes_zero(r) for _, r in pool.iterrows()]
    if any(sig) and not all(sig):
        out.append(
            f"{sum(sig)} of {len(sig)} usable methods find an effect (interval excludes 0) and the others do not."
        )
    lo, hi = pool["ci_high"].min(), pool["ci_low"].max()
    if math.isfinite(lo) and math.isfinite(hi) and hi > lo:
        a = pool.loc[pool["ci_high"].idxmin()]
        b = pool.loc[pool["ci_low"].idxmax()]
        out.append(
            f"Their intervals do not all overlap: {name(a)} lies below [{a['ci_low']:+.3f}, {a['ci_high']:+.3f}] "
            f"and {name(b)} above [{b['ci_low']:+.3f}, {b['ci_high']:+.3f}]."
        )
    return out

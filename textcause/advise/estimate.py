"""Stage 2: every candidate on the real treatment and outcome, ranked by its calibration grades.

The candidates are fitted by :func:`textcause.experiments.observational.run_study` (the ``textcause observe``
path: one record per model, a killed run resumes) on the study config that
:func:`textcause.advise.inputs.prepare` wrote. Each (model, estimator) estimate is joined to its
grades, ranked as the calibration ranked it, with the refitting interval where the model refits
(:func:`ranked_estimates` says which interval each estimate carries), and :func:`disagreement` says in words where the
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

__all__ = ["REFIT_COLUMNS", "disagreement", "ranked_estimates", "run_estimates"]


#: The columns of a record's rows that the estimate table keeps beside the study's result rows.
REFIT_COLUMNS = ("refit_ci_low", "refit_ci_high", "refit_ci_method", "refit_reps", "tuned")


def run_estimates(
    prepared: Prepared, out: Path, echo: Callable[[str], None] | None = None, workers: int = 1
) -> list[dict[str, Any]]:
    """Fit (or resume) every candidate on the real T and Y, on ``workers`` processes; one row per
    (model, estimator).

    The rows are :func:`textcause.analysis.study.result_rows` with :data:`REFIT_COLUMNS` of the
    models' records (the refitting interval where the model refits, what a tuned model chose).
    """
    from textcause.analysis.study import result_rows

    ran = run_study(prepared.study, out, echo=echo, workers=workers)
    records = load_records(ran["spec"], out)
    extra = {
        (rec["model"], r["estimator"]): {k: r[k] for k in REFIT_COLUMNS if r.get(k) is not None}
        for rec in records
        for r in rec.get("rows") or []
    }
    rows = result_rows(records, study=ran["spec"].name, corpus=ran["spec"].corpus)
    return [{**r, **extra.get((r["model"], r.get("estimator")), {})} for r in rows]


def ranked_estimates(rows: list[dict[str, Any]], graded: pd.DataFrame) -> pd.DataFrame:
    """The real estimates joined to their calibration grades, in calibration rank order.

    A pair graded but not estimated (a method: the estimate stage fits model configs) keeps its
    grades with an empty estimate; an estimate whose pair was not graded comes last.

    Each estimate carries one interval, ``ci_low`` / ``ci_high``, named by ``interval``: the
    ``refitting`` interval (training users resampled and the model refit, :mod:`textcause.run.refitting`)
    where the model refits (the L-BFGS and tuned logistic regressions), else the ``test-sample``
    bootstrap (the fitted propensities held fixed), which is also kept as ``sample_ci_low`` /
    ``sample_ci_high``. The disagreement, the verdict and the figure read ``ci_low`` / ``ci_high``.
    """
    est = pd.DataFrame(
        [r for r in rows if r.get("estimator") and (r["estimator"] == "unadjusted") == (r["model"] == "unadjusted")]
    )
    keep = ["model", "estimator", "ate", "ci_low", "ci_high", "treatment_accuracy", *REFIT_COLUMNS]
    est = est[[c for c in keep if c in est]] if not est.empty else pd.DataFrame(columns=keep)
    est = _carried_interval(est)
    table = graded.merge(est, on=["model", "estimator"], how="outer")
    table["rank"] = table["rank"].fillna(len(graded) + 1).astype(int)
    return table.sort_values(["rank", "model", "estimator"], kind="stable").reset_index(drop=True)


def _carried_interval(est: pd.DataFrame) -> pd.DataFrame:
    """``est`` with ``ci_low`` / ``ci_high`` the interval each estimate carries and ``interval`` its kind."""
    est = est.copy()
    for col in ("refit_ci_low", "refit_ci_high"):
        est[col] = pd.to_numeric(est[col], errors="coerce") if col in est else float("nan")
    est["sample_ci_low"], est["sample_ci_high"] = est["ci_low"], est["ci_high"]
    refit = est["refit_ci_low"].notna() & est["refit_ci_high"].notna()
    est.loc[refit, "ci_low"] = est.loc[refit, "refit_ci_low"]
    est.loc[refit, "ci_high"] = est.loc[refit, "refit_ci_high"]
    est["interval"] = refit.map({True: "refitting", False: "test-sample"}).where(est["ate"].notna())
    return est


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

"""Inference about methods across seeds: summaries, the corrected resampled t-test, Holm, ``compare``.

A cell's percentile bootstrap over test units says how much that one estimate would move with other
test users from the same draw; it says nothing about how the method would fare on another draw of
the task or with another training set. Claims about methods therefore rest on the seeds (each seed
redraws class assignment, treatments, outcomes and the split): summaries over seeds, and paired
comparisons of two methods over the same seeds with the corrected resampled t-test of Nadeau and
Bengio (2003), whose variance term ``1/J + n_test/n_train`` accounts for the overlap of training sets
across seeds that makes the naive paired t-test too liberal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from textcause.analysis.frame import METHOD, PAPER_TRAIN_PER_TEST, load_results, task_order
from textcause.validation import check_options, check_real

__all__ = [
    "METRICS",
    "TTest",
    "binomial_ci",
    "compare",
    "corrected_interval",
    "corrected_resampled_ttest",
    "format_comparison",
    "holm",
    "parse_method",
    "seed_summary",
]

#: Metrics a comparison can use, and whether higher is better (None: two-sided, no "better").
METRICS = {
    "abs_bias": False,
    "sq_bias": False,
    "bias": None,
    "treatment_accuracy": True,
    "spearman": True,
    "iptw_weight_mse": False,
    "ece": False,
    "brier": False,
}


#: The columns of :func:`seed_summary`.
_SUMMARY_COLUMNS = METHOD + [
    "n_seeds",
    "n_failed",
    "true_ate",
    "mean_ate",
    "mean_bias",
    "sd_bias",
    "mean_abs_bias",
    "rmse",
    "n_ci",
    "coverage",
    "false_discovery_rate",
    "mean_treatment_accuracy",
    "sd_treatment_accuracy",
    "mean_iptw_weight_mse",
    "sd_iptw_weight_mse",
    "mean_spearman",
    "sd_spearman",
    "mean_ci_low",
    "mean_ci_high",
    "test_train_ratio",
    "mean_n_used",
    "max_n_dropped",
    "n_influence_ci",
    "influence_coverage",
    "coverage_ci_low",
    "coverage_ci_high",
    "false_discovery_ci_low",
    "false_discovery_ci_high",
    "n_refit_ci",
    "refit_coverage",
    "refit_coverage_ci_low",
    "refit_coverage_ci_high",
    "refit_false_discovery_rate",
    "refit_false_discovery_ci_low",
    "refit_false_discovery_ci_high",
    "mean_ci_width",
    "mean_refit_ci_width",
    "paired_coverage",
    "paired_coverage_ci_low",
    "paired_coverage_ci_high",
    "paired_false_discovery_rate",
    "paired_false_discovery_ci_low",
    "paired_false_discovery_ci_high",
    "paired_ci_width",
]
#: The level of the binomial intervals of the summary's rates (coverage, false discoveries).
_RATE_LEVEL = 0.95


def binomial_ci(k: float, n: float, level: float = _RATE_LEVEL) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a rate of ``k`` successes in ``n`` trials (scipy.stats).

    A rate over 5 seeds moves in steps of 0.2, and 1 false discovery in 5 is compatible with a true
    rate anywhere from 0.005 to 0.72: the interval says so. ``(nan, nan)`` when ``n`` is 0.

    Raises:
        ValueError: ``k`` or ``n`` not whole numbers with ``0 <= k <= n``.
    """
    if not n or not np.isfinite(n):
        return float("nan"), float("nan")
    level = check_real(level, "level", "binomial_ci", low=0.0, high=1.0, low_open=True, high_open=True)
    kk, nn = int(round(k)), int(round(n))
    if abs(kk - k) > 1e-6 or abs(nn - n) > 1e-6 or not 0 <= kk <= nn:
        raise ValueError(f"binomial_ci needs whole numbers 0 <= k <= n. Got k={k!r}, n={n!r} instead.")
    ci = stats.binomtest(kk, nn).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class TTest:
    """A paired test over ``n`` seeds; never NaN: a test that cannot be done says so in ``note``.

    Attributes:
        n: paired seeds.
        mean: mean difference.
        sd: standard deviation of the differences (ddof=1; 0.0 with one seed).
        t, df, p: corrected resampled t statistic, degrees of freedom, two-sided p-value.
        t_naive, p_naive: the uncorrected paired t-test (for contrast: too liberal).
        testable: False when there are too few seeds or no variation to test.
        note: why a test is degenerate ("" when it is not).
    """

    n: int
    mean: float
    sd: float
    t: float
    df: int
    p: float
    t_naive: float
    p_naive: float
    testable: bool
    note: str = ""


def corrected_resampled_ttest(differences: Sequence[float], *, test_train_ratio: float) -> TTest:
    """Nadeau-Bengio corrected resampled t-test of paired per-seed differences.

    ``t = mean(d) / sqrt((1/J + n_test/n_train) * var(d, ddof=1))`` with ``J - 1`` degrees of freedom.

    Args:
        differences: one difference per seed (method A minus method B on the same seed).
        test_train_ratio: ``n_test / n_train`` of one seed's split.

    Returns:
        A :class:`TTest`. With fewer than 2 seeds the result has ``p = 1`` and a "not enough seeds"
        note; with zero variance, ``p = 1`` if every difference is 0, else ``t = +-inf`` and ``p = 0``.
    """
    d = np.asarray(differences, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(d)):
        raise ValueError("The 'differences' contain NaN or infinite values.")
    ratio = check_real(test_train_ratio, "test_train_ratio", "corrected_resampled_ttest", low=0.0)
    n = int(d.size)
    mean = float(d.mean()) if n else 0.0
    if n < 2:
        return TTest(
            n,
            mean,
            0.0,
            0.0,
            max(n - 1, 0),
            1.0,
            0.0,
            1.0,
            False,
            f"not enough seeds ({n} paired; a test needs at least 2)",
        )
    sd = float(d.std(ddof=1))
    df = n - 1
    if sd == 0.0 or sd <= 1e-15 * max(1.0, abs(mean)):
        if mean == 0.0:
            return TTest(n, mean, 0.0, 0.0, df, 1.0, 0.0, 1.0, False, "no difference on any seed")
        t = math.copysign(math.inf, mean)
        return TTest(n, mean, 0.0, t, df, 0.0, t, 0.0, False, "zero variance: every seed gives the same difference")
    t = mean / math.sqrt((1.0 / n + ratio) * sd**2)
    t_naive = mean / math.sqrt(sd**2 / n)
    p = float(2.0 * stats.t.sf(abs(t), df))
    p_naive = float(2.0 * stats.t.sf(abs(t_naive), df))
    return TTest(n, mean, sd, float(t), df, p, float(t_naive), p_naive, True)


def corrected_interval(
    mean: float, sd: float, n: int, test_train_ratio: float, level: float = 0.95
) -> tuple[float, float]:
    """The interval for a mean over ``n`` seeds with the corrected variance ``(1/n + ratio) sd^2``.

    Returns ``(mean, mean)`` with fewer than 2 seeds or a NaN ``sd``.
    """
    if n < 2 or not np.isfinite(sd):
        return (float(mean), float(mean))
    half = stats.t.ppf(0.5 + level / 2.0, n - 1) * math.sqrt((1.0 / n + test_train_ratio) * sd**2)
    return (float(mean - half), float(mean + half))


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjustment of a family of p-values (same order as given)."""
    p = np.asarray(pvalues, dtype=np.float64).reshape(-1)
    if p.size == 0:
        return p.copy()
    if np.any(~np.isfinite(p) | (p < 0) | (p > 1)):
        raise ValueError("The 'pvalues' must all lie in [0, 1].")
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(stepped)
    return adjusted


def seed_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per (corpus, task, level, model, estimator): bias over seeds, coverage, placebo false discoveries.

    Columns: ``n_seeds`` (usable rows), ``n_failed``, ``true_ate``, ``mean_ate``, ``mean_bias``, ``sd_bias``,
    ``mean_abs_bias``, ``rmse``, ``coverage`` (share of seeds whose interval contains the true ATE),
    ``false_discovery_rate`` (when the true ATE is 0, as in the placebo task: the share of seeds whose
    interval excludes 0; every such discovery is false), the means and sds of ``treatment_accuracy``,
    ``iptw_weight_mse`` and ``spearman``, the per-cell interval ends averaged over seeds
    (``mean_ci_low``, ``mean_ci_high``), ``test_train_ratio``, the mean units an estimate used
    (``mean_n_used``) and the most it dropped in any seed (``max_n_dropped``: empty strata, matches
    outside the caliper). ``coverage`` is of the per-cell bootstrap interval (``ci_low``, ``ci_high``);
    ``influence_coverage`` of the influence-function interval that only AIPW and TMLE have
    (``influence_ci_low``, ``influence_ci_high``; NaN for the others), over ``n_influence_ci`` seeds.
    ``coverage_ci_low`` / ``_high`` and ``false_discovery_ci_low`` / ``_high`` are the exact binomial
    (Clopper-Pearson) 95% intervals of those two rates over the seeds (:func:`binomial_ci`): a rate
    over a handful of seeds is a coarse estimate of the method's rate, and they say how coarse.
    The ``refit_*`` columns are the same rates of the refitting interval (``refit_ci_low``,
    ``refit_ci_high``: the propensity model refit on resampled training users,
    :mod:`textcause.estimators.refit`) over the ``n_refit_ci`` seeds that have one (NaN for the
    others); ``mean_ci_width`` and ``mean_refit_ci_width`` are the two intervals' mean widths, and the
    ``paired_*`` columns are the test-sample interval's coverage, false discoveries and width over
    those same seeds only (the comparison of the two intervals on one set of seeds).
    """
    data = load_results(df)
    data["has_ci"] = np.isfinite(data["ci_low"]) & np.isfinite(data["ci_high"])
    inside = (data["ci_low"] <= data["true_ate"]) & (data["true_ate"] <= data["ci_high"])
    data["covers"] = np.where(data["has_ci"], inside, np.nan)
    data["has_if"] = np.isfinite(data["influence_ci_low"]) & np.isfinite(data["influence_ci_high"])
    inside_if = (data["influence_ci_low"] <= data["true_ate"]) & (data["true_ate"] <= data["influence_ci_high"])
    data["covers_if"] = np.where(data["has_if"] & np.isfinite(data["true_ate"]), inside_if, np.nan)
    data["excludes_zero"] = np.where(data["has_ci"], (data["ci_low"] > 0) | (data["ci_high"] < 0), np.nan)
    data["has_refit"] = np.isfinite(data["refit_ci_low"]) & np.isfinite(data["refit_ci_high"])
    inside_refit = (data["refit_ci_low"] <= data["true_ate"]) & (data["true_ate"] <= data["refit_ci_high"])
    data["covers_refit"] = np.where(data["has_refit"] & np.isfinite(data["true_ate"]), inside_refit, np.nan)
    data["refit_excludes_zero"] = np.where(
        data["has_refit"], (data["refit_ci_low"] > 0) | (data["refit_ci_high"] < 0), np.nan
    )
    data["ratio"] = data["n_test"] / data["n_train"]
    data = data[data["estimator"] != ""]  # whole-cell failures: listed by the report, no method to summarise
    rows = []
    for key, group in data.groupby(METHOD, sort=False):
        ok = group[group["usable"]]
        row = dict(zip(METHOD, key))
        row["n_seeds"] = int(ok["seed"].nunique())
        row["n_failed"] = int((~group["usable"]).sum())
        row["true_ate"] = ok["true_ate"].mean()
        row["mean_ate"] = ok["ate"].mean()
        row["mean_bias"] = ok["bias"].mean()
        row["sd_bias"] = ok["bias"].std(ddof=1)
        row["mean_abs_bias"] = ok["abs_bias"].mean()
        row["rmse"] = math.sqrt(ok["sq_bias"].mean()) if len(ok) else np.nan
        row["n_ci"] = int(ok["has_ci"].sum())
        row["coverage"] = ok["covers"].mean()
        null = len(ok) > 0 and bool((ok["true_ate"] == 0).all())
        row["false_discovery_rate"] = ok["excludes_zero"].mean() if null else np.nan
        for metric in ("treatment_accuracy", "iptw_weight_mse", "spearman"):
            row[f"mean_{metric}"] = ok[metric].mean()
            row[f"sd_{metric}"] = ok[metric].std(ddof=1)
        row["mean_ci_low"] = ok["ci_low"].mean()
        row["mean_ci_high"] = ok["ci_high"].mean()
        ratio = ok["ratio"].mean()
        row["test_train_ratio"] = ratio if np.isfinite(ratio) else 1.0 / PAPER_TRAIN_PER_TEST
        row["mean_n_used"] = ok["n_used"].mean()
        row["max_n_dropped"] = ok["n_dropped"].max()
        row["n_influence_ci"] = int(ok["has_if"].sum())
        row["influence_coverage"] = ok["covers_if"].mean()
        covered = ok["covers"].dropna()
        row["coverage_ci_low"], row["coverage_ci_high"] = binomial_ci(covered.sum(), len(covered))
        excluded = ok["excludes_zero"].dropna() if null else ok["excludes_zero"].iloc[:0]
        row["false_discovery_ci_low"], row["false_discovery_ci_high"] = binomial_ci(excluded.sum(), len(excluded))
        refit = ok[ok["has_refit"]]
        row["n_refit_ci"] = int(refit["seed"].nunique())
        same = refit[refit["has_ci"]]
        pair_hits = same["covers"].dropna()
        row["paired_coverage"] = pair_hits.mean() if len(pair_hits) else np.nan
        row["paired_coverage_ci_low"], row["paired_coverage_ci_high"] = binomial_ci(pair_hits.sum(), len(pair_hits))
        pair_found = same["excludes_zero"].dropna() if null else same["excludes_zero"].iloc[:0]
        row["paired_false_discovery_rate"] = pair_found.mean() if len(pair_found) else np.nan
        row["paired_false_discovery_ci_low"], row["paired_false_discovery_ci_high"] = binomial_ci(
            pair_found.sum(), len(pair_found)
        )
        row["paired_ci_width"] = (same["ci_high"] - same["ci_low"]).mean() if len(same) else np.nan
        hits = refit["covers_refit"].dropna()
        row["refit_coverage"] = hits.mean() if len(hits) else np.nan
        row["refit_coverage_ci_low"], row["refit_coverage_ci_high"] = binomial_ci(hits.sum(), len(hits))
        found = refit["refit_excludes_zero"].dropna() if null else refit["refit_excludes_zero"].iloc[:0]
        row["refit_false_discovery_rate"] = found.mean() if len(found) else np.nan
        row["refit_false_discovery_ci_low"], row["refit_false_discovery_ci_high"] = binomial_ci(found.sum(), len(found))
        row["mean_ci_width"] = (ok["ci_high"] - ok["ci_low"]).mean()
        row["mean_refit_ci_width"] = (refit["refit_ci_high"] - refit["refit_ci_low"]).mean() if len(refit) else np.nan
        rows.append(row)
    return _paper_sorted(
        pd.DataFrame(rows, columns=_SUMMARY_COLUMNS), ["corpus", "task", "level", "model", "estimator"]
    )


def _paper_sorted(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """``frame`` sorted by ``by``, tasks in the paper's order."""
    order = {t: i for i, t in enumerate(task_order(frame["task"]))}
    return frame.sort_values(by, key=lambda s: s.map(order) if s.name == "task" else s).reset_index(drop=True)


def parse_method(spec: str, default_estimator: str) -> tuple[str, str]:
    """``"model:estimator"`` or ``"model"`` (with ``default_estimator``) -> ``(model, estimator)``."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"A method must be 'model' or 'model:estimator'. Got {spec!r} instead.")
    model, _, estimator = spec.strip().partition(":")
    return model, (estimator or default_estimator)


def compare(
    df: Any,
    method_a: str,
    method_b: str,
    *,
    metric: str = "abs_bias",
    estimator: str = "stratified",
    corpus: str | None = None,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Compare two methods task level by task level over the seeds both ran.

    Args:
        df: the results (DataFrame, SQLite path or database URL).
        method_a: ``"model:estimator"``, or a model name (then ``estimator`` is used).
        method_b: the other method, written the same way.
        metric: one of :data:`METRICS`; the difference is A minus B on each paired seed.
        estimator: the estimator for methods given without one.
        corpus: only this corpus (default: every corpus; each corpus's task levels are rows).
        alpha: the level for "better" (on the Holm-adjusted p-value).

    Returns:
        One row per (corpus, task, level): ``n_seeds``, ``mean_a``, ``mean_b``, ``mean_diff``,
        ``sd_diff``, ``t``, ``df``, ``p``, ``p_holm`` (Holm across the testable rows), ``p_naive``
        (uncorrected paired t), ``better`` and ``note``.
    """
    check_options(metric, "metric", "compare", sorted(METRICS))
    check_real(alpha, "alpha", "compare", low=0.0, high=1.0, low_open=True, high_open=True)
    data = load_results(df)
    if corpus is not None:
        if corpus not in set(data["corpus"]):
            raise ValueError(f"No results for corpus {corpus!r}; the table has {sorted(set(data['corpus']))}.")
        data = data[data["corpus"] == corpus]
    a, b = parse_method(method_a, estimator), parse_method(method_b, estimator)
    if a == b:
        raise ValueError(f"Compare two different methods; both are '{a[0]}:{a[1]}'.")
    for model, est in (a, b):
        if model not in set(data["model"]):
            raise ValueError(f"Unknown model {model!r}; the results have {sorted(set(data['model']))}.")
        if est not in set(data.loc[data["model"] == model, "estimator"]):
            known = sorted(set(data.loc[data["model"] == model, "estimator"]))
            raise ValueError(f"Model {model!r} has no results for estimator {est!r}; it has {known}.")
    keys = ["corpus", "task", "level", "seed"]

    def side(model: str, est: str) -> pd.DataFrame:
        rows = data[(data["model"] == model) & (data["estimator"] == est) & data["usable"] & data[metric].notna()]
        rows = rows.assign(ratio=rows["n_test"] / rows["n_train"])
        return rows.groupby(keys, as_index=False)[[metric, "ratio"]].mean()

    paired = side(*a).merge(side(*b), on=keys, suffixes=("_a", "_b"))
    if paired.empty:
        raise ValueError(f"'{a[0]}:{a[1]}' and '{b[0]}:{b[1]}' share no successful seed on any task level.")
    higher = METRICS[metric]
    rows = []
    for (corp, task, level), g in paired.groupby(["corpus", "task", "level"], sort=False):
        ratio = g["ratio_a"].fillna(g["ratio_b"]).mean()
        ratio = ratio if np.isfinite(ratio) else 1.0 / PAPER_TRAIN_PER_TEST
        res = corrected_resampled_ttest((g[f"{metric}_a"] - g[f"{metric}_b"]).to_numpy(), test_train_ratio=float(ratio))
        rows.append(
            {
                "corpus": corp,
                "task": task,
                "level": int(level),
                "n_seeds": res.n,
                "mean_a": float(g[f"{metric}_a"].mean()),
                "mean_b": float(g[f"{metric}_b"].mean()),
                "mean_diff": res.mean,
                "sd_diff": res.sd,
                "test_train_ratio": float(ratio),
                "t": res.t,
                "df": res.df,
                "p": res.p,
                "p_naive": res.p_naive,
                "testable": res.testable,
                "note": res.note,
            }
        )
    out = _paper_sorted(pd.DataFrame(rows), ["corpus", "task", "level"])
    # Degenerate rows are not tests: they keep p = 1 and do not enlarge the Holm family, except
    # zero-variance rows with a non-zero difference (p = 0), which are kept in it.
    family = out["testable"] | (out["p"] == 0.0)
    out["p_holm"] = 1.0
    out.loc[family, "p_holm"] = holm(out.loc[family, "p"].to_numpy())
    out["better"] = [_verdict(r, higher, alpha) for r in out.itertuples()]
    out.attrs.update(method_a=f"{a[0]}:{a[1]}", method_b=f"{b[0]}:{b[1]}", metric=metric, alpha=alpha)
    cols = [
        "corpus",
        "task",
        "level",
        "n_seeds",
        "mean_a",
        "mean_b",
        "mean_diff",
        "sd_diff",
        "test_train_ratio",
        "t",
        "df",
        "p",
        "p_holm",
        "p_naive",
        "better",
        "note",
    ]
    return out[cols]


def _verdict(row: Any, higher: bool | None, alpha: float) -> str:
    if row.n_seeds < 2:
        return "not enough seeds"
    if row.p_holm >= alpha:
        return "no significant difference"
    if higher is None:
        return "differ"
    a_wins = (row.mean_diff > 0) == higher
    return "A" if a_wins else "B"


def format_comparison(table: pd.DataFrame) -> str:
    """A readable fixed-width text table of :func:`compare`'s output, with its legend."""
    meta = table.attrs
    higher = METRICS.get(meta.get("metric", ""))
    direction = {True: "higher is better", False: "lower is better", None: "two-sided"}[higher]
    lines = [
        f"A = {meta.get('method_a', '?')}   B = {meta.get('method_b', '?')}   "
        f"metric: {meta.get('metric', '?')} ({direction})",
        "diff = A - B on each seed both ran; t and p: corrected resampled t-test (Nadeau & Bengio 2003), "
        f"df = seeds - 1; p_holm: Holm over the {int((table['note'] == '').sum())} testable task levels; "
        "p_naive: uncorrected paired t-test (ignores overlapping training sets; too liberal).",
        "",
    ]
    header = (
        f"{'corpus':<10} {'task':<22} {'lvl':>3} {'seeds':>5} {'mean A':>8} {'mean B':>8} {'diff':>8} "
        f"{'t':>7} {'p':>7} {'p_holm':>7} {'p_naive':>7}  better"
    )
    lines += [header, "-" * len(header)]
    for r in table.itertuples():
        t = f"{r.t:+7.2f}" if np.isfinite(r.t) else f"{'+inf' if r.t > 0 else '-inf':>7}"
        line = (
            f"{r.corpus:<10} {r.task:<22} {r.level:>3} {r.n_seeds:>5} {r.mean_a:8.4f} {r.mean_b:8.4f} "
            f"{r.mean_diff:+8.4f} {t} {r.p:7.4f} {r.p_holm:7.4f} {r.p_naive:7.4f}  {r.better}"
        )
        lines.append(line + (f"  ({r.note})" if r.note else ""))
    return "\n".join(lines)

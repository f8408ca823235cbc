"""The paper's findings checked against our results: one verdict per (finding, corpus) by a stated rule.

Weld et al. ("Adjusting for confounders with text", sections 5-7, appendices G and H) draw the six
conclusions below. :func:`findings_table` judges each on every corpus of the results on its own
(``twitter``, ``blogs``, a grid's variants ``twitter_<variant>``): one row per (finding, corpus) with
``evidence`` (our numbers, to 3 decimals) and a ``verdict``, ``reproduced``, ``refuted``, ``mixed``
or ``no data`` (the finding's models or task levels have no usable rows in that corpus). No verdict
is written by hand: each is its rule applied to the seed summary
(:func:`textcause.analysis.inference.seed_summary`) and to paired comparisons over seeds
(:func:`textcause.analysis.inference.compare`).

Shared ground:

* Twin levels (one task spec, so one draw per seed: Linguistic Complexity 2 = Strength of Selection
  Effect 1 = Sample Size 1 = Order of Text 1) count once, under the first of their names in the
  task registry's order (:func:`distinct_levels`).
* Estimators: IPTW (``ipw``) and stratification (``stratified``), the two whose bias the paper plots.
* The paper's models (:data:`PAPER_MODELS`): logistic regression and the simple NN on 1-gram,
  1,2-gram, 1,2-gram count and LDA features, and SHERBERT (``sherbert``, else ``sherbert_pooled``).
  The oracle and the unadjusted estimate are references; models of ours (OrderCountNet, the joint
  models) are shown in the evidence where they matter but never decide a verdict on the paper's models.
* A method (model and estimator) is judged on a task level only with at least ``MIN_SEEDS`` = 2
  usable seeds there; a paired comparison needs 2 seeds both methods ran.
* Across-seed interval: the 95% interval of a seed mean with the corrected variance
  ``(1/J + n_test/n_train) sd^2`` (:func:`textcause.analysis.inference.corrected_interval`).
* Significantly smaller \\|bias\\|: the corrected resampled t-test of ``compare`` on \\|bias\\|, paired on
  the seeds both methods ran, Holm-adjusted over the task levels of one comparison, at ``ALPHA`` = 0.05.

Rules:

* (a) For each distinct level and estimator, the oracle's seed-mean bias. Reproduced: every one lies
  within ``BIAS_TOLERANCE`` = ±0.05; refuted: some across-seed interval lies wholly outside ±0.05;
  mixed: otherwise.
* (b) For each LDA model (LR LDA, Simple NN LDA) and estimator, \\|bias\\| against the same model's
  unadjusted estimate, level by level, Signal Intensity aside (the paper finds LDA slightly better
  there; those levels are shown, not judged). Reproduced: significantly smaller in none of these
  (model, estimator, level) comparisons; refuted: in more than half; mixed: otherwise.
* (c) On the Signal Intensity levels, each n-gram model (LR and simple NN, LDA aside) against
  SHERBERT with the same estimator, on \\|bias\\|. Reproduced: some n-gram model is significantly ahead
  and none behind; refuted: SHERBERT is significantly ahead of some and behind none; mixed: otherwise
  (both, or no significant difference).
* (d) On Order of Text 2, each of the paper's models and estimators against its unadjusted estimate,
  on \\|bias\\|. Reproduced: significantly smaller in none; refuted: in more than half; mixed: otherwise.
  OrderCountNet is built to read post order, that is to break this finding: its numbers are in the
  evidence, not in the count.
* (e) On the placebo level (true ATE 0) a false discovery is a seed whose per-cell 95% interval
  excludes 0; a method (the paper's model with IPTW or stratification) fails when the exact binomial
  (Clopper-Pearson) 95% interval of its rate over seeds lies wholly above the nominal
  ``NOMINAL_RATE`` = 0.05. Reproduced: more than half (``MOST``) of the methods fail; refuted: at most
  a quarter (``FEW``) do; mixed: otherwise.
* (f) For each distinct level, SHERBERT's IPTW seed-mean bias against the paper's range
  ``SHERBERT_IPTW_BAND`` = [+0.08, +0.14]. Reproduced: more than half of the means lie in the range
  and no across-seed interval lies wholly outside it; refuted: no mean lies in it and some interval
  lies wholly outside it; mixed: otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from textcause.analysis.frame import METHOD, load_results
from textcause.analysis.inference import binomial_ci, compare, corrected_interval, seed_summary
from textcause.analysis.names import model_labels, model_order
from textcause.estimators.registry import ESTIMATOR_LABELS
from textcause.simulation.tasks import list_tasks, spec_key, task_label

#: The paper's n-gram models (LDA aside), its LDA models and SHERBERT (the first present is used).
NGRAM_MODELS = (
    "lr_unigram_binary",
    "lr_bigram_binary",
    "lr_bigram_counts",
    "nn_unigram_binary",
    "nn_bigram_binary",
    "nn_bigram_counts",
)
LDA_MODELS = ("lr_lda", "nn_lda")
SHERBERT_MODELS = ("sherbert", "sherbert_pooled")
PAPER_MODELS = NGRAM_MODELS + LDA_MODELS + SHERBERT_MODELS
#: The references: they are not methods the findings judge.
REFERENCES = ("oracle", "unadjusted")
#: The estimators whose bias the paper plots (Fig. 4): stratification and IPTW.
ESTIMATORS = ("stratified", "ipw")
#: Our model built to read the order of posts (finding d).
ORDER_MODEL = "order_count"
BIAS_TOLERANCE = 0.05
ALPHA = 0.05
NOMINAL_RATE = 0.05
MOST = 0.5
FEW = 0.25
SHERBERT_IPTW_BAND = (0.08, 0.14)
#: The fewest usable seeds a method needs on a task level to be judged there.
MIN_SEEDS = 2
SEEDS = f" (with at least {MIN_SEEDS} seeds)"
VERDICTS = ("reproduced", "refuted", "mixed", "no data")
#: The columns of :func:`findings_table`.
COLUMNS = ["key", "finding", "corpus", "verdict", "evidence"]


def _rules(doc: str) -> dict[str, str]:
    """The bullets under "Rules:" of a docstring, by their letter, each as one line of Markdown."""
    text = doc.split("Rules:", 1)[1] if "Rules:" in doc else ""
    found = re.findall(r"^\* \(([a-z])\) (.*?)(?=^\* \(|\Z)", text, flags=re.M | re.S)
    return {key: " ".join(body.split()).replace("\\|", "|").replace("``", "`") for key, body in found}


#: Each finding's rule, as the module docstring states it (the report prints them under the table).
RULES = _rules(__doc__ or "")


def distinct_levels(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each draw once: a twin level's rows under the first name of its task spec in the registry.

    Twin levels share one task spec, so under a seed they are one draw (Linguistic Complexity 2 =
    Strength of Selection 1 = Sample Size 1 = Order of Text 1). Every row is mapped to the first of its
    twins in the task registry's order, whichever of them the results hold; a twin's row is dropped
    when the same corpus, model, seed and estimator already has a row under that first name, and is
    renamed to it otherwise (so two corpora, or two models, that ran different twins still pair);
    among several such twins the first in the registry's order is kept.
    """
    canonical: dict[Any, tuple[str, int]] = {}
    for task, level in list_tasks():
        canonical.setdefault(spec_key(task, level) or (task, level), (task, level))
    pairs = list(zip(df["task"], df["level"].astype(int)))
    target = [canonical.get(spec_key(t, lv) or (t, lv), (t, lv)) for t, lv in pairs]
    is_first = np.array([p == q for p, q in zip(pairs, target)], dtype=bool)
    out = df.copy()
    out["task"] = [t for t, _ in target]
    out["level"] = np.array([lv for _, lv in target], dtype=df["level"].dtype)
    keys = [c for c in ("corpus", "model", "seed", "estimator", "task", "level") if c in out]
    present = set(map(tuple, out.loc[is_first, keys].astype(str).to_numpy()))
    twin_keys = map(tuple, out.loc[~is_first, keys].astype(str).to_numpy())
    drop = np.zeros(len(out), dtype=bool)
    drop[np.flatnonzero(~is_first)] = [k in present for k in twin_keys]
    # Several twins of one draw without a row under the first name: the first of them in the registry.
    rank = {tl: i for i, tl in enumerate(list_tasks())}
    out["_rank"] = [rank.get(p, len(rank)) for p in pairs]
    out = out[~drop]
    twins = out[~is_first[~drop]].sort_values("_rank", kind="stable")
    extra = twins.index[twins.duplicated(keys)]
    return out.drop(index=extra).drop(columns="_rank")


def _seed_span(counts: Any) -> str:
    """``5`` or ``5-20``: how many seeds the rates rest on."""
    low, high = int(np.min(counts)), int(np.max(counts))
    return str(high) if low == high else f"{low}-{high}"


def _level(task: str, level: int) -> str:
    return f"{task_label(task)} {int(level)}"


def _span(values: Any, fmt: str = "+.3f") -> str:
    v = [float(x) for x in values if np.isfinite(x)]
    if not v:
        return "-"
    lo, hi = format(min(v), fmt), format(max(v), fmt)
    return lo if lo == hi else f"{lo} to {hi}"


def _interval(row: Any) -> tuple[float, float]:
    """The across-seed interval of a summary row's mean bias; NaN with fewer than 2 seeds."""
    if row.n_seeds < MIN_SEEDS or not np.isfinite(row.sd_bias):
        return float("nan"), float("nan")
    return corrected_interval(row.mean_bias, row.sd_bias, int(row.n_seeds), row.test_train_ratio)


def _models(summary: pd.DataFrame, names: Any) -> list[str]:
    have = set(summary.loc[summary["n_seeds"] > 0, "model"])
    return [m for m in names if m in have]


def _concat(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """The comparison tables that have rows, as one (empty, with ``model`` and ``better``, if none has)."""
    tables = [t[t["better"] != "not enough seeds"] for t in tables if "better" in t]
    tables = [t for t in tables if len(t)]
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=["model", "estimator", "better"])


def _est(name: str) -> str:
    return ESTIMATOR_LABELS.get(name, name)


def _paired(data: pd.DataFrame, a: tuple[str, str], b: tuple[str, str]) -> pd.DataFrame:
    """``compare`` of ``a`` against ``b`` on \\|bias\\| (empty when they share no seed)."""
    rows = data[data["usable"] & data["model"].isin({a[0], b[0]})]
    have = set(zip(rows["model"], rows["estimator"]))
    if a not in have or b not in have:
        return pd.DataFrame()
    try:
        return compare(rows, ":".join(a), ":".join(b), metric="abs_bias", alpha=ALPHA)
    except ValueError:  # no seed in common
        return pd.DataFrame()


def _oracle(data: pd.DataFrame, summary: pd.DataFrame) -> tuple[str, str]:
    rows = summary[(summary["model"] == "oracle") & summary["estimator"].isin(ESTIMATORS) & (summary["n_seeds"] > 0)]
    if rows.empty:
        return "no data", f"no oracle rows with IPTW or stratified estimates{SEEDS}"
    tol = BIAS_TOLERANCE
    within = clear = 0
    worst = None
    for r in rows.itertuples():
        lo, hi = _interval(r)
        within += abs(r.mean_bias) <= tol
        clear += bool(hi < -tol or lo > tol)
        if worst is None or abs(r.mean_bias) > abs(worst[0].mean_bias):
            worst = (r, lo, hi)
    n = len(rows)
    verdict = "refuted" if clear else ("reproduced" if within == n else "mixed")
    parts = [
        f"{_est(est)} {_span(rows.loc[rows['estimator'] == est, 'mean_bias'])}"
        for est in ESTIMATORS
        if (rows["estimator"] == est).any()
    ]
    r, lo, hi = worst
    where = f"{_est(r.estimator)} on {_level(r.task, r.level)}: {r.mean_bias:+.3f}"
    where += f" [{lo:+.3f}, {hi:+.3f}]" if np.isfinite(lo) else ""
    return verdict, (
        f"oracle seed-mean bias over {rows[['task', 'level']].drop_duplicates().shape[0]} distinct levels: "
        f"{'; '.join(parts)}; {within} of {n} (level, estimator) means within ±{tol:.3f}, {clear} clearly "
        f"outside; largest {where}"
    )


def _lda(data: pd.DataFrame, summary: pd.DataFrame) -> tuple[str, str]:
    models = _models(summary, LDA_MODELS)
    if not models:
        return "no data", f"no LDA model (lr_lda, nn_lda) in this corpus{SEEDS}"
    table = _concat(
        [_paired(data, (m, e), (m, "unadjusted")).assign(model=m, estimator=e) for m in models for e in ESTIMATORS]
    )
    if table.empty:
        return "no data", f"no {MIN_SEEDS} seeds with both an LDA estimate and the unadjusted one ({', '.join(models)})"
    si = table["task"] == "signal_intensity"
    judged, shown = table[~si], table[si]
    if judged.empty:
        return "no data", "only Signal Intensity levels, which the rule sets aside"
    k, n = int((judged["better"] == "A").sum()), len(judged)
    verdict = "reproduced" if k == 0 else ("refuted" if k > n / 2 else "mixed")
    text = (
        f"{', '.join(models)}: |bias| minus the unadjusted estimate's, seed means {_span(judged['mean_diff'])} "
        f"over {judged['level'].groupby(judged['task']).nunique().sum()} levels and IPTW / stratified; "
        f"significantly smaller in {k} of {n} comparisons"
    )
    if len(shown):
        ks = int((shown["better"] == "A").sum())
        text += (
            f"; on Signal Intensity (not judged) {_span(shown['mean_diff'])}, significantly smaller in {ks} of "
            f"{len(shown)}"
        )
    return verdict, text


def _signal(data: pd.DataFrame, summary: pd.DataFrame) -> tuple[str, str]:
    si = data[data["task"] == "signal_intensity"]
    sherbert = _models(summary[summary["task"] == "signal_intensity"], SHERBERT_MODELS)
    ngrams = _models(summary[summary["task"] == "signal_intensity"], NGRAM_MODELS)
    if not sherbert or not ngrams:
        return "no data", f"no Signal Intensity rows for SHERBERT and an n-gram model{SEEDS}"
    sh = sherbert[0]
    table = _concat([_paired(si, (m, e), (sh, e)).assign(model=m, estimator=e) for m in ngrams for e in ESTIMATORS])
    if table.empty:
        return "no data", f"no {MIN_SEEDS} seeds shared by {sh} and an n-gram model on Signal Intensity"
    ahead, behind = int((table["better"] == "A").sum()), int((table["better"] == "B").sum())
    verdict = "reproduced" if ahead and not behind else ("refuted" if behind and not ahead else "mixed")
    parts = []
    for level, g in table.groupby("level"):
        cells = [
            f"{_est(e)} {sh} {g.loc[g['estimator'] == e, 'mean_b'].iloc[0]:.3f} vs n-gram "
            f"{_span(g.loc[g['estimator'] == e, 'mean_a'], '.3f')}"
            for e in ESTIMATORS
            if (g["estimator"] == e).any()
        ]
        parts.append(f"level {int(level)}: {', '.join(cells)}")
    return verdict, (
        f"seed-mean |bias| on Signal Intensity, {'; '.join(parts)}; the n-gram models ({len(ngrams)}) significantly "
        f"ahead of {sh} in {ahead} of {len(table)} paired comparisons, behind in {behind}"
    )


def _order(data: pd.DataFrame, summary: pd.DataFrame) -> tuple[str, str]:
    level = data[(data["task"] == "order_of_text") & (data["level"] == 2)]
    here = summary[(summary["task"] == "order_of_text") & (summary["level"] == 2)]
    paper = _models(here, PAPER_MODELS)
    if not paper:
        return "no data", f"no Order of Text 2 rows for the paper's models{SEEDS}"
    ours = [m for m in _models(here, sorted(set(here["model"]))) if m not in PAPER_MODELS + REFERENCES]

    def better(models: list[str]) -> pd.DataFrame:
        pairs = [(m, e) for m in models for e in ESTIMATORS]
        return _concat([_paired(level, (m, e), (m, "unadjusted")).assign(model=m, estimator=e) for m, e in pairs])

    judged = better(paper)
    if judged.empty:
        return "no data", f"no {MIN_SEEDS} seeds with both a model's estimate and the unadjusted one on Order of Text 2"
    k, n = int((judged["better"] == "A").sum()), len(judged)
    verdict = "reproduced" if k == 0 else ("refuted" if k > n / 2 else "mixed")
    rows = here[here["model"].isin(paper) & here["estimator"].isin(ESTIMATORS)]
    unadj = here.loc[here["estimator"] == "unadjusted", "mean_bias"]
    text = (
        f"Order of Text 2: the paper's models' seed-mean bias {_span(rows['mean_bias'])} (IPTW and stratified) "
        f"against the unadjusted estimate's {_span(unadj)}, treatment accuracy {_span(rows['mean_treatment_accuracy'], '.3f')}; "
        f"significantly smaller |bias| in {k} of {n} (model, estimator) pairs"
    )
    mine = better(ours)
    for m in ours:
        g, s = mine[mine["model"] == m], here[(here["model"] == m) & here["estimator"].isin(ESTIMATORS)]
        bias = ", ".join(f"{_est(r.estimator)} {r.mean_bias:+.3f}" for r in s.itertuples())
        note = " (built to read post order, so designed to break this finding)" if m == ORDER_MODEL else ""
        text += (
            f"; not counted: {model_labels([m])[m]}{note} bias {bias}, significantly smaller |bias| in "
            f"{int((g['better'] == 'A').sum())} of {len(g)}"
        )
    if ORDER_MODEL not in ours:
        text += f"; {ORDER_MODEL} (ours, built to break this finding) has no rows here"
    return verdict, text


def _placebo(data: pd.DataFrame, summary: pd.DataFrame) -> tuple[str, str]:
    rows = summary[summary["false_discovery_rate"].notna() & summary["estimator"].isin(ESTIMATORS)]
    rows = rows.assign(k=rows["false_discovery_rate"] * rows["n_ci"])
    pooled = rows.groupby(["model", "estimator"])[["k", "n_ci"]].sum()  # over the levels with a true ATE of 0
    if not rows["model"].isin(PAPER_MODELS).any():
        return "no data", f"no placebo (true ATE 0) rows for the paper's models{SEEDS}"
    models = model_order(rows["model"].unique())
    labels = model_labels(models)
    cells, fails, n = [], 0, 0
    for model in models:
        rates = []
        for est in [e for e in ESTIMATORS if (model, e) in pooled.index]:
            k, trials = pooled.loc[(model, est)]
            low, high = binomial_ci(round(k), trials)
            failed = bool(low > NOMINAL_RATE)
            if model in PAPER_MODELS:
                fails, n = fails + failed, n + 1
            rates.append(f"{_est(est)} {k / trials:.3f} [{low:.3f}, {high:.3f}]{' fails' if failed else ''}")
        tag = " (reference)" if model in REFERENCES else ("" if model in PAPER_MODELS else " (not counted)")
        cells.append(f"{labels[model]}{tag}: {', '.join(rates)}")
    share = fails / n
    verdict = "reproduced" if share > MOST else ("refuted" if share <= FEW else "mixed")
    return verdict, (
        f"{fails} of {n} of the paper's methods fail ({share:.3f}); false-discovery rate over {_seed_span(rows['n_ci'])} "
        f"seeds [exact 95% interval]: {'; '.join(cells)}"
    )


def _sherbert_iptw(data: pd.DataFrame, summary: pd.DataFrame) -> tuple[str, str]:
    sherbert = _models(summary[summary["estimator"] == "ipw"], SHERBERT_MODELS)
    if not sherbert:
        return "no data", f"no SHERBERT rows with IPTW estimates{SEEDS}"
    sh = sherbert[0]
    rows = summary[(summary["model"] == sh) & (summary["estimator"] == "ipw") & (summary["n_seeds"] > 0)]
    low, high = SHERBERT_IPTW_BAND
    inside = outside = 0
    cells = []
    for r in rows.itertuples():
        lo, hi = _interval(r)
        inside += low <= r.mean_bias <= high
        outside += bool(hi < low or lo > high)
        ci = f" [{lo:+.3f}, {hi:+.3f}]" if np.isfinite(lo) else ""
        cells.append(f"{_level(r.task, r.level)} {r.mean_bias:+.3f}{ci}")
    n = len(rows)
    verdict = "reproduced" if inside > n / 2 and not outside else ("refuted" if not inside and outside else "mixed")
    return verdict, (
        f"{sh} IPTW seed-mean bias [across-seed 95% interval]: {'; '.join(cells)}; {inside} of {n} means in "
        f"[{low:+.3f}, {high:+.3f}], {outside} intervals wholly outside it"
    )


#: The findings: key, the paper's claim, the check that judges it.
FINDINGS: tuple[tuple[str, str, Callable[[pd.DataFrame, pd.DataFrame], tuple[str, str]]], ...] = (
    ("a", "The oracle is unbiased", _oracle),
    ("b", "LDA is no better than the unadjusted estimate", _lda),
    ("c", "n-gram models are ahead of SHERBERT on Signal Intensity", _signal),
    ("d", "Every model is at chance on Order of Text 2", _order),
    ("e", "Most methods fail the placebo test", _placebo),
    ("f", "SHERBERT with IPTW is biased by +0.08 to +0.14", _sherbert_iptw),
)


def findings_table(df: Any) -> pd.DataFrame:
    """One row per (paper finding, corpus) of the results: ``key``, ``finding``, ``corpus``, ``verdict``, ``evidence``.

    Args:
        df: the results (anything :func:`textcause.analysis.frame.load_results` reads).

    Returns:
        The findings in the order a-f, corpora alphabetically within each; ``verdict`` is one of
        :data:`VERDICTS`, by the rules of the module docstring (:data:`RULES`).
    """
    full = load_results(df)
    data = distinct_levels(full[full["estimator"] != ""])  # a cell that failed before any estimator: no method
    summary = seed_summary(data) if len(data) else None
    if summary is not None:  # judge only methods with MIN_SEEDS seeds on a level, in the summary and the rows
        summary = summary[summary["n_seeds"] >= MIN_SEEDS]
        keep = pd.MultiIndex.from_frame(summary[METHOD])
        data = data[pd.MultiIndex.from_frame(data[METHOD]).isin(keep)]
    rows = []
    for key, claim, check in FINDINGS:
        for corpus in sorted(set(full["corpus"])):
            if summary is None:
                verdict, evidence = "no data", "no cell produced an estimate"
            else:
                here = data["corpus"] == corpus
                verdict, evidence = check(data[here], summary[summary["corpus"] == corpus])
            rows.append(
                {"key": key, "finding": f"({key}) {claim}", "corpus": corpus, "verdict": verdict, "evidence": evidence}
            )
    return pd.DataFrame(rows, columns=COLUMNS)

"""The paper's findings checked against our results: one verdict per (finding, corpus) by a stated rule.

Weld et al. draw the conclusions of :data:`FINDINGS`; :data:`PAPER` quotes the sentence each comes
from. :func:`findings_table` judges each on every corpus of the results on its own: one row per
(finding, corpus) with ``evidence`` (our numbers), the ``rule`` and a ``verdict``: ``reproduced``,
``refuted``, ``mixed``, ``not judged`` (the seeds cannot decide it, or a claim about all of the
paper's methods has too few of its models; the evidence says why) or
``no data``. No verdict is written by hand: each is its rule applied to the seed summary
(:func:`textcause.analysis.inference.seed_summary`) and to paired comparisons over seeds
(:func:`textcause.analysis.inference.compare`), with the thresholds of
:mod:`textcause.analysis.findings_base` and :mod:`textcause.analysis.verdicts`. The rules, finding
by finding: docs/results.md, "The paper's findings, by rule".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from textcause.analysis.findings_base import (
    ALPHA,
    BIAS_TOLERANCE,
    COLUMNS,
    ESTIMATORS,
    FEW,
    LDA_MODELS,
    MIN_ROLES,
    MIN_SEEDS,
    MOST,
    NGRAM_MODELS,
    NOMINAL_RATE,
    ORDER_MODEL,
    PAPER_MODELS,
    PAPER_ROLES,
    RATE_SEEDS,
    REFERENCES,
    SEEDS,
    SHERBERT_MODELS,
    SIGN_TEST_SEEDS,
    VERDICTS,
    classify,
    concat_tables,
    distinct_levels,
    est_label,
    level_name,
    models_present,
    paired,
    placebo_rates,
    rate_cells,
    rate_why,
    seed_span,
    span,
    too_few_roles,
    verdict_with,
    why_open,
)
from textcause.analysis.frame import METHOD, load_results
from textcause.analysis.inference import corrected_interval, seed_summary
from textcause.analysis.names import model_labels
from textcause.analysis.verdicts import total

__all__ = [
    "ALPHA",
    "BIAS_TOLERANCE",
    "COLUMNS",
    "FINDINGS",
    "NOMINAL_RATE",
    "PAPER",
    "RATE_SEEDS",
    "RULES",
    "SIGN_TEST_SEEDS",
    "VERDICTS",
    "distinct_levels",
    "findings_table",
    "paper_ref",
]


#: The rule behind each finding's verdict, one line of Markdown each (docs/results.md, "The rules",
#: gives them with the shared ground: twin levels, estimators, seeds, intervals and tests).
RULES: dict[str, str] = {
    "a": (
        "For each distinct level and estimator, the oracle's seed-mean bias with its across-seed "
        "t interval (uncorrected: the oracle fits nothing, and every seed redraws all that is "
        "random). Reproduced: every interval lies within ±0.05, as in the other rules a "
        "non-significant difference counts as none only when its interval does; refuted: some interval lies wholly outside ±0.05; not "
        "judged: otherwise (an interval reaches beyond the bound on one side or both)."
    ),
    "b": (
        "For each LDA model (LR LDA, Simple NN LDA) and estimator, |bias| against the same "
        "model's unadjusted estimate, level by level, Signal Intensity aside (the paper finds LDA "
        "slightly better there; those levels are shown, not judged). Reproduced: significantly "
        "smaller in none of these (model, estimator, level) comparisons; refuted: in more than "
        "half; mixed: otherwise."
    ),
    "c": (
        "On the Signal Intensity levels, each n-gram model (LR and simple NN, LDA aside) against "
        "SHERBERT with the same estimator, on |bias|. Reproduced: some n-gram model is "
        "significantly ahead and none behind; refuted: none ahead (SHERBERT ahead of some, or no "
        "difference anywhere); mixed: n-gram models both ahead and behind."
    ),
    "d": (
        "On Order of Text 2, each of the paper's models and estimators against its unadjusted "
        "estimate, on |bias|. Reproduced: significantly smaller in none; refuted: in more than "
        "half; mixed: otherwise. OrderCountNet is built to read post order, that is to break this "
        "finding: its numbers are in the evidence, not in the count. Not judged with fewer than "
        f"{MIN_ROLES} of the paper's {len(PAPER_ROLES)} models."
    ),
    "e": (
        "On the placebo level, each of the paper's methods (model with IPTW or stratification), "
        "fails or passes by its false-discovery rate. Reproduced: more than half (`MOST`) fail; "
        "refuted: at most a quarter (`FEW`) do; mixed: otherwise. Not judged with fewer than "
        f"{MIN_ROLES} of the paper's {len(PAPER_ROLES)} models."
    ),
    "f": (
        "On the placebo level, SHERBERT with stratification against the paper's other methods. "
        "Reproduced: SHERBERT's stratified estimate passes and no other method does; refuted: it "
        "fails, or more than half of the others pass; mixed: otherwise. Not judged with fewer than "
        f"{MIN_ROLES} of the paper's {len(PAPER_ROLES)} models."
    ),
    "g": (
        "SHERBERT against each n-gram model with the same estimator, on |bias|, with the full "
        "training set (Sample Size 1, the draw of Linguistic Complexity 2) and with a quarter of "
        "it (Sample Size 3). Reproduced: SHERBERT significantly ahead of some n-gram model with "
        "the full set and behind some with a quarter, and never the other way; refuted: either "
        "half reversed (significant differences only the other way), or neither half shown; "
        "mixed: otherwise."
    ),
}


def _plain_interval(row: Any) -> tuple[float, float]:
    """The oracle's across-seed t interval of its mean bias (NaN with fewer than 2 seeds).

    Not the corrected resampled variance of the model comparisons: its extra term is the variance
    that comes from training on overlapping training sets, and the oracle trains nothing. Its
    seeds redraw the classes, treatments, outcomes and split, so they are independent draws on the
    corpus, and the plain t interval is the one whose width shrinks with more seeds (the corrected
    one never gets narrower than about ±2.2 of the seeds' standard deviation, so with an sd above
    about 0.02 no number of seeds could place the oracle within ±0.05).
    """
    if row.n_seeds < MIN_SEEDS or not np.isfinite(row.sd_bias):
        return float("nan"), float("nan")
    return corrected_interval(row.mean_bias, row.sd_bias, int(row.n_seeds), 0.0)


def _oracle(data: pd.DataFrame, summary: pd.DataFrame) -> tuple[str, str]:
    rows = summary[(summary["model"] == "oracle") & summary["estimator"].isin(ESTIMATORS) & (summary["n_seeds"] > 0)]
    if rows.empty:
        return "no data", f"no oracle rows with IPTW or stratified estimates{SEEDS}"
    tol = BIAS_TOLERANCE
    states, worst, undecided = [], None, []
    for r in rows.itertuples():
        lo, hi = _plain_interval(r)
        inside = bool(lo >= -tol and hi <= tol)  # False with no interval (NaN): one seed shows no spread
        states.append("for" if inside else ("against" if hi < -tol or lo > tol else "open"))
        if states[-1] == "open" and len(undecided) < 3:
            shown = f"[{lo:+.3f}, {hi:+.3f}]" if np.isfinite(lo) else "no interval"
            undecided.append(f"{est_label(r.estimator)} on {level_name(r.task, r.level)} {shown}")
        if worst is None or abs(r.mean_bias) > abs(worst[0].mean_bias):
            worst = (r, lo, hi)
    within, clear, n = states.count("for"), states.count("against"), len(rows)
    parts = [
        f"{est_label(est)} {span(rows.loc[rows['estimator'] == est, 'mean_bias'])}"
        for est in ESTIMATORS
        if (rows["estimator"] == est).any()
    ]
    r, lo, hi = worst
    where = f"{est_label(r.estimator)} on {level_name(r.task, r.level)}: {r.mean_bias:+.3f}"
    where += f" [{lo:+.3f}, {hi:+.3f}]" if np.isfinite(lo) else ""
    text = (
        f"oracle seed-mean bias over {rows[['task', 'level']].drop_duplicates().shape[0]} distinct levels: "
        f"{'; '.join(parts)}; {within} of {n} (level, estimator) intervals within ±{tol:.3f}, {clear} wholly "
        f"outside; largest {where}"
    )
    opened = rows.loc[[s == "open" for s in states], "n_seeds"]
    why = (
        f"{seed_span(opened)} seeds cannot support {opened.size} of {n} oracle means: the across-seed interval "
        f"reaches beyond ±{tol:.2f} without lying wholly outside it ({'; '.join(undecided)}"
        f"{'; ...' if opened.size > len(undecided) else ''})"
        if opened.size
        else ""
    )

    def rule(c: Any) -> str:
        return "refuted" if total(c, "against") else "reproduced"

    return verdict_with({"oracle": states}, rule, why, text)


def _no_better(table: pd.DataFrame) -> tuple[dict[str, list[str]], Any]:
    """Units and rule of "no better than the unadjusted estimate" (A: the model, B: unadjusted)."""
    states = classify(table, a_ahead="against", one_sided=True)

    def rule(c: Any) -> str:
        k, n = total(c, "against"), sum(total(c, s) for s in ("for", "against", "neutral"))
        return "reproduced" if k == 0 else ("refuted" if k > n / 2 else "mixed")

    return {"all": states}, rule


def _lda(data: pd.DataFrame, summary: pd.DataFrame) -> tuple[str, str]:
    models = models_present(summary, LDA_MODELS)
    if not models:
        return "no data", f"no LDA model (lr_lda, nn_lda) in this corpus{SEEDS}"
    table = concat_tables(
        [paired(data, (m, e), (m, "unadjusted")).assign(model=m, estimator=e) for m in models for e in ESTIMATORS]
    )
    if table.empty:
        return "no data", f"no {MIN_SEEDS} seeds with both an LDA estimate and the unadjusted one ({', '.join(models)})"
    si = table["task"] == "signal_intensity"
    judged, shown = table[~si], table[si]
    if judged.empty:
        return "no data", "only Signal Intensity levels, which the rule sets aside"
    units, rule = _no_better(judged)
    k, n = int((judged["better"] == "A").sum()), len(judged)
    text = (
        f"{', '.join(models)}: |bias| minus the unadjusted estimate's, seed means {span(judged['mean_diff'])} "
        f"over {judged['level'].groupby(judged['task']).nunique().sum()} levels and IPTW / stratified; "
        f"significantly smaller in {k} of {n} comparisons"
    )
    if len(shown):
        ks = int((shown["better"] == "A").sum())
        text += (
            f"; on Signal Intensity (not judged) {span(shown['mean_diff'])}, significantly smaller in {ks} of "
            f"{len(shown)}"
        )
    return verdict_with(units, rule, why_open(judged, units["all"], "comparisons"), text)


def _signal(data: pd.DataFrame, summary: pd.DataFrame) -> tuple[str, str]:
    si = data[data["task"] == "signal_intensity"]
    sherbert = models_present(summary[summary["task"] == "signal_intensity"], SHERBERT_MODELS)
    ngrams = models_present(summary[summary["task"] == "signal_intensity"], NGRAM_MODELS)
    if not sherbert or not ngrams:
        return "no data", f"no Signal Intensity rows for SHERBERT and an n-gram model{SEEDS}"
    sh = sherbert[0]
    table = concat_tables(
        [paired(si, (m, e), (sh, e)).assign(model=m, estimator=e) for m in ngrams for e in ESTIMATORS]
    )
    if table.empty:
        return "no data", f"no {MIN_SEEDS} seeds shared by {sh} and an n-gram model on Signal Intensity"
    states = classify(table, a_ahead="for")
    ahead, behind = int((table["better"] == "A").sum()), int((table["better"] == "B").sum())

    def rule(c: Any) -> str:
        yes, no = total(c, "for"), total(c, "against")
        return "mixed" if yes and no else ("reproduced" if yes else "refuted")

    parts = []
    for level, g in table.groupby("level"):
        cells = [
            f"{est_label(e)} {sh} {g.loc[g['estimator'] == e, 'mean_b'].iloc[0]:.3f} vs n-gram "
            f"{span(g.loc[g['estimator'] == e, 'mean_a'], '.3f')}"
            for e in ESTIMATORS
            if (g["estimator"] == e).any()
        ]
        parts.append(f"level {int(level)}: {', '.join(cells)}")
    text = (
        f"seed-mean |bias| on Signal Intensity, {'; '.join(parts)}; the n-gram models ({len(ngrams)}) significantly "
        f"ahead of {sh} in {ahead} of {len(table)} paired comparisons, behind in {behind}, within ±"
        f"{BIAS_TOLERANCE:.2f} in {states.count('neutral')}"
    )
    return verdict_with({"all": states}, rule, why_open(table, states, "comparisons"), text)


def _order(data: pd.DataFrame, summary: pd.DataFrame) -> tuple[str, str]:
    level = data[(data["task"] == "order_of_text") & (data["level"] == 2)]
    here = summary[(summary["task"] == "order_of_text") & (summary["level"] == 2)]
    paper = models_present(here, PAPER_MODELS)
    if not paper:
        return "no data", f"no Order of Text 2 rows for the paper's models{SEEDS}"
    ours = [m for m in models_present(here, sorted(set(here["model"]))) if m not in PAPER_MODELS + REFERENCES]

    def better(models: list[str]) -> pd.DataFrame:
        pairs = [(m, e) for m in models for e in ESTIMATORS]
        return concat_tables([paired(level, (m, e), (m, "unadjusted")).assign(model=m, estimator=e) for m, e in pairs])

    judged = better(paper)
    if judged.empty:
        return "no data", f"no {MIN_SEEDS} seeds with both a model's estimate and the unadjusted one on Order of Text 2"
    units, rule = _no_better(judged)
    k, n = int((judged["better"] == "A").sum()), len(judged)
    rows = here[here["model"].isin(paper) & here["estimator"].isin(ESTIMATORS)]
    unadj = here.loc[here["estimator"] == "unadjusted", "mean_bias"]
    text = (
        f"Order of Text 2: the paper's models' seed-mean bias {span(rows['mean_bias'])} (IPTW and stratified) "
        f"against the unadjusted estimate's {span(unadj)}, treatment accuracy {span(rows['mean_treatment_accuracy'], '.3f')}; "
        f"significantly smaller |bias| in {k} of {n} (model, estimator) pairs"
    )
    mine = better(ours)
    for m in ours:
        g, s = mine[mine["model"] == m], here[(here["model"] == m) & here["estimator"].isin(ESTIMATORS)]
        bias = ", ".join(f"{est_label(r.estimator)} {r.mean_bias:+.3f}" for r in s.itertuples())
        note = " (built to read post order, so designed to break this finding)" if m == ORDER_MODEL else ""
        text += (
            f"; not counted: {model_labels([m])[m]}{note} bias {bias}, significantly smaller |bias| in "
            f"{int((g['better'] == 'A').sum())} of {len(g)}"
        )
    if ORDER_MODEL not in ours:
        text += f"; {ORDER_MODEL} (ours, built to break this finding) has no rows here"
    few = too_few_roles(judged["model"], "Order of Text 2 comparisons")
    if few:
        return "not judged", f"{few}; {text}"
    return verdict_with(units, rule, why_open(judged, units["all"], "comparisons"), text)


def _placebo(data: pd.DataFrame, summary: pd.DataFrame) -> tuple[str, str]:
    rates = placebo_rates(summary)
    paper = rates[rates["model"].isin(PAPER_MODELS)]
    if paper.empty:
        return "no data", f"no placebo (true ATE 0) rows for the paper's models{SEEDS}"
    units = {"all": [{"fails": "for", "passes": "against"}.get(s, "open") for s in paper["state"]]}

    def rule(c: Any) -> str:
        share = total(c, "for") / max(1, total(c, "for") + total(c, "against"))
        return "reproduced" if share > MOST else ("refuted" if share <= FEW else "mixed")

    fails, n = int((paper["state"] == "fails").sum()), len(paper)
    text = (
        f"{fails} of {n} of the paper's methods fail ({fails / n:.3f}), {int((paper['state'] == 'passes').sum())} "
        f"pass; false discoveries over {seed_span(rates['n'])} seeds [exact 95% interval]: {rate_cells(rates)}"
    )
    few = too_few_roles(paper["model"], "placebo rates")
    if few:
        return "not judged", f"{few}; {text}"
    return verdict_with(units, rule, rate_why(paper), text)


def _only_sherbert(data: pd.DataFrame, summary: pd.DataFrame) -> tuple[str, str]:
    rates = placebo_rates(summary)
    paper = rates[rates["model"].isin(PAPER_MODELS)]
    sherbert = [m for m in SHERBERT_MODELS if ((paper["model"] == m) & (paper["estimator"] == "stratified")).any()]
    if not sherbert:
        return "no data", f"no placebo (true ATE 0) rows for SHERBERT with stratification{SEEDS}"
    is_sh = (paper["model"] == sherbert[0]) & (paper["estimator"] == "stratified")
    others = paper[~is_sh & ~paper["model"].isin(SHERBERT_MODELS[1:] if sherbert[0] == "sherbert" else ())]
    sh_state = paper.loc[is_sh, "state"].iloc[0]
    units = {
        "sherbert": [{"passes": "for", "fails": "against"}.get(sh_state, "open")],
        "others": [{"fails": "for", "passes": "against"}.get(s, "open") for s in others["state"]],
    }

    def rule(c: Any) -> str:
        n_others = sum(c["others"][s] for s in ("for", "against"))
        if c["sherbert"]["against"] or c["others"]["against"] > n_others / 2:
            return "refuted"
        return "reproduced" if c["sherbert"]["for"] and not c["others"]["against"] else "mixed"

    passing = others[others["state"] == "passes"]
    names = model_labels(passing["model"].unique())
    r = paper[is_sh].iloc[0]
    text = (
        f"{sherbert[0]} stratified: {r.k}/{r.n} false discoveries [{r.low:.3f}, {r.high:.3f}], {sh_state}; "
        f"the paper's other methods: {int((others['state'] == 'fails').sum())} of {len(others)} fail, "
        f"{len(passing)} pass"
        + (
            ": " + ", ".join(f"{names[p.model]} {est_label(p.estimator)}" for p in passing.itertuples())
            if len(passing)
            else ""
        )
    )
    few = too_few_roles(paper["model"], "placebo rates")
    if few:
        return "not judged", f"{few}; {text}"
    return verdict_with(units, rule, rate_why(paper[is_sh | paper.index.isin(others.index)]), text)


#: Sample Size: the full training set (the draw of Linguistic Complexity 2) and a quarter of it.
FULL_DATA, LITTLE_DATA = ("linguistic_complexity", 2), ("sample_size", 3)


def _sample_size(data: pd.DataFrame, summary: pd.DataFrame) -> tuple[str, str]:
    sherbert = models_present(summary, SHERBERT_MODELS)
    ngrams = models_present(summary, NGRAM_MODELS)
    at = {
        key: data[(data["task"] == task) & (data["level"] == level)]
        for key, (task, level) in (("full", FULL_DATA), ("little", LITTLE_DATA))
    }
    if not sherbert or not ngrams:
        return "no data", f"no rows for SHERBERT and an n-gram model{SEEDS}"
    sh = sherbert[0]
    tables = {
        key: concat_tables(
            [paired(rows, (sh, e), (m, e)).assign(model=m, estimator=e) for m in ngrams for e in ESTIMATORS]
        )
        for key, rows in at.items()
    }
    if any(t.empty for t in tables.values()):
        return "no data", (
            f"no {MIN_SEEDS} seeds shared by {sh} and an n-gram model on both Sample Size 1 (= Linguistic "
            "Complexity 2) and Sample Size 3"
        )
    # A: SHERBERT. With the full set the claim is SHERBERT ahead; with a quarter, the n-grams ahead.
    units = {"full": classify(tables["full"], a_ahead="for"), "little": classify(tables["little"], a_ahead="against")}

    def rule(c: Any) -> str:
        holds = [c[g]["for"] > 0 and not c[g]["against"] for g in ("full", "little")]
        reversed_ = [c[g]["against"] > 0 and not c[g]["for"] for g in ("full", "little")]
        if all(holds):
            return "reproduced"
        return "refuted" if any(reversed_) or not any(c[g]["for"] for g in ("full", "little")) else "mixed"

    parts = []
    for key, name in (("full", "full training set (Sample Size 1)"), ("little", "a quarter of it (Sample Size 3)")):
        t = tables[key]
        cells = [
            f"{est_label(e)} {sh} {t.loc[t['estimator'] == e, 'mean_a'].iloc[0]:.3f} vs n-gram "
            f"{span(t.loc[t['estimator'] == e, 'mean_b'], '.3f')}"
            for e in ESTIMATORS
            if (t["estimator"] == e).any()
        ]
        parts.append(
            f"{name}: seed-mean |bias| {', '.join(cells)}; {sh} significantly ahead in "
            f"{int((t['better'] == 'A').sum())} of {len(t)}, behind in {int((t['better'] == 'B').sum())}"
        )
    both = pd.concat(list(tables.values()), ignore_index=True)
    why = why_open(both, units["full"] + units["little"], "comparisons")
    return verdict_with(units, rule, why, "; ".join(parts))


#: The findings: key, the claim, the check that judges it.
FINDINGS: tuple[tuple[str, str, Callable[[pd.DataFrame, pd.DataFrame], tuple[str, str]]], ...] = (
    ("a", "The oracle is unbiased (but for finite-sample effects)", _oracle),
    ("b", "LDA is no better than the unadjusted estimate", _lda),
    ("c", "n-gram models outperform SHERBERT on Signal Intensity", _signal),
    ("d", "No method represents the order of posts (Order of Text 2)", _order),
    ("e", "Most methods (8 of 9) falsely claim an effect in the placebo test", _placebo),
    ("f", "Only SHERBERT's stratified estimate passes the placebo test", _only_sherbert),
    ("g", "SHERBERT is best with the full training set, worse than n-grams with little data", _sample_size),
)
#: Where each finding is in the paper: (section, the sentence, quoted).
PAPER = {
    "a": (
        "§6.1",
        "The Oracle provides an upper-bound on model performance, only differing from the theoretical optimum due "
        "to finite sample effects.",
    ),
    "b": (
        "§7",
        "As in nearly all tasks, LDA methods perform worst, not even outperforming the unadjusted estimator.",
    ),
    "c": ("§7", "Here, n-gram methods outperform SHERBERT (Fig. 4e,f)"),
    "d": (
        "§7.1, App. H",
        "every method evaluated, including SHERBERT, completely fails to represent order.",
    ),
    "e": (
        "§7",
        "This result is of greatest concern, as 8/9 methods falsely claim a non-zero effect.",
    ),
    "f": (
        "§7",
        "Alarmingly, in the Placebo Test, every method except SHERBERT's stratified estimate failed to include the "
        "(correct) null hypothesis (ATE=0) in their 95% confidence intervals across both datasets",
    ),
    "g": (
        "§7, §8",
        "SHERBERT outperforms other methods when trained on the full 3,200 observation training set, but its bias "
        "and accuracy quickly deteriorate to worse than n-gram features when training data is reduced",
    ),
}


def paper_ref(key: str) -> str:
    """``§7: "..."``: where the paper states finding ``key``."""
    section, quote = PAPER[key]
    return f'{section}: "{quote}"'


def findings_table(df: Any) -> pd.DataFrame:
    """One row per (paper finding, corpus) of the results: the columns :data:`COLUMNS`.

    Args:
        df: the results (anything :func:`textcause.analysis.frame.load_results` reads).

    Returns:
        The findings in the order of :data:`FINDINGS`, corpora alphabetically within each; ``paper`` is
        where the paper says it (:func:`paper_ref`), ``rule`` the rule (:data:`RULES`), ``verdict`` one of
        :data:`VERDICTS`; a ``not judged`` row's evidence starts with why ("3 seeds cannot support ...").
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
                {
                    "key": key,
                    "finding": f"({key}) {claim}",
                    "paper": paper_ref(key),
                    "corpus": corpus,
                    "verdict": verdict,
                    "rule": RULES.get(key, ""),
                    "evidence": evidence,
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)

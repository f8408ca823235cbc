"""The shared ground of :mod:`textcause.analysis.findings`: its models, thresholds, twin levels and the
states of its units (comparisons, placebo rates), with the words a verdict of "not judged" gives."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from textcause.analysis.inference import binomial_ci, compare, corrected_interval
from textcause.analysis.names import model_labels, model_order
from textcause.analysis.verdicts import decide, rate_min_seeds, rate_power, sign_test_min_p
from textcause.estimators.registry import ESTIMATOR_LABELS
from textcause.simulation.tasks import list_tasks, spec_key, task_label

__all__ = [
    "ALPHA",
    "BIAS_TOLERANCE",
    "COLUMNS",
    "ESTIMATORS",
    "FEW",
    "LDA_MODELS",
    "MIN_ROLES",
    "MIN_SEEDS",
    "MOST",
    "NGRAM_MODELS",
    "NOMINAL_RATE",
    "ORDER_MODEL",
    "PAPER_MODELS",
    "PAPER_ROLES",
    "RATE_SEEDS",
    "REFERENCES",
    "SEEDS",
    "SHERBERT_MODELS",
    "SIGN_TEST_SEEDS",
    "VERDICTS",
    "classify",
    "concat_tables",
    "distinct_levels",
    "est_label",
    "level_name",
    "models_present",
    "paired",
    "placebo_rates",
    "rate_cells",
    "rate_why",
    "seed_span",
    "span",
    "too_few_roles",
    "verdict_with",
    "why_open",
]

#: The paper's n-gram models (LDA aside), its LDA models and SHERBERT (the first present is used).
NGRAM_MODELS = (
    "lr_tuned_unigram_binary",
    "lr_tuned_bigram_binary",
    "lr_tuned_bigram_counts",
    "lr_unigram_binary",
    "lr_bigram_binary",
    "lr_bigram_counts",
    "nn_unigram_binary",
    "nn_bigram_binary",
    "nn_bigram_counts",
)
LDA_MODELS = ("lr_tuned_lda", "lr_lda", "nn_lda")
SHERBERT_MODELS = ("sherbert", "sherbert_pooled")
PAPER_MODELS = NGRAM_MODELS + LDA_MODELS + SHERBERT_MODELS
#: The paper's nine models (section 6.1: a simple NN and an LR on each of four representations, and
#: SHERBERT), each met by any of its names here (tuned or not, pooled or token-level SHERBERT).
PAPER_ROLES: dict[str, tuple[str, ...]] = {
    "LR 1-gram": ("lr_tuned_unigram_binary", "lr_unigram_binary"),
    "LR 1,2-gram": ("lr_tuned_bigram_binary", "lr_bigram_binary"),
    "LR 1,2-gram counts": ("lr_tuned_bigram_counts", "lr_bigram_counts"),
    "LR LDA": ("lr_tuned_lda", "lr_lda"),
    "Simple NN 1-gram": ("nn_unigram_binary",),
    "Simple NN 1,2-gram": ("nn_bigram_binary",),
    "Simple NN 1,2-gram counts": ("nn_bigram_counts",),
    "Simple NN LDA": ("nn_lda",),
    "SHERBERT": SHERBERT_MODELS,
}
#: A claim about the paper's methods as a whole ((d), (e), (f)) is judged only on more than half of its models.
MIN_ROLES = len(PAPER_ROLES) // 2 + 1
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
#: The fewest usable seeds a method needs on a task level to enter.
MIN_SEEDS = 2
SEEDS = f" (with at least {MIN_SEEDS} seeds)"
#: The fewest seeds with which a two-sided sign test can reject at ALPHA (6 at 0.05).
SIGN_TEST_SEEDS = next(n for n in range(1, 100) if sign_test_min_p(n) <= ALPHA)
#: The fewest seeds whose placebo test catches a false-discovery rate of 1/2 with power 0.8 (5).
RATE_SEEDS = rate_min_seeds(NOMINAL_RATE)
VERDICTS = ("reproduced", "refuted", "mixed", "not judged", "no data")
#: The columns of :func:`findings_table`.
COLUMNS = ["key", "finding", "paper", "corpus", "verdict", "rule", "evidence"]


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


def seed_span(counts: Any) -> str:
    """``5`` or ``5-20``: how many seeds the rates rest on."""
    low, high = int(np.min(counts)), int(np.max(counts))
    return str(high) if low == high else f"{low}-{high}"


def level_name(task: str, level: int) -> str:
    """A task level as a reader sees it, e.g. the task's label followed by the level number."""
    return f"{task_label(task)} {int(level)}"


def span(values: Any, fmt: str = "+.3f") -> str:
    """The range of the finite ``values`` as ``low to high`` (one number when they agree, ``-`` when none).

    >>> span([0.1, -0.2, float("nan")])
    '-0.200 to +0.100'
    """
    v = [float(x) for x in values if np.isfinite(x)]
    if not v:
        return "-"
    lo, hi = format(min(v), fmt), format(max(v), fmt)
    return lo if lo == hi else f"{lo} to {hi}"


def models_present(summary: pd.DataFrame, names: Any) -> list[str]:
    """The models of ``names`` (in that order) that have at least one seed in ``summary``."""
    have = set(summary.loc[summary["n_seeds"] > 0, "model"])
    return [m for m in names if m in have]


def concat_tables(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """The comparison tables that have rows, as one (empty, with ``model`` and ``better``, if none has)."""
    tables = [t[t["better"] != "not enough seeds"] for t in tables if "better" in t]
    tables = [t for t in tables if len(t)]
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=["model", "estimator", "better"])


def est_label(name: str) -> str:
    """An estimator's label for prose (its name when it has none)."""
    return ESTIMATOR_LABELS.get(name, name)


def paired(data: pd.DataFrame, a: tuple[str, str], b: tuple[str, str]) -> pd.DataFrame:
    """``compare`` of ``a`` against ``b`` on \\|bias\\| (empty when they share no seed)."""
    rows = data[data["usable"] & data["model"].isin({a[0], b[0]})]
    have = set(zip(rows["model"], rows["estimator"]))
    if a not in have or b not in have:
        return pd.DataFrame()
    try:
        return compare(rows, ":".join(a), ":".join(b), metric="abs_bias", alpha=ALPHA)
    except ValueError:  # no seed in common
        return pd.DataFrame()


def classify(table: pd.DataFrame, *, a_ahead: str, one_sided: bool = False) -> list[str]:
    """Each comparison's state: ``a_ahead`` when A is significantly ahead, the other state when B is;
    ``neutral`` when neither and the across-seed interval of the difference lies within ±tolerance
    (``one_sided``: above -tolerance, so A is not better by that much); ``open`` otherwise."""
    b_ahead = "against" if a_ahead == "for" else "for"
    out = []
    for r in table.itertuples():
        if r.better == "A":
            out.append(a_ahead)
        elif r.better == "B":
            out.append(b_ahead)
        else:
            lo, hi = corrected_interval(r.mean_diff, r.sd_diff, int(r.n_seeds), r.test_train_ratio)
            inside = lo >= -BIAS_TOLERANCE and (one_sided or hi <= BIAS_TOLERANCE)
            out.append("neutral" if inside else "open")
    return out


def _open_tests(table: pd.DataFrame, states: list[str], what: str) -> str:
    """Why open comparisons cannot be decided: how many, over how many seeds, what a sign test could do."""
    seeds = table.loc[[s == "open" for s in states], "n_seeds"]
    n = int(seeds.min())
    text = (
        f"{seed_span(seeds)} seeds cannot support {seeds.size} of {len(states)} {what}: not significant, yet "
        f"the across-seed interval of the difference reaches beyond ±{BIAS_TOLERANCE:.2f}"
    )
    if n < SIGN_TEST_SEEDS:
        text += f" (a sign test over {n} seeds cannot reject at {ALPHA}: its smallest two-sided p is {sign_test_min_p(n):.3f})"
    return text


def verdict_with(units: dict[str, list[str]], rule: Any, why: str, text: str) -> tuple[str, str]:
    """The verdict of ``rule`` on ``units`` and its sentence (``why`` is prefixed when the verdict is "not judged")."""
    verdict = decide(units, rule)
    return verdict, (f"{why}; {text}" if verdict == "not judged" else text)


def too_few_roles(models: Any, what: str) -> str:
    """Why a claim about the paper's methods as a whole cannot be judged on ``models``; empty when it can.

    ``models`` are the models with usable rows; the claim needs :data:`MIN_ROLES` of the paper's
    nine (:data:`PAPER_ROLES`). With fewer, a verdict would describe the few models a grid happened
    to run (a variant grid's LR and SHERBERT, a grid stopped halfway), not the paper's methods.
    """
    have = set(models)
    roles = [role for role, names in PAPER_ROLES.items() if have & set(names)]
    if len(roles) >= MIN_ROLES:
        return ""
    named = ", ".join(roles) if roles else "none"
    return (
        f"only {len(roles)} of the paper's {len(PAPER_ROLES)} models have {what} ({named}): a claim about its "
        f"methods as a whole is judged on {MIN_ROLES} or more"
    )


def why_open(table: pd.DataFrame, states: list[str], what: str) -> str:
    """Why the open comparisons of ``table`` cannot be decided; empty when none is open."""
    return _open_tests(table, states, what) if "open" in states else ""


def placebo_rates(summary: pd.DataFrame) -> pd.DataFrame:
    """Per (model, estimator) on the levels with a true ATE of 0: ``k`` false discoveries of ``n`` seeds,
    the exact interval, and ``state``: ``fails``, ``passes`` or ``open`` (module docstring)."""
    rows = summary[summary["false_discovery_rate"].notna() & summary["estimator"].isin(ESTIMATORS)]
    rows = rows.assign(k=rows["false_discovery_rate"] * rows["n_ci"])
    pooled = rows.groupby(["model", "estimator"], as_index=False)[["k", "n_ci"]].sum()
    out = []
    for r in pooled.itertuples():
        k, n = round(r.k), int(r.n_ci)
        low, high = binomial_ci(k, n)
        state = "fails" if low > NOMINAL_RATE else ("passes" if rate_power(n, NOMINAL_RATE) >= 0.8 else "open")
        out.append(
            {"model": r.model, "estimator": r.estimator, "k": k, "n": n, "low": low, "high": high, "state": state}
        )
    return pd.DataFrame(out, columns=["model", "estimator", "k", "n", "low", "high", "state"])


def rate_why(rates: pd.DataFrame) -> str:
    """Why the open placebo rates cannot be decided (seeds and the test's power); empty when none is open."""
    opened = rates.loc[rates["state"] == "open", "n"]
    if opened.empty:
        return ""
    n = int(opened.min())
    return (
        f"{seed_span(opened)} seeds cannot support {opened.size} of {len(rates)} placebo rates: with {n} seeds the "
        f"exact binomial test catches a false-discovery rate of 0.5 with power {rate_power(n, NOMINAL_RATE):.2f} "
        f"({RATE_SEEDS} seeds give {rate_power(RATE_SEEDS, NOMINAL_RATE):.2f}), and {opened.size} of these methods "
        "do not fail"
    )


def rate_cells(rates: pd.DataFrame) -> str:
    """The placebo rates of every model as one line of text: ``k/n = rate [low, high]`` per estimator."""
    models = model_order(rates["model"].unique())
    labels = model_labels(models)
    cells = []
    for model in models:
        g = rates[rates["model"] == model].set_index("estimator")
        parts = [
            f"{est_label(e)} {g.at[e, 'k']}/{g.at[e, 'n']} = {g.at[e, 'k'] / g.at[e, 'n']:.3f} [{g.at[e, 'low']:.3f}, "
            f"{g.at[e, 'high']:.3f}]{' fails' if g.at[e, 'state'] == 'fails' else ''}"
            for e in ESTIMATORS
            if e in g.index
        ]
        tag = " (reference)" if model in REFERENCES else ("" if model in PAPER_MODELS else " (not counted)")
        cells.append(f"{labels[model]}{tag}: {', '.join(parts)}")
    return "; ".join(cells)

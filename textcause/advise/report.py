"""Stage 5: one report (``advise.md`` and a self-contained ``advise.html``) with its figures.

Built from :mod:`textcause.reports.markup` blocks (the same content in both formats; the HTML
embeds its figures) and saved with :func:`textcause.reports.figures.save_figure`. The sections:
the study, the verdict in plain words, the calibration grades and what their seeds support, the
real estimates ranked by the grades (and where they disagree), the refutation and sensitivity, the
recommended model's card.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from textcause.io import atomic_write_text
from textcause.reports.figures import save_figure
from textcause.reports.markup import Bullets, Heading, Image, Para, Table, to_html, to_markdown

__all__ = ["verdict", "write_report"]


def _f(x: Any, spec: str = "+.3f") -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def _pct(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.0f}%"


def verdict(best: dict[str, Any], support: dict[str, Any], table: pd.DataFrame) -> str:
    """The recommendation in plain words: which method, why, and how far the seeds carry that."""
    why = (
        f"it had the smallest mean absolute bias ({best['bias']:.3f}) on the {best['n_cells']} calibration "
        f"tasks built from your users, its intervals held the true effect in {_pct(best['coverage'])} of them, "
        f"and it claimed an effect in {_pct(best['placebo_fd'])} of the placebo tasks (true effect 0)"
    )
    text = f"Use **{best['model']}** with the **{best['estimator']}** estimator: {why}."
    if not best.get("usable", True):
        text += (
            " No candidate passed the bar (coverage at least 50%, placebo false discoveries at most one in three): "
            "treat every estimate below with suspicion."
        )
    if "lead" in support:
        nxt = support["next"]
        gap = f"its lead over {nxt['model']} / {nxt['estimator']} is {support['lead']:.3f} ± {support['lead_se']:.3f}"
        text += f" With {support['seeds']} seeds per task ({support['cells_per_pair']} cells per method), {gap}: " + (
            "a real difference." if support["resolved"] else "within noise; either is defensible."
        )
    row = table[(table["model"] == best["model"]) & (table["estimator"] == best["estimator"])]
    if not row.empty and pd.notna(row.iloc[0].get("ate")):
        r = row.iloc[0]
        found = "an effect" if (r["ci_low"] > 0 or r["ci_high"] < 0) else "no effect distinguishable from 0"
        kind = "refitting" if r.get("interval") == "refitting" else "test-sample"
        text += (
            f" On your data it estimates ATE {r['ate']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}] "
            f"({kind} interval): {found}."
        )
    return text


def _calibration_figure(graded: pd.DataFrame, out: Path, name: str) -> list[Path]:
    g = graded.iloc[::-1]
    labels = [f"{m} / {e}" for m, e in zip(g["model"], g["estimator"])]
    fig, axes = plt.subplots(1, 3, figsize=(11, 0.3 * len(g) + 1.5), sharey=True)
    colors = ["tab:green" if u else "tab:red" for u in g["usable"]]
    axes[0].barh(labels, g["bias"], xerr=g["bias_se"].fillna(0), color=colors)
    axes[0].set_xlabel("mean |bias|")
    axes[1].barh(labels, g["coverage"], color=colors)
    axes[1].axvline(0.95, color="k", lw=0.8, ls="--")
    axes[1].set_xlabel("coverage of 95% intervals")
    axes[2].barh(labels, g["placebo_fd"], color=colors)
    axes[2].set_xlabel("placebo false discoveries")
    fig.suptitle(f"{name}: calibration on your users (green: usable)")
    fig.tight_layout()
    return save_figure(fig, out, f"calibration_{name}", formats=("png",))


def _estimate_figure(table: pd.DataFrame, out: Path, name: str) -> list[Path]:
    t = table[table["ate"].notna()].iloc[::-1]
    if t.empty:
        return []
    labels = [f"#{r} {m} / {e}" for r, m, e in zip(t["rank"], t["model"], t["estimator"])]
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(t) + 1.5))
    err = [t["ate"] - t["ci_low"], t["ci_high"] - t["ate"]]
    colors = ["tab:green" if u is True else "tab:gray" for u in t["usable"]]
    ax.errorbar(t["ate"], labels, xerr=err, fmt="none", ecolor=colors)
    ax.scatter(t["ate"], labels, c=colors, zorder=3)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_xlabel("ATE on your data (95% interval: refitting where the model refits, else test-sample)")
    ax.set_title(f"{name}: estimates in calibration rank order")
    fig.tight_layout()
    return save_figure(fig, out, f"estimates_{name}", formats=("png",))


def _grades_table(graded: pd.DataFrame) -> Table:
    rows = [
        [
            str(r["rank"]),
            r["model"],
            r["estimator"],
            f"{r['bias']:.3f} ± {_f(r['bias_se'], '.3f')}",
            _pct(r["coverage"]),
            f"{_pct(r['placebo_fd'])} of {r['n_placebo']}",
            "yes" if r["usable"] else "no",
        ]
        for _, r in graded.iterrows()
    ]
    return Table(["rank", "model", "estimator", "mean abs bias ± se", "coverage", "placebo FD", "usable"], rows)


#: What each interval of the estimates table describes (:func:`textcause.advise.estimate.ranked_estimates`).
INTERVAL_NOTE = (
    "Each estimate carries one 95% interval, named in the table: the **refitting** interval where the model "
    "refits (the L-BFGS and tuned logistic regressions: the training users resampled and the model refit on "
    "each replicate, so it describes the method, fit then estimate, at this training size), else the "
    "**test-sample** bootstrap over the evaluated users with the fitted propensities held fixed (one fitted "
    "model's noise only: narrower than what a new draw of training users would give)."
)


def _interval_kind(r: Any) -> str:
    if r.get("interval") == "refitting":
        method, reps = r.get("refit_ci_method"), r.get("refit_reps")
        detail = ", ".join(x for x in (str(method) if isinstance(method, str) else "", _reps(reps)) if x)
        return f"refitting ({detail})" if detail else "refitting"
    return "test-sample" if isinstance(r.get("interval"), str) else "-"


def _reps(reps: Any) -> str:
    return f"{int(reps)} refits" if isinstance(reps, (int, float)) and math.isfinite(reps) else ""


def _estimates_table(table: pd.DataFrame) -> Table:
    rows = []
    for _, r in table.iterrows():
        ci = "-" if pd.isna(r.get("ate")) else f"{r['ate']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
        rows.append(
            [str(r["rank"]), r["model"], r["estimator"], ci, _interval_kind(r), _f(r.get("treatment_accuracy"), ".3f")]
        )
    return Table(["rank", "model", "estimator", "ATE [95% CI]", "interval", "treatment accuracy"], rows)


_REFUTERS = {
    "placebo_treatment": "placebo treatment (T permuted)",
    "random_common_cause": "random common cause (a noise covariate added)",
    "subsample": "subsample (5 x 80% of each arm)",
}


def _robustness_blocks(found: dict[str, Any]) -> list[Any]:
    """The refuters' table, the Austen plot, the robustness value and E-value, and the one sentence."""
    if found.get("status") != "ok":
        return [Para(f"Not run: {found.get('reason')}")]
    refit, est = found["refit"], found["estimate"]
    blocks: list[Any] = [
        Para(f"**{found['sentence']}**"),
        Heading(3, "Refuters"),
        Para(
            f"Each refuter reruns the recommended {refit['model']} / {refit['estimator']} on altered data; what is refit: "
            f"{refit['note']} Propensities are cross-fitted in {refit['folds']} folds over all the study's users "
            f"(the estimate above used the model's own run, trained on the training split and evaluated on the "
            f"test users), with a {refit['n_boot']}-replicate percentile bootstrap interval; on all users this refit "
            f"estimates {est['refit_on_all_users'][0]:+.3f} [{est['refit_on_all_users'][1]:+.3f}, "
            f"{est['refit_on_all_users'][2]:+.3f}]. A refuter passes when the expected value lies in its "
            "new interval."
        ),
        Table(
            ["refuter", "new estimate", "interval", "expected", "passed", "reason"],
            [
                [
                    _REFUTERS.get(r["refuter"], r["refuter"]),
                    f"{r['new_estimate']:+.3f}",
                    f"[{r['new_low']:+.3f}, {r['new_high']:+.3f}]",
                    f"{r['expected']:+.3f}",
                    "yes" if r["passed"] else "NO",
                    r["reason"],
                ]
                for r in found["refuters"]
            ],
            align=("l", "r", "r", "r", "l", "l"),
        ),
        Heading(3, "Sensitivity to a confounder the text does not carry"),
    ]
    aus, rv, ev = found["austen"], found["robustness_value"], found["e_value"]
    bench = ", ".join(f"{b['name']} (alpha {b['alpha']:.3f}, R² {b['r2']:.3f})" for b in aus["benchmarks"])
    items = [
        f"Austen plot (Veitch & Zaveri 2020), target bias {aus['bias']:+.3f} (the estimate): propensity g from the "
        f"refit above, outcome model Q: {refit['outcome_model']}, both cross-fitted. "
        + (
            f"Confounders on the curve of equal strengths need alpha = R² = {aus['balanced']:.3f}. "
            if aus["balanced"] is not None
            else "The curve stays above the diagonal. "
        )
        + (f"Benchmarks (observed covariate groups left out of g and Q): {bench}." if bench else "No benchmarks."),
        f"Robustness value (Cinelli & Hazlett 2020) of T in the OLS of Y on T and {rv['summary']}: coefficient "
        f"{rv['ols_estimate']:+.3f} (t = {rv['t_statistic']:.2f}, {rv['dof']} dof), RV = {100 * rv['rv_q']:.1f}% "
        f"(to bring it to 0), RV at 5% = {100 * rv['rv_qa']:.1f}% (to make it not significant), partial R² of T "
        f"with Y {100 * rv['partial_r2']:.2f}%.",
        (
            f"E-value (VanderWeele & Ding 2017): risk ratio {ev['rr']:.3f} [{ev['rr_low']:.3f}, {ev['rr_high']:.3f}], "
            f"E-value {ev['point']:.2f} (of the interval: {ev['ci']:.2f})."
            if ev is not None
            else f"E-value: {found['e_value_note']}."
        ),
    ]
    blocks += [Bullets(items), Image(found["figure"], "Austen plot")]
    return blocks


def write_report(result: dict[str, Any], out: Path) -> list[Path]:
    """Write ``advise.md`` and ``advise.html`` (and the figures) under ``out``; returns the files."""
    name, info = result["name"], result["info"]
    graded, table = result["graded"], result["estimates"]
    figs = _calibration_figure(graded, out, name) + _estimate_figure(table, out, name)
    y = info["outcome"] if info.get("threshold") is None else f"{info['outcome']} > {info['threshold']:.3g}"
    support = result["support"]
    blocks: list[Any] = [
        Heading(1, f"textcause advise: {name}"),
        Bullets(
            [
                f"Treatment: {info['treatment']} ({info['n_treated']} treated, {info['n_control']} control).",
                f"Outcome: Y = {y} (mean {info['mean_y']:.3f}).",
                f"Text: {info['n_users']} users, {info['mean_posts']:.1f} posts each on average.",
                f"Candidates: {len(graded['model'].unique())} methods x {len(graded['estimator'].unique())} estimators; "
                f"wall time {result['seconds'] / 60:.1f} minutes.",
            ]
        ),
        Heading(2, "Recommendation"),
        Para(result["verdict"]),
        Heading(2, "Calibration on your users"),
        Para(
            f"Semi-synthetic tasks built from the same users and posts (Weld et al., section 5): "
            f"{', '.join(f'{t} {lv}' for t, lv in result['tasks'])}; {support['seeds']} seeds each, "
            f"{support['cells_per_pair']} cells per method. Ranked by mean absolute bias; usable: coverage at least "
            "50% and placebo false discoveries at most one in three. With this many seeds a ranking separates "
            "gross failures (bias gaps of about two standard errors), not fine differences in coverage."
        ),
        _grades_table(graded),
    ]
    if figs:
        blocks.append(Image(figs[0].name, "calibration grades"))
    blocks += [Heading(2, "Estimates on your data"), Para(INTERVAL_NOTE), _estimates_table(table)]
    blocks.append(Bullets(result["disagreement"]) if result["disagreement"] else Para("The usable methods agree."))
    if len(figs) > 1:
        blocks.append(Image(figs[1].name, "real estimates"))
    blocks += [Heading(2, "Refutation and sensitivity to hidden confounding")]
    blocks += _robustness_blocks(result["robustness"])
    if result.get("model_card"):
        blocks += [
            Heading(2, "Model card"),
            Para(f"The recommended model's card: [{result['model_card']}]({result['model_card']})."),
        ]
    md = atomic_write_text(out / "advise.md", to_markdown(blocks))
    page = atomic_write_text(out / "advise.html", to_html(blocks, f"textcause advise: {name}", base_dir=out))
    extra = [out / result["robustness"]["figure"]] if result["robustness"].get("figure") else []
    return [md, page, *figs, *extra]

"""``textcause report``: figures (PNG + SVG), a Markdown report and its HTML version from a results table.

    textcause report --db results.db --out report/

Writes ``report.md``, ``report.html``, ``seed_summary.csv`` and, per corpus, ``fig4_tasks_<corpus>``,
``fig6_estimators_<corpus>``, ``fig7_propensity_<corpus>`` and ``fig11_order_of_text_<corpus>``
(``.png`` and ``.svg``; a figure is skipped when its tasks are absent), plus
``fig10_agreement_<a>_<b>`` for each pair of corpora. ``report.md`` links the figure files;
``report.html`` embeds them (base64 PNG, or SVG when no PNG is written), so the page is one file
that opens in a browser anywhere. Its "Findings" section gives the verdict on each of the paper's
findings per corpus, with the rules (:mod:`textcause.analysis.findings`); ``corpora`` (``textcause
report --corpus NAME ...``) restricts the whole report to some corpora.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from textcause.analysis.frame import ci_label, load_results
from textcause.analysis.inference import seed_summary
from textcause.analysis.names import estimator_order, model_labels
from textcause.io import atomic_write_text
from textcause.reports.appendix_g import agreement_section, shown_file
from textcause.reports.doubly_robust import doubly_robust_models, doubly_robust_section
from textcause.reports.figures import INTERVAL_LABELS, draw_figures, resolve_interval
from textcause.reports.intervals import intervals_section
from textcause.reports.markup import Block, Bullets, Heading, Image, Para, to_html, to_markdown
from textcause.reports.sections import (
    ad_interval_section,
    comparison_section,
    coverage_section,
    failed_section,
    findings_section,
    headline_section,
    placebo_section,
    seed_words,
    task_tables,
)
from textcause.reports.timing import time_section
from textcause.reports.tuning import tuning_section
from textcause.simulation.tasks import list_tasks, same_draw_groups, task_label
from textcause.validation import check_that

__all__ = [
    "build_report",
    "write_report",
]

#: Fig. 7's Spearman panel, read right (:func:`textcause.metrics.propensity.spearman_ceiling`).
_SPEARMAN_NOTE = (
    "Spearman's ceiling: the true propensity of every task takes two values (one per latent class), so a model "
    "whose scores have no ties correlates at most sqrt(3 pi (1 - pi)) with it, 0.866 at the paper's equal class "
    "shares, even when it ranks every pair of classes correctly; only the oracle, whose ties are the truth's, "
    "reaches 1. Read 0.866 as a perfect ranking. Rows evaluated since the `rank_agreement` column exists also "
    "carry Somers' D of the estimate given the truth (pairs the truth ties left out), which is 1 for such a ranking."
)


def build_report(
    data: pd.DataFrame,
    out_dir: str | Path,
    *,
    interval: str = "auto",
    estimator: str = "stratified",
    formats: Sequence[str] = ("png", "svg"),
    source: str = "",
    summary: pd.DataFrame | None = None,
) -> tuple[list[Block], dict[str, list[Path]]]:
    """Draw the figures into ``out_dir`` and return the report's blocks and the figure paths.

    ``summary`` is :func:`~textcause.analysis.inference.seed_summary` of ``data`` when the caller has it
    already (None: computed here); it is the slowest step of a report on a large grid.
    """
    data = load_results(data)
    out_dir = Path(out_dir)
    summary = seed_summary(data) if summary is None else summary
    interval = resolve_interval(summary, interval)
    seeds = summary.loc[summary["n_seeds"] > 0, "n_seeds"]
    estimators = estimator_order(summary["estimator"])
    blocks: list[Block] = [
        Heading(1, "textcause benchmark report"),
        Bullets(
            [
                f"Source: `{source}`" if source else "Source: a DataFrame",
                f"{len(data)} result rows; corpora: {', '.join(sorted(set(data['corpus'])))}; "
                f"{data['model'].nunique()} models; estimators: {', '.join(estimators) or 'none'}",
                *([f"Grids: {', '.join(sorted(set(data['grid'].dropna().astype(str))))}"] if "grid" in data else []),
                f"Seeds per method and task level: {seed_words(seeds)} "
                "(each seed redraws class assignment, treatments, outcomes and the split)",
                f"Per-cell intervals: {ci_label(data)} (95%); they describe one draw, not the method",
                *(
                    [
                        "AIPW and TMLE rows (models with an outcome model: "
                        f"{', '.join(model_labels(dr).values())}) also have an influence-function interval; "
                        'the section "Doubly robust vs propensity-only" reports the coverage of each interval kind'
                    ]
                    if (dr := doubly_robust_models(summary))
                    else []
                ),
                *_same_draw_bullets(data),
                f"Figures: {INTERVAL_LABELS[interval]}",
                "Claims about methods use the seeds: means and spreads over seeds, and paired comparisons with the "
                "corrected resampled t-test and Holm's correction.",
            ]
        ),
    ]
    blocks += headline_section(summary, estimator) + findings_section(data)
    written: dict[str, list[Path]] = {}
    if summary.empty:
        blocks.append(Para("**No cell produced an estimate**: see the failed cells below."))
    for corpus in sorted(set(summary["corpus"])):
        figs = draw_figures(summary, out_dir, corpus=corpus, interval=interval, formats=formats)
        written.update(figs)
        blocks.append(Heading(2, f"Results on {corpus}"))
        captions = {
            "fig4": "Treatment accuracy and bias by task (Fig. 4)",
            "fig6": "Bias by estimator (Fig. 6)",
            "fig7": "Accuracy, IPTW weight MSE and Spearman (Fig. 7)",
            "fig11": "Order of Text (Fig. 11)",
        }
        for stem in figs:
            caption = captions[stem.split("_")[0]]
            blocks += [Heading(3, caption), Image(shown_file(stem, figs[stem]), caption)]
            if stem.startswith("fig7"):
                blocks.append(Para(_SPEARMAN_NOTE))
        blocks += [Heading(3, f"Tables by task ({corpus}): mean ± sd over seeds")] + task_tables(summary, corpus)
    blocks += comparison_section(data, estimator)
    blocks += placebo_section(summary) + (coverage_section(summary) if len(summary) else [])
    blocks += intervals_section(summary) if len(summary) else []
    blocks += doubly_robust_section(summary, data) + ad_interval_section(data)
    agreement, figs = agreement_section(data, out_dir, formats)
    written.update(figs)
    blocks += agreement + tuning_section(data) + time_section(data) + failed_section(data)
    return blocks, written


def _same_draw_bullets(data: pd.DataFrame) -> list[str]:
    """A line on the task levels that are one experiment (the same spec: one draw per seed, identical rows)."""
    order = {tl: i for i, tl in enumerate(list_tasks())}
    present = set(zip(data["task"].astype(str), data["level"].astype(int)))
    levels = sorted(present, key=lambda tl: (order.get(tl, len(order)), tl))
    groups = same_draw_groups(levels)
    if not groups:
        return []
    names = "; ".join(" = ".join(f"{task_label(t)} {lv}" for t, lv in g) for g in groups)
    distinct = len(levels) - sum(len(g) - 1 for g in groups)
    return [
        f"Same experiment under another name: {names} (the same inserted posts and probabilities, so the same "
        f"draw under each seed and identical rows): {distinct} distinct experiments among {len(levels)} task levels"
    ]


def write_report(
    source: Any,
    out_dir: str | Path,
    *,
    interval: str = "auto",
    estimator: str = "stratified",
    formats: Sequence[str] = ("png", "svg"),
    grid: str | None = None,
    corpora: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Write the figures, ``report.md``, ``report.html`` and ``seed_summary.csv`` into ``out_dir``.

    Args:
        source: the results (DataFrame, SQLite path, CSV / Parquet file or SQLAlchemy URL).
        out_dir: the output folder (created).
        interval: figure error bars: ``auto``, ``seeds`` or ``bootstrap``.
        estimator: the estimator compared with the unadjusted estimate in the comparison table.
        formats: figure formats.
        grid: only this grid's rows (a database may hold several grids).
        corpora: only these corpora's rows (default: every corpus).

    Returns:
        ``{"markdown": path, "html": path, "summary": path, "figures": {stem: [paths]}}``.

    Raises:
        ValueError: a corpus of ``corpora`` has no rows (the sentence names it and lists the corpora there are).
    """
    data = load_results(source, grid=grid)
    if corpora is not None:
        data = _only_corpora(data, corpora)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    label = "" if isinstance(source, pd.DataFrame) else str(source)
    label += f" (grid {grid})" if grid else ""
    label += f" (corpora {', '.join(sorted(set(data['corpus'])))})" if corpora is not None else ""
    summary_frame = seed_summary(data)  # once: the report's tables and figures and the CSV share it
    blocks, figures = build_report(
        data, out_dir, interval=interval, estimator=estimator, formats=formats, source=label, summary=summary_frame
    )
    md = atomic_write_text(out_dir / "report.md", to_markdown(blocks))
    page = atomic_write_text(out_dir / "report.html", to_html(blocks, "textcause benchmark report", base_dir=out_dir))
    summary = atomic_write_text(out_dir / "seed_summary.csv", summary_frame.to_csv(index=False))
    return {"markdown": md, "html": page, "summary": summary, "figures": figures}


def _only_corpora(data: pd.DataFrame, corpora: Sequence[str]) -> pd.DataFrame:
    """The rows of ``data`` whose corpus is one of ``corpora``.

    Raises:
        ValueError: ``corpora`` is empty or not names, or names a corpus without rows.
    """
    names = [corpora] if isinstance(corpora, str) else corpora
    check_that(
        isinstance(names, (list, tuple)) and bool(names) and all(isinstance(c, str) for c in names),
        corpora,
        "corpora",
        "write_report",
        "a non-empty list of corpus names",
    )
    have = sorted(set(data["corpus"]))
    missing = [c for c in names if c not in have]
    if missing:
        what = f"corpus {missing[0]!r}" if len(missing) == 1 else f"corpora {missing}"
        raise ValueError(f"No results for {what}; the table has the corpora {have}.")
    return data[data["corpus"].isin(names)]

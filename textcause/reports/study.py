"""An observational study's results as CSV, Markdown, JSON and its figure (:func:`write_outputs`).

The rows and the disagreement summary come from :mod:`textcause.analysis.study`; the figure from
:mod:`textcause.reports.study_figure`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textcause.analysis.study import RESULT_COLUMNS
from textcause.estimators.registry import ESTIMATOR_LABELS
from textcause.io import atomic_write_json, atomic_write_text
from textcause.reports.markup import Bullets, Heading, Image, Para, Table, to_markdown

__all__ = [
    "to_csv",
    "write_outputs",
]


def _fmt(value: Any, signed: bool = True) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _interval(est: Any, lo: Any, hi: Any, signed: bool = True) -> str:
    if est is None:
        return "-"
    if lo is None or hi is None:
        return _fmt(est, signed)
    return f"{_fmt(est, signed)} [{_fmt(lo, signed)}, {_fmt(hi, signed)}]"


def _results_table(rows: Sequence[dict[str, Any]], estimators: Sequence[str]) -> Table:
    """Model | treatment accuracy [95% CI] | ATE [95% CI] per estimator (``*``: the interval excludes 0)."""
    header = ["Model", "Treatment accuracy"] + [f"ATE {ESTIMATOR_LABELS.get(e, e)}" for e in estimators]
    body = []
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model]
        first = mine[0]
        if first.get("estimator") is None:
            body.append([first["label"], f"failed: {first.get('error')}"] + [""] * len(estimators))
            continue
        line = [
            first["label"],
            _interval(first["treatment_accuracy"], first["accuracy_ci_low"], first["accuracy_ci_high"], signed=False),
        ]
        for est in estimators:
            r = next((x for x in mine if x["estimator"] == est), None)
            if r is None or r.get("ate") is None:
                line.append(f"failed: {r.get('error')}" if r is not None and r.get("error") else "-")
            else:
                line.append(_interval(r["ate"], r["ci_low"], r["ci_high"]) + (" *" if r["excludes_zero"] else ""))
        body.append(line)
    return Table(header, body)


def _disagreement_bullets(summary: dict[str, dict[str, Any]], labels: dict[str, str]) -> list[str]:
    """One sentence per estimator saying where the models disagree."""
    items = []
    name = lambda m: labels.get(m, m)  # noqa: E731
    for est, s in summary.items():
        if s["n_models"] == 1:
            text = f"{ESTIMATOR_LABELS.get(est, est)}: the only text model, {name(s['min_model'])}, estimates {s['min']:+.3f}"
        else:
            text = (
                f"{ESTIMATOR_LABELS.get(est, est)}: the {s['n_models']} text models estimate from "
                f"{s['min']:+.3f} ({name(s['min_model'])}) to {s['max']:+.3f} ({name(s['max_model'])}), "
                f"a spread of {s['spread']:.3f}"
            )
        if s["unadjusted"] is not None:
            text += f" (unadjusted: {s['unadjusted']:+.3f})"
        text += f"; {len(s['excludes_zero'])} interval(s) exclude 0 and {len(s['includes_zero'])} include it"
        if s["non_overlapping"]:
            shown = ", ".join(f"{name(a)} vs {name(b)}" for a, b in s["non_overlapping"][:4])
            more = f" and {len(s['non_overlapping']) - 4} more" if len(s["non_overlapping"]) > 4 else ""
            text += f"; {len(s['non_overlapping'])} pair(s) of models have disjoint intervals ({shown}{more})"
        else:
            text += "; every pair of intervals overlaps"
        if s["accuracy_ate_spearman"] is not None:
            text += (
                f"; Spearman correlation of treatment accuracy and ATE across models: {s['accuracy_ate_spearman']:+.2f}"
            )
        items.append(text + ".")
    return items


def to_csv(rows: Sequence[dict[str, Any]]) -> str:
    """The result rows as CSV text with the study's result columns (other keys dropped)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=RESULT_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _report_markdown(
    rows: Sequence[dict[str, Any]],
    summary: dict[str, dict[str, Any]],
    *,
    title: str,
    about: Sequence[str],
    estimators: Sequence[str],
    figure: str | None = None,
) -> str:
    """The study's Markdown report: what was studied, the table, the disagreement, the figure."""
    labels = {r["model"]: r["label"] for r in rows}
    blocks: list[Any] = [
        Heading(1, title),
        Bullets(list(about)),
        Heading(2, "Results"),
        _results_table(rows, estimators),
        Para(
            "Intervals: 95% percentile bootstrap over the evaluation users (ATE and treatment "
            "accuracy). `*`: the ATE interval excludes 0. There is no ground truth: agreement "
            "between models is necessary for a credible estimate, not sufficient."
        ),
    ]
    if summary:
        blocks += [Heading(2, "Where the models disagree"), Bullets(_disagreement_bullets(summary, labels))]
    if figure:
        blocks.append(Image(figure, f"{title}: treatment accuracy and ATE per model"))
    return to_markdown(blocks)


def write_outputs(spec: Any, task: Any, out_dir: Path) -> dict[str, Any]:
    """Write results.json / .csv / .md and the figure from the finished models' records.

    Args:
        spec: the :class:`~textcause.observational.spec.ObservationalSpec`.
        task: its task (for the counts).
        out_dir: the study's output folder (its ``models/*.json`` records are read).

    Returns:
        ``{"study", "rows", "disagreement", "files"}`` as also written to ``results.json``.
    """
    from textcause.analysis.study import disagreement, result_rows
    from textcause.experiments.observational import load_records
    from textcause.reports.study_figure import draw_study_figure

    info = dict(task.info)
    rows = result_rows(load_records(spec, out_dir), study=spec.name, corpus=spec.corpus)
    summary = disagreement(rows, spec.estimators)
    n_eval = len(task.split[spec.split])
    t_eval = task.treatment[task.split[spec.split]]
    chance = float(max(t_eval.mean(), 1.0 - t_eval.mean()))
    threshold = info["threshold"]
    outcome = info["outcome"] if threshold is None else f"{info['outcome']} > {threshold:.3g}"
    subtitle = (
        f"T: {info['treatment']}; Y: {outcome}; {info['n_users']} users, "
        f"{n_eval} in the {spec.split} split; seed {spec.seed}"
    )
    title = f"{spec.name}: {spec.description}" if spec.description else spec.name
    stem = f"fig2_{spec.name}"
    files: list[Path] = []
    if rows:
        files = draw_study_figure(
            rows, out_dir, stem, estimators=spec.estimators, title=title, subtitle=subtitle, chance=chance
        )
    text = f"{spec.text_posts} posts" if spec.text_posts else f"{spec.text_fraction:g} of the posts"
    about = [
        (
            f"Corpus: `{spec.corpus}` ({info['n_corpus']} users read; {info['n_filtered']} after the filter, "
            f"{info['n_eligible']} with enough posts, {info['n_users']} studied)."
        ),
        f"Treatment: {info['treatment']}: {info['n_treated']} treated, {info['n_control']} control.",
        (
            f"Text: the first {text} (mean {info['mean_text_posts']:.1f} posts); the outcome comes from the later "
            f"posts (mean {info['mean_later_posts']:.1f})."
        ),
        f"Outcome: Y = {outcome} (mean Y {info['outcome_mean']:.3f}).",
        (
            f"Split: 40/10/50 (seed {spec.seed}); evaluated on the {n_eval} users of the {spec.split} split; "
            f"{spec.n_boot} bootstrap replicates."
        ),
    ]
    study = {
        "name": spec.name,
        "description": spec.description,
        "config": spec.source,
        "corpus": spec.corpus,
        "seed": spec.seed,
        "split": spec.split,
        "n_eval": n_eval,
        "chance_accuracy": chance,
        "estimators": list(spec.estimators),
        "models": spec.model_names,
        **info,
    }
    markdown = _report_markdown(
        rows, summary, title=title, about=about, estimators=spec.estimators, figure=f"{stem}.png" if files else None
    )
    written = [
        atomic_write_text(out_dir / "results.md", markdown),
        atomic_write_text(out_dir / "results.csv", to_csv(rows)),
    ]
    result = {"study": study, "rows": rows, "disagreement": summary}
    written.append(atomic_write_json(out_dir / "results.json", result))
    result["files"] = [str(p) for p in written + files]
    return result

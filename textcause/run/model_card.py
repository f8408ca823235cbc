"""The model card: a Markdown page beside a trained run's checkpoints saying what the model is and what its numbers mean.

:func:`_write_model_card` writes ``model_card.md`` into the run folder (which holds ``config.yaml``
and ``checkpoints/``, everything ``textcause predict`` needs) after every evaluation of the run
(:func:`~textcause.run.fit.fit_and_evaluate`, ``evaluate.py``, ``train.py test``), atomically. It
says: the corpus, the task and level, the representation and its featurizer, the training settings
(seed, epochs, optimizer, learning rate, weight decay, trainer), the validation metrics of the best
checkpoint (from the run's CSV log), the estimates with their bootstrap intervals, flags on numbers
that should not be trusted (a model at chance, dropped strata or unmatched units, failed estimators),
a link to the run's propensity overlap figure when one was drawn (``propensity_overlap.png``:
:mod:`textcause.run.figure`), and the limitations of the model's numbers.
"""

from __future__ import annotations

import csv
import datetime
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

from textcause.io import atomic_write_text
from textcause.run.dotted import dotted_get

__all__ = [
    "CHANCE_MARGIN",
    "FILE",
    "flags",
    "model_card_text",
    "write_run_card",
]

FILE = "model_card.md"
#: Treatment accuracy within this of the majority-class rate counts as "at chance".
CHANCE_MARGIN = 0.02


def _fmt(value: Any, spec: str = "+.3f") -> str:
    if isinstance(value, bool) or value is None:
        return "-" if value is None else str(value)
    if isinstance(value, float):
        return format(value, spec) if math.isfinite(value) else "-"
    return str(value)


def _init_args(config: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = config.get(key) or {}
    return (value.get("init_args") or {}) if ("class_path" in value or "init_args" in value) else value


def _callback(config: Mapping[str, Any], name: str) -> Optional[Mapping[str, Any]]:
    for cb in dotted_get(config, "trainer.callbacks", []) or []:
        if isinstance(cb, Mapping) and str(cb.get("class_path", "")).endswith(name):
            return cb.get("init_args") or {}
    return None


def _validation_metrics(log_dir: Path, monitor: str = "val_loss", mode: str = "min") -> dict[str, Any]:
    """The validation row of the best epoch in a run's CSV log (``metrics.csv`` and its resumed parts).

    Returns:
        ``{"epoch": ..., "epochs": epochs logged, "metrics": {name: value}}``; empty without a log.
    """
    rows: list[dict[str, str]] = []
    for path in sorted(Path(log_dir).glob("metrics*.csv")):
        with open(path, newline="", encoding="utf-8") as fh:
            rows.extend(csv.DictReader(fh))
    epochs = [int(float(r["epoch"])) for r in rows if r.get("epoch")]
    scored = [r for r in rows if (r.get(monitor) or "").strip()]
    if not scored:
        return {"epochs": max(epochs) + 1 if epochs else None} if epochs else {}
    pick = (min if mode == "min" else max)(scored, key=lambda r: float(r[monitor]))
    metrics = {k: float(v) for k, v in pick.items() if k.startswith("val") and (v or "").strip()}
    return {"epoch": int(float(pick["epoch"])), "epochs": max(epochs) + 1, "metrics": metrics}


def flags(rows: Sequence[Mapping[str, Any]], treated_share: Optional[float] = None) -> list[str]:
    """Warnings about numbers not to be trusted: a model at chance, dropped units, failed estimators."""
    out = []
    if rows:
        acc = rows[0].get("treatment_accuracy")
        if treated_share is not None and isinstance(acc, float) and math.isfinite(acc):
            chance = max(treated_share, 1.0 - treated_share)
            if acc <= chance + CHANCE_MARGIN:
                out.append(
                    f"Treatment accuracy {acc:.3f} is at chance (the majority class alone scores {chance:.3f}): "
                    "the model has not learned the treatment from the text, and its adjusted estimates are "
                    "close to the unadjusted one."
                )
    for row in rows:
        if row.get("error"):
            out.append(f"{row['estimator']}: no estimate ({row['error']}).")
        elif (row.get("n_dropped") or 0) > 0:
            why = {"stratified": "in strata with one treatment class", "matching": "without a match within the caliper"}
            out.append(
                f"{row['estimator']} dropped {row['n_dropped']} of {row['n_dropped'] + (row.get('n_used') or 0)} "
                f"users ({why.get(row['estimator'], 'it could not use')}): its estimate is of the users kept, not of all."
            )
    return out


def model_card_text(
    *,
    meta: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    config: Mapping[str, Any],
    representation: Mapping[str, Any],
    checkpoint: Optional[Path],
    log_dir: Optional[Path],
    n_boot: int,
    split_sizes: Optional[Mapping[str, int]] = None,
    treated_share: Optional[float] = None,
    has_featurizer: bool = False,
    figure: Optional[str] = None,
) -> str:
    """The Markdown of a run's model card (see the module docstring); ``figure``: the file name of the
    run's propensity overlap figure in the card's folder (:mod:`textcause.run.figure`), linked."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        tool = f"textcause {version('textcause')}"
    except PackageNotFoundError:  # pragma: no cover - a source tree without an install
        tool = "textcause"
    model = _init_args(config, "model")
    data = _init_args(config, "data")
    trainer = config.get("trainer") or {}
    observational = bool(data.get("observational"))
    rep = meta.get("representation")
    lines = [
        f"# Model card: {meta.get('model')} ({rep}) propensity model",
        "",
        f"Written by {tool} on {datetime.date.today().isoformat()} for the run `{log_dir}`"
        + (f", checkpoint `{Path(checkpoint).name}`." if checkpoint else " (a baseline: no checkpoint)."),
        "",
        "A propensity model estimates P(T = 1 | text): the chance that a user is treated given what they "
        "wrote. Its propensities adjust the treatment effect estimates below for confounding by the text.",
        "",
        "## Data",
        "",
        f"- corpus: `{meta.get('corpus')}`",
    ]
    if observational:
        lines.append(f"- task: observational study `{data.get('observational')}` (real treatment and outcome)")
    else:
        lines.append(
            f"- task: `{meta.get('task')}` level {meta.get('level')} (semi-synthetic: real text, simulated "
            f"treatment and outcome; true ATE {_fmt(meta.get('true_ate'))})"
        )
    if split_sizes:
        lines.append("- users: " + ", ".join(f"{n} {split}" for split, n in split_sizes.items()))
    lines.append(
        f"- posts per user: {data.get('min_posts', 10)} to {data.get('max_posts', 60)} (first posts kept)"
        if not observational
        else "- users and posts: as the study config decides"
    )
    desc = f"- representation: `{rep}`"
    if representation.get("vocabulary_size"):
        desc += (
            f", {representation['vocabulary_size']} n-grams used by at least {data.get('min_users', 10)} training users"
        )
    if representation.get("encoder"):
        desc += f", frozen encoder `{representation['encoder']}` ({data.get('max_tokens', 64)} tokens a post)"
    if data.get("scale"):
        desc += f", scaled by `{data['scale']}`"
    lines.append(desc)
    lines.append(
        "- featurizer: saved in the checkpoint (vocabulary / topics / encoder identity): "
        "`textcause predict RUN_DIR --corpus new.csv --out propensities.csv` scores new users exactly as training did"
        if has_featurizer
        else "- featurizer: not saved in the checkpoint (a baseline, or a run of an older version)"
    )
    lines += ["", "## Training", "", "| setting | value |", "|---|---|"]
    early = _callback(config, "EarlyStopping")
    if early and model.get("early_stopping_patience") is not None:  # the model's own replaces the trainer's
        early = {"monitor": "val_loss", "patience": model["early_stopping_patience"]}
    ckpt_cb = _callback(config, "ModelCheckpoint") or {}
    valid = (
        _validation_metrics(log_dir, ckpt_cb.get("monitor", "val_loss"), ckpt_cb.get("mode", "min")) if log_dir else {}
    )
    settings = [
        ("seed", config.get("seed_everything", meta.get("seed"))),
        ("model", dotted_get(config, "model.class_path")),
        ("network", dotted_get(config, "model.init_args.net.class_path")),
        ("optimizer", model.get("optimizer")),
        ("learning rate", model.get("lr")),
        ("weight decay", model.get("weight_decay")),
        ("L1 penalty on the input weights", model.get("l1") or None),  # shown when the model has one
        ("batch size", data.get("batch_size")),
        ("max epochs", trainer.get("max_epochs")),
        ("epochs trained", valid.get("epochs")),
        ("early stopping", f"{early.get('monitor')}, patience {early.get('patience')}" if early else None),
        ("best checkpoint by", f"{ckpt_cb.get('monitor', 'val_loss')} ({ckpt_cb.get('mode', 'min')})"),
        (
            "trainer",
            f"{trainer.get('accelerator') or 'auto'}, {trainer.get('devices') or 'auto'} device(s), "
            f"precision {trainer.get('precision') or '32-true'}, strategy {trainer.get('strategy') or 'auto'}",
        ),
    ]
    lines += [f"| {name} | {value} |" for name, value in settings if value is not None]
    lines += ["", "## Validation metrics", ""]
    if valid.get("metrics"):
        lines += [f"Of the best checkpoint (epoch {valid['epoch']}), from the run's `metrics.csv`:", ""]
        lines += ["| metric | value |", "|---|---|"]
        lines += [f"| {k} | {v:.4f} |" for k, v in sorted(valid["metrics"].items())]
    else:
        lines.append("None logged (a baseline, or a run without a CSV log).")
    split = meta.get("split", "test")
    n = split_sizes.get(split) if split_sizes else None
    lines += [
        "",
        f"## Estimates on the {split} split" + (f" ({n} users)" if n else ""),
        "",
        f"95% intervals: {n_boot} bootstrap replicates over users" if n_boot else "No intervals (n_boot = 0).",
        "",
        "| estimator | ATE | 95% interval | bias | n_used | n_dropped |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        ci = f"[{_fmt(r.get('ci_low'))}, {_fmt(r.get('ci_high'))}]" if r.get("ci_low") is not None else "-"
        lines.append(
            f"| {r['estimator']} | {_fmt(r.get('ate'))} | {ci} | {_fmt(r.get('bias'))} | "
            f"{_fmt(r.get('n_used'))} | {_fmt(r.get('n_dropped'))} |"
        )
    if not observational:
        lines += ["", f"True ATE {_fmt(meta.get('true_ate'))}; sample ATE {_fmt(meta.get('sample_ate'))}."]
    if rows:
        metric_names = ("treatment_accuracy", "ece", "brier", "iptw_weight_mse", "spearman")
        found = [(m, rows[0].get(m)) for m in metric_names if rows[0].get(m) is not None]
        lines += ["", "Propensity metrics: " + ", ".join(f"{m} {_fmt(v, '.3f')}" for m, v in found) + "."]
    if figure:
        lines += [
            "",
            f"Propensity overlap (the estimated propensities of the {split} users by treatment arm"
            + ("" if observational else ", the true propensities marked")
            + f"): [{figure}]({figure})",
        ]
    warn = flags(rows, treated_share)
    lines += ["", "## Flags", ""]
    lines += (
        [f"- {w}" for w in warn]
        if warn
        else ["None: no estimator dropped users or failed, and the model is above chance."]
    )
    lines += ["", "## Limitations", ""]
    limits = []
    if observational:
        limits.append(
            "The treatment and the outcome are real, so there is no true ATE: these estimates can be compared "
            "with each other, never scored for bias, and they are causal only if the text holds every confounder."
        )
    else:
        limits.append(
            "The task is semi-synthetic: the text is real but the treatment and outcome were simulated from "
            "it, so the true ATE and bias are known only in this simulation. Good numbers here show that the "
            "model can recover a confounding signal of this kind, not that it adjusts for the confounders of "
            "a real study."
        )
    limits += [
        "Propensity accuracy is not the goal: a model that predicts the treatment better can give a more "
        "biased estimate (it may pick up signals that are not confounders, or give extreme weights), so "
        "judge a model by the bias of its estimates on tasks with known truth, not by its accuracy or "
        "calibration alone (Weld et al., 2022, section 7).",
        "The intervals are bootstrap intervals over the evaluated users with the model held fixed: they do "
        "not include the variation from retraining (seeds, splits); compare models across seeds for that.",
        "The model is fitted to the training corpus's users and language; scores of other users (another "
        "platform, period or population) are extrapolations. N-grams outside the saved vocabulary are "
        "ignored, and users with few posts carry little signal.",
        "Estimates from propensities assume overlap (every user could have been treated or not) and no "
        "confounder outside the text.",
    ]
    lines += [f"- {x}" for x in limits]
    return "\n".join(lines) + "\n"


def _write_model_card(folder: Path, **kwargs: Any) -> Path:
    """Write ``model_card.md`` (:func:`model_card_text` of ``kwargs``) into ``folder``, atomically."""
    return atomic_write_text(Path(folder) / FILE, model_card_text(**kwargs))


def write_run_card(result: Any, data: Any, evaluation: Any, *, figure: Optional[Path] = None) -> Optional[Path]:
    """The model card of an evaluated run (a :class:`~textcause.run.evaluation.RunResult`) in its log folder.

    The run's resolved ``config.yaml`` gives the training settings; ``data`` (its data module) the
    split sizes and whether a featurizer is saved; ``figure`` the run's propensity overlap figure
    (linked by its name: it lies in the same folder). A card that cannot be written is a warning: the
    results it describes are written already.
    """
    import warnings

    import numpy as np

    from textcause.io import load_yaml

    folder = result.log_dir
    if folder is None:
        return None
    try:
        config_path = Path(folder) / "config.yaml"
        config = load_yaml(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
        task = getattr(data, "task", None)
        split = getattr(task, "split", None)
        sizes = {s: len(split[s]) for s in ("train", "val", "test")} if split is not None else None
        t = result.predictions.get("t")
        featurizer = getattr(data, "featurizer", None) or {}
        return _write_model_card(
            Path(folder),
            meta=result.meta,
            rows=result.rows,
            config=config or {},
            representation=result.representation,
            checkpoint=result.checkpoint,
            log_dir=Path(folder),
            n_boot=evaluation.n_boot,
            split_sizes=sizes,
            treated_share=float(np.mean(t)) if t is not None and len(t) else None,
            has_featurizer=bool(featurizer) and featurizer.get("representation") != "none",
            figure=Path(figure).name if figure is not None else None,
        )
    except Exception as err:
        warnings.warn(f"Could not write the model card in '{folder}': {err}", RuntimeWarning, stacklevel=2)
        return None

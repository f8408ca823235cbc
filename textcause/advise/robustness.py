"""Stages 3 and 4: refute the recommended estimate and measure its sensitivity to hidden confounding.

:func:`robustness` reads the study's users (treatment, outcome and the features the recommended
model reads, :func:`study_data`), makes the recommended model x estimator refittable
(:func:`textcause.advise.refit.plan_for`), and runs

* the three refuters of :mod:`textcause.sensitivity` (placebo treatment: permuted T, expected 0;
  random common cause: a noise covariate appended to the features, the estimate should not move;
  subsample: 5 subsets of 80% of each arm) on the refit's ``estimate(t, y, X, rng)``;
* the Austen plot, the robustness value and the E-value (:mod:`textcause.advise.confounding`), with
  the reported estimate as the target bias;

and returns what the report shows and ``advise.json`` keeps: plain numbers, the refuters' table, the
figure's file and one sentence on how strong a hidden confounder would have to be. A failure of
these stages is reported (``status: failed`` with its reason), never fatal to the advice before it.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from textcause.advise.confounding import headline, sensitivity
from textcause.advise.refit import FOLDS, RefitPlan, folds_of, plan_for, tuned_of
from textcause.reports.figures import save_figure
from textcause.sensitivity import austen_figure, placebo_treatment, random_common_cause, subsample

__all__ = ["StudyData", "robustness", "study_data"]


@dataclass(frozen=True)
class StudyData:
    """The study's users as the refit reads them: ``t``, ``y``, features ``X`` (None for none), the
    features' names, and the number of users the model's own run trained on."""

    t: np.ndarray
    y: np.ndarray
    X: Any
    terms: list[str] | None
    n_train: int


def study_data(study: Path, representation: str, overrides: dict[str, Any] | None = None) -> StudyData:
    """The study's users with the features of ``representation``, built as the model's run built them
    (the study's seed and its ``data.*`` options that apply to a study)."""
    import dataclasses

    from textcause.data.build import SIMULATION_FIELDS, DataSettings, build_data
    from textcause.data.featurizer import unpack_terms
    from textcause.observational.spec import load_spec

    spec = load_spec(study)
    fields = {f.name for f in dataclasses.fields(DataSettings)} - set(SIMULATION_FIELDS) - {"observational", "seed"}
    options = {k[5:]: v for k, v in (overrides or {}).items() if k.startswith("data.") and k[5:] in fields}
    options["representation"] = representation
    built = build_data(DataSettings(observational=str(study), seed=spec.seed, **options))
    task = built.task
    X = None if representation == "none" else built.features
    terms = None
    ngram = (built.featurizer or {}).get("ngram") or {}
    if X is not None and "terms" in ngram and representation != "lda":
        terms = unpack_terms(ngram["terms"])
    elif X is not None:
        terms = [f"lda topic {i}" for i in range(X.shape[1])]
    t = np.asarray(task.treatment, dtype=float)
    return StudyData(t, np.asarray(task.outcome, dtype=float), X, terms, int(len(task.split.train)))


def _plan(study: Path, model: str, estimate_dir: Path) -> tuple[RefitPlan, StudyData]:
    """The recommended model's refit plan and the study's users with the features it reads."""
    from textcause.observational.spec import load_spec

    spec = load_spec(study)
    paths = dict(spec.models)
    config = Path(paths[model]) if model in paths else None
    overrides = dict(spec.overrides_for(model)) if model in paths else {}
    record_path = estimate_dir / "models" / f"{model}.json"
    record = json.loads(record_path.read_text(encoding="utf-8")) if record_path.is_file() else {}
    features = plan_for(model, config, overrides=overrides, n_train=1).representation  # needs no checkpoint
    data = study_data(study, features, overrides)
    plan = plan_for(
        model,
        config,
        overrides=overrides,
        n_train=data.n_train,
        checkpoint=record.get("checkpoint"),
        tuned=tuned_of(record),
    )
    return plan, data


def _refute(estimate: Any, data: StudyData, seed: int) -> tuple[tuple[Any, ...], tuple[float, float, float]]:
    """The three refuters, and the refit's own ``(point, low, high)`` on all users (computed once)."""
    original = estimate(data.t, data.y, data.X, np.random.default_rng(seed))
    t, y, X = data.t, data.y, data.X
    return (
        placebo_treatment(estimate, t, y, X, seed=seed),
        random_common_cause(estimate, t, y, X, original=original[0], seed=seed),
        subsample(estimate, t, y, X, original=original[0], seed=seed),
    ), original


def _refutation_row(r: Any) -> dict[str, Any]:
    return {
        "refuter": r.refuter,
        "new_estimate": r.new_estimate,
        "new_low": r.new_low,
        "new_high": r.new_high,
        "expected": r.expected,
        "passed": r.passed,
        "reason": r.reason,
    }


def robustness(
    study: Path,
    best: dict[str, Any],
    reported: tuple[float, float, float] | None,
    *,
    binary: bool,
    e_value: bool,
    out: Path,
    name: str,
    estimate_dir: Path,
    seed: int = 0,
    n_boot: int = 200,
) -> dict[str, Any]:
    """Refuters and sensitivity of the recommended estimate.

    Args:
        study: the study config :func:`textcause.advise.inputs.prepare` wrote.
        best: the recommended pair (``model``, ``estimator``).
        reported: its ``(ate, ci_low, ci_high)`` on the real data (None: not estimated, e.g. a
            method; the refit's own estimate on all users stands in).
        binary: whether Y is binary; e_value: whether an E-value was asked for.
        out: where the Austen figure goes (``austen_<name>.png``); name: the study's name.
        estimate_dir: the estimate stage's folder (the recommended model's record and checkpoint).
        seed: the refuters' and folds' seed; n_boot: bootstrap replicates of each refit's interval.

    Returns:
        ``{"status": "ok", "refit", "estimate", "refuters", "austen", "robustness_value", "e_value",
        "sentence", "figure", "seconds"}``, or ``{"status": "failed", "reason"}`` when a stage
        cannot be computed on these data.
    """
    started = time.perf_counter()
    try:
        plan, data = _plan(study, best["model"], estimate_dir)
        refuters, refit = _refute(plan.estimate_fn(best["estimator"], n_boot=n_boot), data, seed)
        ate, low, high = reported if reported is not None else refit
        folds = folds_of(data.t, FOLDS, seed)
        found = sensitivity(
            plan, data.t, data.y, data.X, data.terms, folds, bias=ate, binary=binary, e_value_asked=e_value, seed=seed
        )
    except ValueError as err:
        return {"status": "failed", "reason": str(err)}
    curve, rv, ols = found["curve"], found["rv"], found["ols"]
    fig = austen_figure(curve, title=f"Bias = {ate:+.3g} (the estimate)")
    figure = save_figure(fig, out, f"austen_{name}", formats=("png",))[0]
    ev = found["e_value"]
    rr = found["risk_ratio"]
    return {
        "status": "ok",
        "refit": {
            **asdict(plan),
            "estimator": best["estimator"],
            "folds": len(folds),
            "n_boot": n_boot,
            "outcome_model": found["outcome_model"],
        },
        "estimate": {
            "ate": ate,
            "ci_low": low,
            "ci_high": high,
            "source": "the study's estimate" if reported is not None else "the refit on all users",
            "refit_on_all_users": list(refit),
        },
        "refuters": [_refutation_row(r) for r in refuters],
        "austen": {
            "bias": curve.bias,
            "balanced": curve.balanced(),
            "alpha": curve.alpha.tolist(),
            "r2": curve.r2.tolist(),
            "benchmarks": [asdict(b) for b in curve.benchmarks],
            "beyond": [b.name for b in curve.beyond()],
            "groups": found["groups"],
        },
        "robustness_value": {
            "summary": found["rv_summary"],
            "ols_estimate": ols.estimate,
            "se": ols.se,
            "t_statistic": ols.t_statistic,
            "dof": ols.dof,
            "rv_q": rv.rv_q,
            "rv_qa": rv.rv_qa,
            "partial_r2": rv.partial_r2,
        },
        "e_value": None
        if ev is None
        else {"rr": rr.rr, "rr_low": rr.low, "rr_high": rr.high, "point": ev.point, "ci": ev.ci},
        "e_value_note": (
            "computed (AIPW risk ratio from the same g and Q, propensities clipped to [0.01, 0.99])"
            if ev is not None
            else f"not computed: {found['e_value_error']}"
            if found.get("e_value_error")
            else ("not asked for (e_value: false)" if binary else "not defined: the outcome is not binary")
        ),
        "sentence": headline(ate, low, high, curve, rv),
        "figure": figure.name,
        "seconds": time.perf_counter() - started,
    }

"""Tuning a benchmark cell's model on the cell's own validation split, through the sweep engine.

A grid's ``tune:`` key declares, per model, a small search space of ``train.py`` options; every
cell of that model runs each point (Optuna's :class:`~optuna.samplers.GridSampler` on an in-memory
study) as a run of :func:`textcause.run.fit.fit_and_evaluate` on the cell's task, seed and
training split, scored by the best checkpoint's ``val_loss`` on the **validation** split only. The
best point is then evaluated on the cell's evaluation split exactly as an untuned cell is, and its
values go to the rows' ``tuned`` column (JSON): the test split is never seen during selection.
Candidates run in ``<run>/tune/<k>/``, their scores go to ``<run>/tune/candidates.json``, and the
losers' checkpoints are deleted once the choice is made. Why and how: docs/sweeps.md.

A search over a propensity network's optimiser settings alone (``lr``, ``weight_decay``, ``l1``: the
n-gram and LDA networks of the weld grids) trains its points side by side in one fit
(:mod:`textcause.grid.bank`), which gives each point's validation loss bit for bit as its lone fit
would, in a fraction of the time; the chosen point is then fitted alone (the run that is evaluated),
and its validation loss must equal the bank's, or the search is done one point at a time after all.
"""

from __future__ import annotations

import json
import shutil
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

from textcause.io import atomic_write_json
from textcause.observational.spec import Search, as_search
from textcause.run.evaluation import tuned_label
from textcause.run.fit import EvaluationSettings, RunResult, RunSettings, evaluate_run, fit_and_evaluate

__all__ = [
    "SELECTION",
    "Candidate",
    "Search",
    "as_search",
    "fit_tuned",
    "grid_points",
    "select",
]

#: The candidates' own evaluation: the validation split, no interval (selection never sees the test split).
SELECTION = EvaluationSettings(n_boot=0, split="val", estimators=("ipw",))


def grid_points(search: Search) -> list[dict[str, Any]]:
    """Every combination of the search space's values, in a fixed order (the first option varies slowest)."""
    points: list[dict[str, Any]] = [{}]
    for name, values in search:
        points = [{**p, name: v} for p in points for v in values]
    return points


def _merged_label(params: Mapping[str, Any], own: Optional[str]) -> str:
    """The grid's chosen options and what the model chose itself (a row's ``tuned`` already set), as one JSON."""
    merged = dict(json.loads(own)) if own else {}
    merged.update(params)
    return tuned_label(merged)


@dataclass(frozen=True)
class Candidate:
    """One point of the search, fitted and scored on the validation split."""

    params: dict[str, Any]
    score: Optional[float]
    log_dir: Optional[str]
    seconds: float
    error: Optional[str] = None
    #: how its score was found: ``"alone"`` (its own fit) or ``"bank"`` (side by side, textcause.grid.bank;
    #: ``seconds`` is then its share of the bank's time, by epochs; the chosen point's adds its lone refit)
    engine: str = "alone"
    epochs: Optional[int] = None


def _fit_candidate(settings: RunSettings, params: Mapping[str, Any], run_dir: Path) -> Candidate:
    started = time.perf_counter()
    candidate = RunSettings(
        configs=settings.configs,
        overrides={**settings.overrides, **params},
        run_dir=run_dir,
        evaluation=SELECTION,
        quiet=True,
    )
    result: RunResult = fit_and_evaluate(candidate)
    score = result.best_score
    if result.monitor not in (None, "val_loss"):
        raise ValueError(
            f"Tuning selects on the validation loss, but the run's checkpoint monitors '{result.monitor}'."
        )
    if score is None or score != score:  # a run that never validated, or a NaN loss, cannot be chosen
        return Candidate(
            dict(params),
            None,
            str(result.log_dir),
            time.perf_counter() - started,
            "the run has no finite best val_loss",
        )
    return Candidate(dict(params), float(score), str(result.log_dir), time.perf_counter() - started)


def select(settings: RunSettings, search: Search, run_dir: Path) -> tuple[Candidate, list[Candidate]]:
    """Fit every point of ``search`` (on ``settings``' task and seed) and choose the lowest validation loss.

    Points that differ only in the optimiser's settings are trained side by side in one bank
    (:mod:`textcause.grid.bank`) where it reproduces their lone fits; the chosen point is then fitted
    alone, and unless its validation loss equals the bank's to the bit (a warning says so), every point
    is fitted alone after all.

    Args:
        settings: the cell's run settings (its configs and overrides; its evaluation is not used here).
        search: the search space.
        run_dir: the cell's run folder; candidates go to ``<run_dir>/tune/<k>/``.

    Returns:
        The chosen candidate and every candidate, in the order they ran.

    Raises:
        ValueError: every candidate failed to give a finite validation loss, or ``search`` is empty.
    """
    points = grid_points(search)
    if not search or not points:
        raise ValueError("The search space of a tuned cell must name at least one option with one value.")
    space = {name: list(values) for name, values in search}
    chosen = _select_in_bank(settings, points, run_dir) if len(points) > 1 else None
    if chosen is None:
        chosen = _select_alone(settings, space, points, run_dir)
    best, candidates = chosen
    atomic_write_json(
        run_dir / "tune" / "candidates.json",
        {"metric": "val_loss", "chosen": best.params, "candidates": [asdict(c) for c in candidates]},
    )
    for c in candidates:  # the losers' checkpoints are not needed again
        if c is not best and c.log_dir:
            shutil.rmtree(Path(c.log_dir) / "checkpoints", ignore_errors=True)
    return best, candidates


def _best(candidates: Sequence[Candidate], points: Sequence[Mapping[str, Any]], space: Mapping[str, Any]) -> Candidate:
    scored = [c for c in candidates if c.score is not None]
    if not scored:
        raise ValueError(f"No candidate of the search {dict(space)} gave a finite validation loss.")
    # the lowest loss; among equal losses the first in the grid's own order
    order = {tuned_label(p): i for i, p in enumerate(points)}
    return min(scored, key=lambda c: (c.score, order[tuned_label(c.params)]))


def _select_alone(
    settings: RunSettings, space: Mapping[str, list[Any]], points: Sequence[Mapping[str, Any]], run_dir: Path
) -> tuple[Candidate, list[Candidate]]:
    """Every point fitted on its own, in the order of Optuna's seeded grid sampler."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.GridSampler(dict(space), seed=0))
    candidates: list[Candidate] = []

    def objective(trial: optuna.Trial) -> float:
        params = {name: trial.suggest_categorical(name, values) for name, values in space.items()}
        candidate = _fit_candidate(settings, params, run_dir / "tune" / str(trial.number))
        candidates.append(candidate)
        return candidate.score if candidate.score is not None else float("inf")

    study.optimize(objective, n_trials=len(points))
    return _best(candidates, points, space), candidates


def _select_in_bank(
    settings: RunSettings, points: Sequence[Mapping[str, Any]], run_dir: Path
) -> Optional[tuple[Candidate, list[Candidate]]]:
    """The points scored side by side (:func:`textcause.grid.bank.bank_scores`) and the chosen one refitted
    alone; None where no bank applies or the refit disagrees with the bank (then every point is fitted alone)."""
    from textcause.grid.bank import bank_scores

    try:
        banked = bank_scores(settings, points, bank_dir=run_dir / "tune" / "bank")
    except Exception as err:  # the lone fits are the reference path: they run, and judge the run
        warnings.warn(
            f"The side-by-side search failed ({type(err).__name__}: {err}): every point is fitted alone instead.",
            stacklevel=2,
        )
        banked = None
    finally:
        shutil.rmtree(run_dir / "tune" / "bank", ignore_errors=True)
    if banked is None:
        return None
    results, seconds = banked
    total_epochs = sum(r.epochs for r in results) or 1
    candidates = [
        Candidate(
            dict(p),
            r.score if r.score is not None and r.score == r.score else None,
            None,
            seconds * r.epochs / total_epochs,
            None if r.score is not None else "the run has no finite best val_loss",
            engine="bank",
            epochs=r.epochs,
        )
        for p, r in zip(points, results)
    ]
    if not any(c.score is not None for c in candidates):
        return None  # the lone fits say why
    space = {k: [p[k] for p in points] for k in points[0]}
    banked_best = _best(candidates, points, space)
    k = candidates.index(banked_best)
    alone = _fit_candidate(settings, banked_best.params, run_dir / "tune" / str(k))
    if alone.score is None or alone.score != banked_best.score:
        warnings.warn(
            f"The side-by-side search chose {tuned_label(banked_best.params)} with validation loss "
            f"{banked_best.score!r}, but its lone fit gives {alone.score!r}: every point is fitted alone instead.",
            stacklevel=2,
        )
        shutil.rmtree(run_dir / "tune" / str(k), ignore_errors=True)
        return None
    chosen = Candidate(
        alone.params, alone.score, alone.log_dir, banked_best.seconds + alone.seconds, epochs=banked_best.epochs
    )
    candidates[k] = chosen
    for old in (run_dir / "tune").glob("*"):  # folders of an earlier attempt of this cell, fitted alone
        if old.is_dir() and old.name.isdigit() and old.name != str(k):
            shutil.rmtree(old, ignore_errors=True)
    return chosen, candidates


def fit_tuned(settings: RunSettings, search: Search) -> tuple[RunResult, Candidate, list[Candidate]]:
    """Select on validation (:func:`select`), then evaluate the chosen run as ``settings.evaluation`` says.

    Returns:
        The chosen run's evaluation (rows carry ``tuned``; ``train_seconds`` is the whole
        selection), the chosen candidate and every candidate.
    """
    run_dir = Path(settings.run_dir) if settings.run_dir is not None else Path("runs") / "tuned"
    started = time.perf_counter()
    best, candidates = select(settings, search, run_dir)
    selection_s = time.perf_counter() - started
    result = evaluate_run(best.log_dir, settings.evaluation, csv_dir=run_dir, figure=settings.writes_figure)
    result.rows = [{**r, "tuned": _merged_label(best.params, r.get("tuned"))} for r in result.rows]
    result.train_seconds = selection_s
    return result, best, candidates

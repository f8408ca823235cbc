"""The loop, as one function: check, calibrate, estimate, refute, report (``textcause advise``).

Everything is resumable: the calibration cells are grid cells in the results store (a rerun skips
the finished ones), the real fits are observational-study records (a rerun skips the finished
models), and the report is written from what is stored.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textcause.advise.calibrate import load_calibration, run_calibration
from textcause.advise.estimate import disagreement, ranked_estimates, run_estimates
from textcause.advise.grades import candidate_pairs, grade, recommend, seed_support
from textcause.advise.inputs import check_budget, default_workers, plan_minutes, prepare
from textcause.advise.report import verdict, write_report
from textcause.advise.robustness import robustness
from textcause.advise.spec import AdviseSpec, load_advise
from textcause.io import atomic_write_json
from textcause.validation import check_int

__all__ = ["advise"]


def _model_card(out: Path, model: str) -> str | None:
    """Copy the recommended model's card (written by its run) beside the report; its file name."""
    cards = sorted((out / "estimate" / "runs" / model).rglob("model_card.md"))
    if not cards:
        return None
    dest = out / f"model_card_{model}.md"
    shutil.copyfile(cards[-1], dest)
    return dest.name


def _reported(table: Any, best: dict[str, Any]) -> tuple[float, float, float] | None:
    """The recommended pair's ``(ate, ci_low, ci_high)`` on the real data (None: it was not estimated)."""
    import math

    row = table[(table["model"] == best["model"]) & (table["estimator"] == best["estimator"])]
    if row.empty:
        return None
    values = tuple(float(row.iloc[0][c]) for c in ("ate", "ci_low", "ci_high"))
    return values if all(math.isfinite(v) for v in values) else None


def advise(
    config: str | Path | AdviseSpec,
    out: str | Path | None = None,
    *,
    db: str | None = None,
    workers: int | None = None,
    echo: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Choose a text-adjustment method on the user's own users, estimate, refute, and report.

    Args:
        config: an advise config YAML (``configs/advise/*.yaml``) or a parsed spec.
        out: the output folder (default ``runs/advise/<name>``).
        db: the results store URL for the calibration grid (default SQLite under ``out``).
        workers: calibration and estimate worker processes (None:
            :func:`~textcause.advise.inputs.default_workers`, one per usable CPU within the
            available memory).
        echo: where progress lines go (default stderr).

    Returns:
        ``{"name", "info", "graded", "support", "recommended", "estimates", "disagreement",
        "robustness", "verdict", "files", ...}``; ``advise.json`` holds the same, as JSON.

    Raises:
        ValueError: bad input, in one sentence, before any model is fitted (see
            :mod:`textcause.advise.inputs`).
    """
    echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    started = time.perf_counter()
    if workers is not None:
        check_int(workers, "workers", "advise", low=1)
    spec = config if isinstance(config, AdviseSpec) else load_advise(config)
    out = Path(out) if out is not None else Path("runs") / "advise" / spec.name
    prepared = prepare(spec, out)
    if workers is None:
        workers = default_workers(int(plan_minutes(spec, prepared.info)["cells"]))
    plan = check_budget(spec, prepared.info, workers)
    echo(
        f"{spec.name}: {prepared.info['n_users']} users; {int(plan['cells'])} calibration cells on {workers} "
        f"worker(s) (about {plan['calibration']:.0f} min) and {len(spec.candidates)} real fits (about {plan['estimate']:.0f} min)"
    )
    url, grid = run_calibration(spec, prepared, out, db=db, workers=workers)
    results = candidate_pairs(load_calibration(url, grid))
    graded = grade(results)
    support = seed_support(results, graded)
    best = recommend(graded)
    echo(f"calibration graded: recommended {best['model']} / {best['estimator']}; fitting the real study")
    rows = run_estimates(prepared, out / "estimate", echo=echo, workers=workers)
    table = ranked_estimates(rows, graded)
    echo("refuting the recommended estimate and measuring its sensitivity to hidden confounding")
    found = robustness(
        prepared.study,
        best,
        _reported(table, best),
        binary=prepared.binary,
        e_value=spec.e_value,
        out=out,
        name=spec.name,
        estimate_dir=out / "estimate",
        seed=spec.split_seed,
    )
    if found["status"] == "ok":
        passed = sum(r["passed"] for r in found["refuters"])
        echo(f"refuters: {passed} of {len(found['refuters'])} passed; {found['sentence']}")
    else:
        echo(f"refutation and sensitivity not run: {found['reason']}")
    result: dict[str, Any] = {
        "name": spec.name,
        "config": spec.source,
        "info": prepared.info,
        "tasks": sorted({(t, lv) for t, lvs in spec.tasks.items() for lv in lvs}),
        "graded": graded,
        "support": support,
        "recommended": best,
        "estimates": table,
        "disagreement": disagreement(table),
        "robustness": found,
        "store": url,
        "grid": grid,
        "model_card": _model_card(out, best["model"]),
    }
    result["verdict"] = verdict(best, support, table)
    result["seconds"] = time.perf_counter() - started
    result["files"] = [str(p) for p in write_report(result, out)]
    plain = {
        **{k: v for k, v in result.items() if k not in ("graded", "estimates")},
        "graded": graded.to_dict("records"),
        "estimates": table.to_dict("records"),
    }
    atomic_write_json(out / "advise.json", plain)
    echo(f"{spec.name}: done in {result['seconds'] / 60:.1f} min; report {out / 'advise.md'}")
    return result

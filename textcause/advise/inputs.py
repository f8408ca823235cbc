"""The user's study, made ready for both stages, and every refusal that must come before any work.

:func:`prepare` turns an :class:`~textcause.advise.spec.AdviseSpec` into

* ``study.yaml``: an observational study config (``textcause observe``'s format) over the candidate
  models: the given study's, or one over ``users.jsonl.gz`` (the table form: every user's posts
  read through the corpus readers and column flags, with the treatment and outcome columns
  aggregated per user into meta fields ``advise_t`` and ``advise_y``);
* ``calibration.jsonl.gz``: the studied users' texts (exactly what the propensity models read),
  from which the calibration tasks are built, so calibration and estimate share users and posts.

Refused in one sentence, before anything is fitted: a treatment with one class or too few users in
an arm, an outcome missing for some users, an E-value asked for a non-binary outcome, a budget
too small for the seeds the verdict needs (:func:`check_budget`, from :func:`cell_seconds`).
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from textcause.advise.spec import MIN_SEEDS, AdviseSpec, Variable
from textcause.io import atomic_write_bytes, atomic_write_text

__all__ = [
    "REFERENCE_WORDS",
    "WORKER_GIB",
    "Prepared",
    "cell_seconds",
    "check_budget",
    "default_workers",
    "plan_minutes",
    "prepare",
]

T_FIELD, Y_FIELD = "advise_t", "advise_y"
#: Refitting replicates of the real estimates (``evaluation.refit_reps`` of the study: the models that refit).
REFIT_REPS = 50


@dataclass(frozen=True)
class Prepared:
    """What both stages read: the study config, the calibration corpus and the study's numbers."""

    study: Path
    users: Path
    info: dict[str, Any] = field(default_factory=dict)
    binary: bool = True


def _fail(spec: AdviseSpec, message: str) -> ValueError:
    return ValueError(f"Advise config '{spec.source}': {message}")


# ------------------------------------------------------------------------------ the table form's variables
def _table(path: str, columns: list[str]) -> Any:
    import pandas as pd

    suffix = "".join(Path(path).suffixes[-2:]).lower()
    if suffix.endswith(".csv"):
        return pd.read_csv(path, usecols=columns)
    if suffix.endswith((".parquet", ".pq")):
        return pd.read_parquet(path, columns=columns)
    return pd.read_json(path, lines=True)[columns]


def _aggregate(values: Any, how: str) -> Any:
    present = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not present:
        return None
    if how in ("first", "last"):
        return present[0] if how == "first" else present[-1]
    numbers = [float(v) for v in present]
    return {"mean": np.mean, "max": np.max, "min": np.min}[how](numbers)


def user_values(spec: AdviseSpec, corpus: Any, var: Variable) -> dict[str, Any]:
    """Each user's value of ``var`` (a table column aggregated per author, or a meta field)."""
    if any(var.column in h.meta for h in corpus):  # a history JSONL's meta field
        return {h.user_id: h.meta.get(var.column) for h in corpus}
    author = spec.columns["author_col"]
    try:
        df = _table(str(corpus.source), [author, var.column])
    except (KeyError, ValueError) as err:
        raise _fail(spec, f"the table {corpus.source} has no column {var.column!r} ({err}).") from None
    grouped = df.groupby(df[author].astype(str), sort=False)[var.column]
    return {str(a): _aggregate(list(v), var.aggregate) for a, v in grouped}


def _missing(spec: AdviseSpec, values: dict[str, Any], users: list[str], what: str, column: str) -> None:
    gone = [u for u in users if values.get(u) is None]
    if gone:
        raise _fail(
            spec,
            f"the {what} column {column!r} is missing for {len(gone)} of {len(users)} users (e.g. {gone[0]!r}): "
            "fill it or drop those users before advising.",
        )


def _threshold(values: np.ndarray, threshold: Any) -> float | None:
    return float(np.median(values)) if threshold == "median" else (None if threshold is None else float(threshold))


def _arms(spec: AdviseSpec, t: np.ndarray) -> None:
    n1, n0 = int(t.sum()), int(len(t) - t.sum())
    if n1 == 0 or n0 == 0:
        raise _fail(spec, f"the treatment has one class only ({n1} treated, {n0} control users): nothing to compare.")
    if min(n1, n0) < spec.min_per_arm:
        raise _fail(
            spec,
            f"{n1} treated and {n0} control users: fewer than min_per_arm = {spec.min_per_arm} in an arm; "
            "use more users or lower min_per_arm.",
        )


def _table_study(spec: AdviseSpec, out: Path) -> tuple[dict[str, Any], dict[str, str]]:
    from textcause.corpus import read_corpus

    cols = spec.columns
    corpus = read_corpus(
        spec.corpus,
        min_posts=1,
        max_posts=None,
        author_col=cols["author_col"],
        text_col=cols["text_col"],
        time_col=cols["time_col"],
        drop_duplicates=cols["drop_duplicates"],
    )
    users = [h.user_id for h in corpus]
    tv, yv = user_values(spec, corpus, spec.treatment), user_values(spec, corpus, spec.outcome)
    _missing(spec, tv, users, "treatment", spec.treatment.column)
    _missing(spec, yv, users, "outcome", spec.outcome.column)
    tr = spec.treatment
    if tr.treated is not None:
        treated = set(tr.treated if isinstance(tr.treated, list) else [tr.treated])
        control = set(tr.control if isinstance(tr.control, list) else [tr.control])
        arm = {u: "treated" if tv[u] in treated else "control" if tv[u] in control else None for u in users}
        label = f"{tr.column} in {sorted(map(str, treated))} (T=1) vs {sorted(map(str, control))} (T=0)"
    else:
        values = np.array([float(tv[u]) for u in users])
        cut = _threshold(values, tr.threshold if tr.threshold is not None else "median")
        arm = {u: "treated" if float(tv[u]) > cut else "control" for u in users}
        label = f"{tr.column} ({tr.aggregate}) > {cut:g} (T=1) vs <= {cut:g} (T=0)"
    _arms(spec, np.array([arm[u] == "treated" for u in users if arm[u] is not None], dtype=float))
    lines = []
    for h in corpus:
        meta = {T_FIELD: arm[h.user_id], Y_FIELD: float(yv[h.user_id])}
        lines.append(json.dumps({"user_id": h.user_id, "posts": [{"text": p} for p in h.posts], "meta": meta}))
    path = out / "users.jsonl.gz"
    atomic_write_bytes(path, gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0))
    study = {
        "corpus": str(path),
        "treatment": {"field": T_FIELD, "treated": "treated", "control": "control"},
        "outcome": {"field": Y_FIELD, "threshold": spec.outcome.threshold},
        "description": spec.description or f"{label}; Y = {spec.outcome.column} ({spec.outcome.aggregate})",
    }
    return study, {"treatment": label, "outcome": f"{spec.outcome.column} ({spec.outcome.aggregate} per user)"}


# ----------------------------------------------------------------------------------------------- prepare
def prepare(spec: AdviseSpec, out: str | Path) -> Prepared:
    """Write ``study.yaml`` and ``calibration.jsonl.gz`` under ``out`` and check the study's inputs.

    Raises:
        ValueError: a treatment with one class or too few users in an arm, an outcome missing for
            some users, an E-value asked for a non-binary outcome (one sentence each).
    """
    from textcause.observational.task import load_task

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if spec.study is not None:
        study, labels = yaml.safe_load(spec.study.read_text(encoding="utf-8")) or {}, {}
    else:
        study, labels = _table_study(spec, out)
    models = [str(p) for _, p in spec.candidates] or ["unadjusted"]
    study.update(
        name=spec.name,
        models=models,
        min_per_arm=spec.min_per_arm,
        seed=spec.split_seed,
        overrides={**dict(study.get("overrides") or {}), **dict(spec.overrides)},
        model_overrides={Path(p).stem: dict(spec.model_overrides.get(n, ())) for n, p in spec.candidates},
        tune={Path(p).stem: {k: list(v) for k, v in spec.tune[n]} for n, p in spec.candidates if n in spec.tune},
        evaluation={
            "n_boot": spec.n_boot,
            "split": "test",
            "estimators": list(spec.estimators),
            "refit_reps": REFIT_REPS,
        },
    )
    study["model_overrides"] = {k: v for k, v in study["model_overrides"].items() if v}
    if not study["tune"]:
        del study["tune"]  # a study written before searches existed keeps its text, so its results stay valid
    path = out / "study.yaml"
    text = "# Written by textcause advise from " + spec.source + "\n" + yaml.safe_dump(study, sort_keys=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        atomic_write_text(path, text)
    task = load_task(path)
    t, y = np.asarray(task.treatment), np.asarray(task.outcome)
    _arms(spec, t)
    binary = task.info.get("threshold") is not None
    if spec.e_value and not binary:
        raise _fail(
            spec,
            "an E-value is defined for a binary outcome, and this outcome is continuous (threshold null): "
            "set e_value: false or give the outcome a threshold.",
        )
    users = out / "calibration.jsonl.gz"
    lines = [
        json.dumps({"user_id": u, "posts": [{"text": p} for p in posts], "meta": {}})
        for u, posts in zip(task.user_ids, task.texts)
    ]
    payload = gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0)
    if not users.exists() or users.read_bytes() != payload:
        atomic_write_bytes(users, payload)
    n_posts = [len(p) for p in task.texts]
    n_words = [sum(len(str(post).split()) for post in posts) for posts in task.texts]
    info = {
        **task.info,
        "n_users": len(t),
        "min_posts": int(min(n_posts)),
        "max_posts": int(max(n_posts)),
        "mean_posts": float(np.mean(n_posts)),
        "mean_words": float(np.mean(n_words)),
        "mean_y": float(np.mean(y)),
        **labels,
    }
    return Prepared(study=path, users=users, info=info, binary=binary)


# ---------------------------------------------------------------------------------------------- the budget
#: Rough seconds per cell per 1,000 users of :data:`REFERENCE_WORDS` words each (60 tweets), by what
#: the model fits (measured orders of magnitude, not promises), plus a fixed start-up cost per cell.
RATES = {"none": 0.5, "lr": 6.0, "nn": 15.0, "lda": 40.0, "embeddings": 12.0, "joint": 20.0, "method": 8.0}
CELL_OVERHEAD = 3.0
#: Words per user that :data:`RATES` are for: 60 posts of the Twitter corpus (15.7 words each). The
#: cost grows with the words, not the posts: a blogger's 23 posts hold 2,679 words on average, and a
#: tuned LR cell on 8,000 of them took 140 CPU seconds (the rate per post had said 16).
REFERENCE_WORDS = 940.0


def model_kind(path: Path) -> str:
    """``none``, ``lr``, ``nn``, ``lda``, ``embeddings`` or ``joint``: what decides a model's cost."""
    config = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    rep = str((config.get("data") or {}).get("representation", "bigram_binary"))
    cls = str((config.get("model") or {}).get("class_path", ""))
    if rep == "none":
        return "none"
    if "Joint" in cls:
        return "joint"
    if rep.startswith("post_"):
        return "embeddings"
    if rep == "lda":
        return "lda"
    text = json.dumps(config)
    return "lr" if "LogisticRegression" in text else "nn"


def cell_seconds(kind: str, n_users: int, mean_words: float) -> float:
    """The estimated seconds of one cell of a model of ``kind`` on ``n_users`` users of ``mean_words`` words."""
    return CELL_OVERHEAD + RATES[kind] * (n_users / 1000.0) * (mean_words / REFERENCE_WORDS)


#: Memory one calibration worker may need: a tuned LR cell on 8,000 bloggers held about 1.3 GiB.
WORKER_GIB = 2.0


def _available_gib() -> float | None:
    """``MemAvailable`` of ``/proc/meminfo`` in GiB (None where there is no such file)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        return None
    return None


def default_workers(cells: int, *, cpus: int | None = None, available_gib: float | None | str = "read") -> int:
    """Calibration workers when none are asked for: one per CPU this process may use (its affinity and
    cgroup quota: :func:`textcause.features.encoder_workers.available_cpus`), at most one per
    :data:`WORKER_GIB` of available memory and one per cell, at least 1.

    Args:
        cells: the calibration cells still to run (or all of them).
        cpus: the usable CPUs (None: read them).
        available_gib: the available memory in GiB, None for no limit (``"read"``: ``/proc/meminfo``).

    >>> default_workers(84, cpus=2, available_gib=20.0), default_workers(84, cpus=16, available_gib=7.0)
    (2, 3)
    >>> default_workers(1, cpus=8, available_gib=None)
    1
    """
    if cpus is None:
        from textcause.features.encoder_workers import available_cpus

        cpus = available_cpus()
    gib = _available_gib() if available_gib == "read" else available_gib
    by_memory = cpus if gib is None else int(float(gib) // WORKER_GIB)
    return max(1, min(int(cpus), by_memory, int(cells)))


def search_factor(search: Any, kind: str = "nn") -> float:
    """How many single fits of :data:`RATES` a cell of a model of ``kind`` with ``search`` costs.

    ``search`` is ``((option, values), ...)``. An n-gram network (``kind`` ``nn``) whose points differ
    only in the optimiser (:data:`textcause.grid.bank.BANK_OPTIONS`) trains them side by side in one
    fit and then the chosen one alone; measured in the weld Twitter grid (4,120 users), its 20-point
    search took 41 s (1-grams), 82 s (1,2-grams) and 195 s (1,2-gram counts) a cell, 0.6 to 3.0 times
    :func:`cell_seconds`' 65 s for one fit: counted as 3. Any other search (SHERBERT's, whose bf16 and
    dropout the bank does not reproduce, or another option) fits each point on its own: one fit a point.
    """
    from textcause.grid.bank import BANK_OPTIONS

    points = math.prod(len(v) for _, v in search) if search else 1
    if points == 1:
        return 1.0
    if kind == "nn" and all(k in BANK_OPTIONS for k, _ in search):
        return min(3.0, float(points))
    return float(points)


def plan_minutes(spec: AdviseSpec, info: dict[str, Any], workers: int = 1) -> dict[str, float]:
    """Estimated wall minutes of the calibration on ``workers`` processes and of the estimate (one fit
    per candidate, in one process)."""
    n = int(info["n_users"])
    words = float(info.get("mean_words", float(info["mean_posts"]) * REFERENCE_WORDS / 60.0))
    kinds = [(m, model_kind(p)) for m, p in spec.candidates]
    per_model = [cell_seconds(k, n, words) * search_factor(spec.tune.get(m, ()), k) for m, k in kinds]
    per_model += [cell_seconds("method", n, words)] * len(spec.methods)
    levels = sum(len(v) for v in spec.tasks.values())
    cells = levels * spec.seeds * len(per_model)
    # each worker runs whole cells: the cost per worker, rounded up to whole cells of the mean cost
    calib = sum(per_model) * levels * spec.seeds
    share = math.ceil(cells / max(1, min(int(workers), cells))) / cells if cells else 0.0
    estimate = sum(per_model[: len(spec.candidates)])
    return {"calibration": calib * share / 60.0, "estimate": estimate / 60.0, "cells": cells, "workers": workers}


def check_budget(spec: AdviseSpec, info: dict[str, Any], workers: int = 1) -> dict[str, float]:
    """Refuse a run whose seeds or estimated cost (on ``workers`` calibration processes) the verdict
    cannot have.

    Raises:
        ValueError: fewer than :data:`MIN_SEEDS` seeds, or an estimated cost above the budget.
    """
    if spec.seeds < MIN_SEEDS:
        raise _fail(
            spec,
            f"'seeds' is {spec.seeds}, fewer than the {MIN_SEEDS} per task level the verdict needs to rank methods; "
            f"set seeds: {MIN_SEEDS} or more.",
        )
    plan = plan_minutes(spec, info, workers)
    total = plan["calibration"] + plan["estimate"]
    if total > spec.budget_minutes:
        raise _fail(
            spec,
            f"the budget of {spec.budget_minutes:g} minutes is too small for {spec.seeds} seeds: "
            f"{int(plan['cells'])} calibration cells on {workers} worker(s) and the estimate take about "
            f"{total:.0f} minutes here; "
            f"raise budget_minutes to {math.ceil(total)} or drop candidates.",
        )
    return plan

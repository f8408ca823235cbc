"""The controlled selection-bias experiment: strengths x seeds of selected training sets, one fine-tune each.

For each seed, W is drawn uniformly per author from the experiment's W list
(:func:`textcause.gender.selection.draw_w`) and written with each author's gender to a W file;
for each strength, :class:`~textcause.gender.selected.SelectedGenderDataModule` builds the
selected training set (S ~ Bernoulli(f(W, G))) from it, the masked-gender model is fine-tuned
with the W prefix (the experiment's model config, through the same LightningCLI config path as
every run: :func:`textcause.run.fit.run_config` and :func:`~textcause.run.fit.instantiate`),
and its binary head is probed on held-out templates for P(female | W)
(:func:`textcause.gender.run.probe_model`): ``prefixed`` probes write W as the training prefix
before sentences never trained on ("year: 1990. [MASK] was a child."), ``paper`` probes are
table 1's ("In 1990, [MASK] was a child.").

Results go to the benchmark's results database (``<out>/results.db`` by default, opened with
:func:`textcause.store.open_store`), in a table of this module, ``gender_selection``: one row
per (unit, probe set) (``slope_lo`` / ``slope_hi``: the linear fit's interval of the unit's female
slope, :func:`textcause.gender.stats.slope_interval`), a unit's rows written in one transaction, so a killed run leaves whole
units only and a rerun skips them. Rows of the same experiment name made under another
configuration are an error (use another name or database), never mixed in.
"""

from __future__ import annotations

import json
import logging
import math
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import numpy as np
import sqlalchemy as sa

from textcause.gender.selection import draw_w, expected_association
from textcause.gender.selection_spec import Experiment
from textcause.io import atomic_write_json, atomic_write_text
from textcause.run.fit import RunSettings, instantiate, run_config
from textcause.store import default_url, open_store, read_table, utcnow
from textcause.store.tables import gender_selection

__all__ = [
    "DATA_CLASS",
    "PREFIXED_TEMPLATES",
    "PREFIX_FORMAT",
    "has_selection",
    "read_selection",
    "run_experiment",
    "run_unit",
]

log = logging.getLogger(__name__)
DATA_CLASS = "textcause.gender.SelectedGenderDataModule"
#: The held-out sentence skeletons of the ``prefixed`` probes (W only in the prefix).
PREFIXED_TEMPLATES = ("{mask} {verb} {life_stage}.", "Back then {mask} {verb} {life_stage}.")
PREFIX_FORMAT = "{name}: {value}. "


# ---------------------------------------------------------------------------------------- the store
def has_selection(url: str) -> bool:
    """Whether the database at ``url`` holds rows of the selection experiment (without creating anything)."""
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite" and not (parsed.database and Path(parsed.database).is_file()):
        return False
    engine = sa.create_engine(url)
    try:
        if not sa.inspect(engine).has_table(gender_selection.name):
            return False
        with engine.connect() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(gender_selection)).scalar_one() > 0
    finally:
        engine.dispose()


def read_selection(source: str | sa.Engine, experiment: Optional[str] = None) -> Any:
    """The ``gender_selection`` rows (optionally one experiment's) as a DataFrame, ordered by id."""
    return read_table(source, gender_selection, experiment=experiment)


def _finished_units(engine: sa.Engine, experiment: Experiment) -> set[str]:
    """The unit ids of ``experiment`` already in the store (every probe set written).

    Raises:
        ValueError: the store holds rows of this experiment's name made under another configuration.
    """
    t = gender_selection
    with engine.begin() as conn:
        rows = conn.execute(
            sa.select(t.c.unit_id, t.c.probe, t.c.config_hash).where(t.c.experiment == experiment.name)
        ).all()
    other = sorted({r.config_hash for r in rows} - {experiment.config_hash})
    if other:
        raise ValueError(
            f"The results database holds units of the experiment {experiment.name!r} made under another "
            f"configuration (hash {other[0]}): give the experiment another name or use another --out."
        )
    probes: dict[str, set[str]] = {}
    for r in rows:
        probes.setdefault(r.unit_id, set()).add(r.probe)
    return {u for u, p in probes.items() if set(experiment.spec.probes) <= p}


def _write_unit(engine: sa.Engine, rows: list[dict[str, Any]]) -> None:
    """Write a unit's rows in one transaction (all or nothing)."""
    clean = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()} for r in rows]
    with engine.begin() as conn:
        conn.execute(
            sa.delete(gender_selection).where(gender_selection.c.unit_id.in_(sorted({r["unit_id"] for r in clean})))
        )
        conn.execute(sa.insert(gender_selection), clean)


# ---------------------------------------------------------------------------------------- the inputs
def _author_genders(source: str, field: str) -> tuple[np.ndarray, np.ndarray]:
    """Every author of ``source`` with a female / male value of ``field``: (ids, female flags), sorted by id.

    Raises:
        ValueError: no author has such a value.
    """
    from textcause.gender.sentences import read_documents

    meta: dict[str, Any] = {}
    for doc in read_documents(source):
        meta.setdefault(doc.author, doc.meta.get(field))
    pairs = sorted((a, str(g).strip().lower()) for a, g in meta.items() if str(g).strip().lower() in ("female", "male"))
    if not pairs:
        raise ValueError(f"No author of {source!r} has a female / male value of {field!r}.")
    return np.array([a for a, _ in pairs], dtype=object), np.array([g == "female" for _, g in pairs])


def _write_w_file(
    path: Path, authors: np.ndarray, female: np.ndarray, w_index: np.ndarray, experiment: Experiment
) -> Path:
    """The W file of one seed: ``author``, ``<w_name>`` and ``gender`` columns (atomic)."""
    import csv
    import io

    values = experiment.w_values
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["author", experiment.spec.w_name, experiment.spec.gender_field])
    for a, f, w in zip(authors, female, w_index):
        writer.writerow([a, values[int(w)], "female" if f else "male"])
    text = buf.getvalue()
    if not (path.is_file() and path.read_text(encoding="utf-8") == text):  # an unchanged file keeps its build memo
        atomic_write_text(path, text)
    return path


def _prefixed_spec(experiment: Experiment, path: Path, category: str) -> Path:
    """The probe spec YAML of the ``prefixed`` probes (W as the training prefix, held-out sentences)."""
    import yaml

    prefix = PREFIX_FORMAT.format(name=experiment.spec.w_name, value="{w}")
    spec = {
        "tenses": ["was", "is", "will be"],
        "life_stages": ["a child", "a kid", "an adolescent", "a teenager", "an adult", "all grown up"],
        "templates": {category: [prefix + t for t in PREFIXED_TEMPLATES]},
    }
    atomic_write_text(path, yaml.safe_dump(spec, sort_keys=False))
    return path


def _unit_overrides(experiment: Experiment, strength: float, seed: int, w_file: Path) -> dict[str, Any]:
    """The dotted train.py options of one unit (on top of the model config)."""
    s = experiment.spec
    out: dict[str, Any] = {
        "seed_everything": seed,
        "data.class_path": DATA_CLASS,
        "data.init_args.source": s.source,
        "data.init_args.prefix": s.w_name,
        "data.init_args.w_file": str(w_file),
        "data.init_args.prefix_format": PREFIX_FORMAT,
        "data.init_args.encoder": s.encoder,
        "data.init_args.max_tokens": s.max_tokens,
        "data.init_args.n_sentences": s.n_sentences,
        "data.init_args.pool_sentences": s.pool_sentences,
        "data.init_args.seed": seed,
        "data.init_args.batch_size": s.batch_size,
        "data.init_args.strength": strength,
        "data.init_args.unit": s.unit,
        "data.init_args.gender_field": s.gender_field,
        "data.init_args.w_values": list(experiment.w_values),
        "model.init_args.lr": s.lr,
        "model.init_args.net.init_args.encoder": s.encoder,
        "trainer.max_epochs": s.max_epochs,
        "trainer.precision": s.precision,
        "trainer.callbacks": [],
        "trainer.enable_checkpointing": False,
    }
    out.update(s.overrides)
    return out


def _curve_json(values: Any) -> str:
    return json.dumps([None if not math.isfinite(float(v)) else round(float(v), 6) for v in values])


def run_unit(
    experiment: Experiment,
    strength: float,
    seed: int,
    w_file: Path,
    out_dir: Path,
    probe_specs: dict[str, Optional[Path]],
) -> list[dict[str, Any]]:
    """Fine-tune one (strength, seed) unit and probe it: its rows (one per probe set)."""
    from textcause.gender.probes import load_w_list
    from textcause.gender.run import probe_model
    from textcause.gender.scoring import BinaryHead

    s = experiment.spec
    unit_id = experiment.unit_id(strength, seed)
    started_at, started = utcnow(), time.perf_counter()
    run_dir = out_dir / "units" / unit_id.replace(":", "_")
    settings = RunSettings(
        configs=(experiment.model_config,),
        overrides=_unit_overrides(experiment, strength, seed, w_file),
        run_dir=run_dir,
        quiet=True,
    )
    cli = instantiate(run_config(settings))
    trainer, model, data = cli.trainer, cli.model, cli.datamodule
    t0 = time.perf_counter()
    trainer.fit(model, datamodule=data)
    train_s = time.perf_counter() - t0
    sel, built = data.selection, data.built
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if k in ("val_loss", "val_acc")}
    if s.unit == "author":  # the authors' female share before selection decides the closed form
        female = np.isin(np.array([str(v).lower() for v in _genders(w_file, s.gender_field)]), ["female"])
        _, expected = expected_association(strength, len(experiment.w_values), float(female.mean()))
    else:
        _, expected = expected_association(strength, len(experiment.w_values), _pool_female_share(data))
    w_list = load_w_list(list(experiment.w_values), name=s.w_name)
    head = BinaryHead(model=model.eval(), tokenizer=model.tokenizer, name=unit_id)
    base = {
        "unit_id": unit_id,
        "experiment": experiment.name,
        "strength": float(strength),
        "seed": int(seed),
        "config_hash": experiment.config_hash,
        "status": "ok",
        "unit": s.unit,
        "w_name": s.w_name,
        "w_values": json.dumps(list(experiment.w_values)),
        "expected_slope": expected,
        "unit_slope": sel.units.slope,
        "unit_r": sel.units.r,
        "unit_corr": sel.units.corr,
        "label_slope": sel.labels.slope,
        "label_r": sel.labels.r,
        "label_corr": sel.labels.corr,
        "label_curve": _curve_json(sel.labels.share),
        "n_pool": sel.n_pool,
        "n_units": sel.n_units,
        "n_selected": sel.n_selected,
        "n_examples": sel.n_examples,
        "n_train": len(built.split.train),
        "n_masks": built.info["n_masks"],
        "female_share": built.info["female_share"],
        "val_loss": metrics.get("val_loss", math.nan),
        "val_acc": metrics.get("val_acc", math.nan),
        "train_seconds": train_s,
        "host": socket.gethostname(),
        "started_at": started_at,
    }
    rows = []
    t1 = time.perf_counter()
    for probe in s.probes:
        result = probe_model(
            head, [w_list], templates=probe_specs[probe], n_boot=s.n_boot, seed=seed, level=s.level, progress=False
        )
        c = next(c for c in result.curves if c.gender == "female" and c.x_kind == "index")
        rows.append(
            {
                **base,
                "probe": probe,
                "slope": c.slope,
                "slope_lo": c.slope_ci[0],
                "slope_hi": c.slope_ci[1],
                "intercept": c.intercept,
                "r": c.r,
                "r_lo": c.r_ci[0],
                "r_hi": c.r_ci[1],
                "p_value": c.p_value,
                "curve": _curve_json(c.y),
                "n_probes": c.n_probes,
            }
        )
    probe_s = time.perf_counter() - t1
    finished = utcnow()
    for r in rows:
        r.update(probe_seconds=probe_s, unit_seconds=time.perf_counter() - started, finished_at=finished)
    return rows


def _genders(w_file: Path, field: str) -> list[str]:
    import pandas as pd

    return list(pd.read_csv(w_file, dtype=str, keep_default_na=False)[field])


def _pool_female_share(data: Any) -> float:
    """The share of female examples in the pool before selection (the closed form's p, unit ``example``)."""
    from textcause.gender.build import build_gender_data
    from textcause.gender.selected import example_gender

    pool = build_gender_data(data.settings)
    return float(np.mean([example_gender(lab) for lab in pool.labels]))


def run_experiment(
    experiment: Experiment, out_dir: str | Path, *, db: Optional[str] = None, echo: Callable[[str], None] = print
) -> dict[str, Any]:
    """Run every unit not yet in the store; return what was run and how long it took.

    Args:
        experiment: the parsed experiment.
        out_dir: the output folder (W files, probe specs, unit logs, ``results.db``).
        db: the results database URL (None: ``sqlite:///<out_dir>/results.db``).
        echo: where progress lines go.

    Returns:
        ``{"url", "ran": [unit ids], "skipped": [unit ids], "seconds", "unit_seconds": {unit: s}}``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    url = db or default_url(out)
    engine = open_store(url, gender_selection)
    done = _finished_units(engine, experiment)
    todo = [(s, seed) for s, seed in experiment.units if experiment.unit_id(s, seed) not in done]
    skipped = [experiment.unit_id(s, seed) for s, seed in experiment.units if experiment.unit_id(s, seed) in done]
    started = time.perf_counter()
    if skipped:
        echo(f"skipping {len(skipped)} finished unit(s): {', '.join(skipped)}")
    seconds: dict[str, float] = {}
    if todo:
        if experiment.spec.threads is not None:
            import torch

            torch.set_num_threads(experiment.spec.threads)
        from textcause.gender.probes import load_w_list

        authors, female = _author_genders(experiment.spec.source, experiment.spec.gender_field)
        category = load_w_list(list(experiment.w_values)).category
        specs: dict[str, Optional[Path]] = {
            "paper": None,
            "prefixed": _prefixed_spec(experiment, out / "probes_prefixed.yaml", category),
        }
        n_w = len(experiment.w_values)
        for i, (strength, seed) in enumerate(todo, 1):
            w_index = draw_w(len(authors), n_w, np.random.default_rng([seed, 1]))
            w_file = _write_w_file(out / "w" / f"seed{seed}.csv", authors, female, w_index, experiment)
            unit_id = experiment.unit_id(strength, seed)
            echo(f"[{i}/{len(todo)}] {unit_id}: fine-tuning ...")
            rows = run_unit(experiment, strength, seed, w_file, out, specs)
            _write_unit(engine, rows)
            seconds[unit_id] = rows[0]["unit_seconds"]
            slopes = ", ".join(
                f"{r['probe']} slope {r['slope']:.3f} [{r['slope_lo']:.3f}, {r['slope_hi']:.3f}]" for r in rows
            )
            echo(
                f"[{i}/{len(todo)}] {unit_id}: train {rows[0]['train_seconds']:.0f} s, unit "
                f"{rows[0]['unit_seconds']:.0f} s, val_acc {rows[0]['val_acc']:.3f}, label slope "
                f"{rows[0]['label_slope']:.3f}, {slopes}"
            )
    total = time.perf_counter() - started
    summary = {
        "url": url,
        "experiment": experiment.name,
        "ran": list(seconds),
        "skipped": skipped,
        "seconds": total,
        "unit_seconds": seconds,
    }
    atomic_write_json(out / f"{experiment.name}_run_{int(time.time())}.json", summary)
    engine.dispose()
    return summary

"""Run the models of an observational study (``textcause observe``): fit each, record its ATEs.

Each model is one call of :func:`textcause.run.fit.fit_and_evaluate` with its model config and
``data.observational`` set to the study config (the default trainer and data configs, early
stopping, the best checkpoint), in-process; with no truth, the rows have no bias columns. Results
go to ``runs/observe/<name>/`` (or ``--out``); :mod:`textcause.reports.study` writes the tables and
the figure:

    models/<model>.json   one record per model, written atomically when the model finishes
    runs/<model>/         its training run (fit.log, CSV logs, checkpoint)
    results.json / results.csv / results.md   every model, the disagreement summary
    fig2_<name>.png / .svg                     the paper's figure 2 layout

A model whose record has the same content key (the parsed study config, model config and default
configs: comments do not count) is skipped on rerun, so a killed run resumes; a model that fails is recorded with its
error and the run goes on (``--retry-failed`` runs it again). With ``workers`` above 1 the models
to fit are shared among that many processes (:class:`concurrent.futures.ProcessPoolExecutor`, each
with an equal share of the usable CPUs as torch threads); the records are the same.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from textcause.estimators import registry
from textcause.io import atomic_write_json, content_key
from textcause.observational.spec import ObservationalSpec, canonical, load_spec
from textcause.paths import default_configs
from textcause.progress import format_seconds
from textcause.run.fit import error_line

__all__ = [
    "KEPT_META",
    "KEY_VERSION",
    "load_records",
    "model_key",
    "run_model",
    "run_study",
]

KEY_VERSION = "textcause-observe-model/v1"


def _config_content(path: Path) -> str:
    """A YAML file's parsed content as canonical JSON (its text when it does not parse)."""
    if not path.exists():
        return ""
    text = path.read_text(encoding="utf-8")
    try:
        return canonical(yaml.safe_load(text))
    except yaml.YAMLError:
        return text


def model_key(spec: ObservationalSpec, model: str, path: Path) -> str:
    """The content key of one model's result: the parsed study config, model config and train.py defaults.

    Comments and key order do not count, so documenting a config does not invalidate its results.
    """
    defaults = [_config_content(p) for p in default_configs()]
    return content_key(KEY_VERSION, spec.content, _config_content(path), defaults, model)


#: Run columns kept in a record's rows: what a tuned model chose on validation (``tuned``, JSON).
KEPT_META = ("tuned",)


def run_model(spec: ObservationalSpec, model: str, path: Path, config: Path, out_dir: Path) -> dict[str, Any]:
    """Fit, predict and evaluate one model on the one run path; never raises for the model's own error.

    The record's rows are the run's result rows without the run's identity columns, except
    :data:`KEPT_META`. A model with a search space in the study's ``tune`` fits every point on the
    training users, keeps the one with the lowest validation loss (:func:`textcause.grid.tuning.fit_tuned`)
    and evaluates that one; its rows' ``tuned`` says what it chose. With the study's ``evaluation.refit_reps``, a model that refits (the L-BFGS
    logistic regressions, the tuned one included: :func:`textcause.run.refitting.refit_unavailable`)
    also gets the refitting interval (``refit_ci_*``); another keeps empty ``refit_ci_*`` and its
    ``fit.log`` says why.
    """
    from textcause.grid.cell import release_memory
    from textcause.metrics.classification import accuracy_interval
    from textcause.run.fit import EvaluationSettings, RunSettings, captured, fit_and_evaluate

    run_dir = out_dir / "runs" / model
    shutil.rmtree(run_dir, ignore_errors=True)  # a previous attempt's checkpoint must not be picked up
    run_dir.mkdir(parents=True)
    t0 = time.perf_counter()
    record: dict[str, Any] = {
        "model": model,
        "config": str(path),
        "split": spec.split,
        "seed": spec.seed,
        "n_boot": spec.n_boot,
        "refit_reps": spec.refit_reps,
        "run_dir": str(run_dir),
    }
    overrides = {**dict(spec.overrides_for(model)), "data.observational": str(config), "seed_everything": spec.seed}
    log = io.StringIO()
    try:
        # The warnings that say only that an observational task has no true propensity to compare with.
        with captured(log, ignore=[r"CausalMetricsCallback skipped (iptw_weight_mse|spearman)"]):
            settings = RunSettings(
                configs=(path,),
                overrides=overrides,
                run_dir=run_dir,
                quiet=True,
                evaluation=EvaluationSettings(
                    n_boot=spec.n_boot,
                    split=spec.split,
                    estimators=spec.estimators,
                    seed=spec.seed,
                    refit_reps=spec.refit_reps,
                ),
            )
            search = spec.tune.get(model)
            if search:  # every point fitted, the lowest validation loss evaluated (as a grid's tune)
                from textcause.grid.tuning import fit_tuned

                result, _, candidates = fit_tuned(settings, search)
                record["candidates"] = len(candidates)
            else:
                result = fit_and_evaluate(settings)
            pred = result.predictions
            record["train_seconds"] = result.train_seconds
            record["accuracy_ci"] = list(
                accuracy_interval(pred["t"], pred["propensity"], n_boot=spec.n_boot, seed=spec.seed)
            )
        rows = [{k: v for k, v in r.items() if k not in result.meta or k in KEPT_META} for r in result.rows]
        info = result.representation
        record.update(
            status="ok",
            error=None,
            rows=rows,
            n_eval=len(pred["t"]),
            checkpoint=str(result.checkpoint) if result.checkpoint else None,
            representation=info.get("kind"),
            vocabulary_size=info.get("vocabulary_size"),
            eval_seconds=result.eval_seconds,
        )
    except SystemExit as err:
        record.update(status="failed", error=f"the run exited with code {err.code}: {error_line(log.getvalue())}")
    except Exception as err:
        record.update(status="failed", error=f"{type(err).__name__}: {err}")
    finally:
        (run_dir / "fit.log").write_text(log.getvalue(), encoding="utf-8")
        release_memory()
    record["seconds"] = time.perf_counter() - t0
    return record


def _progress(
    i: int, n: int, model: str, rec: dict[str, Any], how: str, elapsed: float, eta: float | None = None
) -> str:
    """One model's line: what it gave, the time elapsed and (with models still to fit) the ETA.

    The ATE shown is the first of the registry's default estimators (``DEFAULT_ESTIMATORS``) with
    one, else the unadjusted one."""
    head = f"[{i}/{n}] {model}: "
    clock = f"elapsed {format_seconds(elapsed)}" + (f", ETA {format_seconds(eta)}" if eta is not None else "")
    how = (
        f"done in {rec.get('seconds', 0.0):.1f} s"
        if how == "done"
        else f"skipped ({how} in {rec.get('seconds', 0.0):.1f} s)"
    )
    if rec.get("status") != "ok":
        return head + f"{how}: FAILED: {rec.get('error')} ({clock})"
    ests = {r["estimator"]: r for r in rec["rows"]}
    main = next(
        (ests[e] for e in registry.DEFAULT_ESTIMATORS if e in ests and "ate" in ests[e]), ests.get("unadjusted")
    )
    ci = f" [{main['ci_low']:+.3f}, {main['ci_high']:+.3f}]" if main.get("ci_low") is not None else ""
    return (
        head + f"{how}: accuracy {main['treatment_accuracy']:.3f}, "
        f"{main['estimator']} ATE {main['ate']:+.3f}{ci} ({clock})"
    )


def _init_worker(threads: int, environ: dict[str, str]) -> None:
    """A study worker process with its parent's environment as it is now (a fork server's children
    inherit the server's, from when it started; multiprocessing itself carries the working
    directory over) and its share of the CPUs as torch threads."""
    import os

    import torch

    os.environ.clear()
    os.environ.update(environ)
    torch.set_num_threads(threads)


def _model_pool(workers: int) -> Any:
    """A process pool for ``workers`` model fits: forked from a fork server where the platform has
    one (Linux), else spawned; each process with ``usable CPUs // workers`` torch threads."""
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    from textcause.features.encoder_workers import available_cpus

    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    threads = max(1, available_cpus() // workers)
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context(method),
        initializer=_init_worker,
        initargs=(threads, dict(os.environ)),
    )


def _eta(fitted: Sequence[float], n_left: int) -> float | None:
    """The seconds the ``n_left`` models still to fit will take, at the mean time of those fitted so far."""
    if n_left <= 0 or not fitted:
        return None
    return n_left * sum(fitted) / len(fitted)


def run_study(
    config: str | Path,
    out_dir: str | Path | None = None,
    *,
    models: Sequence[str] | None = None,
    retry_failed: bool = False,
    echo: Callable[[str], None] | None = None,
    workers: int = 1,
) -> dict[str, Any]:
    """Run (or resume) an observational study's models (their tables and figure: :mod:`textcause.reports.study`).

    Args:
        config: the study's YAML.
        out_dir: the output folder (default ``runs/observe/<name>``).
        models: run only these of the study's models (default: all); the tables and figure still
            show every finished model of the study.
        retry_failed: run models recorded as failed again.
        echo: where progress lines go (default: stderr): one a model, with the time elapsed and,
            while models remain to fit, the ETA (their number times the mean time of those fitted).
        workers: processes that fit the models (1: in this process, one after another); the
            records do not depend on it.

    Returns:
        ``{"spec", "task", "out"}``: the parsed study, its task and the output folder.

    Raises:
        ValueError: an invalid config or a task that cannot be built (before any model runs).
    """
    from textcause.observational.task import load_task
    from textcause.validation import check_int

    check_int(workers, "workers", "run_study", low=1)
    echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    config = Path(config).resolve()
    spec = load_spec(config)
    out = Path(out_dir) if out_dir is not None else Path("runs") / "observe" / spec.name
    unknown = sorted(set(models or ()) - set(spec.model_names))
    if unknown:
        raise ValueError(
            f"The '--models' option names models not in the study: {unknown}; its models are {spec.model_names}."
        )
    task = load_task(config, seed=spec.seed)  # a bad config fails here, before any fit
    echo(
        f"{spec.name}: {task.info['n_users']} users ({task.info['n_treated']} treated, {task.info['n_control']} control), "
        f"{len(spec.models)} models, results in {out}"
    )
    wanted = [m for m in spec.models if models is None or m[0] in models]
    keys = [model_key(spec, model, path) for model, path in wanted]
    earlier = [_finished(out / "models" / f"{model}.json", key, retry_failed) for (model, _), key in zip(wanted, keys)]
    n_to_fit = sum(old is None for old in earlier)
    fitted: list[float] = []  # seconds per model fitted in this call
    started = time.perf_counter()

    def finish(i: int, model: str, key: str, record: dict[str, Any], seconds: float) -> None:
        record.update(key=key, finished_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        atomic_write_json(out / "models" / f"{model}.json", record)
        fitted.append(seconds)
        eta = _eta(fitted, n_to_fit - len(fitted))
        echo(_progress(i, len(wanted), model, record, "done", time.perf_counter() - started, eta))

    todo = [(i, m, p, k) for i, ((m, p), k, old) in enumerate(zip(wanted, keys, earlier), 1) if old is None]
    if workers > 1 and len(todo) > 1:
        from concurrent.futures import as_completed

        for i, ((model, _), old) in enumerate(zip(wanted, earlier), 1):
            if old is not None:
                echo(_progress(i, len(wanted), model, old, "finished earlier", time.perf_counter() - started))
        with _model_pool(min(workers, len(todo))) as pool:
            futures = {pool.submit(_timed_model, spec, m, p, config, out): (i, m, k) for i, m, p, k in todo}
            for future in as_completed(futures):
                i, model, key = futures[future]
                record, seconds = future.result()
                finish(i, model, key, record, seconds)
        return {"spec": spec, "task": task, "out": out}
    for i, ((model, path), key, old) in enumerate(zip(wanted, keys, earlier), 1):
        if old is not None:
            echo(_progress(i, len(wanted), model, old, "finished earlier", time.perf_counter() - started))
            continue
        record, seconds = _timed_model(spec, model, path, config, out)
        finish(i, model, key, record, seconds)
    return {"spec": spec, "task": task, "out": out}


def _timed_model(
    spec: ObservationalSpec, model: str, path: Path, config: Path, out: Path
) -> tuple[dict[str, Any], float]:
    """:func:`run_model`'s record and the seconds it took (the unit of work of a study worker)."""
    t0 = time.perf_counter()
    record = run_model(spec, model, path, config, out)
    return record, time.perf_counter() - t0


def _finished(dest: Path, key: str, retry_failed: bool) -> dict[str, Any] | None:
    """The record of a model finished earlier under ``key`` (None: it is to be fitted)."""
    old = json.loads(dest.read_text(encoding="utf-8")) if dest.exists() else None
    if old is not None and old.get("key") == key and (old.get("status") == "ok" or not retry_failed):
        return old
    return None


def load_records(spec: ObservationalSpec, out_dir: Path) -> list[dict[str, Any]]:
    """The current records of the study's models (a record under another content key is ignored)."""
    records = []
    for model, path in spec.models:
        dest = out_dir / "models" / f"{model}.json"
        if dest.exists():
            rec = json.loads(dest.read_text(encoding="utf-8"))
            if rec.get("key") == model_key(spec, model, path):
                records.append(rec)
    return records

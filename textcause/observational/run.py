"""``textcause observe``: fit every propensity model of an observational study, compare their ATEs.

    textcause observe --config configs/observational/twitter_gender.yaml          # all models
    textcause observe --config configs/observational/blogs_gender.yaml --models unadjusted lr_lda
    textcause observe --config ... --dry-run        # build the task, print its counts, fit nothing

Each model is ``train.py fit --config configs/<model>.yaml --data.observational <study config>``
(the default trainer and data configs, early stopping, the best checkpoint), in-process; its test
propensities are predicted as ``evaluate.py`` does and passed to
:func:`textcause.evaluation.evaluate_propensities` with no truth. Results go to
``runs/observe/<name>/`` (or ``--out``):

    models/<model>.json   one record per model, written atomically when the model finishes
    runs/<model>/         its training run (fit.log, CSV logs, checkpoint)
    results.json / results.csv / results.md   every model, the disagreement summary
    fig2_<name>.png / .svg                     the paper's figure 2 layout

A model whose record has the same content key (the parsed study config, model config and default
configs: comments do not count) is skipped on rerun, so a killed run resumes; a model that fails is recorded with its
error and the run goes on (``--retry-failed`` runs it again).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import logging
import os
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from textcause.io import atomic_write_json, atomic_write_text, content_key
from textcause.observational.spec import DEFAULT_CONFIGS, ObservationalSpec, canonical, load_spec

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
    defaults = [_config_content(p) for p in DEFAULT_CONFIGS]
    return content_key(KEY_VERSION, spec.content, _config_content(path), defaults, model)


def fit_args(spec: ObservationalSpec, model: str, path: Path, config: Path, run_dir: Path) -> list[str]:
    """The ``train.py fit`` arguments of one model of the study."""
    logger = {"class_path": "lightning.pytorch.loggers.CSVLogger",
              "init_args": {"save_dir": str(run_dir), "name": "fit", "version": 0}}
    args = ["fit", "--config", str(path)]
    for key, value in spec.overrides_for(model):
        args += [f"--{key}", value if isinstance(value, str) else json.dumps(value)]
    return args + [
        "--data.observational", str(config), "--data.predict_split", spec.split,
        "--seed_everything", str(spec.seed),
        "--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false",
        "--trainer.default_root_dir", str(run_dir), "--trainer.logger", json.dumps(logger),
    ]


def _error_line(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    flagged = [ln for ln in lines if "error:" in ln.lower()]
    return (flagged or lines or ["(no output)"])[-1][:500]


@contextlib.contextmanager
def _quiet(log: io.StringIO):
    """Send a fit's output to ``log``: Lightning's info lines, and the warnings that say only that
    an observational task has no true propensity to compare with."""
    loggers = [logging.getLogger(n) for n in ("lightning.pytorch", "lightning.fabric")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.WARNING)
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"CausalMetricsCallback skipped (iptw_weight_mse|spearman)")
            yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def run_model(spec: ObservationalSpec, model: str, path: Path, config: Path, out_dir: Path) -> dict[str, Any]:
    """Fit, predict and evaluate one model; never raises for the model's own error (status ``failed``)."""
    from textcause.observational.results import accuracy_interval

    run_dir = out_dir / "runs" / model
    shutil.rmtree(run_dir, ignore_errors=True)  # a previous attempt's checkpoint must not be picked up
    run_dir.mkdir(parents=True)
    t0 = time.perf_counter()
    record: dict[str, Any] = {"model": model, "config": str(path), "split": spec.split, "seed": spec.seed,
                              "n_boot": spec.n_boot, "run_dir": str(run_dir)}
    log = io.StringIO()
    try:
        with _quiet(log):
            from textcause.cli import make_cli
            from textcause.evaluate_run import predict_propensities
            from textcause.evaluation import evaluate_propensities

            cli = make_cli(fit_args(spec, model, path, config, run_dir))
            record["train_seconds"] = time.perf_counter() - t0
            best = getattr(cli.trainer.checkpoint_callback, "best_model_path", "") or None
            pred = predict_propensities(cli.trainer, cli.model, cli.datamodule, Path(best) if best else None)
            rows = evaluate_propensities(pred["t"], pred["y"], pred["propensity"], true_propensity=None, true_ate=None,
                                         estimators=spec.estimators, n_boot=spec.n_boot, seed=spec.seed)
            record["accuracy_ci"] = list(accuracy_interval(pred["t"], pred["propensity"], n_boot=spec.n_boot,
                                                           seed=spec.seed))
            info = getattr(cli.datamodule, "representation_info", {}) or {}
        record.update(status="ok", error=None, rows=rows, n_eval=len(pred["t"]), checkpoint=best,
                      representation=info.get("kind"), vocabulary_size=info.get("vocabulary_size"),
                      eval_seconds=time.perf_counter() - t0 - record["train_seconds"])
    except SystemExit as err:  # the CLI's parser rejected an option (it printed why)
        record.update(status="failed", error=f"train.py rejected the options (exit {err.code}): {_error_line(log.getvalue())}")
    except Exception as err:  # noqa: BLE001 - a model's error is data, recorded with its message
        record.update(status="failed", error=f"{type(err).__name__}: {err}")
    finally:
        (run_dir / "fit.log").write_text(log.getvalue(), encoding="utf-8")
        module = sys.modules.get("textcause.data.datamodule")
        if module is not None:
            module.clear_built_cache()
        gc.collect()
    record["seconds"] = time.perf_counter() - t0
    return record


def _progress(i: int, n: int, model: str, rec: dict[str, Any], how: str, elapsed: float) -> str:
    head = f"[{i}/{n}] {model}: "
    how = f"done in {rec.get('seconds', 0.0):.1f} s" if how == "done" else f"skipped ({how} in {rec.get('seconds', 0.0):.1f} s)"
    if rec.get("status") != "ok":
        return head + f"{how}: FAILED: {rec.get('error')}"
    ests = {r["estimator"]: r for r in rec["rows"]}
    main = next((ests[e] for e in ("ipw", "stratified", "matching") if e in ests and "ate" in ests[e]), ests.get("unadjusted"))
    ci = f" [{main['ci_low']:+.3f}, {main['ci_high']:+.3f}]" if main.get("ci_low") is not None else ""
    return (head + f"{how}: accuracy {main['treatment_accuracy']:.3f}, "
            f"{main['estimator']} ATE {main['ate']:+.3f}{ci} (elapsed {elapsed:.0f} s)")


def run_study(config: str | Path, out_dir: str | Path | None = None, *, models: Sequence[str] | None = None,
              retry_failed: bool = False, echo: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run (or resume) an observational study and write its tables and figure.

    Args:
        config: the study's YAML.
        out_dir: the output folder (default ``runs/observe/<name>``).
        models: run only these of the study's models (default: all); the tables and figure still
            show every finished model of the study.
        retry_failed: run models recorded as failed again.
        echo: where progress lines go (default: stderr).

    Returns:
        ``{"study", "rows", "disagreement", "files"}`` as also written to ``results.json``.

    Raises:
        ValueError: an invalid config or a task that cannot be built (before any model runs).
    """
    from textcause.observational.task import load_task

    echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    config = Path(config).resolve()
    spec = load_spec(config)
    out = Path(out_dir) if out_dir is not None else Path("runs") / "observe" / spec.name
    unknown = sorted(set(models or ()) - set(spec.model_names))
    if unknown:
        raise ValueError(f"The '--models' option names models not in the study: {unknown}; its models are {spec.model_names}.")
    task = load_task(config, seed=spec.seed)  # a bad config fails here, before any fit
    echo(f"{spec.name}: {task.info['n_users']} users ({task.info['n_treated']} treated, {task.info['n_control']} control), "
         f"{len(spec.models)} models, results in {out}")
    wanted = [m for m in spec.models if models is None or m[0] in models]
    started = time.perf_counter()
    for i, (model, path) in enumerate(wanted, 1):
        dest = out / "models" / f"{model}.json"
        key = model_key(spec, model, path)
        old = json.loads(dest.read_text(encoding="utf-8")) if dest.exists() else None
        if old is not None and old.get("key") == key and (old.get("status") == "ok" or not retry_failed):
            echo(_progress(i, len(wanted), model, old, "finished earlier", time.perf_counter() - started))
            continue
        record = run_model(spec, model, path, config, out)
        record.update(key=key, finished_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        atomic_write_json(dest, record)
        echo(_progress(i, len(wanted), model, record, "done", time.perf_counter() - started))
    return write_outputs(spec, task, out)


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


def write_outputs(spec: ObservationalSpec, task: Any, out_dir: Path) -> dict[str, Any]:
    """Write results.json / .csv / .md and the figure from the finished models' records."""
    from textcause.observational.figure import draw_study_figure
    from textcause.observational.results import disagreement, report_markdown, result_rows, to_csv

    info = dict(task.info)
    rows = result_rows(load_records(spec, out_dir), study=spec.name, corpus=spec.corpus)
    summary = disagreement(rows, spec.estimators)
    n_eval = len(task.split[spec.split])
    t_eval = task.treatment[task.split[spec.split]]
    chance = float(max(t_eval.mean(), 1.0 - t_eval.mean()))
    threshold = info["threshold"]
    outcome = info["outcome"] if threshold is None else f"{info['outcome']} > {threshold:.3g}"
    subtitle = (f"T: {info['treatment']}; Y: {outcome}; {info['n_users']} users, "
                f"{n_eval} in the {spec.split} split; seed {spec.seed}")
    title = f"{spec.name}: {spec.description}" if spec.description else spec.name
    stem = f"fig2_{spec.name}"
    files: list[Path] = []
    if rows:
        files = draw_study_figure(rows, out_dir, stem, estimators=spec.estimators, title=title,
                                  subtitle=subtitle, chance=chance)
    text = f"{spec.text_posts} posts" if spec.text_posts else f"{spec.text_fraction:g} of the posts"
    about = [
        (f"Corpus: `{spec.corpus}` ({info['n_corpus']} users read; {info['n_filtered']} after the filter, "
         f"{info['n_eligible']} with enough posts, {info['n_users']} studied)."),
        f"Treatment: {info['treatment']}: {info['n_treated']} treated, {info['n_control']} control.",
        (f"Text: the first {text} (mean {info['mean_text_posts']:.1f} posts); the outcome comes from the later "
         f"posts (mean {info['mean_later_posts']:.1f})."),
        f"Outcome: Y = {outcome} (mean Y {info['outcome_mean']:.3f}).",
        (f"Split: 40/10/50 (seed {spec.seed}); evaluated on the {n_eval} users of the {spec.split} split; "
         f"{spec.n_boot} bootstrap replicates."),
    ]
    study = {"name": spec.name, "description": spec.description, "config": spec.source, "corpus": spec.corpus,
             "seed": spec.seed, "split": spec.split, "n_eval": n_eval, "chance_accuracy": chance,
             "estimators": list(spec.estimators), "models": spec.model_names, **info}
    markdown = report_markdown(rows, summary, title=title, about=about, estimators=spec.estimators,
                               figure=f"{stem}.png" if files else None)
    written = [atomic_write_text(out_dir / "results.md", markdown), atomic_write_text(out_dir / "results.csv", to_csv(rows))]
    result = {"study": study, "rows": rows, "disagreement": summary}
    written.append(atomic_write_json(out_dir / "results.json", result))
    result["files"] = [str(p) for p in written + files]
    return result


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="textcause observe", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="an observational study YAML (configs/observational/*.yaml)")
    parser.add_argument("--out", default=None, help="the output folder (default: runs/observe/<name>)")
    parser.add_argument("--models", nargs="+", default=None, help="run only these models of the study")
    parser.add_argument("--retry-failed", action="store_true", help="run models recorded as failed again")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument("--dry-run", action="store_true", help="build the task, print its counts, fit nothing")
    return parser


def observe_main(argv: Sequence[str]) -> int:
    """The ``textcause observe`` command; returns the exit code (2: a bad config, 1: a model failed)."""
    args = build_parser().parse_args(list(argv))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("WANDB_MODE", "offline")
    try:
        if args.threads is not None:
            if args.threads < 1:
                raise ValueError(f"The '--threads' option must be an int >= 1. Got {args.threads} instead.")
            import torch

            torch.set_num_threads(args.threads)
        if args.dry_run:
            from textcause.observational.task import load_task

            task = load_task(args.config)
            print(json.dumps({"task": repr(task), **task.info}, indent=2, default=str))
            return 0
        result = run_study(args.config, args.out, models=args.models, retry_failed=args.retry_failed)
    except (ValueError, FileNotFoundError) as err:
        if os.environ.get("TEXTCAUSE_DEBUG"):
            raise
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: rerun the same command to resume.", file=sys.stderr)
        return 130
    md = Path(result["files"][0])
    print(md.read_text(encoding="utf-8"))
    print("wrote " + ", ".join(result["files"]), file=sys.stderr)
    failed = [r["model"] for r in result["rows"] if r.get("estimator") is None]  # a model, not one estimator
    return 1 if failed else 0

"""The ``textcause`` command.

    textcause --version              the installed version
    textcause tasks [--describe]     every task level in a table (or in full sentences)
    textcause train fit --config configs/model/lr_bigram_binary.yaml   (same as python train.py ...)
    textcause evaluate RUN_DIR       (same as python evaluate.py ...)
    textcause predict RUN_DIR --corpus new.csv --out propensities.csv   score new users with a trained run
    textcause demo                   the quick-start job on the real Twitter corpus
    textcause benchmark --config configs/benchmark/smoke.yaml [--workers N]   a task x model x seed grid
    textcause results export --db runs/benchmark/<grid>/results.db --out grid.jsonl.gz   a grid's finished cells as one file (and import)
    textcause sweep --config configs/sweeps/sherbert_smoke.yaml [--trials N] [--summary]   a sweep, offline on Optuna
    textcause compare --db runs/benchmark/<grid>/results.db A B                      two methods across seeds
    textcause report --db runs/benchmark/<grid>/results.db --out report/            figures and a report
    textcause observe --config configs/observational/twitter_gender.yaml   every model on real T and Y (no truth)
    textcause advise --config configs/advise/reddit_drunk.yaml   choose a method on your users, estimate, report
    textcause gender probe --model PATH_OR_NAME --w years          masked gender probes: table 2 and figure 2
    textcause counterfactual baseline --model svm|minilm_lr        SemEval-2020 Task 5 subtask-1 baselines on test
    textcause semeval score --gold FILE --pred FILE --subtask 2     score a SemEval-2020 Task 5 prediction file (alias of counterfactual)
    textcause cfr --config configs/cfr/blogs.yaml                   counterfactual representations vs true counterfactual texts

Light commands (``tasks``, ``--help``, ``--version``) do not import Lightning.
"""

from __future__ import annotations

import sys

from textcause import startup
from textcause.cli.parsing import CommandParser, plain_text, rewrite_config_args

__all__ = [
    "main",
]

USAGE = __doc__
_MODEL_COMMANDS = ("train", "evaluate", "predict", "demo")  # each imports Lightning to run or load a model


def package_version() -> str:
    """The installed version of textcause (:func:`importlib.metadata.version`).

    A source tree that is not installed has no distribution metadata: then ``textcause.__version__``.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("textcause")
    except PackageNotFoundError:
        from textcause.version import __version__

        return __version__


def tasks_main(argv: list[str]) -> int:
    """``textcause tasks [TASK ...] [--describe]``: the task levels as a table (or in full sentences)."""
    from textcause.simulation import describe_task, list_tasks
    from textcause.simulation.tasks import get_spec, population_unadjusted, task_label

    parser = CommandParser(prog="textcause tasks", description="List the semi-synthetic task levels.")
    parser.add_argument("task", nargs="*", help="only these tasks (default: every registered task)")
    parser.add_argument("--describe", action="store_true", help="one paragraph per level instead of the table")
    args = parser.parse_args(argv)
    levels = [(t, lv) for t, lv in list_tasks() if not args.task or t in args.task]
    unknown = sorted(set(args.task) - {t for t, _ in list_tasks()})
    if unknown:
        parser.error(f"unknown task(s) {unknown}; choose among {sorted({t for t, _ in list_tasks()})}")
    if args.describe:
        for task, level in levels:
            print(describe_task(task, level), end="\n\n")
        return 0

    def edit(f: object) -> str:
        return "-" if f is None else f.describe("append")  # type: ignore[attr-defined]

    rows = [
        ("task level", "class-1 histories (f1)", "class-2 histories (f2)", "P(T=1) c1 / c2", "true ATE", "unadjusted")
    ]
    for task, level in levels:
        spec = get_spec(task, level)
        note = f" (train {spec.train_fraction:.0%})" if spec.train_fraction < 1.0 else ""
        rows.append(
            (
                f"{task_label(task)} {level}{note}",
                edit(spec.f1),
                edit(spec.f2),
                f"{spec.treat_probs[0]:g} / {spec.treat_probs[1]:g}",
                f"{spec.true_ate:+.2f}",
                f"{population_unadjusted(spec.treat_probs, spec.outcome_probs, spec.class1_share):+.2f}",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for k, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if k == 0:
            print("  ".join("-" * w for w in widths))
    print(
        f"\n{len(levels)} task levels; `textcause tasks --describe` for the outcome tables and the questions they ask."
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """The ``textcause`` command; ``argv`` defaults to ``sys.argv[1:]``.

    Called without ``argv`` (the console script, ``python -m textcause``) it is a process of its
    own: its commands that load models import Lightning with the garbage collector paused, and the
    process ends without the collector's passes over what it imported (:mod:`textcause.startup`).
    """
    own_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(plain_text(USAGE).strip())
        return 0
    if argv[0] in ("-V", "--version"):
        print(f"textcause {package_version()}")
        return 0
    cmd, rest = argv[0], argv[1:]
    if own_process and cmd != "tasks":
        startup.quick_exit()
        if cmd in _MODEL_COMMANDS and not {"-h", "--help"} & set(rest):
            startup.preload("textcause.run.lightning_cli")
    if cmd == "tasks":
        return tasks_main(rest)
    if cmd == "benchmark":  # handles its own errors and exit codes; light --help / --dry-run
        from textcause.cli.benchmark import benchmark_main

        return benchmark_main(rest)
    if cmd == "results":  # handles its own errors and exit codes; light --help
        from textcause.cli.results import results_main

        return results_main(rest)
    if cmd == "sweep":  # handles its own errors and exit codes; light --help
        from textcause.cli.sweep import sweep_main

        return sweep_main(rest)
    if cmd == "observe":  # handles its own errors and exit codes; light --help / --dry-run
        from textcause.cli.observe import observe_main

        return observe_main(rest)
    if cmd == "advise":  # handles its own errors and exit codes; light --help
        from textcause.cli.advise import advise_main

        return advise_main(rest)
    if cmd == "gender":  # handles its own errors and exit codes; light --help
        from textcause.cli.gender import gender_main

        return gender_main(rest)
    if cmd in ("counterfactual", "semeval"):  # handles its own errors and exit codes; light --help
        from textcause.cli.counterfactual import counterfactual_main

        return counterfactual_main(rest, prog=f"textcause {cmd}")
    if cmd == "cfr":  # handles its own errors and exit codes; light --help
        from textcause.cli.cfr import cfr_main

        return cfr_main(rest)
    from textcause.cli.errors import friendly_errors

    if cmd == "train":
        from textcause.cli.precheck import early_error

        rest = rewrite_config_args(rest, "textcause train")  # a model config's old place (one release)
        mistake = early_error(rest, prog="textcause train")  # before Lightning is imported (seconds)
        if mistake is not None:
            print(f"error: {mistake}", file=sys.stderr)
            return 2
        from textcause.cli.parsing import lightning_help_kwargs
        from textcause.run.lightning_cli import make_cli

        sys.argv[0] = "textcause train"  # argparse names the program after argv[0] (else "__main__.py")
        return friendly_errors(lambda: make_cli(rest, **lightning_help_kwargs()))
    if cmd == "evaluate":
        from textcause.cli.evaluate import main as evaluate_main

        return friendly_errors(lambda: evaluate_main(rest, prog="textcause evaluate"))
    if cmd == "predict":
        from textcause.cli.predict import predict_main

        return friendly_errors(lambda: predict_main(rest))
    if cmd == "compare":
        from textcause.cli.compare import compare_main

        return friendly_errors(lambda: compare_main(rest))
    if cmd == "report":
        from textcause.cli.report import report_main

        return friendly_errors(lambda: report_main(rest))
    if cmd == "demo":
        from textcause.cli.demo import main as demo_main

        return friendly_errors(lambda: demo_main(rest))
    print(f"error: unknown command {cmd!r}.\n\n{plain_text(USAGE).strip()}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

"""The ``textcause`` command.

    textcause tasks                  list every task and level with its description
    textcause train fit --config configs/lr_bigram_binary.yaml   (same as python train.py ...)
    textcause evaluate RUN_DIR       (same as python evaluate.py ...)
    textcause demo                   the quick-start job on the real Twitter corpus
    textcause benchmark --config configs/benchmark/smoke.yaml [--workers N]   a task x model x seed grid
    textcause sweep --config configs/sweeps/sherbert_smoke.yaml [--trials N] [--summary]   a sweep, offline on Optuna
    textcause compare --db runs/benchmark/<grid>/results.db A B                      two methods across seeds
    textcause report --db runs/benchmark/<grid>/results.db --out report/            figures and a report
    textcause observe --config configs/observational/twitter_gender.yaml   every model on real T and Y (no truth)
    textcause gender probe --model PATH_OR_NAME --w years          masked gender probes: table 2 and figure 2
    textcause counterfactual baseline --model svm|minilm_lr        SemEval-2020 Task 5 subtask-1 baselines on test

Light commands (``tasks``, ``--help``) do not import Lightning.
"""

from __future__ import annotations

import sys

USAGE = __doc__


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE.strip())
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "tasks":
        from textcause.simulation import describe_task, list_tasks

        for task, level in list_tasks():
            print(f"{task:<24} level {level}: {describe_task(task, level)}")
        return 0
    if cmd == "benchmark":  # handles its own errors and exit codes; light --help / --dry-run
        from textcause.cli.benchmark import benchmark_main

        return benchmark_main(rest)
    if cmd == "sweep":  # handles its own errors and exit codes; light --help
        from textcause.cli.sweep import sweep_main

        return sweep_main(rest)
    if cmd == "observe":  # handles its own errors and exit codes; light --help / --dry-run
        from textcause.cli.observe import observe_main

        return observe_main(rest)
    if cmd == "gender":  # handles its own errors and exit codes; light --help
        from textcause.cli.gender import gender_main

        return gender_main(rest)
    if cmd == "counterfactual":  # handles its own errors and exit codes; light --help
        from textcause.cli.counterfactual import counterfactual_main

        return counterfactual_main(rest)
    from textcause.cli.errors import friendly_errors

    if cmd == "train":
        from textcause.runs.lightning_cli import make_cli

        return friendly_errors(lambda: make_cli(rest))
    if cmd == "evaluate":
        from textcause.cli.evaluate import main as evaluate_main

        return friendly_errors(lambda: evaluate_main(rest))
    if cmd == "compare":
        from textcause.cli.compare import compare_main

        return friendly_errors(lambda: compare_main(rest))
    if cmd == "report":
        from textcause.cli.report import report_main

        return friendly_errors(lambda: report_main(rest))
    if cmd == "demo":
        from textcause.cli.demo import main as demo_main

        return friendly_errors(lambda: demo_main(rest))
    print(f"error: unknown command {cmd!r}.\n\n{USAGE.strip()}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

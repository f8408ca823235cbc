#!/usr/bin/env python
"""Train and evaluate several model configs on one task through the real CLI; print a Markdown table.

    python benchmarks/model_table.py --corpus twitter --task linguistic_complexity --level 2
    python benchmarks/model_table.py --models oracle unadjusted lr_bigram_binary sherbert_pooled order_count \\
        --task order_of_text --level 2
    python benchmarks/model_table.py --all-levels --models lr_bigram_binary sherbert order_count

Each model runs on the one fit-and-evaluate path (:func:`textcause.run.fit.fit_and_evaluate`: what
``train.py fit`` then ``evaluate.py`` do), evaluated on its best checkpoint (test split, 1,000-replicate
percentile bootstrap over test users). Rows are also appended to ``<out>/<model>-<task>-<level>-s<seed>/results.csv``.
More options for every fit: ``--set trainer.max_epochs=5`` (repeatable; values are YAML).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAPER_MODELS = [
    "oracle",
    "unadjusted",
    "lr_unigram_binary",
    "lr_bigram_binary",
    "lr_bigram_counts",
    "lr_lda",
    "nn_unigram_binary",
    "nn_bigram_binary",
    "nn_bigram_counts",
    "nn_lda",
]


def run_one(model: str, task: str, level: int, args: argparse.Namespace, out: Path) -> tuple[dict, float]:
    from textcause.paths import model_config_path
    from textcause.run.fit import EvaluationSettings, RunSettings, fit_and_evaluate

    name = f"{model}-{task}-{level}-s{args.seed}"
    overrides = {
        **dict(args.set),
        "data.corpus": args.corpus,
        "data.task": task,
        "data.level": level,
        "seed_everything": args.seed,
    }
    settings = RunSettings(
        configs=(model_config_path(model),),
        overrides=overrides,
        run_dir=out / name,
        quiet=True,
        evaluation=EvaluationSettings(n_boot=args.n_boot),
    )
    result = fit_and_evaluate(settings)
    return {"meta": result.meta, "rows": result.rows}, result.train_seconds


def _option(text: str) -> tuple[str, object]:
    import yaml

    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.lstrip("-"), yaml.safe_load(value)


def fmt(row: dict, key: str) -> str:
    return f"{row[key]:+.3f} [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="twitter")
    parser.add_argument("--task", default="linguistic_complexity")
    parser.add_argument("--level", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--all-levels", action="store_true", help="every task level instead of --task/--level")
    parser.add_argument("--models", nargs="+", default=PAPER_MODELS)
    parser.add_argument("--n_boot", type=int, default=1000)
    parser.add_argument("--out", default=str(ROOT / "runs" / "model_table"))
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        type=_option,
        metavar="KEY=VALUE",
        help="a train.py option for every fit, e.g. trainer.max_epochs=5 (repeatable)",
    )
    args = parser.parse_args()
    out = Path(args.out)

    if args.all_levels:
        from textcause.simulation import list_tasks

        cells = list_tasks()
    else:
        cells = [(args.task, args.level)]
    lines = [
        f"{args.corpus}, seed {args.seed}, test split (ATE with 95% percentile-bootstrap interval over test users):",
        "",
        "| task level | model | train s | treatment acc. | IPTW ATE | IPTW bias | stratified ATE | stratified bias |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for task, level in cells:
        for model in args.models:
            result, seconds = run_one(model, task, level, args, out)
            rows = {r["estimator"]: r for r in result["rows"]}
            ipw, strat = rows["ipw"], rows["stratified"]
            lines.append(
                f"| {task}-{level} (true {result['meta']['true_ate']:+.1f}) | {model} | {seconds:.0f} "
                f"| {ipw['treatment_accuracy']:.3f} | {fmt(ipw, 'ate')} | {ipw['bias']:+.3f} "
                f"| {fmt(strat, 'ate')} | {strat['bias']:+.3f} |"
            )
            print("\n".join(lines), flush=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()

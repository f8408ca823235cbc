"""``make demo``: the quick-start job on the real Twitter corpus.

1. Reads the PAN 2019 Twitter histories, draws Linguistic Complexity level 2 (a random sickness post
   appended to class-1 users), and prints the true ATE beside the unadjusted, oracle-IPTW and
   oracle-stratified estimates with bootstrap intervals on the test split.
2. Trains logistic regression on 1,2-gram binary features with the real CLI (``train.py fit``) and
   evaluates its best checkpoint (``evaluate.py``), printing and writing the results table.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Sequence

from textcause.cli import CONFIG_DIR, PROJECT_ROOT


def main(argv: Sequence[str] = ()) -> None:
    parser = argparse.ArgumentParser(prog="textcause demo", description=__doc__)
    parser.add_argument("--corpus", default="twitter")
    parser.add_argument("--task", default="linguistic_complexity")
    parser.add_argument("--level", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="lr_bigram_binary", help="a model config in configs/")
    parser.add_argument("--out", default=str(PROJECT_ROOT / "runs" / "demo"))
    parser.add_argument("--n_boot", type=int, default=1000)
    args = parser.parse_args(list(argv))

    from textcause.corpus import corpus_summary, load_histories
    from textcause.evaluation import evaluate_propensities, format_table
    from textcause.simulation import make_task

    t0 = time.perf_counter()
    corpus = load_histories(args.corpus)
    s = corpus_summary(corpus)
    print(f"corpus {args.corpus}: {s['n_users']} users, {s['posts_per_user_mean']:.1f} posts per user "
          f"(read in {time.perf_counter() - t0:.1f} s)")
    task = make_task(corpus, args.task, args.level, seed=args.seed)
    test = task.split.test
    print(f"task {task.name}, seed {args.seed}: true ATE {task.true_ate:+.3f}, sample ATE {task.sample_ate:+.3f}, "
          f"split {task.split.sizes()}")
    rows = evaluate_propensities(
        task.treatment[test], task.outcome[test], task.propensity[test],
        true_propensity=task.propensity[test], true_ate=task.true_ate,
        estimators=("ipw", "stratified"), n_boot=args.n_boot, seed=args.seed,
    )
    print(format_table(rows, title="\nOracle (true propensities) on the test split; 'unadjusted' ignores them:"))

    from textcause.cli import make_cli
    from textcause.evaluate_run import main as evaluate_main

    out = Path(args.out)
    print(f"\nTraining {args.model} with train.py fit ...")
    t1 = time.perf_counter()
    cli = make_cli(
        [
            "fit", "--config", str(CONFIG_DIR / f"{args.model}.yaml"),
            "--data.corpus", args.corpus, "--data.task", args.task, "--data.level", str(args.level),
            "--seed_everything", str(args.seed),
            "--trainer.default_root_dir", str(out),
            "--trainer.logger", json.dumps({"class_path": "lightning.pytorch.loggers.CSVLogger",
                                            "init_args": {"save_dir": str(out), "name": "textcause"}}),
        ]
    )
    run_dir = Path(cli.trainer.log_dir)
    print(f"trained in {time.perf_counter() - t1:.1f} s; run folder {run_dir}")
    evaluate_main([str(run_dir), "--n_boot", str(args.n_boot), "--out", str(out)])
    print(f"\ndemo finished in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    import sys

    from textcause.cli import friendly_errors

    sys.exit(friendly_errors(lambda: main(sys.argv[1:])))

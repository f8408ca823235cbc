#!/usr/bin/env python
"""The project's LR baselines beside a reviewer's validation-tuned scikit-learn LR, every level and seed.

    python benchmarks/bench_tuned_lr.py --db runs/benchmark/weld/results.db          # Twitter, all 14 levels
    python benchmarks/bench_tuned_lr.py --db ... --model lr_tuned_bigram_counts --levels signal_intensity-2
    python benchmarks/bench_tuned_lr.py --reviewer-only --cache fits.jsonl --jobs 2   # the reviewer's side first
    python benchmarks/bench_tuned_lr.py --db ... --cache fits.jsonl                   # then beside the grid

For every task level and seed of the grid in ``--db``, on the same task, split and features as the
project's cell (``textcause.data.build.build_data``, the features the grid cached), a reviewer's
baseline written here with scikit-learn alone: ``LogisticRegression`` with the penalty kind and
strength chosen on the validation log-loss over

* L1 (liblinear), L2 (liblinear's dual solver, scikit-learn's advice when users are fewer than
  features), elastic net (saga, l1_ratio 0.5, C <= 1, warm-started along C),
* C in 0.001 ... 10 in 1-3 steps (9 values: another grid than the project's 0.01 ... 100 in half
  decades, whose search chose C <= 1 in each of the 78 Twitter LR cells run on 2026-12-06),

on features scaled by ``MaxAbsScaler`` fitted on the training users (binary features unchanged),
refitted on the training users only and scored on the test users. Its treatment accuracy and its
IPW and stratified bias (textcause's estimators, checked elsewhere against NHEFS / DoubleML) are
printed beside the project's rows of ``--model`` read from the database (mean over seeds), with
the differences, and the count of levels within the targets (accuracy within 0.015, stratified
bias within 0.02, and not more than 0.015 behind in accuracy). `--jobs 2` fits two cells at once.

This replaces the L2-against-L2 comparison, which checked a solver, not the baseline.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CS = [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0]
EN_RATIOS = (0.5,)
ACC_TARGET, BIAS_TARGET = 0.015, 0.02


def reviewer_fit(x, t, split, seed):
    """The reviewer's search: (test propensities, chosen (penalty, C, l1_ratio), validation log-loss)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss
    from sklearn.preprocessing import MaxAbsScaler

    tr, va, te = split["train"], split["val"], split["test"]
    scaler = MaxAbsScaler().fit(x[tr])
    xs = scaler.transform(x)
    best = None
    searches = [("l1", 1.0, "liblinear", c) for c in CS] + [("l2", 0.0, "liblinear-dual", c) for c in CS]
    searches += [("elasticnet", r, "saga", c) for r in EN_RATIOS for c in CS if c <= 1.0]
    path = None  # the elastic net's fits, warm-started along C from the strongest penalty
    for penalty, ratio, solver, c in searches:
        extra = {"tol": 1e-3, "max_iter": 300, "warm_start": True} if solver == "saga" else {"max_iter": 2000}
        if solver == "liblinear-dual":  # scikit-learn's advice when users are fewer than features
            solver, extra = "liblinear", {**extra, "dual": True}
        if solver == "saga" and path is not None:
            model = path
            model.set_params(C=c)
        else:
            model = LogisticRegression(C=c, l1_ratio=ratio, solver=solver, random_state=seed, **extra)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(xs[tr], t[tr])
        loss = log_loss(t[va], model.predict_proba(xs[va])[:, 1], labels=[0, 1])
        if solver == "saga":
            path = model
        if best is None or loss < best[0]:
            best = (loss, (penalty, c, ratio), copy.deepcopy(model))
    loss, chosen, model = best
    return np.clip(model.predict_proba(xs[te])[:, 1], 1e-6, 1 - 1e-6), chosen, loss


def reviewer_cell(corpus: str, task: str, level: int, seed: int, representation: str) -> dict:
    """The reviewer's fit on one cell's task, split and features: accuracy, biases, choice, seconds."""
    import numpy as np

    from textcause.data.build import DataSettings, build_data
    from textcause.estimators import ipw, stratified

    started = time.perf_counter()
    built = build_data(DataSettings(corpus=corpus, task=task, level=level, seed=seed, representation=representation))
    x, t, split = built.features, np.asarray(built.task.treatment).astype(int), built.task.split
    p, chosen, _ = reviewer_fit(x, t, split, seed)
    te = split["test"]
    y = np.asarray(built.task.outcome)[te]
    truth = float(built.task.true_ate)
    return {
        "sk_acc": float(np.mean((p >= 0.5) == t[te])),
        "sk_ipw_bias": ipw(t[te], y, p).ate - truth,
        "sk_strat_bias": stratified(t[te], y, p).ate - truth,
        "sk_choice": f"{chosen[0]} C={chosen[1]:g}" + (f" r={chosen[2]:g}" if chosen[0] == "elasticnet" else ""),
        "sk_seconds": time.perf_counter() - started,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default=None, help="the weld grid's results database (required unless --reviewer-only)")
    parser.add_argument("--corpus", default="twitter")
    parser.add_argument("--model", default="lr_tuned_bigram_binary", help="the project's LR rows to compare")
    parser.add_argument("--representation", default=None, help="features (default: the model config's)")
    parser.add_argument("--levels", nargs="*", default=None, help="task-level labels, e.g. signal_intensity-2")
    parser.add_argument("--seeds", type=int, nargs="*", default=None)
    parser.add_argument("--jobs", type=int, default=1, help="cells fitted at once (joblib processes)")
    parser.add_argument("--cache", default=None, help="a JSON-lines file of the reviewer's fits, reused and extended")
    parser.add_argument(
        "--reviewer-only",
        action="store_true",
        help="fit the reviewer's LR on every task level and seed (--seeds, default 0-4) into --cache, and stop",
    )
    args = parser.parse_args(argv)
    if args.reviewer_only and not args.cache:
        parser.error("--reviewer-only needs --cache (where the fits are kept).")
    if not args.reviewer_only and not args.db:
        parser.error("--db is required (the grid whose LR rows to compare).")

    import pandas as pd
    import yaml

    from textcause.analysis.frame import load_results
    from textcause.paths import model_config_path

    representation = (
        args.representation or yaml.safe_load(model_config_path(args.model).read_text())["data"]["representation"]
    )
    if args.reviewer_only:
        from textcause.simulation.tasks import list_tasks

        cells = pd.DataFrame(
            [(t, lv, sd) for t, lv in list_tasks() for sd in (args.seeds or [0, 1, 2, 3, 4])],
            columns=["task", "level", "seed"],
        )
    else:
        frame = load_results(args.db)
        frame = frame[(frame["corpus"] == args.corpus) & (frame["split"] == "test")]
        ours = frame[frame["model"] == args.model]
        if ours.empty:
            parser.error(f"{args.db} has no test rows of {args.model} on {args.corpus}.")
        cells = ours[["task", "level", "seed"]].drop_duplicates().sort_values(["task", "level", "seed"])
    if args.levels:
        cells = cells[(cells["task"] + "-" + cells["level"].astype(str)).isin(args.levels)]
    if args.seeds is not None:
        cells = cells[cells["seed"].isin(args.seeds)]
    from joblib import Parallel, delayed

    from textcause.simulation.tasks import spec_key

    def cache_key(t: str, lv: int, sd: int) -> str:  # twin levels (one task spec) are one draw: fitted once
        return f"{args.corpus}/{spec_key(t, lv)}/s{sd}/{representation}"

    cached: dict[str, dict] = {}
    cache = Path(args.cache) if args.cache else None
    if cache is not None and cache.exists():
        for line in cache.read_text(encoding="utf-8").splitlines():
            if line.strip():
                entry = json.loads(line)
                cached[entry["key"]] = entry["result"]
    keys = [(t, int(lv), int(sd)) for t, lv, sd in cells.itertuples(index=False)]
    todo = list({cache_key(*k): k for k in reversed(keys) if cache_key(*k) not in cached}.values())[::-1]
    started_all = time.perf_counter()
    fits = Parallel(n_jobs=args.jobs, return_as="generator")(
        delayed(reviewer_cell)(args.corpus, t, lv, sd, representation) for t, lv, sd in todo
    )
    for key, result in zip(todo, fits):
        cached[cache_key(*key)] = result
        if cache is not None:  # one line a fit, appended as it comes: a killed run keeps what it finished
            with cache.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"key": cache_key(*key), "result": result}) + "\n")
        print(
            f"reviewer {key[0]}-{key[1]} s{key[2]}: {result['sk_choice']}, {result['sk_seconds']:.1f} s",
            file=sys.stderr,
        )
    if args.reviewer_only:
        print(f"{len(todo)} fits added to {cache} ({len(keys) - len(todo)} already there)")
        return 0
    done = {k: cached[cache_key(*k)] for k in keys}
    rows = []
    for (task, level, seed), sk in done.items():
        cell = ours[(ours["task"] == task) & (ours["level"] == level) & (ours["seed"] == seed)].set_index("estimator")
        rows.append(
            {
                "task": task,
                "level": level,
                "seed": seed,
                "acc": float(cell["treatment_accuracy"].iloc[0]),
                "ipw_bias": float(cell.loc["ipw", "bias"]),
                "strat_bias": float(cell.loc["stratified", "bias"]),
                "tuned": str(cell["tuned"].iloc[0]) if "tuned" in cell else "",
                **sk,
            }
        )
        r = rows[-1]
        print(
            f"{task}-{level} s{seed}: ours acc {r['acc']:.3f} strat {r['strat_bias']:+.3f} ({r['tuned']}); "
            f"scikit-learn acc {r['sk_acc']:.3f} strat {r['sk_strat_bias']:+.3f} ({r['sk_choice']}, "
            f"{r['sk_seconds']:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
    table = pd.DataFrame(rows)
    from textcause.simulation.tasks import task_label

    means = table.groupby(["task", "level"], sort=False).agg(
        seeds=("seed", "nunique"),
        acc=("acc", "mean"),
        sk_acc=("sk_acc", "mean"),
        strat=("strat_bias", "mean"),
        sk_strat=("sk_strat_bias", "mean"),
        ipw=("ipw_bias", "mean"),
        sk_ipw=("sk_ipw_bias", "mean"),
    )
    print(
        f"\n{args.corpus}, {args.model} ({representation}) beside a reviewer's validation-tuned scikit-learn LR "
        f"(L1 / L2 / elastic net); test split, mean over seeds; {len(todo)} of {len(done)} cells fitted in "
        f"{time.perf_counter() - started_all:.0f} s (the others from --cache)\n"
    )
    print(
        "| Task level | seeds | accuracy ours | sklearn | diff | strat. bias ours | sklearn | diff | IPW bias ours | sklearn | diff |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    acc_ok = bias_ok = acc_not_behind = 0
    for (task, level), m in means.iterrows():
        d_acc, d_strat, d_ipw = m.acc - m.sk_acc, m.strat - m.sk_strat, m.ipw - m.sk_ipw
        acc_ok += abs(d_acc) <= ACC_TARGET
        acc_not_behind += d_acc >= -ACC_TARGET
        bias_ok += abs(d_strat) <= BIAS_TARGET
        print(
            f"| {task_label(task)} {int(level)} | {int(m.seeds)} | {m.acc:.3f} | {m.sk_acc:.3f} | {d_acc:+.3f} | "
            f"{m.strat:+.3f} | {m.sk_strat:+.3f} | {d_strat:+.3f} | {m.ipw:+.3f} | {m.sk_ipw:+.3f} | {d_ipw:+.3f} |"
        )
    n = len(means)
    print(
        f"\naccuracy within {ACC_TARGET} of scikit-learn's at {acc_ok} of {n} levels; "
        f"stratified bias within {BIAS_TARGET} at {bias_ok} of {n} levels; accuracy not more than "
        f"{ACC_TARGET} behind at {acc_not_behind} of {n} levels"
    )
    chosen = table["tuned"].value_counts()
    print("\nthe project's chosen penalties (cells): " + "; ".join(f"{k}: {v}" for k, v in chosen.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python
"""The full-batch L-BFGS logistic-regression fit against scikit-learn's, in one process (issue 18).

    OMP_NUM_THREADS=1 python benchmarks/bench_lr_fit.py              # Twitter LC-2, 1,2-gram binary
    OMP_NUM_THREADS=1 python benchmarks/bench_lr_fit.py --repeats 5 --save /tmp/probs.npz

On the warm features of ``configs/model/lr_bigram_binary.yaml`` (the default data: Twitter, Linguistic
Complexity 2, seed 0), for the solver as it is (``new``) and with the converged-stop switched off
(``old``: ``ConvergedLBFGS.stop_when_converged = False``, every epoch runs its L-BFGS step and its
validation, as before issue 18), it prints:

- the Trainer fit alone (``trainer.fit`` on the instantiated CLI objects) and the whole
  ``train.py fit --config configs/model/lr_bigram_binary.yaml`` path in-process
  (:func:`textcause.run.fit.fit_and_evaluate`: instantiate, fit, predict, evaluate, files);
- scikit-learn's ``LogisticRegression(C=1 / (weight_decay * n_train))`` (lbfgs, L2) on the same
  training rows, timed in between, and the ratio (medians);
- the largest test-user propensity difference from scikit-learn's fit (``sk``, intercept not
  penalised, its default tolerance), from the exact optimum of textcause's own objective
  (``opt``: the intercept penalised too, as ``weight_decay / 2 * ||w||^2`` over every parameter,
  solved by scikit-learn on a column of ones with ``tol=1e-10``) and between ``old`` and ``new``,
  and the change of the test result rows (estimates, intervals, metrics) from ``old`` to ``new``.

``--save PATH`` writes the test propensities; ``--baseline PATH`` (a file saved by a run of another
commit) adds their largest difference.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CONFIG = ROOT / "configs" / "model" / "lr_bigram_binary.yaml"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modes", nargs="+", default=["old", "new"], choices=["old", "new"])
    parser.add_argument("--save", type=Path, default=None)
    parser.add_argument("--baseline", type=Path, default=None)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    import numpy as np
    import scipy.sparse as sp
    import torch
    from sklearn.linear_model import LogisticRegression

    from textcause.run.fit import RunSettings, fit_and_evaluate, instantiate, run_config

    try:
        from textcause.models.propensity import ConvergedLBFGS
    except ImportError:  # a commit before issue 18: only the old behaviour exists
        ConvergedLBFGS = None
        args.modes = ["old"]

    torch.set_num_threads(1)  # as a benchmark worker of a 2-worker grid on 2 cores

    def settings() -> RunSettings:
        return RunSettings(configs=(CONFIG,), run_dir=Path(tempfile.mkdtemp(prefix="lr-fit-")), quiet=True)

    fit_and_evaluate(settings())  # warm: corpus, task and features built and memoised
    cli = instantiate(run_config(settings()))
    data, hp = cli.datamodule, cli.model.hparams
    x, t, split = data.features, np.asarray(data.task.treatment), data.task.split
    x = sp.csr_matrix(x)
    train, test = np.asarray(split.train), np.asarray(split.test)
    c = 1.0 / (hp.weight_decay * len(train))

    def sk_fit() -> tuple[float, LogisticRegression]:
        started = time.perf_counter()
        model = LogisticRegression(C=c, max_iter=5000).fit(x[train], t[train])
        return time.perf_counter() - started, model

    _, sk = sk_fit()
    p_sk = sk.predict_proba(x[test])[:, 1]
    ones = sp.csr_matrix(np.ones((x.shape[0], 1)))
    xo = sp.hstack([x, ones], format="csr")
    opt = LogisticRegression(C=c, fit_intercept=False, tol=1e-10, max_iter=20000).fit(xo[train], t[train])
    p_opt = opt.predict_proba(xo[test])[:, 1]

    print(
        f"{x.shape[0]} users x {x.shape[1]} features, {len(train)} training users, weight_decay "
        f"{hp.weight_decay} (C = {c:.4g}); scikit-learn {sk.n_iter_[0]} iterations; {args.repeats} repeats\n"
    )
    rows, probs, estimates = [], {}, {}
    for mode in args.modes:
        if ConvergedLBFGS is not None:
            ConvergedLBFGS.stop_when_converged = mode == "new"
        fits, wholes, sks = [], [], []
        for _ in range(args.repeats):
            cli = instantiate(run_config(settings()))
            started = time.perf_counter()
            cli.trainer.fit(cli.model, datamodule=cli.datamodule)
            fits.append(time.perf_counter() - started)
            epochs = cli.trainer.current_epoch
            sks.append(sk_fit()[0])
            started = time.perf_counter()
            result = fit_and_evaluate(settings())
            wholes.append(time.perf_counter() - started)
            sks.append(sk_fit()[0])
        pred = result.predictions
        p_tc = dict(zip(pred["index"].tolist(), pred["propensity"].tolist()))
        p = np.array([p_tc[i] for i in test.tolist()])
        probs[mode] = p
        estimates[mode] = {r["estimator"]: r for r in result.rows}
        fit_s, whole_s, sk_s = (statistics.median(v) for v in (fits, wholes, sks))
        rows.append(
            (
                mode,
                epochs,
                fit_s,
                whole_s,
                sk_s,
                np.abs(p - p_sk).max(),
                np.abs(p - p_opt).max(),
                result.checkpoint.name,
            )
        )
    if ConvergedLBFGS is not None:
        ConvergedLBFGS.stop_when_converged = True

    print(
        "| solver | epochs | Trainer fit s | fit_and_evaluate s | scikit-learn s | fit / sk | max dp vs sk | max dp vs opt | best checkpoint |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for mode, epochs, fit_s, whole_s, sk_s, d_sk, d_opt, ckpt in rows:
        print(
            f"| {mode} | {epochs} | {fit_s:.3f} | {whole_s:.3f} | {sk_s:.3f} | {fit_s / sk_s:.2f}x "
            f"| {d_sk:.2e} | {d_opt:.2e} | {ckpt} |"
        )
    if len(probs) == 2:
        print(f"\nmax |p_new - p_old| on the {len(test)} test users: {np.abs(probs['new'] - probs['old']).max():.2e}")
        print("test rows, new - old (the grid's columns):")
        for name, a in estimates["old"].items():
            b = estimates["new"][name]
            cols = [c for c in ("ate", "bias", "ci_low", "ci_high", "treatment_accuracy", "brier", "ece") if c in a]
            diffs = ", ".join(
                f"{c} {b[c] - a[c]:+.1e}" for c in cols if isinstance(a[c], float) and isinstance(b[c], float)
            )
            print(f"  {name}: {diffs}")
    last = probs[args.modes[-1]]
    if args.baseline is not None:
        base = np.load(args.baseline)
        print(f"max |p - p_baseline| ({args.baseline.name}): {np.abs(last - base['propensity']).max():.2e}")
    if args.save is not None:
        np.savez(args.save, propensity=last, index=test)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

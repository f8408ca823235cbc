#!/usr/bin/env python
"""textcause's logistic-regression fits against scikit-learn solving the same objective, alternated in one process.

    OMP_NUM_THREADS=1 python benchmarks/bench_lr_fit.py                # Twitter LC-2, 1,2-gram binary
    OMP_NUM_THREADS=1 python benchmarks/bench_lr_fit.py --rounds 15

On the warm features of ``configs/model/lr_bigram_binary.yaml`` (Twitter, Linguistic Complexity 2, seed 0),
each round times, one after the other (so both see the same load), and the medians and the median
of the per-round ratios are printed:

(a) the tuned LR (``TunedLogisticRegression._fit``: max-abs scaling, the search over L1 / L2 /
    elastic net and C, folding the scale back) against the same scikit-learn calls written by hand
    on the same matrices (``MaxAbsScaler``, the same ``LogisticRegression`` per candidate, the
    validation log-loss): the wrapper's overhead, about 1.0x when there is none;
(b) the plain LR's solver, ``PropensityModel.refit`` (the fit of a refitting replicate, and the
    solver of the Trainer's full-batch fit), against scikit-learn's fastest solver of textcause's
    exact objective, ``mean log-loss + weight_decay / 2 * ||(w, b)||^2`` (the intercept penalised):
    liblinear with ``C = 1 / (weight_decay * n)`` and ``intercept_scaling=1`` (its dual solver; the
    intercept is the weight of a constant 1, penalised like the others). lbfgs and newton-cg on a
    column of ones (their own intercept is not penalised) are timed beside it. ``--lbfgs`` also times
    the torch L-BFGS path (the solver before issue 46);
(c) the whole ``trainer.fit`` of the config, once, for scale.

Every solver's test propensities are compared with the exact optimum (scikit-learn's lbfgs on the
column of ones at ``tol=1e-12``): ``max dp``.
"""

from __future__ import annotations

import argparse
import math
import os
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
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--tuned-rounds", type=int, default=3, help="rounds of (a): each search takes ~20 s")
    parser.add_argument("--lbfgs", action="store_true", help="also time the torch L-BFGS solver (before issue 46)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    import numpy as np
    import scipy.sparse as sp
    import torch
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import MaxAbsScaler

    from textcause.data.batches import FeatureCollate
    from textcause.models import LogisticRegression as NetLR
    from textcause.models import PropensityModel
    from textcause.models.tuned_lr import TunedLogisticRegression, _as_scipy, _candidates, _estimator, _log_loss
    from textcause.run.fit import RunSettings, instantiate, run_config

    torch.set_num_threads(1)  # as a benchmark worker of a 2-worker grid on 2 cores
    load_before = os.getloadavg()
    cli = instantiate(run_config(RunSettings(configs=(CONFIG,), run_dir=Path(tempfile.mkdtemp()), quiet=True)))
    data, model = cli.datamodule, cli.model
    wd = float(model.hparams.weight_decay)
    task = data.task
    x = sp.csr_matrix(data.features, dtype=np.float64)
    t = np.asarray(task.treatment).astype(np.int64)
    tr, va, te = (np.asarray(task.split[k], dtype=np.int64) for k in ("train", "val", "test"))
    xtr, xva, xte, ttr, tva = x[tr], x[va], x[te], t[tr], t[va]
    n, c = len(tr), 1.0 / (wd * len(tr))
    ones = sp.csr_matrix(np.ones((x.shape[0], 1)))
    xo = sp.hstack([x, ones], format="csr")
    opt = LogisticRegression(C=c, fit_intercept=False, tol=1e-12, max_iter=50000).fit(xo[tr], ttr)
    p_opt = opt.predict_proba(xo[te])[:, 1]

    collate = FeatureCollate(data.features, task.treatment, task.outcome, task.propensity)
    b_tr, b_va, b_te = collate(tr), collate(va), collate(te)

    class LBFGSOnly(PropensityModel):  # the torch L-BFGS solver, as before issue 46
        exact = False

    net_models = {
        exact: (PropensityModel if exact else LBFGSOnly)(NetLR(x.shape[1]), optimizer="lbfgs", lr=1.0, weight_decay=wd)
        for exact in (True, False)
    }

    def tc_refit(exact: bool = True):
        return net_models[exact].refit(b_tr, b_va, b_te, max_steps=8, seed=0).numpy().astype(np.float64)

    def sk(kind: str):
        if kind == "liblinear":
            m = LogisticRegression(
                C=c, solver="liblinear", dual=True, intercept_scaling=1.0, max_iter=1000, random_state=0
            )  # the coordinate order of textcause's refit (seed 0)
            return m.fit(xtr, ttr).predict_proba(xte)[:, 1]
        m = LogisticRegression(C=c, solver=kind, fit_intercept=False, max_iter=5000)
        return m.fit(xo[tr], ttr).predict_proba(xo[te])[:, 1]

    tuned = TunedLogisticRegression(NetLR(x.shape[1]))

    def tc_tuned():  # the training step's work: the batches to SciPy, the search, the weights into the net
        xa, xv = _as_scipy(b_tr["x"]), _as_scipy(b_va["x"])
        coef, intercept, chosen = tuned._fit(xa, b_tr["t"].numpy(), xv, b_va["t"].numpy(), seed=0)
        tuned._set_weights(coef, intercept)
        return coef, intercept, chosen

    def sk_tuned():  # the same search written with scikit-learn alone
        scaler = MaxAbsScaler().fit(xtr)
        a, v = scaler.transform(xtr), scaler.transform(xva)
        best, warm = None, {}
        for penalty, ratio, cc in _candidates(tuned.penalties, tuned.cs, tuned.l1_ratios, tuned.elasticnet_max_c):
            m = warm.get(ratio) if penalty == "elasticnet" else None
            if m is None:
                m = _estimator(penalty, ratio, cc, 0)
            else:
                m.set_params(C=cc)
            m.fit(a, ttr)
            if penalty == "elasticnet":
                warm[ratio] = m
            loss = _log_loss(tva, v @ m.coef_.ravel() + m.intercept_[0])
            if math.isfinite(loss) and (best is None or loss < best[0]):
                best = (loss, m.coef_.ravel() / scaler.scale_, float(m.intercept_[0]))
        return best

    pairs = {
        "(a) tuned LR search": (tc_tuned, sk_tuned),
        "(b) plain LR, liblinear": (tc_refit, lambda: sk("liblinear")),
        "(b) plain LR, lbfgs (1-column)": (tc_refit, lambda: sk("lbfgs")),
        "(b) plain LR, newton-cg (1-column)": (tc_refit, lambda: sk("newton-cg")),
    }
    if args.lbfgs:
        pairs["(b) torch L-BFGS vs liblinear"] = (lambda: tc_refit(False), lambda: sk("liblinear"))
    coef_tc, _, chosen = tc_tuned() if args.tuned_rounds else (np.zeros(1), 0.0, {"penalty": "-", "C": math.nan})
    coef_sk = sk_tuned()[1] if args.tuned_rounds else np.zeros(1)
    print(
        f"{x.shape[0]} users x {x.shape[1]} features ({x.nnz} non-zeros), {n} training users, weight_decay {wd} "
        f"(C = {c:.4g}); {args.rounds} alternated rounds; load average before {load_before[0]:.2f}\n"
        f"(a) tuned LR chose {chosen['penalty']} C={chosen['C']:.3g}; max |coef - by hand| {np.abs(coef_tc - coef_sk).max():.1e}\n"
    )
    print(
        "| pair | textcause s | scikit-learn s | textcause / sk (median of rounds) | max dp textcause vs opt | max dp sk vs opt |"
    )
    print("|---|---|---|---|---|---|")
    for name, (ours, peer) in pairs.items():
        if name.startswith("(a)") and args.tuned_rounds == 0:
            continue
        a, b = [], []
        for _ in range(args.tuned_rounds if name.startswith("(a)") else args.rounds):
            for fn, out in ((ours, a), (peer, b)):
                start = time.perf_counter()
                result = fn()
                out.append(time.perf_counter() - start)
                if fn is ours:
                    p_ours = result
                else:
                    p_peer = result
        ratio = statistics.median(x / y for x, y in zip(a, b))
        dps = ("-", "-")
        if name.startswith("(b)"):
            dps = (f"{np.abs(p_ours - p_opt).max():.1e}", f"{np.abs(p_peer - p_opt).max():.1e}")
        print(
            f"| {name} | {statistics.median(a):.3f} | {statistics.median(b):.3f} | {ratio:.2f}x | {dps[0]} | {dps[1]} |"
        )

    started = time.perf_counter()
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    whole = time.perf_counter() - started
    with torch.no_grad():
        p = torch.sigmoid(cli.model(b_te["x"])).double().numpy()
    print(
        f"\n(c) trainer.fit of {CONFIG.name}: {whole:.3f} s, {cli.trainer.current_epoch} epoch(s), "
        f"max dp vs opt {np.abs(p - p_opt).max():.1e}; load average after {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

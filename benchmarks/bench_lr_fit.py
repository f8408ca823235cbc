#!/usr/bin/env python
"""textcause's logistic-regression fits against scikit-learn solving the same objective, alternated in one process.

    python benchmarks/bench_lr_fit.py                   # Twitter LC-2, 1,2-gram binary; sets OMP_NUM_THREADS=1, nice 10
    python benchmarks/bench_lr_fit.py --rounds 31 --tuned-rounds 5 --lbfgs --other-solvers

On the warm features of ``configs/model/lr_bigram_binary.yaml`` (Twitter, Linguistic Complexity 2, seed 0),
each round times textcause and its peer one after the other (so both see the same load; who goes
first alternates by round), and the medians and the median of the per-round ratios are printed, of
wall time and of the process's CPU time (which waiting for a core shared with other work does not
count), with the load average before and after:

(a) the tuned LR (``TunedLogisticRegression``'s training-step work: the batches to SciPy, max-abs
    scaling, the search over L1 / L2 / elastic net and C, the scale folded back, the weights into
    the net) against the same search written by hand with scikit-learn alone on the same matrices
    (``MaxAbsScaler``, one ``LogisticRegression`` per candidate, the elastic net's path warm-started,
    the validation log-loss); and each candidate's fit (``fit_path``'s, on the scaled matrices) timed
    beside scikit-learn's, the pairs alternated, summed over the search (the load drifts over a
    20-40 s search, much less within one candidate's pair);
(b) the plain LR's solver, ``PropensityModel.refit`` (the fit of a refitting replicate, and the
    solver of the Trainer's full-batch fit) from the torch batches, against scikit-learn's liblinear
    on the SciPy matrices solving textcause's exact objective, ``mean log-loss + weight_decay / 2 *
    ||(w, b)||^2``: ``C = 1 / (weight_decay * n)``, ``intercept_scaling=1``, the same coordinate
    order (seed 0), then ``predict_proba`` of the test users. Three textcause rows: the training batch
    converted before (its SciPy matrix kept on it), a fresh training batch each round (a refitting
    replicate: its conversion is timed; the prediction batch is reused, as a refitting interval does),
    and the path before issue 46's last change (float64 values and SciPy's index conversion each
    call, scikit-learn's public ``fit`` and its validation), all in the same rounds.
    ``--other-solvers`` adds lbfgs and newton-cg on a column of ones; ``--lbfgs`` the torch L-BFGS;
(c) the whole ``trainer.fit`` of the config, once, for scale.

``max dp``: test propensities against the exact optimum (scikit-learn's lbfgs on the column of ones
at ``tol=1e-12``); the coefficient differences between textcause and its peer are printed above.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before numpy and torch: one thread, as a grid worker
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import math
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CONFIG = ROOT / "configs" / "model" / "lr_bigram_binary.yaml"


def alternate(pairs, rounds):
    """Each round times every pair (ours first in even rounds): ``({name: (ours, peer)}, results)``, where
    ours and peer are lists of ``(wall seconds, CPU seconds)`` and results the last outputs by ``(name, side)``."""
    times = {name: ([], []) for name in pairs}
    results = {}
    for r in range(rounds):
        for name, (ours, peer, setup) in pairs.items():
            order = ((0, ours), (1, peer)) if r % 2 == 0 else ((1, peer), (0, ours))
            for side, fn in order:
                args = None  # the previous round's batches are freed first, as a refitting interval's are
                args = setup() if setup is not None and side == 0 else ()
                wall, cpu = time.perf_counter(), time.process_time()
                out = fn(*args)
                times[name][side].append((time.perf_counter() - wall, time.process_time() - cpu))
                results[name, side] = out
    return times, results


def row(name, a, b, extra=""):
    """A table row: median wall seconds of each side, the median of the per-round ratios of wall and CPU time."""
    wall = statistics.median(x[0] / y[0] for x, y in zip(a, b))
    cpu = statistics.median(x[1] / y[1] for x, y in zip(a, b))
    med = [statistics.median(s[0] for s in side) for side in (a, b)]
    return f"| {name} | {med[0]:.4f} | {med[1]:.4f} | {wall:.3f}x | {cpu:.3f}x | {len(a)} |{extra}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=31, help="rounds of (b)")
    parser.add_argument("--tuned-rounds", type=int, default=3, help="rounds of (a): each search takes ~20 s")
    parser.add_argument("--candidate-rounds", type=int, default=3, help="rounds of (a)'s fits side by side")
    parser.add_argument("--lbfgs", action="store_true", help="also time the torch L-BFGS solver (before issue 46)")
    parser.add_argument("--other-solvers", action="store_true", help="also scikit-learn's lbfgs and newton-cg")
    parser.add_argument("--no-nice", action="store_true", help="do not lower this process's priority to nice 10")
    args = parser.parse_args(argv)
    if not args.no_nice:
        os.nice(max(0, 10 - os.nice(0)))
    warnings.filterwarnings("ignore")

    import numpy as np
    import scipy.sparse as sp
    import torch
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import MaxAbsScaler

    from textcause.data.batches import FeatureCollate
    from textcause.models import LogisticRegression as NetLR
    from textcause.models import PropensityModel
    from textcause.models.exact_lr import as_scipy, exact_fit
    from textcause.models.tuned_lr import TunedLogisticRegression, _as_scipy, _fit_one, _log_loss, _scaled, maxabs_scale
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

    net = PropensityModel(NetLR(x.shape[1]), optimizer="lbfgs", lr=1.0, weight_decay=wd)

    def tc_refit(train=b_tr):
        return net.refit(train, b_va, b_te, max_steps=8, seed=0).numpy().astype(np.float64)

    def tc_before():  # the path before: a conversion each call, scikit-learn's public fit and its validation
        def old(b):
            return sp.csr_matrix(
                (b.values().double().numpy(), b.col_indices().numpy(), b.crow_indices().numpy()), shape=tuple(b.shape)
            )

        m = LogisticRegression(C=c, solver="liblinear", dual=True, intercept_scaling=1.0, max_iter=1000, random_state=0)
        m.fit(old(b_tr["x"]), b_tr["t"].numpy().astype(np.int64))
        logits = old(b_te["x"]) @ m.coef_.ravel() + m.intercept_[0]
        return torch.sigmoid(torch.as_tensor(logits, dtype=torch.float32)).clamp(1e-6, 1 - 1e-6).numpy()

    def sk(kind: str = "liblinear"):
        if kind == "liblinear":
            m = LogisticRegression(
                C=c, solver="liblinear", dual=True, intercept_scaling=1.0, max_iter=1000, random_state=0
            )  # the coordinate order of textcause's refit (seed 0)
            return m.fit(xtr, ttr).predict_proba(xte)[:, 1]
        m = LogisticRegression(C=c, solver=kind, fit_intercept=False, max_iter=5000)
        return m.fit(xo[tr], ttr).predict_proba(xo[te])[:, 1]

    tuned = TunedLogisticRegression(NetLR(x.shape[1]))

    def tc_tuned(train, val):  # the training step's work: the batches to SciPy, the search, the weights into the net
        coef, intercept, chosen = tuned._fit(
            _as_scipy(train["x"]), train["t"].numpy(), _as_scipy(val["x"]), val["t"].numpy(), seed=0
        )
        tuned._set_weights(coef, intercept)
        return coef, intercept, chosen

    def sk_candidates():  # the search's (penalty, l1_ratio, C), in fitting order, from the model's settings
        for penalty in tuned.penalties:
            ratios = tuned.l1_ratios if penalty == "elasticnet" else [1.0 if penalty == "l1" else 0.0]
            for ratio in ratios:
                for cc in sorted(tuned.cs):
                    if penalty != "elasticnet" or cc <= tuned.elasticnet_max_c:
                        yield penalty, ratio, cc

    def sk_fit(penalty, ratio, cc, a, v, warm):  # one candidate with scikit-learn alone: (val loss, model)
        if penalty == "elasticnet":
            if ratio not in warm:  # the path: each C starts from the previous one's solution
                warm[ratio] = LogisticRegression(
                    l1_ratio=ratio, solver="saga", tol=1e-3, max_iter=300, warm_start=True, random_state=0
                )
            m = warm[ratio].set_params(C=cc)
        else:
            m = LogisticRegression(
                C=cc,
                l1_ratio=ratio,
                solver="liblinear",
                dual=penalty == "l2" and tuned.l2_solver == "dual",
                max_iter=1000,
                random_state=0,
            )
        m.fit(a, ttr)
        z = v @ m.coef_.ravel() + m.intercept_[0]
        return float(np.mean(np.logaddexp(0.0, z) - tva * z)), m

    def sk_tuned():  # the same search written with scikit-learn alone
        scaler = MaxAbsScaler().fit(xtr)
        a, v = scaler.transform(xtr), scaler.transform(xva)
        best, warm = None, {}
        for penalty, ratio, cc in sk_candidates():
            loss, m = sk_fit(penalty, ratio, cc, a, v, warm)
            if math.isfinite(loss) and (best is None or loss < best[0]):
                best = (loss, m.coef_.ravel() / scaler.scale_, float(m.intercept_[0]), penalty, cc)
        return best

    def tc_fit(penalty, ratio, cc, a, v, warm):  # one candidate as TunedLogisticRegression's search fits it
        coef, intercept, _ = _fit_one(penalty, ratio, cc, 0, a, ttr, warm, tuned.l2_solver)
        return _log_loss(tva, v @ coef + intercept), None

    def by_candidate(rounds):  # every candidate's two fits side by side: the load drifts less within a pair
        xa, xv = as_scipy(b_tr["x"]), as_scipy(b_va["x"])
        scale = maxabs_scale(xa)
        scaler = MaxAbsScaler().fit(xtr)
        inputs = (
            (tc_fit, _scaled(xa, scale), _scaled(xv, scale)),
            (sk_fit, scaler.transform(xtr), scaler.transform(xva)),
        )
        sides = ([], [])
        for r in range(rounds):
            warm, totals = ({}, {}), [[0.0, 0.0], [0.0, 0.0]]
            for k, candidate in enumerate(sk_candidates()):
                for side in (0, 1) if (r + k) % 2 == 0 else (1, 0):
                    fn, a, v = inputs[side]
                    wall, cpu = time.perf_counter(), time.process_time()
                    fn(*candidate, a, v, warm[side])
                    totals[side][0] += time.perf_counter() - wall
                    totals[side][1] += time.process_time() - cpu
            for side in (0, 1):
                sides[side].append(tuple(totals[side]))
        return sides

    coef_tc, b_tc = exact_fit(as_scipy(b_tr["x"]), ttr, wd, bias=True, seed=0)
    lib = LogisticRegression(C=c, solver="liblinear", dual=True, max_iter=1000, random_state=0).fit(xtr, ttr)
    print(
        f"{x.shape[0]} users x {x.shape[1]} features ({x.nnz} non-zeros), {n} training users, weight_decay {wd} "
        f"(C = {c:.4g}); load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}; "
        f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, nice {os.nice(0)}\n"
        f"(b) textcause's coefficients vs liblinear's: max |diff| {np.abs(coef_tc - lib.coef_.ravel()).max():.1e}, "
        f"intercept {abs(b_tc - lib.intercept_[0]):.1e}"
    )
    if args.tuned_rounds:
        coef_a, _, chosen = tc_tuned(b_tr, b_va)
        loss, coef_b, _, penalty, cc = sk_tuned()
        print(
            f"(a) tuned LR chose {chosen['penalty']} C={chosen['C']:.3g} (by hand: {penalty} C={cc:.3g}); "
            f"max |coef - by hand| {np.abs(coef_a - coef_b).max():.1e}; val loss {chosen['val_loss'] - loss:+.1e}"
        )
    print(
        "\n| pair | textcause s | scikit-learn s | textcause / sk, wall (median of rounds) | CPU time | rounds "
        "| max dp tc / sk vs opt |"
    )
    print("|---|---|---|---|---|---|---|")
    if args.tuned_rounds:
        tuned_times, _ = alternate({"t": (tc_tuned, sk_tuned, lambda: (collate(tr), collate(va)))}, args.tuned_rounds)
        a, b = tuned_times["t"]
        print(row("(a) tuned LR search, fresh batches", a, b, " - |"))
    if args.candidate_rounds:
        a, b = by_candidate(args.candidate_rounds)
        print(row("(a) tuned LR's candidate fits, each beside scikit-learn's", a, b, " - |"))
    pairs = {
        "(b) plain LR vs liblinear, batch converted before": (tc_refit, sk, None),
        "(b) plain LR vs liblinear, fresh training batch": (tc_refit, sk, lambda: (collate(tr),)),
        "(b) the path before vs liblinear": (tc_before, sk, None),
    }
    if args.other_solvers:
        pairs["(b) plain LR vs lbfgs (1-column)"] = (tc_refit, lambda: sk("lbfgs"), None)
        pairs["(b) plain LR vs newton-cg (1-column)"] = (tc_refit, lambda: sk("newton-cg"), None)
    if args.lbfgs:
        lbfgs = LBFGSOnly(NetLR(x.shape[1]), optimizer="lbfgs", lr=1.0, weight_decay=wd)
        pairs["(b) torch L-BFGS vs liblinear"] = (
            lambda: lbfgs.refit(b_tr, b_va, b_te, max_steps=8, seed=0).numpy().astype(np.float64),
            sk,
            None,
        )
    times, results = alternate(pairs, args.rounds)
    for name, (a, b) in times.items():
        dp = f" {np.abs(results[name, 0] - p_opt).max():.1e} / {np.abs(results[name, 1] - p_opt).max():.1e} |"
        print(row(name, a, b, dp))

    started = time.perf_counter()
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    whole = time.perf_counter() - started
    with torch.no_grad():
        p = torch.sigmoid(cli.model(b_te["x"])).double().numpy()
    after = os.getloadavg()
    print(
        f"\n(c) trainer.fit of {CONFIG.name}: {whole:.3f} s, {cli.trainer.current_epoch} epoch(s), "
        f"max dp vs opt {np.abs(p - p_opt).max():.1e}; load average after {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

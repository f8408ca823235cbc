"""The blocked, single-pass estimators (issue 46) give what the whole-array formulas of before gave.

The reference functions below are the implementations before issue 46 (whole-array numpy, the
fluctuation's loss from ``logaddexp``), kept here only as the test's reference: IPW, AIPW and TMLE
must agree with them to 1e-12 on random data of every shape the estimators meet (several blocks, a
partial last block, one unit per arm, clipped propensities, binary and continuous outcomes).
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest

from textcause.estimators import aipw, ipw, tmle
from textcause.estimators._common import BLOCK
from textcause.estimators.tmle import _evaluate

TOL = 1e-12


# --- the implementations before issue 46 -------------------------------------------------------
def ref_ipw(t, y, p):
    w1, w0 = t / p, (1 - t) / (1.0 - p)
    s = [np.dot(w1, y), w1.sum(), np.dot(w0, y), w0.sum()]
    return {
        "ate": s[0] / s[1] - s[2] / s[3],
        "max_weight": max(w1.max(), w0.max()),
        "ess_treated": s[1] ** 2 / np.dot(w1, w1),
        "ess_control": s[3] ** 2 / np.dot(w0, w0),
    }


def ref_aipw(t, y, p, mu0, mu1):
    psi = mu1 - mu0 + t * (y - mu1) / p - (1 - t) * (y - mu0) / (1.0 - p)
    return {"ate": psi.mean(), "se": psi.std(ddof=1) / np.sqrt(psi.size)}


def _ref_expit(x):
    return np.exp(-np.logaddexp(0.0, -x))


def _ref_logit(q):
    return np.log(q) - np.log1p(-q)


def _ref_nll(y, lp):
    return float(np.dot(y, np.logaddexp(0.0, -lp)) + np.dot(1.0 - y, np.logaddexp(0.0, lp)))


def _ref_fluctuate(y, offset, h):
    h_max, eps = float(np.max(np.abs(h))), 0.0
    loss = _ref_nll(y, offset)
    for it in range(1, 101):
        q = _ref_expit(offset + eps * h)
        step = float(np.dot(h, y - q)) / float(np.dot(h * h, q * (1.0 - q)))
        shrink = 1.0
        while True:
            cand = eps + shrink * step
            new = _ref_nll(y, offset + cand * h)
            if (np.isfinite(new) and new <= loss + 1e-12 * (1.0 + abs(loss))) or shrink < 1e-12:
                break
            shrink *= 0.5
        eps, loss = cand, new
        if abs(shrink * step) * h_max < 1e-10:
            return eps, it
    raise AssertionError("the reference did not converge")


def ref_tmle(t, y, g, mu0, mu1, binary, fluctuation, bound=0.005):
    low, high = (0.0, 1.0) if binary else (y.min(), y.max())
    scale = high - low
    ys = np.clip((y - low) / scale, 0.0, 1.0)
    s0, s1 = (mu0 - low) / scale, (mu1 - low) / scale
    q0, q1 = np.clip(s0, bound, 1 - bound), np.clip(s1, bound, 1 - bound)
    lq0, lq1 = _ref_logit(q0), _ref_logit(q1)
    tr = t == 1
    w1, w0 = 1.0 / g, 1.0 / (1.0 - g)
    h, offset = np.where(tr, w1, -w0), np.where(tr, lq1, lq0)
    if fluctuation == "ate":
        eps, _ = _ref_fluctuate(ys, offset, h)
        epsilon, q1s, q0s = (eps,), _ref_expit(lq1 + eps * w1), _ref_expit(lq0 - eps * w0)
    else:
        e1, _ = _ref_fluctuate(ys[tr], offset[tr], w1[tr])
        e0, _ = _ref_fluctuate(ys[~tr], offset[~tr], w0[~tr])
        epsilon, q1s, q0s = (e1, e0), _ref_expit(lq1 + e1 * w1), _ref_expit(lq0 + e0 * w0)
    m1, m0 = q1s.mean(), q0s.mean()
    eic = h * (ys - np.where(tr, q1s, q0s)) + (q1s - q0s) - (m1 - m0)
    se = scale * eic.std(ddof=1) / np.sqrt(t.size)
    return {
        "ate": scale * (m1 - m0),
        "se": se,
        "mean_treated": low + scale * m1,
        "mean_control": low + scale * m0,
        "epsilon": epsilon,
        "n_bounded": int(np.count_nonzero(q0 != s0) + np.count_nonzero(q1 != s1)),
    }


# --- random data of every shape ----------------------------------------------------------------
SIZES = [2, 7, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 17]


def data(seed: int, n: int, binary: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    g = np.clip(1.0 / (1.0 + np.exp(-rng.uniform(0.5, 3.0) * x)), 1e-4, 1 - 1e-4)
    t = (rng.random(n) < g).astype(np.int64)
    t[:2] = (0, 1)  # both arms, whatever n
    if binary:
        y = (rng.random(n) < 1.0 / (1.0 + np.exp(-x - 0.5 * t))).astype(np.float64)
        mu0 = rng.uniform(0.0, 1.0, n)  # some beyond the bound: truncated
        mu1 = np.clip(mu0 + 0.2, 0.0, 1.0)
    else:
        y = 3.0 * x + 2.0 * t + rng.normal(size=n)
        mu0, mu1 = 2.5 * x, 2.5 * x + 1.5
    return {"t": t, "y": y, "g": g, "mu0": mu0, "mu1": mu1}


def close(a: float, b: float) -> bool:
    return abs(a - b) <= TOL * max(1.0, abs(b))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("clip", [None, 0.02])
def test_ipw_and_aipw_agree_with_the_whole_array_formulas(n, clip):
    for seed in range(3):
        d = data(seed, n, binary=seed % 2 == 0)
        p = d["g"] if clip is None else np.clip(d["g"], clip, 1 - clip)
        got, want = ipw(d["t"], d["y"], d["g"], clip=clip), ref_ipw(d["t"], d["y"], p)
        assert close(got.ate, want["ate"])
        for key in ("max_weight", "ess_treated", "ess_control"):
            assert close(got.details[key], want[key]), key
        got = aipw(d["t"], d["y"], d["g"], d["mu0"], d["mu1"], clip=clip)
        want = ref_aipw(d["t"], d["y"], p, d["mu0"], d["mu1"])
        assert got.ate == want["ate"]  # the same per-unit scores and the same mean: bit for bit
        assert close(got.details["se"], want["se"])
        z = NormalDist().inv_cdf(0.975)
        assert close(got.ci_low, want["ate"] - z * want["se"]) and close(got.ci_high, want["ate"] + z * want["se"])


@pytest.mark.parametrize("n", [40, *SIZES[2:]])
@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("fluctuation", ["ate", "arms"])
def test_tmle_agrees_with_the_whole_array_implementation(n, binary, fluctuation):
    for seed in range(2):
        d = data(seed + 10, n, binary)
        args = (d["t"], d["y"], d["g"], d["mu0"], d["mu1"])
        got = tmle(*args, outcome="binary" if binary else "continuous", fluctuation=fluctuation)
        want = ref_tmle(*args, binary=binary, fluctuation=fluctuation)
        assert close(got.ate, want["ate"])
        for key in ("se", "mean_treated", "mean_control"):
            assert close(got.details[key], want[key]), key
        assert all(close(a, b) for a, b in zip(got.details["epsilon"], want["epsilon"], strict=True))
        assert got.details["n_bounded"] == want["n_bounded"]


def test_the_fused_loss_score_and_information_are_the_textbook_ones_even_far_out():
    rng = np.random.default_rng(3)
    n = 2 * BLOCK + 5
    y = rng.uniform(0.0, 1.0, n)
    offset, h = rng.normal(0, 2, n), rng.choice([-1.0, 1.0], n) * rng.uniform(1.0, 50.0, n)
    for eps in (0.0, 0.3, -2.0, 40.0):  # 40 * 50: exp(-lp) would overflow float64
        lp = offset + eps * h
        loss, score, info = _evaluate(y, offset, h, h * h, eps)
        q = _ref_expit(lp)
        assert loss == pytest.approx(_ref_nll(y, lp), rel=1e-13)
        assert score == pytest.approx(float(np.dot(h, y - q)), rel=1e-11, abs=1e-9)
        assert info == pytest.approx(
            float(np.dot(h * h, q * (1 - q))), rel=1e-11, abs=1e-12
        )  # near q = 1 the reference loses 1 - q

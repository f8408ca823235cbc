"""What the report must not overstate: appendix A's Arbour-Dimmery interval is no bound (a counterexample),
and Spearman's ceiling."""

from __future__ import annotations

import numpy as np
import pytest

from textcause.metrics.ad_interval import arbour_dimmery_interval
from textcause.simulation.dgp import STANDARD_OUTCOME


def test_the_heuristic_misses_the_bias_and_excludes_the_true_ate():
    # True propensities 0.9 / 0.1 by class, estimated 0.8 / 0.2; the paper's standard outcome table.
    rng = np.random.default_rng(0)
    n = 400_000
    cls = rng.random(n) < 0.5
    p, p_hat = np.where(cls, 0.9, 0.1), np.where(cls, 0.8, 0.2)
    t = (rng.random(n) < p).astype(int)
    (c1_t0, c1_t1), (c2_t0, c2_t1) = STANDARD_OUTCOME
    mean1, mean0 = np.where(cls, c1_t1, c2_t1), np.where(cls, c1_t0, c2_t0)
    y = (rng.random(n) < np.where(t == 1, mean1, mean0)).astype(float)
    true_ate = 0.5 * (c1_t1 + c2_t1) - 0.5 * (c1_t0 + c2_t0)  # 0.4
    b = arbour_dimmery_interval(t, y, p_hat, p)
    # Equation (1) is meant to bound the bias of the (unnormalised) IPW arm mean; here it does not.
    arm1_bias = np.mean(t * y / p_hat) - 0.5 * (c1_t1 + c2_t1)  # the population value is -0.170
    assert abs(arm1_bias) > b.b1 + 0.04 and abs(b.b1 - 0.119) < 0.005
    # And the interval, which the paper calls bounds on the ATE, excludes the true ATE.
    assert abs(true_ate - 0.4) < 1e-12
    assert b.high < true_ate - 0.01 and abs(b.low - 0.107) < 0.01 and abs(b.high - 0.384) < 0.01


def test_the_spearman_ceiling_of_a_two_valued_truth():
    from scipy.stats import spearmanr

    from textcause.metrics.propensity import spearman, spearman_ceiling

    truth = np.repeat([0.1, 0.9], 500)
    assert spearman_ceiling(truth) == pytest.approx(np.sqrt(3) / 2, abs=1e-5)
    perfect = np.linspace(0.01, 0.99, 1000)  # orders every pair of classes right, no ties
    assert spearman(perfect, truth) == pytest.approx(spearman_ceiling(truth), abs=1e-12)
    assert spearmanr(perfect, truth).statistic == pytest.approx(spearman_ceiling(truth), abs=1e-12)
    skew = np.repeat([0.1, 0.9], [800, 200])
    assert spearman_ceiling(skew) == pytest.approx(np.sqrt(3 * 0.2 * 0.8), abs=1e-4)
    assert spearman_ceiling(np.linspace(0.1, 0.9, 50)) == pytest.approx(1.0)  # no ties: no cap
    assert spearman_ceiling(np.full(10, 0.5)) == 0.0


def test_the_tie_aware_rank_measure_is_one_for_a_perfect_ranking():
    from scipy.stats import somersd

    from textcause.metrics.propensity import rank_agreement, spearman

    truth = np.repeat([0.1, 0.9], 500)
    perfect = np.linspace(0.01, 0.99, 1000)  # every pair of classes ordered right, no ties
    assert rank_agreement(perfect, truth) == pytest.approx(1.0, abs=1e-12) and spearman(perfect, truth) < 0.87
    assert rank_agreement(perfect[::-1], truth) == pytest.approx(-1.0, abs=1e-12)
    assert rank_agreement(truth, truth) == pytest.approx(1.0)  # the oracle
    assert rank_agreement(np.full(1000, 0.5), truth) == 0.0 and rank_agreement(perfect, np.full(1000, 0.3)) == 0.0
    rng = np.random.default_rng(0)
    for _ in range(5):  # against scipy's contingency-table Somers' D, with ties on both sides
        t = rng.choice([0.1, 0.5, 0.9], 300)
        p = np.round(np.clip(t + rng.normal(0, 0.3, 300), 0, 1), 1)
        assert rank_agreement(p, t) == pytest.approx(somersd(t, p).statistic, abs=1e-10)

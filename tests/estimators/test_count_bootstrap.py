"""Matching and stratification's bootstrap replicates computed from each unit's copies, many
resamples at once, give what the estimator gives on each resample (issue 18)."""

from __future__ import annotations

import numpy as np
import pytest

import textcause.estimators.bootstrap as bootstrap_module
from textcause.estimators import bootstrap_ci, matching, stratified
from textcause.estimators._common import prepare
from textcause.estimators.matching import matching_replicates
from textcause.estimators.stratification import stratified_replicates


def data(kind: str, n: int, seed: int, continuous_y: bool = False):
    rng = np.random.default_rng(seed)
    p = {
        "continuous": lambda: rng.uniform(0.05, 0.95, n),
        "two values": lambda: rng.choice([0.3, 0.7], n),  # the true propensity of a weld task
        "ties": lambda: np.round(rng.uniform(0.05, 0.95, n), 1),
        "equidistant": lambda: rng.choice([0.25, 0.5, 0.75], n),
    }[kind]()
    t = (rng.uniform(size=n) < p).astype(int)
    if kind == "equidistant":  # the treated at 0.5 have both control values exactly 0.25 away
        t = (p == 0.5).astype(int)
    t[:2], p[:2] = [0, 1], [0.25, 0.5]
    y = rng.normal(size=n) if continuous_y else rng.integers(0, 2, n)
    return t, y, p


CASES = [
    ("matching", {}),
    ("matching", {"caliper": None}),
    ("matching", {"caliper": 0.0}),
    ("stratified", {}),
    ("stratified", {"n_strata": 4}),
    ("stratified", {"n_strata": 40}),
    ("stratified", {"n_strata": 1000}),  # more strata than units: the per-replicate loop
]


@pytest.mark.parametrize("scheme", ["multinomial", "poisson"])
@pytest.mark.parametrize("kind", ["continuous", "two values", "ties", "equidistant"])
@pytest.mark.parametrize("name, kwargs", CASES)
def test_batched_replicates_equal_the_per_resample_loop(name, kwargs, kind, scheme):
    for n, seed, continuous_y in [(9, 1, False), (60, 2, True), (400, 3, False)]:
        t, y, p = data(kind, n, seed, continuous_y)
        outs = []
        for vectorized in (True, False):
            try:
                outs.append(
                    bootstrap_ci(name, t, y, p, n_boot=120, seed=seed, scheme=scheme, vectorized=vectorized, **kwargs)
                )
            except ValueError as e:
                outs.append(str(e))
        fast, slow = outs
        if isinstance(slow, str):  # every replicate undefined: the same sentence
            assert fast == slow
            continue
        assert fast.details["bootstrap"]["n_failed"] == slow.details["bootstrap"]["n_failed"]
        np.testing.assert_allclose(
            fast.details["bootstrap"]["replicates"], slow.details["bootstrap"]["replicates"], rtol=0, atol=1e-12
        )
        assert (fast.ci_low, fast.ci_high) == pytest.approx((slow.ci_low, slow.ci_high), abs=1e-12)
    # a tiny sample has resamples without one arm: they are counted, not estimated
    t, y, p = data("continuous", 12, 1)
    t = np.array([1, 1] + [0] * 10)  # a resample misses both treated units 11% of the time
    extra = {"n_strata": 3} if name == "stratified" else {"caliper": None}
    failed = bootstrap_ci(name, t, y, p, n_boot=120, seed=1, scheme=scheme, **extra).details["bootstrap"]["n_failed"]
    assert failed > 0


@pytest.mark.parametrize("name", ["matching", "stratified"])
def test_rows_are_the_estimator_on_the_repeated_units(name):
    t, y, p = data("equidistant", 30, 5, continuous_y=True)
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 3, size=(40, 30))
    counts[0] = 0  # an empty resample
    counts[1] = np.where(t == 1, counts[1], 0)  # only treated units
    counts[2] = 0
    counts[2, :2] = 1  # one unit of each arm
    prepared = prepare(t, y, p)
    if name == "matching":
        ate, ok = matching_replicates(*prepared, counts, 0.2)
    else:
        ate, ok = stratified_replicates(*prepared, counts, 3)
    estimator = {"matching": lambda *a: matching(*a, caliper=0.2), "stratified": lambda *a: stratified(*a, n_strata=3)}[
        name
    ]
    assert not ok[0] and not ok[1]
    for b in range(counts.shape[0]):
        rows = np.repeat(np.arange(30), counts[b])
        try:
            expected = estimator(t[rows], y[rows], p[rows]).ate
        except ValueError:
            assert not ok[b], b
            continue
        assert ok[b] and ate[b] == pytest.approx(expected, abs=1e-12), b


def test_row_blocks_do_not_change_the_replicates(monkeypatch):
    t, y, p = data("ties", 300, 4)
    whole = {name: bootstrap_ci(name, t, y, p, n_boot=50, seed=0) for name in ("matching", "stratified")}
    monkeypatch.setattr(bootstrap_module, "_COUNT_BLOCK_ELEMENTS", 700)  # two resamples a call
    for name, est in whole.items():
        again = bootstrap_ci(name, t, y, p, n_boot=50, seed=0)
        np.testing.assert_array_equal(again.details["bootstrap"]["replicates"], est.details["bootstrap"]["replicates"])

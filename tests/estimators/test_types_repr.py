"""A short, readable repr for estimates (printing a bootstrap result never dumps its replicates)."""

import numpy as np

from textcause.estimators import bootstrap_ci, ipw
from textcause.estimators.types import Estimate


def test_repr_is_one_short_line_without_the_replicates():
    rng = np.random.default_rng(0)
    n = 400
    t = rng.integers(0, 2, n)
    y = (rng.random(n) < 0.3 + 0.2 * t).astype(int)
    p = np.full(n, 0.5)
    point = ipw(t, y, p)
    assert repr(point) == f"Estimate(ipw: ATE {point.ate:+.4f}, n_used={n})"
    boxed = bootstrap_ci("ipw", t, y, p, n_boot=1000, seed=0)
    text = repr(boxed)
    assert "\n" not in text and len(text) < 140
    assert f"[{boxed.ci_low:+.4f}, {boxed.ci_high:+.4f}]" in text and "bootstrap 1000 replicates" in text
    assert str(boxed) == text


def test_repr_names_dropped_and_clipped_units():
    e = Estimate(ate=-0.25, method="matching", n_used=90, n_dropped=10, n_clipped=3)
    assert repr(e) == "Estimate(matching: ATE -0.2500, n_used=90, n_dropped=10, n_clipped=3)"

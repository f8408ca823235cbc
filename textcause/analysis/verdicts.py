"""How many seeds a test needs, and a verdict that says so when the seeds cannot decide it.

A finding is judged on units (an oracle level, a paired comparison, a method's placebo rate), each
``for`` the paper's claim, ``against`` it, ``neutral`` (decided, but neither) or ``open`` (its seeds
cannot decide it). :func:`decide` applies a rule to the counts of decided units under every way the
open units could fall; when those verdicts differ, the seeds cannot support one and the verdict is
``not judged``. So a verdict never rests on what too few seeds failed to show.

Two floors are computed, not chosen:

* :func:`sign_test_min_p`: with ``n`` seeds a distribution-free (sign) test of a paired difference
  can reach no two-sided p-value below ``2 ** (1 - n)``: 0.25 with 3 seeds, 0.0625 with 5, so no such
  test can reject at 0.05 before 6 seeds.
* :func:`rate_power` and :func:`rate_min_seeds`: the exact binomial (Clopper-Pearson) test that a
  false-discovery rate exceeds the nominal 0.05 catches a method whose true rate is 1/2 with power 0.50
  over 3 seeds, 0.69 over 4 and 0.81 over 5: 5 seeds are the fewest that give it 0.8 (the test is
  discrete, so more seeds are not always better: 6 give 0.66, 7 give 0.77).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping

import numpy as np
from scipy import stats

from textcause.analysis.inference import binomial_ci

__all__ = [
    "Rule",
    "decide",
    "rate_min_seeds",
    "rate_power",
    "sign_test_min_p",
    "total",
]

_STATES = ("for", "against", "neutral")
#: Beyond this many ways of deciding the open units, only the extremes (all open units alike) are tried.
_MAX_SPLITS = 20_000
#: A rate judged over seeds must be able to catch a method that makes a false discovery in half the draws.
_ALT_RATE = 0.5
_POWER = 0.8


def sign_test_min_p(n: int) -> float:
    """The smallest two-sided p-value an exact sign test over ``n`` paired seeds can give: ``2 ** (1 - n)``."""
    if n < 1:
        return 1.0
    return float(stats.binomtest(n, n, 0.5).pvalue)


def rate_power(n: int, nominal: float = 0.05, rate: float = _ALT_RATE) -> float:
    """The chance that ``n`` seeds' exact binomial interval lies wholly above ``nominal`` when the true rate is ``rate``."""
    if n < 1:
        return 0.0
    ks = [k for k in range(n + 1) if binomial_ci(k, n)[0] > nominal]
    return float(stats.binom.pmf(ks, n, rate).sum()) if ks else 0.0


def rate_min_seeds(nominal: float = 0.05, rate: float = _ALT_RATE, power: float = _POWER, cap: int = 200) -> int:
    """The fewest seeds with which :func:`rate_power` reaches ``power``."""
    return next(n for n in range(1, cap + 1) if rate_power(n, nominal, rate) >= power)


Rule = Callable[[Mapping[str, Mapping[str, int]]], str]


def _splits(m: int) -> list[tuple[int, int, int]]:
    return [(a, b, m - a - b) for a in range(m + 1) for b in range(m + 1 - a)]


def decide(units: Mapping[str, list[str]], rule: Rule) -> str:
    """``rule`` applied to the counts of each group's states; ``not judged`` when the open units could change it.

    Args:
        units: group -> the state of each unit (one of :data:`_STATES` or ``open``).
        rule: counts (group -> state -> count) -> a verdict.

    Returns:
        The verdict every way of deciding the open units gives, else ``not judged``.
    """
    fixed = {g: {s: states.count(s) for s in _STATES} for g, states in units.items()}
    opens = {g: states.count("open") for g, states in units.items()}
    groups = list(units)
    options = [_splits(opens[g]) for g in groups]
    if np.prod([float(len(o)) for o in options]) > _MAX_SPLITS:  # the rules are monotone in each count
        options = [[(m, 0, 0), (0, m, 0), (0, 0, m)] for m in (opens[g] for g in groups)]
    seen = set()
    for choice in itertools.product(*options):
        counts = {g: {s: fixed[g][s] + add for s, add in zip(_STATES, c)} for g, c in zip(groups, choice)}
        seen.add(rule(counts))
        if len(seen) > 1:
            return "not judged"
    return seen.pop() if seen else "no data"


def total(counts: Mapping[str, Mapping[str, int]], state: str) -> int:
    """How many units of every group are in ``state``."""
    return int(np.sum([c[state] for c in counts.values()]))

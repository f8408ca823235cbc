"""The generative process of section 5.1: latent classes, treatments, potential outcomes, truth.

Probability tables are indexed by class (row 0 = class 1, row 1 = class 2) and treatment
(column 0 = untreated, column 1 = treated): ``table[c][t] = P(Y=1 | class=c+1, T=t)`` for binary
outcomes, and the mean of Y(t) for continuous ones. The true ATE is always computed from a table
and the class shares, never hard-coded, so user-defined tables get the right truth.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from textcause.validation import check_options, check_real

__all__ = [
    "STANDARD_TREATMENT",
    "STRONG_TREATMENT",
    "STANDARD_OUTCOME",
    "PLACEBO_OUTCOME",
    "NORMAL_SD",
    "OUTCOMES",
    "Table",
    "check_treat_probs",
    "check_outcome_table",
    "check_outcome",
    "assign_classes",
    "draw_treatment",
    "draw_potential_outcomes",
    "observed_outcome",
    "population_ate",
    "population_unadjusted",
]

#: P(T=1 | class) for class 1 and class 2 (section 5.1).
STANDARD_TREATMENT = (0.9, 0.1)
#: The stronger selection effect (Strength of Selection Effect level 2, and the Placebo Test).
STRONG_TREATMENT = (0.95, 0.1)
#: P(Y=1 | class, T): class 1 0.1 untreated / 0.9 treated; class 2 0.9 either way (ATE 0.4).
STANDARD_OUTCOME = ((0.1, 0.9), (0.9, 0.9))
#: Placebo Test: class 1 0.05 / 0.95 (+0.9), class 2 0.95 / 0.05 (-0.9); true ATE 0.
PLACEBO_OUTCOME = ((0.05, 0.95), (0.95, 0.05))
#: Standard deviation of the continuous outcomes of section 5.3 (sigma^2 = 0.3).
NORMAL_SD = math.sqrt(0.3)
#: The outcome types a task can draw.
OUTCOMES = ("binary", "normal")

Table = tuple[tuple[float, float], tuple[float, float]]


def check_treat_probs(probs: Any, owner: str = "make_task") -> tuple[float, float]:
    """Return ``(P(T=1|class 1), P(T=1|class 2))``, each strictly inside (0, 1) for overlap."""
    if isinstance(probs, Mapping):
        probs = _by_class(probs, "treat_probs", owner)
    if not isinstance(probs, Sequence) or isinstance(probs, str) or len(probs) != 2:
        raise ValueError(
            f"The 'treat_probs' parameter of {owner} must be a pair (P(T=1|class 1), P(T=1|class 2)). "
            f"Got {probs!r} instead."
        )
    p1, p2 = (check_real(p, "treat_probs", owner, low=0.0, high=1.0, low_open=True, high_open=True) for p in probs)
    return p1, p2


def check_outcome_table(table: Any, owner: str = "make_task", *, outcome: str = "binary") -> Table:
    """Return a 2x2 outcome table as nested tuples of floats.

    Args:
        table: ``((c1_T0, c1_T1), (c2_T0, c2_T1))`` or ``{1: (T0, T1), 2: (T0, T1)}``.
        owner: the public function, for error messages.
        outcome: ``binary`` (entries are probabilities in [0, 1]) or ``normal`` (finite means).
    """
    if isinstance(table, Mapping):
        table = _by_class(table, "outcome_probs", owner)
    shape_ok = (
        isinstance(table, Sequence)
        and not isinstance(table, str)
        and len(table) == 2
        and all(isinstance(r, Sequence) and not isinstance(r, str) and len(r) == 2 for r in table)
    )
    if not shape_ok:
        raise ValueError(
            f"The 'outcome_probs' parameter of {owner} must be a 2x2 table "
            f"((class 1: T=0, T=1), (class 2: T=0, T=1)). Got {table!r} instead."
        )
    low, high = (0.0, 1.0) if outcome == "binary" else (None, None)
    (a, b), (c, d) = ((check_real(v, "outcome_probs", owner, low=low, high=high) for v in row) for row in table)
    return (a, b), (c, d)


def check_outcome(outcome: Any, owner: str = "make_task") -> str:
    """Return ``outcome`` if it is one of :data:`OUTCOMES` (``binary``, ``normal``).

    Raises:
        ValueError: any other value (the message lists the outcome types).
    """
    check_options(outcome, "outcome", owner, OUTCOMES)
    return str(outcome)


def assign_classes(n: int, rng: np.random.Generator, *, class1_share: float = 0.5) -> np.ndarray:
    """Latent classes, exactly balanced: ``floor(class1_share * n)`` users in class 1, the rest class 2.

    The labels are a random permutation of that fixed multiset, so the classes are exactly balanced
    (with the default share and an odd ``n``, class 2 has the one extra user).

    Returns:
        An int8 array of 1s and 2s.
    """
    n1 = int(math.floor(class1_share * n + 1e-9))  # 1e-9: 0.29 * 100 is 28.999...96 in floats
    labels = np.full(n, 2, dtype=np.int8)
    labels[:n1] = 1
    return labels[rng.permutation(n)]


def _propensity_of(latent_class: np.ndarray, treat_probs: tuple[float, float]) -> np.ndarray:
    """The true propensity P(T=1 | class) of every user."""
    return np.where(np.asarray(latent_class) == 1, treat_probs[0], treat_probs[1]).astype(np.float64)


def draw_treatment(
    latent_class: np.ndarray, treat_probs: tuple[float, float], rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Draw T ~ Bernoulli(P(T=1 | class)) with one uniform per user.

    Returns:
        ``(t, propensity)``: int8 treatments and the float64 true propensities.
    """
    propensity = _propensity_of(latent_class, treat_probs)
    t = (rng.random(len(propensity)) < propensity).astype(np.int8)
    return t, propensity


def _outcome_means(latent_class: np.ndarray, table: Table) -> tuple[np.ndarray, np.ndarray]:
    """Per-user ``(E[Y(0)], E[Y(1)])`` from a table."""
    c1 = np.asarray(latent_class) == 1
    m0 = np.where(c1, table[0][0], table[1][0]).astype(np.float64)
    m1 = np.where(c1, table[0][1], table[1][1]).astype(np.float64)
    return m0, m1


def draw_potential_outcomes(
    latent_class: np.ndarray,
    table: Table,
    rng: np.random.Generator,
    *,
    outcome: str = "binary",
    sd: float = NORMAL_SD,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw both potential outcomes of every user, independently given the class.

    Binary: ``Y(t) = 1[U_t < table[class][t]]`` with independent uniforms ``U_0`` and ``U_1``
    (``U_0`` for all users first, then ``U_1``). Normal: ``Y(t) = table[class][t] + sd * Z_t`` with
    independent standard normals (section 5.3 with sd = sqrt(0.3)).

    Returns:
        ``(y0, y1)`` as float64 arrays.
    """
    m0, m1 = _outcome_means(latent_class, table)
    n = len(m0)
    if outcome == "binary":
        u0, u1 = rng.random(n), rng.random(n)
        return (u0 < m0).astype(np.float64), (u1 < m1).astype(np.float64)
    if outcome == "normal":
        z0, z1 = rng.standard_normal(n), rng.standard_normal(n)
        return m0 + sd * z0, m1 + sd * z1
    raise ValueError(f"Unknown outcome type {outcome!r}: choose one of {list(OUTCOMES)}.")


def observed_outcome(t: np.ndarray, y0: np.ndarray, y1: np.ndarray) -> np.ndarray:
    """``Y = T * Y(1) + (1 - T) * Y(0)``."""
    t = np.asarray(t, dtype=np.float64)
    y: np.ndarray = t * y1 + (1.0 - t) * y0
    return y


def population_ate(table: Table, class1_share: float = 0.5) -> float:
    """The true ATE ``E[Y(1) - Y(0)] = sum over classes c of share_c * (table[c][1] - table[c][0])``."""
    return float(class1_share * (table[0][1] - table[0][0]) + (1 - class1_share) * (table[1][1] - table[1][0]))


def population_unadjusted(treat_probs: tuple[float, float], table: Table, class1_share: float = 0.5) -> float:
    """The naive difference E[Y | T=1] - E[Y | T=0] the population gives (what no adjustment finds)."""
    shares = (class1_share, 1.0 - class1_share)
    treated = [s * p for s, p in zip(shares, treat_probs)]
    control = [s * (1.0 - p) for s, p in zip(shares, treat_probs)]
    ey1 = sum(w * table[c][1] for c, w in enumerate(treated)) / sum(treated)
    ey0 = sum(w * table[c][0] for c, w in enumerate(control)) / sum(control)
    return float(ey1 - ey0)


def _by_class(mapping: Mapping[Any, Any], name: str, owner: str) -> list[Any]:
    """``{1: a, 2: b}`` (int or string keys) -> ``[a, b]``."""
    keys = {str(k): v for k, v in mapping.items()}
    if set(keys) != {"1", "2"}:
        raise ValueError(
            f"The '{name}' parameter of {owner} as a mapping needs exactly the keys 1 and 2 (the classes). "
            f"Got {sorted(keys)} instead."
        )
    return [keys["1"], keys["2"]]

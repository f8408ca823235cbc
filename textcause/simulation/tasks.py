"""The task registry: each (task, level) of section 5.2 and Appendix H as a :class:`TaskSpec`.

A spec says what f1 and f2 do, the treatment and outcome tables, and how much of the training split
is kept. Users add tasks with :func:`register_task` (a builder ``level -> TaskSpec``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from textcause.simulation.dgp import (
    PLACEBO_OUTCOME,
    STANDARD_OUTCOME,
    STANDARD_TREATMENT,
    STRONG_TREATMENT,
    Table,
    check_outcome,
    check_outcome_table,
    check_treat_probs,
    population_ate,
    population_unadjusted,
)
from textcause.simulation.edits import Insert, check_insertion
from textcause.validation import check_real

__all__ = [
    "TaskSpec",
    "TaskEntry",
    "TASKS",
    "register_task",
    "task_label",
    "list_tasks",
    "get_spec",
    "spec_key",
    "same_draw_groups",
    "describe_task",
]

_SICKNESS = ("sickness",)


@dataclass(frozen=True)
class TaskSpec:
    """What one (task, level) does.

    Attributes:
        f1: the edit of class-1 histories (an :class:`Insert`, or None for the identity).
        f2: the edit of class-2 histories.
        treat_probs: ``(P(T=1 | class 1), P(T=1 | class 2))``.
        outcome_probs: ``((class 1: T=0, T=1), (class 2: T=0, T=1))`` outcome probabilities (binary
            outcomes) or means (continuous outcomes).
        train_fraction: the share of the training split kept (Sample Size task); validation and test
            are unchanged.
        class1_share: the share of users in class 1 (0.5 in every paper task).
        summary: one sentence on what the task tests.
    """

    f1: Insert | None = None
    f2: Insert | None = None
    treat_probs: tuple[float, float] = STANDARD_TREATMENT
    outcome_probs: Table = STANDARD_OUTCOME
    train_fraction: float = 1.0
    class1_share: float = 0.5
    summary: str = ""

    def __post_init__(self) -> None:
        for name in ("f1", "f2"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Insert):
                raise ValueError(
                    f"The '{name}' parameter of TaskSpec must be an Insert or None (the identity); "
                    f"for rewriting edits use make_rewrite_task or make_task(rewrite=...). Got {type(value).__name__} instead."
                )
        object.__setattr__(self, "treat_probs", check_treat_probs(self.treat_probs, "TaskSpec"))
        # Only finiteness here: continuous outcomes use the entries as means; make_task checks that
        # they are probabilities when it draws binary outcomes.
        table = check_outcome_table(self.outcome_probs, "TaskSpec", outcome="normal")
        object.__setattr__(self, "outcome_probs", table)
        check_real(self.train_fraction, "train_fraction", "TaskSpec", low=0.0, high=1.0, low_open=True)
        check_real(self.class1_share, "class1_share", "TaskSpec", low=0.0, high=1.0, low_open=True, high_open=True)

    @property
    def true_ate(self) -> float:
        """The population ATE implied by the outcome table and the class shares."""
        return population_ate(self.outcome_probs, self.class1_share)

    def describe(self, insertion: str = "append", outcome: str = "binary") -> str:
        """A few sentences: the edits, the tables, the truth."""

        def edit(f: Insert | None) -> str:
            return "is the identity" if f is None else f.describe(insertion)

        p1, p2 = self.treat_probs
        (a0, a1), (b0, b1) = self.outcome_probs
        what = "P(Y=1 | class, T)" if outcome == "binary" else "E[Y(t) | class] (normal, sd sqrt(0.3))"
        lines = [
            f"f1 {edit(self.f1)}; f2 {edit(self.f2)}.",
            f"P(T=1 | class) = {p1:g} (class 1) / {p2:g} (class 2).",
            f"{what}: class 1 {a0:g} (T=0) / {a1:g} (T=1); class 2 {b0:g} (T=0) / {b1:g} (T=1).",
            f"True ATE {self.true_ate:+.2f}; unadjusted difference in means "
            f"{population_unadjusted(self.treat_probs, self.outcome_probs, self.class1_share):+.2f}.",
        ]
        if self.train_fraction < 1.0:
            lines.append(f"Training split subsampled to {self.train_fraction:.0%}; validation and test unchanged.")
        if self.summary:
            lines.insert(0, self.summary)
        return " ".join(lines)


@dataclass(frozen=True)
class TaskEntry:
    """A registered task: its levels, the builder ``level -> TaskSpec`` and its display label."""

    name: str
    levels: tuple[int, ...]
    builder: Callable[[int], TaskSpec]
    label: str = ""


#: Every registered task, by name, in registration order.
TASKS: dict[str, TaskEntry] = {}

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def register_task(
    name: str,
    levels: Sequence[int],
    builder: Callable[[int], TaskSpec],
    *,
    label: str | None = None,
    overwrite: bool = False,
) -> None:
    """Add a task to the registry so :func:`make_task` and the CLI can build it by name.

    Args:
        name: a snake_case name (``[a-z][a-z0-9_]*``).
        levels: its difficulty levels, e.g. ``(1, 2)``.
        builder: ``level -> TaskSpec``; called for every level now, to fail early on a bad spec.
        label: its name in tables and figures (default: ``name`` with spaces, capitalised).
        overwrite: replace a task already registered under ``name``.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"The 'name' parameter of register_task must be a snake_case name. Got {name!r} instead.")
    if name in TASKS and not overwrite:
        raise ValueError(f"A task named {name!r} is already registered; pass overwrite=True to replace it.")
    lv = tuple(levels) if isinstance(levels, Sequence) and not isinstance(levels, str) else ()
    if (
        not lv
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in lv)
        or len(set(lv)) != len(lv)
    ):
        raise ValueError(
            f"The 'levels' parameter of register_task must be a non-empty list of distinct ints >= 1. Got {levels!r} instead."
        )
    if not callable(builder):
        raise ValueError(
            f"The 'builder' parameter of register_task must be a callable level -> TaskSpec. Got {builder!r} instead."
        )
    for level in lv:
        spec = builder(level)
        if not isinstance(spec, TaskSpec):
            raise ValueError(
                f"The builder of task {name!r} must return a TaskSpec for level {level}. Got {type(spec).__name__} instead."
            )
    if label is not None and (not isinstance(label, str) or not label.strip()):
        raise ValueError(f"The 'label' parameter of register_task must be a non-empty str. Got {label!r} instead.")
    TASKS[name] = TaskEntry(name, lv, builder, label.strip() if label else name.replace("_", " ").capitalize())


def task_label(task: str) -> str:
    """The display label of a task (its registered label; an unregistered name is returned as it is)."""
    entry = TASKS.get(task)
    return entry.label if entry is not None else task


def list_tasks() -> list[tuple[str, int]]:
    """Every registered (task, level), in registration order."""
    return [(name, level) for name, entry in TASKS.items() for level in entry.levels]


def get_spec(task: Any, level: Any) -> TaskSpec:
    """The :class:`TaskSpec` of a registered (task, level); a ValueError listing the valid ones otherwise."""
    if task not in TASKS:
        raise ValueError(f"Unknown task {task!r}. Choose one of {list(TASKS)}.")
    entry = TASKS[task]
    if isinstance(level, bool) or level not in entry.levels:
        raise ValueError(f"The task {task!r} has levels {list(entry.levels)}. Got level {level!r} instead.")
    return entry.builder(int(level))


def spec_key(task: Any, level: Any) -> str | None:
    """What a (task, level) draws, as a comparable key: its :class:`TaskSpec` without the summary.

    Levels with equal keys draw the same task under the same seed (every draw comes from the seed
    and the spec alone): the paper's Linguistic Complexity 2, Strength of Selection 1, Sample Size 1
    and Order of Text 1 are one experiment. None for a task the registry does not know.
    """
    try:
        return repr(replace(get_spec(task, level), summary=""))
    except ValueError:
        return None


def same_draw_groups(levels: Sequence[tuple[str, int]]) -> list[list[tuple[str, int]]]:
    """The groups (of two or more) of ``levels`` that are one experiment (:func:`spec_key`), in input order."""
    groups: dict[str, list[tuple[str, int]]] = {}
    for task, level in levels:
        key = spec_key(task, level)
        if key is not None:
            groups.setdefault(key, []).append((task, int(level)))
    return [g for g in groups.values() if len(g) > 1]


def describe_task(task: str, level: int, *, insertion: str = "append", outcome: str = "binary") -> str:
    """A plain-language description of a (task, level): its edits, probability tables and truth."""
    spec = get_spec(task, level)
    insertion = check_insertion(insertion, "describe_task")
    outcome = check_outcome(outcome, "describe_task")
    return f"{task}-{level}: " + spec.describe(insertion, outcome)


# --------------------------------------------------------------------------- the paper's tasks
def _linguistic_complexity(level: int) -> TaskSpec:
    kinds = {1: _SICKNESS, 2: _SICKNESS, 3: ("sickness", "isolation"), 4: ("sickness", "isolation", "death")}[level]
    return TaskSpec(
        f1=Insert(kinds=kinds, fixed=level == 1),
        summary="Linguistic Complexity: can a model recognise a range of expressions correlated with treatment?",
    )


def _signal_intensity(level: int) -> TaskSpec:
    f1, f2 = (Insert(_SICKNESS, count=10), None) if level == 1 else (Insert(_SICKNESS, count=3), Insert(_SICKNESS))
    return TaskSpec(f1=f1, f2=f2, summary="Signal Intensity: can a model count similar posts in a history?")


def _selection_strength(level: int) -> TaskSpec:
    return TaskSpec(
        f1=Insert(_SICKNESS),
        treat_probs=STANDARD_TREATMENT if level == 1 else STRONG_TREATMENT,
        summary="Strength of Selection Effect: can a model adjust when treated and untreated users overlap less?",
    )


def _sample_size(level: int) -> TaskSpec:
    return TaskSpec(
        f1=Insert(_SICKNESS),
        train_fraction={1: 1.0, 2: 0.5, 3: 0.25}[level],
        summary="Sample Size: how does a model fare with less training data?",
    )


def _placebo(level: int) -> TaskSpec:
    return TaskSpec(
        f1=Insert(_SICKNESS),
        treat_probs=STRONG_TREATMENT,
        outcome_probs=PLACEBO_OUTCOME,
        summary="Placebo Test: does a model find an effect when the true ATE is zero?",
    )


def _order_of_text(level: int) -> TaskSpec:
    return TaskSpec(
        f1=Insert(_SICKNESS),
        f2=None if level == 1 else Insert(_SICKNESS, where="prepend"),
        summary="Order of Text (Appendix H): can a model tell posts at the start of a history from posts at the end?",
    )


register_task("linguistic_complexity", (1, 2, 3, 4), _linguistic_complexity, label="Linguistic Complexity")
register_task("signal_intensity", (1, 2), _signal_intensity, label="Signal Intensity")
register_task("selection_strength", (1, 2), _selection_strength, label="Strength of Selection Effect")
register_task("sample_size", (1, 2, 3), _sample_size, label="Sample Size")
register_task("placebo", (1,), _placebo, label="Placebo Test")
register_task("order_of_text", (1, 2), _order_of_text, label="Order of Text")

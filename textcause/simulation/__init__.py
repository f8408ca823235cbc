"""Semi-synthetic causal tasks (Weld et al., section 5): synthetic post banks, the class-specific
edits f1 / f2, treatment and outcome draws with known truth, and the task registry.

    >>> from textcause.simulation import list_tasks, make_task
    >>> task = make_task(corpus, "linguistic_complexity", 2, seed=0)   # doctest: +SKIP
    >>> task.true_ate                                                  # doctest: +SKIP
    0.4
"""

from textcause.simulation.bank import PostBank, PostKind, bank_from_dict, load_bank, save_bank, split_bank
from textcause.simulation.dgp import (
    NORMAL_SD,
    PLACEBO_OUTCOME,
    STANDARD_OUTCOME,
    STANDARD_TREATMENT,
    STRONG_TREATMENT,
    assign_classes,
    draw_potential_outcomes,
    draw_treatment,
    observed_outcome,
    population_ate,
    population_unadjusted,
)
from textcause.simulation.edits import INSERTIONS, Insert, WordRules, insert_posts
from textcause.simulation.generate import MIN_USERS, build_task, make_rewrite_task, make_task
from textcause.simulation.tasks import TASKS, TaskSpec, describe_task, get_spec, list_tasks, register_task
from textcause.simulation.types import SemiSyntheticTask

__all__ = [
    "INSERTIONS",
    "MIN_USERS",
    "NORMAL_SD",
    "PLACEBO_OUTCOME",
    "STANDARD_OUTCOME",
    "STANDARD_TREATMENT",
    "STRONG_TREATMENT",
    "TASKS",
    "Insert",
    "PostBank",
    "PostKind",
    "SemiSyntheticTask",
    "TaskSpec",
    "WordRules",
    "assign_classes",
    "bank_from_dict",
    "build_task",
    "describe_task",
    "draw_potential_outcomes",
    "draw_treatment",
    "get_spec",
    "insert_posts",
    "list_tasks",
    "load_bank",
    "make_rewrite_task",
    "make_task",
    "observed_outcome",
    "population_ate",
    "population_unadjusted",
    "register_task",
    "save_bank",
    "split_bank",
]

"""Build a :class:`SemiSyntheticTask` from a corpus: the generative process of section 5.1.

Randomness: every draw comes from its own numpy Generator derived from ``seed`` (a
``SeedSequence(seed, spawn_key=(stream,))`` per stream: classes, fixed posts, edits, treatment,
outcomes, split, training subsample, a held-out bank's division). So with the same seed every task
and level of a corpus gives the same users the same latent class, treatment uniforms, outcome
uniforms and split (common random numbers): levels differ only in what they change. The corpus is
never modified.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from textcause.corpus.splits import PAPER_FRACTIONS, split_users
from textcause.corpus.types import Corpus, History, Split
from textcause.simulation.bank import PostBank, load_bank, split_bank
from textcause.simulation.dgp import (
    NORMAL_SD,
    STANDARD_OUTCOME,
    STANDARD_TREATMENT,
    assign_classes,
    check_outcome,
    check_outcome_table,
    draw_potential_outcomes,
    draw_treatment,
    observed_outcome,
    population_ate,
    population_unadjusted,
)
from textcause.simulation.edits import (
    Rewrite,
    apply_rewrite,
    as_rewrite,
    check_insertion,
    describe_rewrite,
    insert_posts,
)
from textcause.simulation.tasks import TaskSpec, get_spec
from textcause.simulation.types import SemiSyntheticTask
from textcause.validation import check_int, check_real

__all__ = [
    "MIN_USERS",
    "make_task",
    "make_rewrite_task",
    "build_task",
]

#: Fewer users than this cannot hold two balanced classes with treated and untreated users in each split.
MIN_USERS = 20

# One random stream per purpose, so changing one part of a task never shifts another's draws.
_CLASSES, _FIXED, _EDITS, _TREATMENT, _OUTCOMES, _SPLIT, _SUBSAMPLE, _BANK_SPLIT = range(8)


def _stream(seed: int, purpose: int) -> np.random.Generator:
    """The Generator of one purpose of a task's seed."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(purpose,)))


def make_task(
    corpus: Corpus,
    task: str,
    level: int,
    seed: int = 0,
    *,
    insertion: str | None = None,
    bank: PostBank | str | os.PathLike[str] | None = None,
    outcome: str = "binary",
    split_fractions: tuple[float, float, float] = PAPER_FRACTIONS,
    rewrite: Sequence[Rewrite] | Mapping[str, Rewrite] | None = None,
    held_out_bank: float = 0.0,
) -> SemiSyntheticTask:
    """Draw one semi-synthetic task (section 5.2 / Appendix H) on a corpus of real histories.

    Args:
        corpus: the real user histories (not modified).
        task: a registered task name (see :func:`list_tasks`), e.g. ``linguistic_complexity``.
        level: its difficulty level (1 = easiest).
        seed: the seed of every draw (classes, posts, treatment, outcomes, split).
        insertion: where synthetic posts go: ``append`` (None, the paper's choice), ``prepend`` or
            ``replace`` (a random real post per inserted post, keeping the history's length). A task's
            own position wins: Order of Text level 2 always puts f2's post first (under ``replace`` by
            overwriting the first real post, so every history keeps its length).
        bank: a :class:`PostBank`, a bank file path, or None for the paper's Appendix C bank.
        outcome: ``binary`` (Y ~ Bernoulli of the task's table) or ``normal`` (Y ~ Normal with the
            table's entries as means and sd sqrt(0.3), section 5.3).
        split_fractions: train / validation / test fractions (the paper's 0.4 / 0.1 / 0.5).
        rewrite: optional rewriting edits ``(f1, f2)`` or ``{"f1": ..., "f2": ...}``, each a callable
            (posts -> posts), a mapping of whole-word rules like ``{"happy": "sad"}``, or None. They
            rewrite the real posts of class-1 / class-2 users before the synthetic posts go in.
        held_out_bank: the share of each post kind held out for the test users (0: one bank for
            everyone, the paper's design). With a share in (0, 1) the bank's distinct posts are divided
            with the task's seed (:func:`~textcause.simulation.bank.split_bank`): training and validation
            users receive posts of one part, test users of the other, so no inserted post string of a
            test user was seen in training (detection, not memorisation).

    Returns:
        The task with its texts, classes, treatments, potential outcomes, truth and split.
    """
    spec = get_spec(task, level)
    return build_task(
        corpus, spec, task=task, level=int(level), seed=seed, insertion=insertion, bank=bank,
        outcome=outcome, split_fractions=split_fractions, rewrite=rewrite, held_out_bank=held_out_bank,
        owner="make_task",
    )  # fmt: skip


def make_rewrite_task(
    corpus: Corpus,
    f1: Rewrite,
    f2: Rewrite,
    seed: int = 0,
    *,
    treat_probs: tuple[float, float] = STANDARD_TREATMENT,
    outcome_probs: Any = None,
    name: str = "rewrite",
    outcome: str = "binary",
    split_fractions: tuple[float, float, float] = PAPER_FRACTIONS,
) -> SemiSyntheticTask:
    """A user-defined rewriting task (section 5.3, "Types of Confounding"): no synthetic posts.

    Args:
        corpus: the real user histories (not modified).
        f1: the rewrite of class-1 histories: a callable (list of posts -> list of posts), a mapping of
            whole-word rules such as ``{"happy": "sad"}`` (case-insensitive, case-following; see
            :class:`~textcause.simulation.edits.WordRules`), or None for the identity.
        f2: the rewrite of class-2 histories, e.g. ``{"sad": "happy"}``.
        seed: the seed of every draw.
        treat_probs: ``(P(T=1 | class 1), P(T=1 | class 2))``.
        outcome_probs: the 2x2 outcome table ``((c1 T=0, c1 T=1), (c2 T=0, c2 T=1))`` or
            ``{1: (T=0, T=1), 2: (...)}``; None for the standard table (true ATE 0.4).
        name: the task's name in the result.
        outcome: ``binary`` or ``normal``.
        split_fractions: train / validation / test fractions.

    Returns:
        The task (level 1).
    """
    spec = TaskSpec(
        treat_probs=treat_probs,
        outcome_probs=STANDARD_OUTCOME if outcome_probs is None else outcome_probs,
        summary=f"User-defined rewriting task {name!r}.",
    )
    return build_task(
        corpus, spec, task=str(name), level=1, seed=seed, outcome=outcome,
        split_fractions=split_fractions, rewrite=(f1, f2), owner="make_rewrite_task",
    )  # fmt: skip


def build_task(
    corpus: Corpus,
    spec: TaskSpec,
    *,
    task: str,
    level: int,
    seed: int = 0,
    insertion: str | None = None,
    bank: PostBank | str | os.PathLike[str] | None = None,
    outcome: str = "binary",
    split_fractions: tuple[float, float, float] = PAPER_FRACTIONS,
    rewrite: Sequence[Rewrite] | Mapping[str, Rewrite] | None = None,
    held_out_bank: float = 0.0,
    owner: str = "build_task",
) -> SemiSyntheticTask:
    """Draw a task from any :class:`TaskSpec` (registered or not); see :func:`make_task` for the arguments."""
    if not isinstance(spec, TaskSpec):
        raise ValueError(f"The 'spec' parameter of {owner} must be a TaskSpec. Got {type(spec).__name__} instead.")
    histories = _check_corpus(corpus, owner)
    seed = check_int(seed, "seed", owner, low=0)
    where = "append" if insertion is None else check_insertion(insertion, owner)
    outcome = check_outcome(outcome, owner)
    if outcome == "binary":
        check_outcome_table(spec.outcome_probs, owner, outcome="binary")
    bank = bank if isinstance(bank, PostBank) else load_bank(bank)
    for edit in (spec.f1, spec.f2):
        for kind in edit.kinds if edit is not None else ():
            bank.check_kind(kind)
    rewrites = _check_rewrite(rewrite, owner)
    held_out = check_real(held_out_bank, "held_out_bank", owner, low=0.0, high=1.0, high_open=True)
    n = len(histories)

    # The split comes from its own stream (step 5), so it is known before the posts are drawn.
    split_seed, full, split = _split(n, spec.train_fraction, seed, split_fractions)
    banks = {"train": bank}
    if held_out > 0.0:
        banks["train"], banks["test"] = split_bank(bank, held_out, _stream(seed, _BANK_SPLIT))
    is_test = np.zeros(n, dtype=bool)
    is_test[full.test] = True

    # 1. Latent classes, exactly balanced (a random permutation of n//2 ones and the rest twos).
    latent = assign_classes(n, _stream(seed, _CLASSES), class1_share=spec.class1_share)

    # 2. Class-specific edits: rewrite real posts, then insert synthetic posts.
    texts, inserted_at, fixed = _edit_histories(histories, latent, spec, banks, is_test, rewrites, where, seed)

    # 3. Treatment given class; 4. both potential outcomes given class; observed outcome.
    t, propensity = draw_treatment(latent, spec.treat_probs, _stream(seed, _TREATMENT))
    y0, y1 = draw_potential_outcomes(latent, spec.outcome_probs, _stream(seed, _OUTCOMES), outcome=outcome)
    y = observed_outcome(t, y0, y1)

    # 5. The split (drawn above), with the training part subsampled (nested) for the Sample Size task.

    info = {
        "description": spec.describe(where, outcome),
        "treat_probs": list(spec.treat_probs),
        "outcome": outcome,
        ("outcome_probs" if outcome == "binary" else "outcome_means"): [list(r) for r in spec.outcome_probs],
        "class1_share": spec.class1_share,
        "population_unadjusted": population_unadjusted(spec.treat_probs, spec.outcome_probs, spec.class1_share),
        "insertion": where,
        "f1": "identity" if spec.f1 is None else spec.f1.describe(where),
        "f2": "identity" if spec.f2 is None else spec.f2.describe(where),
        "rewrite": {"f1": describe_rewrite(rewrites[0]), "f2": describe_rewrite(rewrites[1])},
        "bank": bank.name,
        "fixed_posts": {f"f{c}": posts for c, posts in fixed["train"].items() if posts is not None},
        "inserted_at": inserted_at,
        "train_fraction": spec.train_fraction,
        "n_train_full": len(full.train),
        "split_seed": split_seed,
        "split_fractions": list(split_fractions),
        "corpus_source": getattr(corpus, "source", ""),
    }
    if outcome == "normal":
        info["outcome_sd"] = NORMAL_SD
    if "test" in banks:  # absent by default: a task without a held-out bank is what it always was
        info["held_out_bank"] = held_out
        info["bank_posts"] = {part: {k: list(v.posts) for k, v in b.kinds.items()} for part, b in banks.items()}
        info["fixed_posts_test"] = {f"f{c}": posts for c, posts in fixed["test"].items() if posts is not None}
    return SemiSyntheticTask(
        task=task,
        level=level,
        seed=seed,
        user_ids=[h.user_id for h in histories],
        texts=texts,
        latent_class=latent,
        treatment=t,
        outcome=y,
        y0=y0,
        y1=y1,
        propensity=propensity,
        true_ate=population_ate(spec.outcome_probs, spec.class1_share),
        sample_ate=float(np.mean(y1 - y0)),
        split=split,
        n_inserted=np.array([len(a) for a in inserted_at], dtype=np.int64),
        info=info,
    )


def _edit_histories(
    histories: Sequence[History],
    latent: np.ndarray,
    spec: TaskSpec,
    banks: Mapping[str, PostBank],
    is_test: np.ndarray,
    rewrites: Any,
    where: str,
    seed: int,
) -> tuple[list[list[str]], list[tuple[int, ...]], dict[str, dict[int, Any]]]:
    """Step 2: each class's edit of its users' histories (rewrites, then inserted synthetic posts).

    ``banks`` holds the ``train`` bank (everyone's, by default) and, for a held-out bank, the
    ``test`` bank of the users marked in ``is_test``. Fixed posts are drawn once per bank.
    """
    fixed_rng = _stream(seed, _FIXED)
    fixed = {
        part: {
            c: (f.draw(b, fixed_rng) if f is not None and f.fixed else None) for c, f in ((1, spec.f1), (2, spec.f2))
        }
        for part, b in banks.items()
    }
    edit_rng = _stream(seed, _EDITS)
    keep_length = where == "replace"
    texts: list[list[str]] = []
    inserted_at: list[tuple[int, ...]] = []
    for h, c, test in zip(histories, latent.tolist(), is_test.tolist()):
        part = "test" if test and "test" in banks else "train"
        posts = list(h.posts)
        if rewrites[c - 1] is not None:
            posts = apply_rewrite(rewrites[c - 1], posts, f"f{c}")
        f = spec.f1 if c == 1 else spec.f2
        at: tuple[int, ...] = ()
        if f is not None:
            new = fixed[part][c]  # drawn once per bank when f.fixed, else None: a draw per user
            if new is None:
                new = f.draw(banks[part], edit_rng)
            posts, at = insert_posts(posts, new, f.where or where, edit_rng, keep_length=keep_length)
        texts.append(posts)
        inserted_at.append(at)
    return texts, inserted_at, fixed


def _split(n: int, train_fraction: float, seed: int, fractions: tuple[float, float, float]) -> tuple[int, Split, Split]:
    """Step 5: the split's seed, the full split and the one served (training part subsampled, nested)."""
    split_seed = int(np.random.SeedSequence(seed, spawn_key=(_SPLIT,)).generate_state(1)[0])
    full = split_users(n, seed=split_seed, fractions=fractions)
    split = full
    if train_fraction < 1.0:
        n_keep = max(1, int(round(train_fraction * len(full.train))))
        kept = _stream(seed, _SUBSAMPLE).permutation(full.train)[:n_keep]
        split = Split(train=np.sort(kept), val=full.val, test=full.test)
    return split_seed, full, split


def _check_corpus(corpus: Any, owner: str) -> tuple[History, ...]:
    if isinstance(corpus, Corpus):
        histories = corpus.histories
    elif isinstance(corpus, Sequence) and all(isinstance(h, History) for h in corpus):
        histories = tuple(corpus)
    else:
        raise ValueError(
            f"The 'corpus' parameter of {owner} must be a textcause Corpus (see textcause.corpus). "
            f"Got {type(corpus).__name__} instead."
        )
    if len(histories) < MIN_USERS:
        raise ValueError(f"The corpus has {len(histories)} users; a semi-synthetic task needs at least {MIN_USERS}.")
    return histories


def _check_rewrite(
    rewrite: Any, owner: str
) -> tuple[Callable[[list[str]], list[str]] | None, Callable[[list[str]], list[str]] | None]:
    if rewrite is None:
        return None, None
    if isinstance(rewrite, Mapping):
        unknown = set(rewrite) - {"f1", "f2"}
        if unknown:
            raise ValueError(
                f"The 'rewrite' parameter of {owner} takes the keys 'f1' and 'f2'. Got {sorted(unknown)} instead."
            )
        pair = (rewrite.get("f1"), rewrite.get("f2"))
    elif isinstance(rewrite, Sequence) and not isinstance(rewrite, str) and len(rewrite) == 2:
        pair = (rewrite[0], rewrite[1])
    else:
        raise ValueError(
            f"The 'rewrite' parameter of {owner} must be a pair (f1, f2) or a mapping with keys 'f1' and 'f2'. "
            f"Got {type(rewrite).__name__} instead."
        )
    return as_rewrite(pair[0], "f1", owner), as_rewrite(pair[1], "f2", owner)

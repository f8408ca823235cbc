"""Display names of models (the paper's names for config names) and the display order of models and estimators.

Task labels belong to the task registry (:func:`textcause.simulation.tasks.task_label`), estimator
labels to the estimator registry (:data:`textcause.estimators.ESTIMATOR_LABELS`).
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from textcause.estimators.registry import ESTIMATOR_LABELS

__all__ = [
    "ESTIMATOR_ORDER",
    "MODEL_FREE",
    "estimator_order",
    "model_family",
    "model_labels",
    "model_order",
]

#: Config name -> the paper's name (section 6.1), in the paper's order.
_MODEL_LABELS = {
    "oracle": "Oracle",
    "unadjusted": "Unadjusted",
    # The paper's LR baselines, tuned as a reviewer tunes them (penalty kind and strength on validation).
    "lr_tuned_unigram_binary": "LR 1-gram",
    "lr_tuned_bigram_binary": "LR 1,2-gram",
    "lr_tuned_bigram_counts": "LR 1,2-gram counts",
    "lr_tuned_lda": "LR LDA",
    # The L2-only L-BFGS logistic regressions (refitting intervals, sweeps, the joint model's propensity
    # head); beside a tuned one of the same name, both labels get their config name (model_labels).
    "lr_unigram_binary": "LR 1-gram",
    "lr_bigram_binary": "LR 1,2-gram",
    "lr_bigram_counts": "LR 1,2-gram counts",
    "lr_lda": "LR LDA",
    "nn_unigram_binary": "Simple NN 1-gram",
    "nn_bigram_binary": "Simple NN 1,2-gram",
    "nn_bigram_counts": "Simple NN 1,2-gram counts",
    "nn_lda": "Simple NN LDA",
    "sherbert": "SHERBERT",
    "sherbert_pooled": "SHERBERT",
    "order_count": "OrderCountNet (ours)",
    # Models with an outcome model too (issue 19): their rows add AIPW and TMLE.
    "joint_lr_bigram_binary": "LR 1,2-gram + outcome LRs",
    "joint_pooled": "Joint SHERBERT (CausalBERT-style)",
}
ESTIMATOR_ORDER = tuple(ESTIMATOR_LABELS)


def model_order(models: Iterable[str]) -> list[str]:
    """Models in the paper's order (Oracle, Unadjusted, LR..., NN..., SHERBERT, ours), then the joint
    propensity + outcome models, others last."""
    models = set(models)
    known = [m for m in _MODEL_LABELS if m in models]
    return known + sorted(models - set(known))


def model_labels(models: Iterable[str]) -> dict[str, str]:
    """Paper names for config names; names that would collide keep their config name in brackets."""
    labels = {m: _MODEL_LABELS.get(m, m) for m in models}
    counts = pd.Series(list(labels.values()), dtype=object).value_counts()
    return {m: (f"{lab} ({m})" if counts[lab] > 1 and m in _MODEL_LABELS else lab) for m, lab in labels.items()}


def estimator_order(estimators: Iterable[str]) -> list[str]:
    """Estimators in the order unadjusted, IPTW, stratified, matching, AIPW, TMLE, others last."""
    present = set(estimators)
    return [e for e in ESTIMATOR_ORDER if e in present] + sorted(present - set(ESTIMATOR_ORDER))


#: The models that use no text (the true propensities, no adjustment): the same draw gives the same number.
MODEL_FREE = ("oracle", "unadjusted")


def model_family(model: str) -> str:
    """The family of a model, from its paper name: ``model-free`` (:data:`MODEL_FREE`), ``n-gram LR``,
    ``n-gram NN``, ``LDA``, ``SHERBERT``, ``joint`` (a propensity and outcome model), else its label."""
    label = _MODEL_LABELS.get(model, model)
    if model in MODEL_FREE:
        return "model-free"
    if "outcome" in label or label.startswith("Joint"):
        return "joint"
    if "LDA" in label:
        return "LDA"
    if "gram" in label:
        return "n-gram LR" if label.startswith("LR ") else "n-gram NN"
    return "SHERBERT" if label.startswith("SHERBERT") else label

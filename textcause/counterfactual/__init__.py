"""Counterfactual recognition: SemEval-2020 Task 5 (detection, antecedent / consequent extraction).

* :mod:`~textcause.counterfactual.data`: validated readers of the official CSV files (character
  offsets, END INCLUSIVE, ``-1`` for a missing consequent) and the validation split carved from
  the training file;
* :mod:`~textcause.counterfactual.scoring`: the scorer of both subtasks (official semantics, rows
  joined on sentenceID) and writers of the official prediction format;
* :mod:`~textcause.counterfactual.baselines`: subtask 1's TF-IDF + linear SVM and frozen MiniLM +
  logistic regression, C and threshold chosen on validation;
* :mod:`~textcause.counterfactual.run`: :func:`run_baseline`, the one path from settings to
  test-set scores, and :func:`write_outputs`;
* the fine-tuned models (trained by ``train.py fit --config configs/counterfactual/<...>.yaml``,
  scored by ``evaluate.py RUN_DIR``): :mod:`~textcause.counterfactual.datamodule`
  (:class:`SemEvalDataModule`, both subtasks, the validation part carved from train),
  :mod:`~textcause.counterfactual.models` (:class:`CounterfactualClassifier`,
  :class:`CounterfactualSpanModel`), :mod:`~textcause.counterfactual.spans` (offsets <-> tokens,
  valid-span decoding) and :mod:`~textcause.counterfactual.finetuned` (threshold or "no
  consequent" margin chosen on validation, the test file scored once);
* the subtask-1 baselines as the same kind of run (``configs/counterfactual/subtask1_svm.yaml``,
  ``subtask1_minilm_lr.yaml``): :mod:`~textcause.counterfactual.fitted`
  (:class:`FittedTextClassifier`: fitted once by ``trainer.fit``, saved as tensors and plain values).

Names are imported lazily, so ``import textcause.counterfactual`` imports neither pandas,
scikit-learn nor torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "read_subtask1": "data",
    "read_subtask2": "data",
    "carve_validation": "data",
    "default_path": "data",
    "binary_scores": "scoring",
    "score_subtask1": "scoring",
    "score_subtask2": "scoring",
    "score_files": "scoring",
    "span_scores": "scoring",
    "write_subtask1_predictions": "scoring",
    "write_subtask2_predictions": "scoring",
    "normalise": "baselines",
    "choose_threshold": "baselines",
    "fit_svm": "baselines",
    "fit_minilm_lr": "baselines",
    "BaselineSettings": "run",
    "BaselineResult": "run",
    "run_baseline": "run",
    "write_outputs": "run",
    "SemEvalDataModule": "datamodule",
    "CounterfactualClassifier": "models",
    "CounterfactualSpanModel": "models",
    "FittedTextClassifier": "fitted",
    "decode": "spans",
    "evaluate_finetuned": "finetuned",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"textcause.counterfactual.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'textcause.counterfactual' has no attribute {name!r}")

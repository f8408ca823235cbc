"""The one path of the subtask-1 baselines: settings in, a fitted model scored on the test file out.

    >>> result = run_baseline(BaselineSettings(model="svm"))            # doctest: +SKIP
    >>> write_outputs(result, "runs/counterfactual/svm")               # doctest: +SKIP

:func:`run_baseline` reads the official training and test files (validated), carves a seeded,
stratified validation part from the training file, fits the model on the rest (C and threshold
chosen on validation), then predicts the test file once and scores it with
:func:`~textcause.counterfactual.scoring.score_subtask1`. :func:`write_outputs` writes the
predictions in the official format (``subtask1.csv``: ``sentenceID,pred_label``, test order) and
``results.json``, atomically.
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from textcause.counterfactual.baselines import LR_CS, SVM_CS, fit_minilm_lr, fit_svm, minilm_cache
from textcause.counterfactual.data import carve_validation, check_disjoint, default_path, read_subtask1
from textcause.counterfactual.scoring import score_subtask1, write_subtask1_predictions
from textcause.io import atomic_write_json
from textcause.validation import check_int, check_options, check_real

#: The subtask-1 baselines, by name.
MODELS = ("svm", "minilm_lr")


@dataclass(frozen=True)
class BaselineSettings:
    """What a subtask-1 baseline run fits and scores.

    Args:
        model: ``"svm"`` (TF-IDF + linear SVM) or ``"minilm_lr"`` (frozen MiniLM + logistic regression).
        train: the training file (None: the official ``subtask1_train.csv`` under the data root).
        test: the test file (None: the official ``subtask1_test.csv``).
        val_fraction: the share of the training file held out to choose C and the threshold.
        seed: the validation split's (and LinearSVC's) seed.
        Cs: the C values tried on validation (None: the model's default grid).
        encoder: the frozen encoder of ``minilm_lr`` (None: all-MiniLM-L6-v2 from the installed wheel).
        max_tokens: the encoder's truncation of each sentence.
        progress: show the encoder's progress bar (None: only on a terminal).
    """

    model: str = "svm"
    train: str | None = None
    test: str | None = None
    val_fraction: float = 0.15
    seed: int = 0
    Cs: tuple[float, ...] | None = None
    encoder: str | None = None
    max_tokens: int = 128
    progress: bool | None = None

    def __post_init__(self) -> None:
        owner = "BaselineSettings"
        check_options(self.model, "model", owner, MODELS)
        check_real(self.val_fraction, "val_fraction", owner, low=0.0, high=0.5, low_open=True)
        check_int(self.seed, "seed", owner, low=0)
        check_int(self.max_tokens, "max_tokens", owner, low=8, high=512)
        if self.Cs is not None:
            if not isinstance(self.Cs, tuple) or not self.Cs:
                raise ValueError(
                    f"The 'Cs' parameter of {owner} must be a non-empty tuple of floats > 0. Got {self.Cs!r} instead."
                )
            for c in self.Cs:
                check_real(c, "Cs", owner, low=0.0, low_open=True)


@dataclass
class BaselineResult:
    """A baseline's test-set scores, what was chosen on validation, timings and the test predictions.

    Attributes:
        settings: the settings of the run.
        test: :func:`~textcause.counterfactual.scoring.binary_scores` on the test file.
        validation: the same on the validation part at the chosen threshold.
        C: the chosen regularisation.
        threshold: the chosen margin threshold.
        grid: validation F1 of every C tried.
        timings: seconds (``fit_seconds``; ``encode_seconds`` of the training file for MiniLM; ``predict_seconds``,
            which for MiniLM includes encoding the test file unless cached; ``total_seconds``).
        sizes: rows of the fit, validation and test parts (and the positives of each).
        info: what the model reports (vocabulary size, encoder, cache folder).
        test_ids: the test sentenceIDs in file order.
        test_pred: the 0/1 predictions, aligned with ``test_ids``.
        test_scores: the margins, aligned with ``test_ids``.
    """

    settings: BaselineSettings
    test: dict[str, float]
    validation: dict[str, float]
    C: float
    threshold: float
    grid: dict[str, float]
    timings: dict[str, float]
    sizes: dict[str, int]
    info: dict[str, Any] = field(default_factory=dict)
    test_ids: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    test_pred: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int8))
    test_scores: np.ndarray = field(default_factory=lambda: np.empty(0))

    def summary(self) -> dict[str, Any]:
        """Everything but the per-sentence arrays, JSON-ready."""
        return {
            "task": "semeval2020-task5-subtask1",
            "model": self.settings.model,
            "settings": asdict(self.settings),
            "test": self.test,
            "validation": self.validation,
            "C": self.C,
            "threshold": self.threshold,
            "grid_validation_f1": self.grid,
            "timings": self.timings,
            "sizes": self.sizes,
            "info": self.info,
            "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
        }


def _sizes(name: str, frame: pd.DataFrame) -> dict[str, int]:
    return {f"n_{name}": len(frame), f"n_{name}_positive": int(frame["gold_label"].sum())}


def run_baseline(settings: BaselineSettings) -> BaselineResult:
    """Fit ``settings.model`` on the training file and score it once on the test file.

    Raises:
        FileNotFoundError: a file does not exist.
        ValueError: a malformed file, or training and test files sharing sentenceIDs.
    """
    started = time.perf_counter()
    train_path = Path(settings.train) if settings.train else default_path("subtask1_train")
    test_path = Path(settings.test) if settings.test else default_path("subtask1_test")
    train, test = read_subtask1(train_path), read_subtask1(test_path)
    check_disjoint(train, test)
    fit, val = carve_validation(train, fraction=settings.val_fraction, seed=settings.seed)
    args = (
        fit["sentence"].tolist(),
        fit["gold_label"].to_numpy(),
        val["sentence"].tolist(),
        val["gold_label"].to_numpy(),
    )
    if settings.model == "svm":
        model = fit_svm(*args, Cs=settings.Cs or SVM_CS, seed=settings.seed)
    else:
        cache = minilm_cache(settings.encoder, max_tokens=settings.max_tokens, progress=settings.progress)
        model = fit_minilm_lr(*args, cache=cache, Cs=settings.Cs or LR_CS)
    predicting = time.perf_counter()
    scores = model.decision(test["sentence"].tolist())
    pred = (scores >= model.threshold).astype(np.int8)
    predict_seconds = time.perf_counter() - predicting
    frame = pd.DataFrame({"sentenceID": test["sentenceID"].to_numpy(), "pred_label": pred})
    test_scores = score_subtask1(test, frame, source=test_path.name)
    timings = {k: float(v) for k, v in model.info.items() if k.endswith("_seconds")}
    timings |= {"predict_seconds": predict_seconds, "total_seconds": time.perf_counter() - started}
    return BaselineResult(
        settings=settings,
        test=test_scores,
        validation=model.validation,
        C=model.C,
        threshold=model.threshold,
        grid=model.grid,
        timings=timings,
        sizes={**_sizes("fit", fit), **_sizes("validation", val), **_sizes("test", test)},
        info={k: v for k, v in model.info.items() if not k.endswith("_seconds")}
        | {"train": str(train_path), "test": str(test_path)},
        test_ids=test["sentenceID"].to_numpy(),
        test_pred=pred,
        test_scores=scores,
    )


def write_outputs(result: BaselineResult, out: str | os.PathLike) -> list[Path]:
    """Write ``subtask1.csv`` (the official prediction format) and ``results.json`` under ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    predictions = write_subtask1_predictions(out / "subtask1.csv", result.test_ids, result.test_pred)
    summary = atomic_write_json(out / "results.json", result.summary())
    return [predictions, summary]

"""Subtask 1's scikit-learn baselines as Lightning runs: ``train.py fit`` fits them, ``evaluate.py`` scores them.

    python train.py fit --config configs/counterfactual/subtask1_svm.yaml
    python evaluate.py runs/counterfactual/subtask1_svm/version_0

:class:`FittedTextClassifier` wraps :func:`~textcause.counterfactual.baselines.fit_svm` (TF-IDF +
linear SVM) or :func:`~textcause.counterfactual.baselines.fit_minilm_lr` (frozen MiniLM + logistic
regression). Its training is one fit, at the first training batch: it reads the raw sentences of
the data module's fit and validation parts (:class:`~textcause.counterfactual.datamodule.SemEvalDataModule`,
the carving the fine-tuned classifier is chosen on), fits once (C and the threshold chosen on
validation, as ``textcause counterfactual baseline`` does: the same files and seed give the same
model), records the fit as the run's one step through Lightning's stand-in optimiser (there is no
parameter and nothing is updated; the step lets ``ModelCheckpoint`` save) and stops training.

The checkpoint holds no pickled scikit-learn object. The module's state (``get_extra_state``,
saved in the ``state_dict``) is tensors and plain values, :func:`export_state`: the TF-IDF
vocabulary (terms in column order), idf and parameters, or the encoder's name and identity; the
linear model's coefficients, intercept and classes; C, the threshold, the validation scores.
:func:`rebuild` makes the same predictor from them, so a checkpoint read with
``torch.load(..., weights_only=True)`` (as ``evaluate.py`` reads it) gives identical decisions.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, Optional

import lightning as L
import numpy as np
import torch

from textcause.counterfactual.baselines import (
    LR_CS,
    SVM_CS,
    FittedClassifier,
    fit_minilm_lr,
    fit_svm,
    minilm_cache,
    normalise,
)
from textcause.validation import check_options, check_real

#: The subtask-1 baselines, by name (the names of ``textcause counterfactual baseline --model``).
BASELINES = ("svm", "minilm_lr")
#: The version of the checkpoint state written by :func:`export_state`.
FORMAT = 1
#: The linear models a state may name, and where they live.
_ESTIMATORS = {"LinearSVC": "sklearn.svm", "LogisticRegression": "sklearn.linear_model"}
#: TfidfVectorizer parameters that are not plain values: rebuilt, not stored.
_TFIDF_CODE = ("tokenizer", "preprocessor", "vocabulary", "dtype")
_OWNER = "FittedTextClassifier"


def _tensor(values: Any) -> torch.Tensor:
    return torch.from_numpy(np.array(values, copy=True))


def _plain(mapping: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``mapping`` whose values are plain (str, numbers, bools, None), numpy scalars made Python."""
    out = {}
    for key, value in mapping.items():
        value = value.item() if isinstance(value, np.generic) else value
        if isinstance(value, (str, int, float, bool, type(None))):
            out[str(key)] = value
    return out


def _export_tfidf(vectorizer: Any) -> dict[str, Any]:
    params = vectorizer.get_params()
    if params["tokenizer"] is not normalise or params["preprocessor"] is not None or params["analyzer"] != "word":
        raise ValueError("Only TF-IDF vectorizers of baselines.normalise word tokens can be saved in a checkpoint.")
    kept = {k: v for k, v in params.items() if k not in _TFIDF_CODE}
    for key, value in kept.items():
        if not isinstance(value, (str, int, float, bool, type(None), tuple)):
            raise ValueError(f"The TF-IDF parameter {key!r} = {value!r} is not a plain value: it cannot be saved.")
    vocabulary = vectorizer.vocabulary_
    terms = sorted(vocabulary, key=vocabulary.get)
    if [vocabulary[t] for t in terms] != list(range(len(terms))):
        raise ValueError("The TF-IDF vocabulary's columns are not 0..n-1: it cannot be saved.")
    return {
        "kind": "tfidf",
        "params": kept,
        "dtype": np.dtype(params["dtype"]).name,
        "terms": terms,
        "idf": _tensor(vectorizer.idf_),
    }


def export_state(fitted: FittedClassifier, *, encoder: Optional[str] = None) -> dict[str, Any]:
    """A fitted baseline as tensors and plain values (what a checkpoint holds; see :func:`rebuild`).

    Args:
        fitted: from :func:`~textcause.counterfactual.baselines.fit_svm` or ``fit_minilm_lr``.
        encoder: the encoder ``minilm_lr``'s cache was built with (None: the packaged MiniLM).
    """
    check_options(fitted.name, "name", "export_state", BASELINES)
    estimator = fitted.model
    kind = type(estimator).__name__
    if kind not in _ESTIMATORS:
        raise ValueError(f"export_state saves {sorted(_ESTIMATORS)} models only. Got {kind} instead.")
    source = getattr(fitted.featurize, "__self__", None)  # the vectorizer's transform / the cache's embed
    if fitted.name == "svm":
        features = _export_tfidf(source)
    else:
        features = {
            "kind": "encoder",
            "encoder": encoder,
            "identity": source.spec.identity,
            "max_tokens": int(source.encoder.max_tokens),
        }
    return {
        "format": FORMAT,
        "baseline": fitted.name,
        "C": float(fitted.C),
        "threshold": float(fitted.threshold),
        "validation": _plain(fitted.validation),
        "grid": {str(k): float(v) for k, v in fitted.grid.items()},
        "info": _plain(fitted.info),
        "features": features,
        "estimator": {
            "class": kind,
            "coef": _tensor(estimator.coef_),
            "intercept": _tensor(estimator.intercept_),
            "classes": _tensor(estimator.classes_),
        },
    }


def rebuild(state: dict[str, Any], *, progress: Optional[bool] = None) -> FittedClassifier:
    """The predictor of :func:`export_state`'s ``state``: the same features, coefficients and threshold.

    Args:
        state: as :func:`export_state` wrote it (e.g. read back from a checkpoint).
        progress: ``minilm_lr``: show the encoder's progress bar (None: only on a terminal).

    Raises:
        ValueError: a state of another format, or (``minilm_lr``) an encoder that now resolves to
            other weights than those the model was fitted on.
    """
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"The checkpoint holds no fitted baseline of format {FORMAT}: refit it with train.py fit.")
    features = state["features"]
    if features["kind"] == "tfidf":
        from sklearn.feature_extraction.text import TfidfVectorizer

        vectorizer = TfidfVectorizer(tokenizer=normalise, dtype=np.dtype(features["dtype"]).type, **features["params"])
        vectorizer.vocabulary_ = {term: i for i, term in enumerate(features["terms"])}
        vectorizer.idf_ = features["idf"].numpy()
        featurize = vectorizer.transform
    else:
        cache = minilm_cache(features["encoder"], max_tokens=features["max_tokens"], progress=progress)
        if cache.spec.identity != features["identity"]:
            raise ValueError(
                f"The model was fitted on vectors of the encoder {features['encoder']!r} with identity "
                f"{features['identity']}, but it now resolves to {cache.spec.identity}: refit it with train.py fit."
            )
        featurize = cache.embed
    saved = state["estimator"]
    check_options(saved["class"], "estimator", "rebuild", tuple(_ESTIMATORS))
    estimator = getattr(importlib.import_module(_ESTIMATORS[saved["class"]]), saved["class"])()
    estimator.coef_ = saved["coef"].numpy()
    estimator.intercept_ = saved["intercept"].numpy()
    estimator.classes_ = saved["classes"].numpy()
    estimator.n_features_in_ = int(estimator.coef_.shape[1])
    return FittedClassifier(
        state["baseline"],
        featurize,
        estimator,
        state["C"],
        state["threshold"],
        dict(state["validation"]),
        dict(state["grid"]),
        dict(state["info"]),
    )


def check_subtask1_data(data: Any) -> None:
    """Raise a ValueError unless ``data`` serves the raw sentences of subtask 1 (a ``SemEvalDataModule``)."""
    settings = getattr(data, "settings", None)
    if not hasattr(data, "splits") or not hasattr(settings, "subtask"):
        raise ValueError(
            f"{_OWNER} needs a textcause.counterfactual.datamodule.SemEvalDataModule (the raw sentences of its "
            f"fit and validation parts). Got {type(data).__name__} instead."
        )
    if settings.subtask != 1:
        raise ValueError(
            f"{_OWNER} is a subtask-1 model (is the sentence counterfactual?), but the data module serves "
            f"subtask {settings.subtask}: set data.init_args.subtask to 1."
        )


class FittedTextClassifier(L.LightningModule):
    """A subtask-1 scikit-learn baseline, fitted once by ``trainer.fit`` (see the module docstring).

    ``minilm_lr`` embeds with the data module's ``encoder``, truncated to its ``max_length`` (the
    encoder and window the fine-tuned classifier reads: one encoder per run, set once); the
    checkpoint keeps the encoder's name and identity, so evaluation encodes the test file with the
    same weights (a changed encoder is an error).

    Args:
        baseline: ``"svm"`` (TF-IDF + linear SVM) or ``"minilm_lr"`` (frozen MiniLM sentence
            vectors + logistic regression).
        Cs: the C values tried on validation (None: the baseline's default grid,
            :data:`~textcause.counterfactual.baselines.SVM_CS` or ``LR_CS``).
        progress: ``minilm_lr``: show the encoder's progress bar (None: only on a terminal).
    """

    def __init__(
        self,
        baseline: str = "svm",
        Cs: Optional[list[float]] = None,
        progress: Optional[bool] = None,
    ) -> None:
        super().__init__()
        check_options(baseline, "baseline", _OWNER, BASELINES)
        if Cs is not None:
            if not isinstance(Cs, (list, tuple)) or not Cs:
                raise ValueError(
                    f"The 'Cs' parameter of {_OWNER} must be a non-empty list of floats > 0. Got {Cs!r} instead."
                )
            for c in Cs:
                check_real(c, "Cs", _OWNER, low=0.0, low_open=True)
        self.save_hyperparameters()
        self.automatic_optimization = False  # nothing to optimise: the fit is scikit-learn's
        self._fitted: Optional[FittedClassifier] = None
        self._state: dict[str, Any] = {}
        self._encoder: Optional[str] = None

    # ------------------------------------------------------------------ the fit
    def fit_on(self, data: Any) -> FittedClassifier:
        """Fit on ``data``'s fit part, choosing C and the threshold on its validation part; returns the fit."""
        check_subtask1_data(data)
        fit, val = data.splits["train"], data.splits["val"]
        args = (fit.sentences, fit.frame["gold_label"].to_numpy(), val.sentences, val.frame["gold_label"].to_numpy())
        hp = self.hparams
        self._encoder = data.settings.encoder  # minilm_lr's (None: the packaged MiniLM), kept in the checkpoint
        if hp.baseline == "svm":
            fitted = fit_svm(*args, Cs=tuple(hp.Cs or SVM_CS), seed=data.settings.seed)
        else:
            cache = minilm_cache(self._encoder, max_tokens=data.settings.max_length, progress=hp.progress)
            fitted = fit_minilm_lr(*args, cache=cache, Cs=tuple(hp.Cs or LR_CS))
        self._fitted, self._state = fitted, {}
        return fitted

    def setup(self, stage: str) -> None:
        if stage == "fit":
            check_subtask1_data(getattr(self.trainer, "datamodule", None))

    def on_fit_start(self) -> None:
        self._fitted, self._state = None, {}  # every trainer.fit fits anew

    def configure_optimizers(self) -> None:
        return None

    def training_step(self, batch: Any, batch_idx: int) -> None:
        """Fit once (the batch itself is not used: the fit needs whole parts), then stop training."""
        if self._fitted is None:
            fitted = self.fit_on(self.trainer.datamodule)
            self.optimizers().step()  # the fit is the run's one step: no parameter, nothing updated
            scores = {f"val_{k}": fitted.validation[k] for k in ("precision", "recall", "f1", "accuracy")}
            for name, value in {**scores, "C": fitted.C, "threshold": fitted.threshold}.items():
                self.log(name, float(value), on_step=False, on_epoch=True, batch_size=1)
        self.trainer.should_stop = True

    # ------------------------------------------------------------------ prediction
    @property
    def fitted(self) -> FittedClassifier:
        """The fitted predictor (rebuilt from the loaded state on first use)."""
        if self._fitted is None and self._state:
            self._fitted = rebuild(self._state, progress=self.hparams.progress)
        if self._fitted is None:
            raise ValueError(
                f"This {_OWNER} has not been fitted: run train.py fit, or load a checkpoint of a fitted run."
            )
        return self._fitted

    def decision(self, sentences: Sequence[str]) -> np.ndarray:
        """The score of each sentence (the SVM's margin, the LR's logit): counterfactual when >= the threshold."""
        return self.fitted.decision(sentences)

    def chosen(self) -> dict[str, Any]:
        """What the fit chose on validation, for ``results.json``: C, the threshold, the grid, fit info and times."""
        f = self.fitted
        return {
            "baseline": f.name,
            "C": float(f.C),
            "threshold": float(f.threshold),
            "grid_validation_f1": dict(f.grid),
            "fit_info": {k: v for k, v in f.info.items() if not k.endswith("_seconds")},
            "timings": {k: float(v) for k, v in f.info.items() if k.endswith("_seconds")},
        }

    # ------------------------------------------------------------------ the checkpoint
    def get_extra_state(self) -> dict[str, Any]:
        if self._fitted is not None and not self._state:
            self._state = export_state(self._fitted, encoder=self._encoder)
        return self._state

    def set_extra_state(self, state: Any) -> None:
        if not state:  # the checkpoint of a module that was never fitted
            self._fitted, self._state = None, {}
            return
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            raise ValueError(f"The checkpoint holds no fitted baseline of format {FORMAT}: refit it with train.py fit.")
        if state["baseline"] != self.hparams.baseline:
            raise ValueError(
                f"The checkpoint holds a fitted {state['baseline']!r}, but this {_OWNER} is {self.hparams.baseline!r}."
            )
        self._fitted, self._state = None, dict(state)

"""Subtask 1's two cheap models: the organisers' TF-IDF + linear SVM done right, and frozen MiniLM + LR.

The organisers' baseline lemmatised with NLTK's WordNet data, removed NLTK's English stop words
(which include *had, have, were, if, should, been, not* and *n't*: the very cues of a counterfactual)
and fitted its TF-IDF vocabulary on train and test together. Here:

* :func:`normalise` is data-free: the package's Treebank-like regex tokenizer (lower-cased,
  contractions split) and a light normalisation of clitics (``'ve`` -> ``have``, ``n't`` -> ``not``,
  ``wo n't`` -> ``will not``, ...), so *would've been* and *would have been* are the same n-grams. No
  lemmatiser: none whose data ships in an installed wheel is available, and NLTK's data cannot be
  downloaded. No stop word is removed, so every cue in :data:`CUES` stays.
* TF-IDF (1- to 3-grams seen in at least 2 sentences, sublinear tf, fitted on the fit part of the
  training file only: *should have been* is one feature) + ``LinearSVC`` with
  ``class_weight="balanced"`` (about 11% of sentences are counterfactual). The n-gram range and
  ``min_df`` were chosen on the validation part (1-3 / 2 beat 1-2 / 2 by 2 F1 points), never on test.
* :func:`fit_minilm_lr`: frozen all-MiniLM-L6-v2 sentence vectors (each sentence one "post" of
  :class:`~textcause.features.embeddings.PostEmbeddingCache`, cached under the cache root) +
  ``LogisticRegression(class_weight="balanced")``.
* Both choose C and the decision threshold (on the margin) on the validation part carved from
  the training file (:func:`select`), never on test.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from textcause.counterfactual.scoring import binary_scores
from textcause.features.tokenize import tokenize

#: Words that mark counterfactuals and that a stop-word list must never remove (after :func:`normalise`).
CUES = ("had", "have", "were", "if", "should", "been", "not", "would", "could", "wish")
#: Clitics rewritten to the word they stand for (``'d`` is left alone: it is *had* or *would*).
_CLITICS = {"'ve": "have", "'ll": "will", "'re": "are", "'m": "am", "n't": "not"}
#: Stems left by splitting ``can't`` / ``won't`` / ``shan't``.
_NEGATED = {"ca": "can", "wo": "will", "sha": "shall"}

SVM_CS = (0.1, 0.3, 1.0, 3.0, 10.0)
LR_CS = (0.1, 1.0, 10.0, 100.0, 1000.0)


def normalise(text: str) -> list[str]:
    """Data-free tokens of a sentence: lower-cased Treebank-like tokens with clitics spelled out.

    Examples:
        >>> normalise("It wouldn't have happened if we'd known; they can't've.")
        ['it', 'would', 'not', 'have', 'happened', 'if', 'we', "'d", 'known', ';', 'they', 'can', 'not', 'have', '.']
    """
    tokens = tokenize(text)
    out = []
    for i, tok in enumerate(tokens):
        if tok in _NEGATED and i + 1 < len(tokens) and tokens[i + 1] == "n't":
            tok = _NEGATED[tok]
        out.append(_CLITICS.get(tok, tok))
    return out


def choose_threshold(y: np.ndarray, scores: np.ndarray) -> tuple[float, float]:
    """The threshold on ``scores`` that maximises the F1 of the positive class on (y, scores).

    A sentence is predicted positive when its score is >= the threshold; the threshold is placed
    halfway between the chosen score and the next lower one, so it keeps a margin on new data.

    Returns:
        (threshold, the F1 it reaches on these data).
    """
    from sklearn.metrics import precision_recall_curve

    y, scores = np.asarray(y), np.asarray(scores, dtype=np.float64)
    if not (np.any(y == 1) and np.any(y == 0)):
        raise ValueError("choose_threshold needs both classes in 'y' to choose a threshold.")
    precision, recall, thresholds = precision_recall_curve(y, scores)
    p, r = precision[:-1], recall[:-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(p + r > 0, 2 * p * r / (p + r), 0.0)
    best = int(np.argmax(f1))
    t = float(thresholds[best])
    below = scores[scores < t]
    return ((t + float(below.max())) / 2 if below.size else t), float(f1[best])


@dataclass
class FittedClassifier:
    """A fitted subtask-1 model: features, a linear model, C and the threshold chosen on validation.

    Attributes:
        name: ``"svm"`` or ``"minilm_lr"``.
        featurize: sentences -> the model's input matrix.
        model: the fitted scikit-learn estimator (``decision_function`` gives the margin).
        C: the regularisation chosen on validation.
        threshold: the margin threshold chosen on validation.
        validation: :func:`~textcause.counterfactual.scoring.binary_scores` on validation at it.
        grid: validation F1 at the best threshold of every C tried.
        info: timings (seconds) and sizes.
    """

    name: str
    featurize: Callable[[Sequence[str]], Any]
    model: Any
    C: float
    threshold: float
    validation: dict[str, float]
    grid: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    def decision(self, sentences: Sequence[str]) -> np.ndarray:
        """The margin of each sentence (higher: more likely counterfactual)."""
        return np.asarray(self.model.decision_function(self.featurize(list(sentences))), dtype=np.float64)

    def predict(self, sentences: Sequence[str]) -> np.ndarray:
        """0/1 labels at the validation threshold."""
        return (self.decision(sentences) >= self.threshold).astype(np.int8)


def select(
    make: Callable[[float], Any], X_fit: Any, y_fit: np.ndarray, X_val: Any, y_val: np.ndarray, Cs: Sequence[float]
) -> tuple[Any, float, float, dict[str, float]]:
    """Fit ``make(C)`` on the fit part for each C; keep the C whose best-threshold validation F1 is highest.

    Ties go to the smaller C (the stronger regularisation).

    Returns:
        (model, C, threshold, {str(C): validation F1}).
    """
    if not Cs:
        raise ValueError("The C grid of select must not be empty.")
    fitted = []
    grid = {}
    for C in sorted(Cs):
        model = make(C).fit(X_fit, y_fit)
        threshold, f1 = choose_threshold(y_val, model.decision_function(X_val))
        grid[repr(float(C))] = f1
        fitted.append((f1, model, float(C), threshold))
    best = max(fitted, key=lambda r: r[0])  # the first (smallest C) of equal F1s
    return best[1], best[2], best[3], grid


def fit_svm(
    fit_sentences: Sequence[str],
    y_fit: np.ndarray,
    val_sentences: Sequence[str],
    y_val: np.ndarray,
    *,
    Cs: Sequence[float] = SVM_CS,
    seed: int = 0,
) -> FittedClassifier:
    """TF-IDF (1- to 3-grams of :func:`normalise` tokens, fit part only) + balanced ``LinearSVC``.

    Args:
        fit_sentences: the fit part of the training file.
        y_fit: its labels.
        val_sentences: the validation part carved from the training file.
        y_val: its labels.
        Cs: the SVM's C values tried on validation.
        seed: LinearSVC's seed.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.svm import LinearSVC

    started = time.perf_counter()
    vectorizer = TfidfVectorizer(
        tokenizer=normalise, lowercase=False, token_pattern=None, ngram_range=(1, 3), min_df=2, sublinear_tf=True
    )
    X_fit = vectorizer.fit_transform(list(fit_sentences))
    X_val = vectorizer.transform(list(val_sentences))

    def make(C: float) -> Any:
        return LinearSVC(C=C, class_weight="balanced", random_state=seed, max_iter=10_000)

    model, C, threshold, grid = select(make, X_fit, y_fit, X_val, y_val, Cs)
    fitted = FittedClassifier("svm", vectorizer.transform, model, C, threshold, {}, grid)
    fitted.validation = binary_scores(y_val, (model.decision_function(X_val) >= threshold).astype(np.int8))
    fitted.info = {"fit_seconds": time.perf_counter() - started, "vocabulary_size": len(vectorizer.vocabulary_)}
    return fitted


def minilm_cache(
    encoder: str | os.PathLike | None = None, *, max_tokens: int = 128, progress: bool | None = None
) -> Any:
    """The embedding cache of the fast path (each sentence one post; 128 tokens keep 99.5% of sentences whole)."""
    from textcause.features.embeddings import PostEmbeddingCache

    return PostEmbeddingCache(encoder, max_tokens=max_tokens, progress=progress)


def fit_minilm_lr(
    fit_sentences: Sequence[str],
    y_fit: np.ndarray,
    val_sentences: Sequence[str],
    y_val: np.ndarray,
    *,
    cache: Any,
    Cs: Sequence[float] = LR_CS,
) -> FittedClassifier:
    """Frozen sentence vectors from ``cache`` + balanced ``LogisticRegression`` (C, threshold on validation).

    Args:
        fit_sentences: the fit part of the training file.
        y_fit: its labels.
        val_sentences: the validation part carved from the training file.
        y_val: its labels.
        cache: a :class:`~textcause.features.embeddings.PostEmbeddingCache` (see :func:`minilm_cache`).
        Cs: the inverse regularisation strengths tried on validation.
    """
    from sklearn.linear_model import LogisticRegression

    started = time.perf_counter()
    X_fit = cache.embed(list(fit_sentences))
    X_val = cache.embed(list(val_sentences))
    encoded = time.perf_counter()

    def make(C: float) -> Any:
        return LogisticRegression(C=C, class_weight="balanced", max_iter=5000)

    model, C, threshold, grid = select(make, X_fit, y_fit, X_val, y_val, Cs)
    fitted = FittedClassifier("minilm_lr", cache.embed, model, C, threshold, {}, grid)
    fitted.validation = binary_scores(y_val, (model.decision_function(X_val) >= threshold).astype(np.int8))
    fitted.info = {
        "encode_seconds": encoded - started,
        "fit_seconds": time.perf_counter() - encoded,
        "encoder": cache.spec.name,
        "cache": str(cache.folder),
        "max_tokens": int(cache.encoder.max_tokens),
    }
    return fitted

"""The two kinds of method textcause can evaluate, as ``typing.Protocol`` classes.

A :class:`PropensityMethod` learns P(T=1 | text) on the training users and predicts it for the test
users; textcause then runs its estimators and propensity metrics on those predictions. An
:class:`EffectMethod` receives texts, treatments and outcomes and returns an ATE estimate,
optionally with its own interval. Both are duck-typed: no textcause base class is needed.

Optional attributes, read with a default (:func:`method_name`, :func:`method_representation`,
:func:`representation_options`, :func:`effect_estimator`): ``name`` (letters, digits, ``_``, ``.``,
``-``), ``representation`` (one of :data:`REPRESENTATIONS`, default raw text),
``representation_options`` (``min_users``, ``encoder``, ``max_tokens``, ``token_cap``) and an
effect method's ``estimator`` label (default ``"effect"``). Details: docs/methods.md, "The protocols".
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from textcause.estimators.registry import ESTIMATORS
from textcause.features.kinds import EMBEDDING_KINDS, NGRAM_KINDS
from textcause.validation import check_options

__all__ = [
    "EFFECT_ESTIMATOR",
    "EffectMethod",
    "EffectResult",
    "PropensityMethod",
    "REPRESENTATIONS",
    "RESERVED_ESTIMATORS",
    "effect_estimator",
    "method_kind",
    "method_name",
    "method_representation",
    "representation_options",
]

#: Representations a method may request (None: raw text, a list of post strings per user).
REPRESENTATIONS = (None, *NGRAM_KINDS, *EMBEDDING_KINDS)
#: Keys of a method's ``representation_options``.
_REPRESENTATION_OPTIONS = ("min_users", "encoder", "max_tokens", "token_cap")
#: The ``estimator`` label of an effect method's rows unless it sets its own.
EFFECT_ESTIMATOR = "effect"
#: Estimator labels an effect method may not take (they name textcause's own estimators).
RESERVED_ESTIMATORS = tuple(ESTIMATORS)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@runtime_checkable
class PropensityMethod(Protocol):
    """Learns P(T=1 | X) on training users and predicts it for other users.

    ``fit`` receives the training users' inputs and treatments; ``predict_proba`` the test users'
    inputs, in the same format. This is scikit-learn's classifier interface, so any fitted-on-text
    classifier works once its input is right (see :class:`~textcause.methods.adapters.SklearnPropensity`).
    """

    def fit(self, X: Any, t: Any) -> Any:
        """Learn from the training users.

        Args:
            X: one entry per training user, in the format of the method's ``representation``.
            t: the users' treatments, an int64 numpy array of 0 and 1.

        Returns:
            Anything (scikit-learn returns ``self``); the return value is ignored.
        """
        ...

    def predict_proba(self, X: Any) -> Any:
        """P(T=1) for each user of ``X``: shape ``(n,)``, or ``(n, 2)`` whose column 1 is used."""
        ...


@runtime_checkable
class EffectMethod(Protocol):
    """Estimates the ATE = E[Y(1)] - E[Y(0)] from texts, treatments and outcomes."""

    def estimate(self, X: Any, t: Any, y: Any) -> Any:
        """Estimate the ATE.

        Args:
            X: one entry per user, in the format of the method's ``representation``.
            t: treatments, an int64 numpy array of 0 and 1.
            y: outcomes, a float64 numpy array.

        Returns:
            A float (the ATE), a tuple ``(ate, ci_low, ci_high)``, an :class:`EffectResult`, or any
            object with an ``ate`` attribute (and optionally ``ci_low`` / ``ci_high``, such as
            :class:`textcause.estimators.Estimate`).
        """
        ...


@dataclass(frozen=True)
class EffectResult:
    """What an effect method may return: the ATE and, optionally, its interval.

    Attributes:
        ate: the estimate of E[Y(1)] - E[Y(0)].
        ci_low, ci_high: the method's own interval (both or neither), e.g. a 95% interval.
    """

    ate: float
    ci_low: float | None = None
    ci_high: float | None = None


def method_name(method: Any) -> str:
    """The name of ``method`` in result tables: its ``name`` attribute, else its class / function name.

    Raises:
        ValueError: if the name is not made of letters, digits, '_', '.' and '-'.
    """
    name = getattr(method, "name", None)
    if not isinstance(name, str) or not name:
        target = method if inspect.isclass(method) or inspect.isroutine(method) else type(method)
        name = getattr(target, "__name__", type(method).__name__)
    if not _NAME.match(name):
        raise ValueError(
            f"The name of a method must be made of letters, digits, '_', '.', '-' (it names result rows and "
            f"cells). Got {name!r} instead: set the method's 'name' attribute."
        )
    return name


def method_kind(method: Any) -> str:
    """``"effect"`` (has ``estimate``), ``"propensity"`` (has ``fit`` and ``predict_proba``) or ``""``."""
    if callable(getattr(method, "estimate", None)):
        return "effect"
    if callable(getattr(method, "fit", None)) and callable(getattr(method, "predict_proba", None)):
        return "propensity"
    return ""


def method_representation(method: Any) -> str | None:
    """The ``representation`` a method requests (None: raw text).

    Raises:
        ValueError: for an unknown representation.
    """
    rep = getattr(method, "representation", None)
    return check_options(rep, "representation", f"method {method_name(method)!r}", REPRESENTATIONS)


def representation_options(method: Any) -> dict[str, Any]:
    """The method's ``representation_options`` (an empty dict when it has none).

    Raises:
        ValueError: if they are not a dict of the known keys.
    """
    opts = getattr(method, "representation_options", None) or {}
    if not isinstance(opts, dict) or set(opts) - set(_REPRESENTATION_OPTIONS):
        raise ValueError(
            f"The 'representation_options' of method {method_name(method)!r} must be a dict with keys among "
            f"{list(_REPRESENTATION_OPTIONS)}. Got {opts!r} instead."
        )
    return dict(opts)


def effect_estimator(method: Any) -> str:
    """The ``estimator`` label of an effect method's rows (default ``"effect"``).

    Raises:
        ValueError: for a malformed label or one of textcause's own estimator names.
    """
    label = getattr(method, "estimator", None) or EFFECT_ESTIMATOR
    if not isinstance(label, str) or not _NAME.match(label) or label in RESERVED_ESTIMATORS:
        raise ValueError(
            f"The 'estimator' label of effect method {method_name(method)!r} must be made of letters, digits, "
            f"'_', '.', '-' and differ from {list(RESERVED_ESTIMATORS)}. Got {label!r} instead."
        )
    return label

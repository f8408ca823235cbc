"""Ready-made effect methods: K-fold cross-fitted AIPW and TMLE (double machine learning) on n-grams.

:class:`CrossFitEffect` is an :class:`~textcause.methods.EffectMethod` around
:func:`textcause.estimators.crossfit`: it receives every user the task keeps (training, validation
and test users together) as a sparse n-gram matrix, draws K folds stratified by treatment, fits on
the other folds a logistic-regression propensity model and one outcome model per arm, predicts the
fold, and feeds the out-of-fold predictions to AIPW or TMLE, whose influence-function interval it
returns. :class:`CrossFitAIPW` and :class:`CrossFitTMLE` need no arguments, so the benchmark loads
them by name::

    textcause benchmark --config configs/benchmark/weld_twitter_dr.yaml \\
        --method textcause.methods.crossfit:CrossFitAIPW --method textcause.methods.crossfit:CrossFitTMLE

Their rows carry the estimator labels ``dml_aipw`` / ``dml_tmle`` (``aipw`` and ``tmle`` name
textcause's own estimators, which a model with outcome heads runs with sample splitting: nuisances
fitted on the training users, evaluated on the test users).

**The penalty.** ``C`` (scikit-learn's inverse L2 penalty, on the summed loss) defaults to
:data:`DEFAULT_C` = 0.1: the tuned Twitter weld grid most often chose ``weight_decay = 0.006`` for
``lr_bigram_binary`` (31 of its 70 cells, then 0.02 in 21), and textcause's logistic regression
minimises the mean loss plus ``weight_decay / 2 * ||w||^2``, which is scikit-learn's objective with
``C = 1 / (weight_decay * n_train)``; with the 1,648 training users of a Twitter cell that is
``1 / (0.006 * 1648) = 0.101``. The same C, fitted here on (K-1)/K of about 4,100 users, penalises
each unit's loss a little less, as more data warrants.

**The outcome kind.** ``estimate`` receives ``(X, t, y)`` only: nothing from textcause says how the
task drew its outcome. With ``outcome="auto"`` (the default) an outcome whose values are all 0 or 1
is binary (a logistic regression per arm, TMLE on the logit scale), any other is continuous (a
ridge regression per arm with ``alpha = 1 / C``, the same L2 penalty on the half squared error,
which is the Gaussian negative log-likelihood; TMLE on the scaled outcome). A task with
``outcome: normal`` draws real-valued outcomes, so ``auto`` sees them as continuous; pass
``outcome="binary"`` or ``"continuous"`` to say it.

scikit-learn is imported when a method estimates, not when this module is imported.
"""

from __future__ import annotations

from typing import Any

from textcause.estimators.crossfit import CROSSFIT_ESTIMATORS, crossfit
from textcause.estimators.types import Estimate
from textcause.estimators.weighting import check_clip
from textcause.features.kinds import NGRAM_KINDS
from textcause.methods.protocols import EffectResult, method_name
from textcause.methods.protocols import representation_options as check_representation_options
from textcause.validation import as_1d_float, check_int, check_options, check_real

#: The default inverse L2 penalty of every nuisance model (see the module docstring).
DEFAULT_C = 0.1
#: The default propensity clipping: propensities are trimmed to [0.01, 0.99] (weights at most 100).
DEFAULT_CLIP = 0.01
#: What ``outcome`` may be.
OUTCOMES = ("auto", "binary", "continuous")
#: The estimator label of each doubly robust estimator's rows.
LABELS = {"aipw": "dml_aipw", "tmle": "dml_tmle"}
#: Iterations of L-BFGS for the logistic regressions (scikit-learn's default of 100 is too few on n-grams).
MAX_ITER = 1000


class CrossFitEffect:
    """Cross-fitted AIPW or TMLE with logistic-regression nuisances on an n-gram representation.

    Args:
        doubly_robust: the estimator fed with the out-of-fold predictions, ``aipw`` or ``tmle``.
        C: inverse L2 penalty (> 0) of the propensity and outcome models (ridge: ``alpha = 1 / C``).
        n_folds: K, the cross-fitting folds (>= 2; at most the smaller arm's size).
        seed: seed of the folds (>= 0).
        clip: propensities are trimmed to ``[clip, 1 - clip]`` before the estimator, in
            [MIN_CLIP, 0.5], or None for no clipping (the estimator then refuses weights above
            :data:`~textcause.validation.MAX_WEIGHT`).
        level: coverage of the influence-function interval, in (0, 1).
        outcome: ``auto``, ``binary`` or ``continuous`` (see the module docstring).
        representation: the n-gram representation ``X`` is given in, one of
            :data:`~textcause.features.kinds.NGRAM_KINDS`.
        representation_options: e.g. ``{"min_users": 10}`` (see :mod:`textcause.methods.protocols`).
        name: the name of its rows and cells; default ``crossfit_<estimator>_lr_<representation>``.

    Raises:
        ValueError: a parameter outside its range.
    """

    def __init__(
        self,
        doubly_robust: str = "aipw",
        *,
        C: float = DEFAULT_C,
        n_folds: int = 5,
        seed: int = 0,
        clip: float | None = DEFAULT_CLIP,
        level: float = 0.95,
        outcome: str = "auto",
        representation: str = "bigram_binary",
        representation_options: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        owner = type(self).__name__
        self.doubly_robust = check_options(doubly_robust, "doubly_robust", owner, list(CROSSFIT_ESTIMATORS))
        self.C = check_real(C, "C", owner, low=0.0, low_open=True)
        self.n_folds = check_int(n_folds, "n_folds", owner, low=2)
        self.seed = check_int(seed, "seed", owner, low=0)
        self.clip = None if clip is None else check_clip(clip, owner)
        self.level = check_real(level, "level", owner, low=0.0, high=1.0, low_open=True, high_open=True)
        self.outcome = check_options(outcome, "outcome", owner, OUTCOMES)
        self.representation = check_options(representation, "representation", owner, NGRAM_KINDS)
        self.representation_options = dict(representation_options or {})
        self.name = name or f"crossfit_{self.doubly_robust}_lr_{self.representation}"
        self.estimator = LABELS[self.doubly_robust]
        method_name(self)
        check_representation_options(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(C={self.C!r}, n_folds={self.n_folds}, name={self.name!r})"

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters (they enter the cell's configuration hash)."""
        return {
            "doubly_robust": self.doubly_robust,
            "C": self.C,
            "n_folds": self.n_folds,
            "seed": self.seed,
            "clip": self.clip,
            "level": self.level,
            "outcome": self.outcome,
            "representation": self.representation,
            "representation_options": dict(self.representation_options),
            "name": self.name,
        }

    def outcome_kind(self, y: Any) -> str:
        """``binary`` or ``continuous``: ``outcome`` unless ``auto``, then binary iff every Y is 0 or 1."""
        if self.outcome != "auto":
            return self.outcome
        y = as_1d_float(y, "y")
        return "binary" if bool(((y == 0.0) | (y == 1.0)).all()) else "continuous"

    def crossfit_estimate(self, X: Any, t: Any, y: Any) -> Estimate:
        """The full :class:`~textcause.estimators.Estimate` of :func:`textcause.estimators.crossfit`
        (``details``: ``se``, ``n_clipped``, ``crossfit``, the out-of-fold ``predictions``).

        Raises:
            ValueError: inconsistent inputs, a binary ``outcome`` with other values, too few units
                of an arm for ``n_folds``, or extreme weights without ``clip``.
        """
        from sklearn.linear_model import LogisticRegression, Ridge

        kind = self.outcome_kind(y)
        logistic = LogisticRegression(C=self.C, solver="lbfgs", max_iter=MAX_ITER)
        outcome_model = logistic if kind == "binary" else Ridge(alpha=1.0 / self.C)
        kwargs: dict[str, Any] = {"clip": self.clip, "level": self.level}
        return crossfit(
            X,
            t,
            y,
            logistic,
            outcome_model,
            estimator=self.doubly_robust,
            n_folds=self.n_folds,
            seed=self.seed,
            outcome=kind,
            **kwargs,
        )

    def estimate(self, X: Any, t: Any, y: Any) -> EffectResult:
        """ATE = E[Y(1)] - E[Y(0)] with its influence-function interval at ``level``."""
        est = self.crossfit_estimate(X, t, y)
        return EffectResult(float(est.ate), est.ci_low, est.ci_high)


class CrossFitAIPW(CrossFitEffect):
    """Cross-fitted AIPW (rows ``dml_aipw``, name ``crossfit_aipw_lr_bigram_binary``); keyword
    arguments as :class:`CrossFitEffect`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("aipw", **kwargs)


class CrossFitTMLE(CrossFitEffect):
    """Cross-fitted TMLE (rows ``dml_tmle``, name ``crossfit_tmle_lr_bigram_binary``); keyword
    arguments as :class:`CrossFitEffect`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("tmle", **kwargs)

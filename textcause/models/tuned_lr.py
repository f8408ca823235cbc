"""A logistic-regression propensity model tuned as a careful reviewer tunes it, solved by scikit-learn.

:class:`TunedLogisticRegression` fits, in one training epoch, a scikit-learn
:class:`~sklearn.linear_model.LogisticRegression` for every point of a search over the penalty
(``l1`` and ``l2`` with liblinear over ``Cs``; ``elasticnet`` with saga over ``l1_ratios`` and
``Cs`` up to ``elasticnet_max_C``) on max-abs-scaled features, and keeps the one with the lowest
validation log-loss. L2 is solved by liblinear's primal trust-region Newton solver by default
(``l2_solver="dual"``: its dual coordinate descent, which stopped unconverged at its 1,000-iteration
cap in 130 of the 207 n-gram L2 fits of the first 26 blog cells, at about 120 s each, where the
primal solver converges in 7-10 Newton steps). With ``path_patience`` set, each penalty's path (from the
smallest C up) stops after that many strengths in a row that do not lower its own best validation
loss; the skipped candidates are counted in ``chosen["skipped"]``. The liblinear candidates are fitted by
:func:`~textcause.models.exact_lr.fit_liblinear` (scikit-learn's own liblinear call, the same
coefficients to the bit, handed the scaled matrix without validation copies). The chosen weights (scale folded back in) live in the module's ``net``, a
plain :class:`~textcause.models.components.LogisticRegression`, so the checkpoint holds tensors
only; what was chosen is returned by :meth:`TunedLogisticRegression.chosen_hyperparameters`, which
evaluation writes into every result row's ``tuned`` column. The search sees the training and
validation users only; the test split is never touched.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from textcause.models.components.linear import SparseBatch
from textcause.models.exact_lr import as_scipy, fit_liblinear
from textcause.models.nets import as_net, save_net_config
from textcause.models.propensity import Batch, PropensityModel, PropensityModule, world_size
from textcause.validation import check_options, check_real

__all__ = [
    "DEFAULT_CS",
    "L2_SOLVERS",
    "SCALES",
    "TunedLogisticRegression",
    "fit_path",
    "maxabs_scale",
]

_PENALTIES = ("l1", "l2", "elasticnet")
#: The default strengths: C = 1 / lambda from 0.01 to 100, half a decade apart.
DEFAULT_CS = tuple(float(c) for c in np.logspace(-2, 2, 9))
SCALES = ("maxabs", "none")
L2_SOLVERS = ("primal", "dual")
_OWNER = "TunedLogisticRegression"


def _as_scipy(x: Any) -> Any:
    """A batch's features as a SciPy CSR matrix (sparse) or a float64 numpy array (dense)."""
    if isinstance(x, (torch.Tensor, SparseBatch)):
        return as_scipy(x)
    raise ValueError(f"{_OWNER} needs n-gram or topic features (a tensor per batch). Got {type(x).__name__} instead.")


def _stack(parts: Sequence[Any]) -> Any:
    if len(parts) == 1:
        return parts[0]
    return sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.concatenate(parts)


def _log_loss(t: np.ndarray, logits: np.ndarray) -> float:
    """The mean binary cross-entropy of logits (the models' ``val_loss``), stable for large logits."""
    t = np.asarray(t, dtype=np.float64)
    return float(np.mean(np.logaddexp(0.0, logits) - t * logits))


def _check_patience(value: Any, owner: str) -> Optional[int]:
    """``value`` if it is None or an int >= 1; otherwise one sentence naming ``owner``."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(
            f"The 'path_patience' parameter of {owner} must be an int >= 1 or None. Got {value!r} instead."
        )
    return value


def _paths(
    penalties: Sequence[str], cs: Sequence[float], l1_ratios: Sequence[float], en_max_c: float
) -> list[list[tuple[str, float, float]]]:
    """The candidates' paths in the order they are fitted: one per penalty (one per ``l1_ratio`` for
    the elastic net), each a list of ``(penalty, l1_ratio, C)`` from the smallest C up."""
    out = []
    for penalty in penalties:
        if penalty == "elasticnet":
            out += [[(penalty, float(r), float(c)) for c in sorted(cs) if c <= en_max_c] for r in l1_ratios]
        else:
            out.append([(penalty, 1.0 if penalty == "l1" else 0.0, float(c)) for c in sorted(cs)])
    return [path for path in out if path]


def _estimator(penalty: str, l1_ratio: float, c: float, seed: int, l2_solver: str = "primal") -> Any:
    """The scikit-learn estimator of a candidate (liblinear's are fitted by :func:`_fit_one` directly)."""
    from sklearn.linear_model import LogisticRegression

    if penalty == "elasticnet":
        return LogisticRegression(
            C=c, l1_ratio=l1_ratio, solver="saga", tol=1e-3, max_iter=300, warm_start=True, random_state=seed
        )
    dual = penalty == "l2" and l2_solver == "dual"
    return LogisticRegression(C=c, l1_ratio=l1_ratio, solver="liblinear", dual=dual, max_iter=1000, random_state=seed)


def _fit_one(
    penalty: str,
    l1_ratio: float,
    c: float,
    seed: int,
    x: Any,
    t: np.ndarray,
    warm: dict[float, Any],
    l2_solver: str = "primal",
) -> tuple[np.ndarray, float, int]:
    """``(coef, intercept, iterations)`` of :func:`_estimator`'s fit on ``(x, t)``, to the bit.

    L1 and L2 go to :func:`~textcause.models.exact_lr.fit_liblinear` (liblinear reads ``x``'s
    arrays uncopied; L2 by the primal or dual solver, ``l2_solver``); the elastic net fits its saga estimator, warm-started from ``warm``'s previous
    C of the same ``l1_ratio`` (``warm`` is updated).
    """
    if penalty != "elasticnet":
        dual = penalty == "l2" and l2_solver == "dual"
        return fit_liblinear(x, t, c, penalty=penalty, dual=dual, seed=seed, max_iter=1000)
    model = warm.get(l1_ratio)
    if model is None:  # the path: start from the previous C's solution
        model = _estimator(penalty, l1_ratio, c, seed)
    else:
        model.set_params(C=c)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at weak penalties: such fits are scored as they are
        model.fit(x, t)
    warm[l1_ratio] = model
    coef = np.asarray(model.coef_, dtype=np.float64).ravel().copy()
    return coef, float(np.asarray(model.intercept_).ravel()[0]), int(np.max(model.n_iter_))


def fit_path(
    x_train: Any,
    t_train: np.ndarray,
    x_val: Any,
    t_val: np.ndarray,
    *,
    penalties: Sequence[str] = _PENALTIES,
    cs: Sequence[float] = DEFAULT_CS,
    l1_ratios: Sequence[float] = (0.5,),
    elasticnet_max_c: float = 1.0,
    seed: int = 0,
    l2_solver: str = "primal",
    path_patience: Optional[int] = None,
) -> tuple[np.ndarray, float, dict[str, Any]]:
    """Fit the candidates on the training rows and keep the lowest validation log-loss.

    ``x_train`` / ``x_val`` are already scaled. Ties go to the candidate fitted first (the earlier
    kind of ``penalties``, then the smaller C). With ``path_patience`` = k, a path stops after k
    strengths in a row that do not lower its own best validation loss (None: every candidate).

    Returns:
        ``(coef, intercept, chosen)``: the chosen model's weights and ``{"penalty", "C", "l1_ratio",
        "val_loss", "candidates": [[penalty, l1_ratio, C, val_loss, iterations], ...], "skipped",
        "seconds"}`` (``skipped``: the candidates that ``path_patience`` left unfitted).

    Raises:
        ValueError: the training rows hold one class only; an unknown ``l2_solver``; a
            ``path_patience`` that is not a positive int.
    """
    check_options(l2_solver, "l2_solver", "fit_path", L2_SOLVERS)
    _check_patience(path_patience, "fit_path")
    t_train = np.asarray(t_train).astype(np.int64)
    if np.unique(t_train).size < 2:
        raise ValueError(f"{_OWNER} needs treated and untreated users in its training split; it has one class only.")
    started = time.perf_counter()
    best: Optional[tuple[float, np.ndarray, float, tuple[str, float, float]]] = None
    rows = []
    warm: dict[float, Any] = {}
    skipped = 0
    for path in _paths(penalties, cs, l1_ratios, elasticnet_max_c):
        path_best, since = math.inf, 0
        for i, (penalty, l1_ratio, c) in enumerate(path):
            if path_patience is not None and since >= path_patience:
                skipped += len(path) - i
                break
            coef, intercept, iterations = _fit_one(penalty, l1_ratio, c, seed, x_train, t_train, warm, l2_solver)
            logits = np.asarray(x_val @ coef).ravel() + intercept
            loss = _log_loss(t_val, logits)
            rows.append([penalty, l1_ratio, c, loss, iterations])
            if math.isfinite(loss) and loss < path_best:
                path_best, since = loss, 0
            else:
                since += 1
            if math.isfinite(loss) and (best is None or loss < best[0]):
                best = (loss, coef, intercept, (penalty, l1_ratio, c))
    if best is None:
        raise ValueError(f"No candidate of {_OWNER}'s search gave a finite validation log-loss.")
    loss, coef, intercept, (penalty, l1_ratio, c) = best
    chosen = {
        "penalty": penalty,
        "C": c,
        "l1_ratio": l1_ratio,
        "val_loss": loss,
        "candidates": rows,
        "skipped": skipped,
        "seconds": time.perf_counter() - started,
    }
    return coef, intercept, chosen


def maxabs_scale(x_train: Any) -> np.ndarray:
    """Each column's largest absolute value on the training rows (1 for an all-zero column)."""
    from sklearn.preprocessing import MaxAbsScaler

    scale = np.asarray(MaxAbsScaler().fit(x_train).scale_, dtype=np.float64)
    scale[scale == 0] = 1.0
    return scale


def _scaled(x: Any, scale: np.ndarray) -> Any:
    """Sparse ``x`` with each column times ``1 / scale`` (as ``MaxAbsScaler.transform``; the result shares ``x``'s
    index arrays), dense ``x`` divided by it."""
    if not sp.issparse(x):
        return x / scale
    csr = x.tocsr()
    values = csr.data * (1.0 / scale)[csr.indices]
    return sp.csr_matrix((values, csr.indices, csr.indptr), shape=csr.shape, copy=False)


class TunedLogisticRegression(PropensityModule):
    """Logistic regression on n-gram / topic features, penalty kind and strength chosen on validation.

    See the module docstring for the search. Train it for one epoch with a batch size that holds the
    training split or more batches (they are gathered); the fit happens at the epoch's last training
    batch, reading the validation split from the data module's ``val_dataloader()``.

    Args:
        net: a :class:`~textcause.models.components.LogisticRegression` (its ``input_dim`` is filled
            by the CLI); the chosen weights are copied into it.
        penalties: the penalty kinds searched, any of ``l1``, ``l2``, ``elasticnet``.
        Cs: the strengths searched (scikit-learn's C = 1 / lambda; None: 0.01 to 100, 9 values).
        l1_ratios: elastic-net mixing values searched (each in (0, 1)).
        elasticnet_max_C: the elastic net's path stops at this C (see the module docstring).
        l2_solver: ``primal`` (liblinear's trust-region Newton solver, converged where the dual is
            not) or ``dual`` (its dual coordinate descent); both minimise the same objective.
        path_patience: stop a penalty's path after this many strengths in a row without a lower
            validation loss (None: fit every candidate). On the 246 stored Twitter and blog cells,
            3 chose the same candidate in 245 and skipped 37-40% of the L2 fits.
        feature_scaling: ``maxabs`` (divide each column by its largest training value, folded back into the
            weights) or ``none``.

    Raises:
        ValueError: an unknown penalty, scale or L2 solver, an empty or non-positive C list, an l1_ratio
            outside (0, 1), a path_patience that is not a positive int.
    """

    def __init__(
        self,
        net: nn.Module,
        penalties: Sequence[str] = _PENALTIES,
        Cs: Optional[Sequence[float]] = None,
        l1_ratios: Sequence[float] = (0.5,),
        elasticnet_max_C: float = 1.0,
        feature_scaling: str = "maxabs",
        l2_solver: str = "primal",
        path_patience: Optional[int] = None,
    ) -> None:
        super().__init__()
        self.net = as_net(net, _OWNER)
        if isinstance(penalties, str) or not penalties:
            raise ValueError(
                f"The 'penalties' parameter of {_OWNER} must be a non-empty list of {list(_PENALTIES)}. "
                f"Got {penalties!r} instead."
            )
        self.penalties = tuple(check_options(p, "penalties", _OWNER, _PENALTIES) for p in penalties)
        cs = DEFAULT_CS if Cs is None else tuple(Cs)
        if not cs:
            raise ValueError(f"The 'Cs' parameter of {_OWNER} must be a non-empty list of floats > 0. Got [] instead.")
        self.cs = tuple(check_real(c, "Cs", _OWNER, low=0.0, low_open=True) for c in cs)
        self.l1_ratios = tuple(
            check_real(r, "l1_ratios", _OWNER, low=0.0, high=1.0, low_open=True, high_open=True) for r in l1_ratios
        )
        if "elasticnet" in self.penalties and not self.l1_ratios:
            raise ValueError(f"The 'l1_ratios' parameter of {_OWNER} must name at least one value for 'elasticnet'.")
        self.elasticnet_max_c = check_real(elasticnet_max_C, "elasticnet_max_C", _OWNER, low=0.0, low_open=True)
        self.feature_scaling = check_options(feature_scaling, "feature_scaling", _OWNER, SCALES)
        self.l2_solver = check_options(l2_solver, "l2_solver", _OWNER, L2_SOLVERS)
        self.path_patience = _check_patience(path_patience, _OWNER)
        self.automatic_optimization = False  # nothing for Lightning to optimise: the fit is scikit-learn's
        self._chosen: dict[str, Any] = {}
        self._parts: list[tuple[np.ndarray, Any, np.ndarray]] = []
        self.save_hyperparameters(ignore=["net"])
        save_net_config(self, _OWNER)

    # ------------------------------------------------------------------ the fit
    def configure_optimizers(self) -> None:
        return None

    def on_train_epoch_start(self) -> None:
        self._parts = []

    def training_step(self, batch: Batch, batch_idx: int) -> None:
        """Gather the epoch's training rows; at its last batch, fit the search and stop training."""
        if world_size(self) > 1:
            raise ValueError(f"{_OWNER} fits in one process: train it with trainer.devices=1.")
        self._parts.append((batch["index"].cpu().numpy(), _as_scipy(batch["x"]), batch["t"].cpu().numpy()))
        if batch_idx + 1 < self.trainer.num_training_batches:
            return
        x_train, t_train = self._gather(self._parts)
        x_val, t_val = self._gather(
            [
                (b["index"].cpu().numpy(), _as_scipy(b["x"]), b["t"].cpu().numpy())
                for b in self.trainer.datamodule.val_dataloader()
            ]
        )
        self._parts = []
        coef, intercept, chosen = self._fit(x_train, t_train, x_val, t_val, seed=int(torch.initial_seed()) % 2**31)
        self._set_weights(coef, intercept)
        self._chosen = chosen
        self.optimizers().step()  # the fit is the run's one step: no parameter, nothing updated
        for name, value in (("chosen_C", chosen["C"]), ("chosen_val_loss", chosen["val_loss"])):
            self.log(name, float(value), on_step=False, on_epoch=True, batch_size=1)
        self.trainer.should_stop = True

    @staticmethod
    def _gather(parts: Sequence[tuple[np.ndarray, Any, np.ndarray]]) -> tuple[Any, np.ndarray]:
        """The rows of ``parts`` in unit-index order (the fit does not depend on the batches' shuffle)."""
        if not parts:
            raise ValueError(f"{_OWNER} got no rows to fit on: the split is empty.")
        index = np.concatenate([p[0] for p in parts])
        order = np.argsort(index, kind="stable")
        return _stack([p[1] for p in parts])[order], np.concatenate([p[2] for p in parts])[order]

    def _fit(self, x_train: Any, t_train: np.ndarray, x_val: Any, t_val: np.ndarray, *, seed: int):
        scale = maxabs_scale(x_train) if self.feature_scaling == "maxabs" else np.ones(x_train.shape[1])
        coef, intercept, chosen = fit_path(
            _scaled(x_train, scale),
            t_train,
            _scaled(x_val, scale),
            t_val,
            penalties=self.penalties,
            cs=self.cs,
            l1_ratios=self.l1_ratios,
            elasticnet_max_c=self.elasticnet_max_c,
            seed=seed,
            l2_solver=self.l2_solver,
            path_patience=self.path_patience,
        )
        return coef / scale, intercept, chosen

    def _set_weights(self, coef: np.ndarray, intercept: float) -> None:
        linear = self.net.linear
        with torch.no_grad():
            linear.weight.copy_(torch.as_tensor(coef, dtype=linear.weight.dtype).view_as(linear.weight))
            if linear.bias is not None:
                linear.bias.fill_(intercept)
            elif intercept != 0.0:
                raise ValueError(f"{_OWNER} fits an intercept: its net must have bias=True.")

    # ------------------------------------------------------------------ prediction
    def forward(self, x: Any) -> torch.Tensor:
        """Logits of P(T=1 | x), shape (B,)."""
        return self.net(x)

    def propensity_and_loss(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        return PropensityModel._propensity_and_loss(self.net, batch)

    def chosen_hyperparameters(self) -> dict[str, Any]:
        """What the search chose: ``{"penalty", "C", "l1_ratio"}`` (``{}`` before a fit)."""
        c = self._chosen
        if not c:
            return {}
        out = {"penalty": c["penalty"], "C": c["C"]}
        if c["penalty"] == "elasticnet":
            out["l1_ratio"] = c["l1_ratio"]
        return out

    # ------------------------------------------------------------------ refitting intervals
    refittable = True

    def refit(
        self,
        train: Batch,
        val: Batch,
        predict: Batch,
        *,
        max_steps: int = 1,
        patience: Optional[int] = None,
        seed: int = 0,
    ) -> torch.Tensor:
        """Refit the chosen penalty and C on ``train`` and return its propensities on ``predict``.

        The choice made once per cell is kept (a refitting interval refits the model as chosen);
        ``val``, ``max_steps`` and ``patience`` are not used. This model is left unchanged.

        Raises:
            ValueError: the model was never fitted.
        """
        if not self._chosen:
            raise ValueError(f"This {_OWNER} has not been fitted: there is no chosen penalty to refit.")
        c = self._chosen
        x = _as_scipy(train["x"])
        scale = maxabs_scale(x) if self.feature_scaling == "maxabs" else np.ones(x.shape[1])
        t = train["t"].detach().cpu().numpy().astype(np.int64)
        coef, intercept, _ = _fit_one(
            c["penalty"], c["l1_ratio"], c["C"], seed, _scaled(x, scale), t, {}, self.l2_solver
        )
        logits = np.asarray(_as_scipy(predict["x"]) @ (coef / scale)).ravel() + intercept
        p = torch.sigmoid(torch.as_tensor(logits, dtype=torch.float32))
        return p.clamp(1e-6, 1.0 - 1e-6)

    # ------------------------------------------------------------------ the checkpoint
    def get_extra_state(self) -> dict[str, Any]:
        return dict(self._chosen)

    def set_extra_state(self, state: Any) -> None:
        if state and not (isinstance(state, dict) and {"penalty", "C", "l1_ratio"} <= set(state)):
            raise ValueError(f"The checkpoint's {_OWNER} state is not a chosen penalty: refit it with train.py fit.")
        self._chosen = dict(state or {})

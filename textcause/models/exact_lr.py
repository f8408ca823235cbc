"""The exact solution of :class:`~textcause.models.PropensityModel`'s L2 logistic regression, by liblinear.

``PropensityModel(optimizer="lbfgs", weight_decay=lam)`` on a
:class:`~textcause.models.components.LogisticRegression` minimises, over the training rows,
``mean log-loss + lam / 2 * (||w||^2 + b^2)`` (the intercept penalised like every weight). That is
liblinear's L2 logistic regression ``1/2 ||(w, b)||^2 + C * sum log-loss`` with
``C = 1 / (lam * n)`` and the intercept as the weight of a constant feature 1
(``intercept_scaling=1``): scikit-learn's fastest solver of exactly this objective on the n-gram
matrices (its dual coordinate descent when users are fewer than features, the primal trust-region
Newton otherwise), in float64, to liblinear's tolerance. A full-batch fit and
:meth:`~textcause.models.PropensityModel.refit` use it where it applies (:func:`solve_exactly`) and
copy the weights into the network's ``nn.Linear``: the checkpoint holds tensors as before, and
prediction is the same linear layer.
"""

from __future__ import annotations

import warnings
from typing import Any, Optional

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from textcause.models.components.linear import LogisticRegression, SparseBatch

__all__ = [
    "MAX_ITER",
    "as_scipy",
    "exact_fit",
    "solve_exactly",
]

#: liblinear's iteration limit; a fit that reaches it falls back to L-BFGS.
MAX_ITER = 1000


def as_scipy(x: Any) -> Any:
    """A batch's features as a SciPy CSR matrix (sparse tensor or :class:`SparseBatch`) or a float64 array.

    Raises:
        ValueError: ``x`` is not a tensor of features.
    """
    if isinstance(x, SparseBatch):
        return x.scipy()
    if isinstance(x, torch.Tensor) and x.layout in (torch.sparse_coo, torch.sparse_csr):
        csr = x if x.layout == torch.sparse_csr else x.coalesce().to_sparse_csr()
        return sp.csr_matrix(
            (csr.values().detach().double().numpy(), csr.col_indices().numpy(), csr.crow_indices().numpy()),
            shape=tuple(csr.shape),
        )
    if isinstance(x, torch.Tensor):
        return x.detach().double().numpy()
    raise ValueError(f"An exact logistic-regression fit needs a tensor of features. Got {type(x).__name__} instead.")


def exact_fit(
    x: Any, t: np.ndarray, weight_decay: float, *, bias: bool, seed: int = 0
) -> Optional[tuple[np.ndarray, float]]:
    """``(w, b)`` minimising ``mean log-loss + weight_decay / 2 * (||w||^2 + b^2)`` on ``(x, t)``, or None.

    None when liblinear does not apply or did not finish: one class only, ``weight_decay <= 0`` (no
    finite C), or the iteration limit reached; the caller then runs its L-BFGS.

    Args:
        x: features (SciPy sparse or a dense array), one row a unit (a row drawn twice counts twice).
        t: 0/1 treatments of the rows.
        weight_decay: the L2 strength (> 0 for an exact fit).
        bias: fit a (penalised) intercept.
        seed: liblinear's coordinate order (its dual solver's random permutation).
    """
    from sklearn.linear_model import LogisticRegression as SkLogisticRegression

    t = np.asarray(t).astype(np.int64).ravel()
    n, d = x.shape
    if weight_decay <= 0 or n == 0 or t.min() == t.max():
        return None
    model = SkLogisticRegression(
        C=1.0 / (weight_decay * n),
        solver="liblinear",
        dual=n < d + int(bias),  # scikit-learn's advice: the dual when rows are fewer than columns
        fit_intercept=bias,
        intercept_scaling=1.0,
        max_iter=MAX_ITER,
        random_state=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: checked below
        model.fit(x, t)
    if int(np.max(model.n_iter_)) >= MAX_ITER:
        return None
    intercept = float(np.asarray(model.intercept_).ravel()[0]) if bias else 0.0
    return np.asarray(model.coef_, dtype=np.float64).ravel(), intercept


def solve_exactly(net: nn.Module, batch: dict[str, Any], weight_decay: float, *, seed: int = 0) -> bool:
    """Set ``net``'s weights to the exact L2 solution on ``batch`` if ``net`` is a plain linear model.

    Applies to :class:`~textcause.models.components.LogisticRegression` (not a subclass, not another
    network) with ``weight_decay > 0``; see :func:`exact_fit`. Returns whether the weights were set
    (False: ``net`` is left unchanged and the caller runs its own optimiser).
    """
    if type(net) is not LogisticRegression or weight_decay <= 0:
        return False
    linear = net.linear
    solution = exact_fit(
        as_scipy(batch["x"]), batch["t"].numpy(), weight_decay, bias=linear.bias is not None, seed=seed
    )
    if solution is None:
        return False
    coef, intercept = solution
    with torch.no_grad():
        linear.weight.copy_(torch.as_tensor(coef, dtype=linear.weight.dtype).view_as(linear.weight))
        if linear.bias is not None:
            linear.bias.fill_(intercept)
    return True

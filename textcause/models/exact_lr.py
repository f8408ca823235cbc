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

from textcause.models.components.linear import LogisticRegression, SparseBatch, is_sparse, sparse_batch

__all__ = [
    "MAX_ITER",
    "as_scipy",
    "exact_fit",
    "fit_liblinear",
    "solve_exactly",
]

#: liblinear's iteration limit; a fit that reaches it falls back to L-BFGS.
MAX_ITER = 1000
#: scikit-learn refuses a liblinear fit on features above this (liblinear does not return).
_LARGEST = 1e30


def as_scipy(x: Any) -> Any:
    """A batch's features as liblinear reads them: float64 SciPy CSR with int32 indices, or a float64 array.

    A sparse tensor's matrix is made once and kept on the batch (:meth:`SparseBatch.scipy_float64`):
    its index arrays are the batch's SciPy view's (:meth:`SparseBatch.scipy`, int32, which the
    forward's SciPy kernels use too), its values the batch's in float64 (a float64 batch's own);
    calling this again on the same batch returns the same matrix. A dense float64 tensor is returned
    as a view of its memory.

    Raises:
        ValueError: ``x`` is not a tensor of features.

    >>> import torch
    >>> m = as_scipy(torch.tensor([[0.0, 2.0], [1.0, 0.0]]).to_sparse_csr())
    >>> m.dtype, m.indices.dtype, m.toarray().tolist()
    (dtype('float64'), dtype('int32'), [[0.0, 2.0], [1.0, 0.0]])
    """
    if isinstance(x, SparseBatch):
        return x.scipy_float64()
    if isinstance(x, torch.Tensor) and is_sparse(x):
        return sparse_batch(x if x.device.type == "cpu" else x.detach().cpu()).scipy_float64()
    if isinstance(x, torch.Tensor):
        return np.ascontiguousarray(x.detach().cpu().numpy(), dtype=np.float64)
    raise ValueError(f"An exact logistic-regression fit needs a tensor of features. Got {type(x).__name__} instead.")


def _private_fit() -> Any:
    """scikit-learn's ``_fit_liblinear`` (what ``LogisticRegression.fit`` calls after validating), or None."""
    try:
        from sklearn.svm._base import _fit_liblinear
    except ImportError:  # another scikit-learn: the public estimator instead
        return None
    return _fit_liblinear


def _as_liblinear_reads(x: Any) -> bool:
    """Whether liblinear reads ``x``'s arrays as they are (scikit-learn would copy nothing)."""
    if sp.issparse(x):
        return (
            x.format == "csr"
            and x.dtype == np.float64
            and x.indices.dtype == np.int32
            and x.indptr.dtype == np.int32
            and x.data.flags.c_contiguous
        )
    return isinstance(x, np.ndarray) and x.ndim == 2 and x.dtype == np.float64 and x.flags.c_contiguous


def _check_values(x: Any) -> None:
    values = x.data if sp.issparse(x) else x
    if values.size == 0:
        return
    low, high = float(values.min()), float(values.max())
    if not (np.isfinite(low) and np.isfinite(high)):
        raise ValueError("The features of a logistic-regression fit contain NaN or infinity: rebuild them.")
    if high > _LARGEST:
        raise ValueError(
            f"The features of a liblinear fit must be at most {_LARGEST:g} (liblinear does not return above). "
            f"Got {high:g} instead: rescale them."
        )


def fit_liblinear(
    x: Any,
    t: np.ndarray,
    c: float,
    *,
    penalty: str = "l2",
    dual: bool,
    bias: bool = True,
    seed: int = 0,
    max_iter: int = MAX_ITER,
    tol: float = 1e-4,
) -> tuple[np.ndarray, float, int]:
    """``(coef, intercept, iterations)`` of scikit-learn's liblinear logistic regression, to the bit.

    The fit of ``LogisticRegression(C=c, l1_ratio=1 if penalty == "l1" else 0, solver="liblinear",
    dual=dual, fit_intercept=bias, intercept_scaling=1, max_iter=max_iter, tol=tol,
    random_state=seed).fit(x, t)``. That ``fit`` validates ``x`` (a pass for finite values, one for
    its largest, a copy unless it is float64 CSR with int32 indices or a C-ordered float64 array),
    then calls scikit-learn's ``_fit_liblinear``, which hands the arrays to liblinear as they are.
    Where ``x`` is already what liblinear reads (:func:`as_scipy` makes such matrices), this checks
    the values once itself and calls ``_fit_liblinear`` directly: liblinear gets ``x``'s own arrays.
    Any other ``x``, or a scikit-learn without that function, goes through the public estimator.
    Reaching ``max_iter`` is not an error (no ConvergenceWarning): compare ``iterations``.

    Args:
        x: features, one row a unit (SciPy sparse or a 2-D array).
        t: the 0/1 label of each row (both classes present).
        c: liblinear's C, the weight of the summed log-loss against ``1/2 ||w||^2`` (or ``||w||_1``).
        penalty: ``"l2"`` or ``"l1"``.
        dual: solve L2's dual (faster when rows are fewer than columns; L1 has no dual).
        bias: fit an intercept, penalised as the weight of a constant feature 1.
        seed: liblinear's random coordinate order.
        max_iter: liblinear's iteration limit.
        tol: liblinear's stopping tolerance (scikit-learn's default).

    Raises:
        ValueError: ``x`` holds NaN, infinity or a value above 1e30; ``t`` has one class or
            another length than ``x`` has rows.

    >>> import numpy as np
    >>> coef, intercept, iterations = fit_liblinear(np.eye(4), np.array([0, 1, 0, 1]), 10.0, dual=True)
    >>> bool(coef[1] > 0 > coef[0])
    True
    """
    from sklearn.exceptions import ConvergenceWarning

    t = np.asarray(t).ravel()
    if t.shape[0] != x.shape[0]:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: [{x.shape[0]}, {t.shape[0]}]")
    private = _private_fit()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if private is not None and _as_liblinear_reads(x):
            _check_values(x)
            coef, intercept, n_iter = private(
                x,
                t,
                C=c,
                fit_intercept=bias,
                intercept_scaling=1.0,
                class_weight=None,
                penalty=penalty,
                dual=dual,
                verbose=0,
                max_iter=max_iter,
                tol=tol,
                random_state=seed,
                sample_weight=None,
            )
        else:
            from sklearn.linear_model import LogisticRegression as SkLogisticRegression

            model = SkLogisticRegression(
                C=c,
                l1_ratio=1.0 if penalty == "l1" else 0.0,
                solver="liblinear",
                dual=dual,
                fit_intercept=bias,
                intercept_scaling=1.0,
                max_iter=max_iter,
                tol=tol,
                random_state=seed,
            )
            model.fit(x, t)
            coef, intercept, n_iter = model.coef_, model.intercept_, model.n_iter_
    intercept = float(np.asarray(intercept).ravel()[0]) if bias else 0.0
    return np.asarray(coef, dtype=np.float64).ravel(), intercept, int(np.max(n_iter))


def exact_fit(
    x: Any, t: np.ndarray, weight_decay: float, *, bias: bool, seed: int = 0
) -> Optional[tuple[np.ndarray, float]]:
    """``(w, b)`` minimising ``mean log-loss + weight_decay / 2 * (||w||^2 + b^2)`` on ``(x, t)``, or None.

    None when liblinear does not apply or did not finish: one class only, ``weight_decay <= 0`` (no
    finite C), or the iteration limit reached; the caller then runs its L-BFGS. The solve is
    :func:`fit_liblinear` (``x`` as :func:`as_scipy` makes it is handed to liblinear uncopied).

    Args:
        x: features (SciPy sparse or a dense array), one row a unit (a row drawn twice counts twice).
        t: 0/1 treatments of the rows.
        weight_decay: the L2 strength (> 0 for an exact fit).
        bias: fit a (penalised) intercept.
        seed: liblinear's coordinate order (its dual solver's random permutation).

    Raises:
        ValueError: ``x`` holds NaN, infinity or a value above 1e30.
    """
    t = np.asarray(t).astype(np.int64).ravel()
    n, d = x.shape
    if weight_decay <= 0 or n == 0 or t.min() == t.max():
        return None
    coef, intercept, iterations = fit_liblinear(
        x,
        t,
        1.0 / (weight_decay * n),
        dual=n < d + int(bias),  # scikit-learn's advice: the dual when rows are fewer than columns
        bias=bias,
        seed=seed,
    )
    if iterations >= MAX_ITER:
        return None
    return coef, intercept


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
        as_scipy(batch["x"]),
        batch["t"].detach().cpu().numpy(),
        weight_decay,
        bias=linear.bias is not None,
        seed=seed,
    )
    if solution is None:
        return False
    coef, intercept = solution
    with torch.no_grad():
        linear.weight.copy_(torch.as_tensor(coef, dtype=linear.weight.dtype).view_as(linear.weight))
        if linear.bias is not None:
            linear.bias.fill_(intercept)
    return True

"""Logistic regression on bag-of-n-gram or topic features: one linear layer -> a logit.

:class:`LogisticRegression` is one linear layer; :class:`JointLinear` adds per-arm outcome
regressions beside it (three heads). Both accept dense float tensors and torch sparse tensors (COO or
CSR) of shape (batch, input_dim); a sparse batch is never densified (:func:`sparse_matmul`).

The numbers do not depend on which kernel computes a product (``tests/models/test_sparse_linear.py``):
SciPy's single-threaded kernels are used (one intra-op thread, a batch's first gradient, a
one-output layer) only where :func:`scipy_agrees` found them equal to torch's to the bit on a probe
matrix, once a process; otherwise torch's CSR product, with the batch's transpose built once and
kept on the batch. :func:`use_column_major` lays a weight out as the sparse product wants it, so no
copy happens per step; the values are the same in either layout. Timings:
benchmarks/README.md, ``bench_sparse_grad.py`` and ``bench_sparse_mlp.py``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn
from torch.nn import functional as F

from textcause.validation import check_int

__all__ = [
    "JointLinear",
    "LogisticRegression",
    "SparseBatch",
    "is_sparse",
    "linear_forward",
    "scipy_agrees",
    "sparse_batch",
    "sparse_matmul",
    "use_column_major",
]

_SPARSE_LAYOUTS = (torch.sparse_coo, torch.sparse_csr)


def is_sparse(x: torch.Tensor) -> bool:
    """True when ``x`` is a torch sparse COO or CSR tensor."""
    return x.layout in _SPARSE_LAYOUTS


_CACHE = "_textcause_sparse_batch"


@dataclass
class SparseBatch:
    """What a sparse batch tensor keeps for the products it takes part in (cached on the tensor).

    Attributes:
        csr: the batch as a torch CSR tensor.
        transposed: its transpose as CSR, built for the torch gradient kernel (None: not built).
        view: a SciPy CSR view of a CPU batch, for SciPy's kernels (None: not made).
        view64: the view with float64 values, for scikit-learn's liblinear (None: not made).
        gradients: the forwards with a gradient it has been through.
    """

    csr: torch.Tensor
    transposed: Optional[torch.Tensor] = None
    view: Optional[sp.csr_matrix] = None
    view64: Optional[sp.csr_matrix] = None
    gradients: int = 0

    def scipy(self) -> sp.csr_matrix:
        """The batch as a SciPy CSR matrix sharing its values, with int32 indices (made once; int64 indices are
        copied to int32 where the shape allows, without scanning them)."""
        if self.view is None:
            csr = self.csr
            self.view = _csr_view(csr.values().detach().numpy(), csr)
        return self.view

    def scipy_float64(self) -> sp.csr_matrix:
        """The batch as a float64 SciPy CSR matrix, the input liblinear reads without a copy (made once).

        Its index arrays are :meth:`scipy`'s (the same memory); its values are the batch's in float64
        (:meth:`scipy` itself for a float64 batch).
        """
        if self.view64 is None:
            view = self.scipy()
            data = view.data.astype(np.float64, copy=False)
            self.view64 = view if data is view.data else _csr(data, view.indices, view.indptr, view.shape)
        return self.view64

    def transpose(self) -> torch.Tensor:
        """The batch's transpose as CSR (built once)."""
        if self.transposed is None:
            self.transposed = _transpose(self.csr, self.view)
        return self.transposed


_INT32_MAX = int(np.iinfo(np.int32).max)


def _csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, ...]) -> sp.csr_matrix:
    """A SciPy CSR matrix holding exactly these arrays (SciPy copies none that already has its dtype)."""
    return sp.csr_matrix((data, indices, indptr), shape=(int(shape[0]), int(shape[1])), copy=False)


def _csr_view(data: np.ndarray, csr: torch.Tensor) -> sp.csr_matrix:
    """A SciPy CSR matrix of the CPU CSR tensor ``csr`` with the values ``data``, its indices int32 where they fit.

    Column indices lie below the column count and row pointers at most at the entry count, so both
    bounds say whether int32 holds them; SciPy's own constructor scans int64 indices to decide.
    """
    indices, indptr = csr.col_indices().detach().numpy(), csr.crow_indices().detach().numpy()
    if max(int(csr.shape[0]), int(csr.shape[1]), int(indices.size)) <= _INT32_MAX:
        indices, indptr = indices.astype(np.int32, copy=False), indptr.astype(np.int32, copy=False)
    return _csr(data, indices, indptr, tuple(csr.shape))


def _as_csr(x: torch.Tensor) -> torch.Tensor:
    with warnings.catch_warnings():  # torch warns once that its CSR support is "beta"
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return x if x.layout == torch.sparse_csr else x.coalesce().to_sparse_csr()


def _transpose(csr: torch.Tensor, view: Optional[sp.csr_matrix] = None) -> torch.Tensor:
    """``csr``'s transpose as a torch CSR tensor (on CPU through SciPy, from ``view`` where the batch has one)."""
    if csr.device.type == "cpu":
        if view is None:
            view = _csr_view(csr.values().numpy(), csr)
        m = view.T.tocsr()
        return torch.sparse_csr_tensor(
            torch.from_numpy(m.indptr.astype(np.int64)),
            torch.from_numpy(m.indices.astype(np.int64)),
            torch.from_numpy(m.data),
            size=m.shape,
            check_invariants=False,
        )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return csr.to_sparse_coo().t().coalesce().to_sparse_csr()


def sparse_batch(x: torch.Tensor) -> SparseBatch:
    """The :class:`SparseBatch` of the sparse tensor ``x`` (its CSR form computed once and cached on ``x``)."""
    batch = getattr(x, _CACHE, None)
    if batch is None:
        csr = _as_csr(x)
        if csr is x:
            # an alias of a CSR batch (the same memory) that holds no reference to x: x.values() is an
            # autograd view whose base is x, a link the garbage collector cannot see, so a cache on x
            # holding it would keep every batch alive (x itself would be a cycle the collector frees
            # only when it runs); detach() shares the memory without the link
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
                csr = torch.sparse_csr_tensor(
                    x.crow_indices().detach(),
                    x.col_indices().detach(),
                    x.values().detach(),
                    size=x.shape,
                    check_invariants=False,
                )
        batch = SparseBatch(csr)
        setattr(x, _CACHE, batch)
    return batch


def _one_thread_cpu(t: torch.Tensor) -> bool:
    """Whether SciPy's single-threaded kernels may take the product: a float32 CPU batch, one torch intra-op thread."""
    return t.device.type == "cpu" and t.dtype == torch.float32 and torch.get_num_threads() == 1


#: Whether SciPy's kernel gives torch's bits, by (product, output width): measured once a process (:func:`scipy_agrees`).
_AGREES: dict[tuple[str, int], bool] = {}


def _probe_matrix() -> sp.csr_matrix:
    """A fixed sparse float32 matrix with rows of 8 to about 1,450 entries (8 columns are in every row)
    and values that are not small integers: sums whose bits depend on the order of the additions."""
    rng = np.random.default_rng(0)
    rows, cols = 256, 2048
    density = np.geomspace(5e-4, 0.7, rows)[:, None]
    dense = (rng.random((rows, cols)) < density) | (np.arange(cols) < 8)
    values = rng.random((rows, cols), dtype=np.float32) + np.float32(0.01)
    return sp.csr_matrix(np.where(dense, values, np.float32(0.0)))


def scipy_agrees(product: str, out: int) -> bool:
    """Whether SciPy's single-threaded kernel adds in the order of torch's CSR kernel on this machine.

    Measured once a process for each product and output width on :func:`_probe_matrix`, with one
    torch thread: ``"forward"`` is ``x @ w`` (CSR), ``"gradient"`` is ``x.T @ grad`` (``x.T`` as
    CSC against torch's product with the built transpose). Where they differ, SciPy's kernels are
    not used. The probe is one fixed matrix, not a proof: it stands for the kernels' order of
    addition, which on the machines measured did not depend on the data (on a 2-core AMD EPYC every
    product of a five-seed grid was torch's to the bit, before the probe existed; on an Intel Xeon,
    whose MKL sparse kernel adds in another order, the probe finds every product unequal).
    """
    key = (product, int(out))
    if key not in _AGREES:
        m = _probe_matrix()
        k = m.shape[1] if product == "forward" else m.shape[0]
        dense = torch.randn(k, key[1], generator=torch.Generator().manual_seed(0), dtype=torch.float32)
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:  # float32 products whatever the caller's autocast (torch's sparse kernels have no bf16)
            with torch.no_grad(), torch.autocast("cpu", enabled=False), warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
                csr = torch.sparse_csr_tensor(
                    torch.from_numpy(m.indptr.astype(np.int64)),
                    torch.from_numpy(m.indices.astype(np.int64)),
                    torch.from_numpy(m.data),
                    size=m.shape,
                    check_invariants=False,
                )
                if product == "forward":
                    ours, theirs = _scipy_product(m, dense), _product(csr, dense)
                else:
                    ours, theirs = _scipy_product(m.T, dense), _product(_transpose(csr), dense)
        finally:
            torch.set_num_threads(before)
        _AGREES[key] = bool(torch.equal(ours, theirs))
    return _AGREES[key]


def use_column_major(layer: nn.Linear) -> None:
    """Store ``layer.weight`` column-major (``weight.t()`` contiguous), the layout sparse batches want.

    The parameter stays the same object (its ``data`` is re-laid), so call this before an optimizer
    has state for it (its moment estimates keep the layout they were made in). Every value is
    unchanged. Not for optimizers that flatten gradients with ``view`` (``torch.optim.LBFGS``), which
    needs contiguous gradients.
    """
    weight = layer.weight
    if weight.dim() == 2 and not weight.t().is_contiguous():
        with torch.no_grad():
            weight.data = weight.data.t().contiguous().t()


def _product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for a CSR ``a`` and a dense (k, n) ``b``."""
    return a @ b.contiguous()


def _scipy_product(a: sp.spmatrix, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for a SciPy sparse ``a`` (CSR, or the CSC transpose of one) and a dense float32 (k, n) ``b``."""
    return torch.from_numpy(a @ np.ascontiguousarray(b.detach().numpy()))


def _forward(batch: SparseBatch, weight: torch.Tensor) -> torch.Tensor:
    """``x @ weight.T`` in float32 (autocast off: the sparse kernels have no bf16)."""
    w = weight.float().t()
    if w.shape[1] == 1 and _one_thread_cpu(batch.csr) and scipy_agrees("forward", 1):
        return _scipy_product(batch.scipy(), w)
    return _product(batch.csr, w)


class _SparseLinear(torch.autograd.Function):
    """``x @ weight.T`` for a sparse batch ``x`` (no gradient for ``x``: it is data)."""

    @staticmethod
    def forward(ctx, batch: SparseBatch, weight: torch.Tensor) -> torch.Tensor:
        # the gradient's kernel: SciPy's on a batch's first gradient or for one output, else the transpose
        ctx.batch = batch
        ctx.scipy = (
            _one_thread_cpu(batch.csr)
            and (weight.shape[0] == 1 or batch.transposed is None and batch.gradients == 0)
            and scipy_agrees("gradient", weight.shape[0])
        )
        if not ctx.scipy:
            batch.transpose()
        batch.gradients += 1
        with torch.autocast(device_type=batch.csr.device.type, enabled=False):
            return _forward(batch, weight)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[None, torch.Tensor]:
        batch = ctx.batch
        with torch.autocast(device_type=grad.device.type, enabled=False):
            if ctx.scipy and not grad.requires_grad:  # a graph of the gradient (create_graph) needs torch's product
                return None, _scipy_product(batch.scipy().T, grad.float()).t()
            return None, _product(batch.transpose(), grad.float()).t()


def sparse_matmul(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``x @ weight.T`` for a sparse (batch, in) ``x`` and a dense (out, in) ``weight``, with the weight's gradient."""
    batch = sparse_batch(x)
    if not (weight.requires_grad and torch.is_grad_enabled()):
        with torch.autocast(device_type=batch.csr.device.type, enabled=False):
            return _forward(batch, weight)
    return _SparseLinear.apply(batch, weight)


def linear_forward(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """Apply ``layer`` to a dense or sparse 2-D batch, returning a dense (batch, out) tensor.

    Args:
        layer: the linear layer.
        x: (batch, in_features) dense or sparse float tensor.

    Returns:
        ``x @ layer.weight.T + layer.bias`` as a dense tensor.

    Raises:
        ValueError: ``x`` is not 2-D or its width differs from ``layer.in_features``.
    """
    if x.dim() != 2 or x.shape[1] != layer.in_features:
        raise ValueError(
            f"Expected features of shape (batch, {layer.in_features}). Got a tensor with shape "
            f"{tuple(x.shape)} instead."
        )
    if is_sparse(x):
        out = sparse_matmul(x, layer.weight)
        return out + layer.bias if layer.bias is not None else out
    if layer.weight.is_contiguous():
        return layer(x)
    # a column-major weight (use_column_major) as a row-major copy, so that a dense batch's
    # product, and its numbers, are the same in either layout
    return F.linear(x, layer.weight.contiguous(), layer.bias)


class _LinearHeads(nn.Module):
    """``heads`` linear outputs of the features (``input_dim`` checked in the subclass's name)."""

    heads = 1

    def __init__(self, input_dim: Optional[int] = None, bias: bool = True) -> None:
        super().__init__()
        self.input_dim = check_int(input_dim, "input_dim", type(self).__name__, low=1)
        self.bias = bool(bias)
        self.linear = nn.Linear(self.input_dim, self.heads, bias=self.bias)


class LogisticRegression(_LinearHeads):
    """A linear propensity model: ``logit P(T=1 | x) = w . x + b``.

    Args:
        input_dim: the number of features; the CLI fills it from the data module's feature width.
        bias: learn an intercept ``b`` (False: ``b = 0``).
    """

    def __init__(self, input_dim: Optional[int] = None, bias: bool = True) -> None:
        super().__init__(input_dim, bias)

    def input_weights(self) -> torch.Tensor:
        """The weights ``w`` (not the intercept): what ``PropensityModel(l1=...)`` penalises."""
        return self.linear.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return the logits, shape (batch,), for a dense or sparse (batch, input_dim) tensor."""
        return linear_forward(self.linear, x).squeeze(-1)


class JointLinear(_LinearHeads):
    """Three linear heads on the same features: the propensity and one outcome regression per arm.

    ``heads = x @ W.T + b`` with ``W`` of shape (3, input_dim): column 0 is the logit of
    P(T=1 | x) (a logistic regression, the same model as :class:`LogisticRegression`), columns 1 and 2
    are the outcome regressions for T=0 and T=1 (logits of P(Y=1 | T, x) for a binary outcome, means
    of Y for a continuous one), fitted by :class:`~textcause.models.joint.JointModel` on the units of
    each arm only: a T-learner. The heads share no parameters, so with full-batch L-BFGS each solves
    its own L2-regularised regression. Sparse n-gram batches stay sparse (:func:`linear_forward`).

    Args:
        input_dim: the number of features; the CLI fills it from the data module's feature width.
        bias: learn an intercept per head (False: no intercepts).
    """

    heads = 3

    def __init__(self, input_dim: Optional[int] = None, bias: bool = True) -> None:
        super().__init__(input_dim, bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return the heads, shape (batch, 3), for a dense or sparse (batch, input_dim) tensor."""
        return linear_forward(self.linear, x)

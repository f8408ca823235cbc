"""Feeding sparse n-gram matrices to torch models, one batch of users at a time.

The n x vocabulary matrices stay in SciPy CSR form; a batch of rows becomes a float32 torch sparse
tensor, which ``nn.Linear`` and ``torch.sparse.mm`` accept (with gradients for the weights).
A ``DataLoader`` over user indices uses :func:`collate_sparse_rows` as its ``collate_fn``::

    loader = DataLoader(range(n_users), batch_size=64, shuffle=True,
                        collate_fn=functools.partial(collate_sparse_rows, rep.matrix))

Dense inputs (the LDA topic proportions) give dense float32 tensors, so models need not care.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from textcause.validation import check_options

__all__ = [
    "collate_sparse_rows",
    "to_torch_sparse",
]

_LAYOUTS = ("coo", "csr")


def to_torch_sparse(matrix: Any, layout: str = "coo") -> torch.Tensor:
    """Convert a SciPy sparse matrix to a float32 torch sparse tensor of the same shape.

    Args:
        matrix: any SciPy sparse matrix or array (converted to CSR first).
        layout: ``"coo"`` (coalesced; the most widely supported) or ``"csr"``.

    Returns:
        A ``torch.sparse_coo`` or ``torch.sparse_csr`` tensor with int64 indices.
    """
    check_options(layout, "layout", "to_torch_sparse", _LAYOUTS)
    if not sp.issparse(matrix):
        raise ValueError(f"Expected a SciPy sparse matrix. Got {type(matrix).__name__} instead.")
    # scipy-stubs narrow issparse() to SparseABC, which no overload of csr_matrix accepts
    csr = sp.csr_matrix(matrix, dtype=np.float32)  # type: ignore[call-overload]
    if not csr.has_canonical_format:  # sorted, unique column indices per row, without mutating the input
        csr = csr.copy()
        csr.sum_duplicates()
    shape = tuple(int(s) for s in csr.shape)
    values = torch.from_numpy(np.ascontiguousarray(csr.data, dtype=np.float32))
    if layout == "csr":
        with warnings.catch_warnings():  # torch warns once that its CSR support is "beta"
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            return torch.sparse_csr_tensor(
                torch.from_numpy(csr.indptr.astype(np.int64)),
                torch.from_numpy(csr.indices.astype(np.int64)),
                values,
                size=shape,
                check_invariants=False,
            )
    rows = np.repeat(np.arange(shape[0], dtype=np.int64), np.diff(csr.indptr))
    indices = torch.from_numpy(np.vstack([rows, csr.indices.astype(np.int64)]))
    return torch.sparse_coo_tensor(indices, values, size=shape, is_coalesced=True, check_invariants=False)


def collate_sparse_rows(
    matrix: Any, idx: Sequence[int] | np.ndarray | torch.Tensor, layout: str = "coo"
) -> torch.Tensor:
    """The rows ``idx`` of ``matrix`` as one float32 batch tensor (sparse if ``matrix`` is).

    Args:
        matrix: a SciPy sparse matrix (CSR is fastest) or a dense 2-D array.
        idx: the row indices of the batch, in batch order (a list from a ``DataLoader`` works).
        layout: the sparse layout, ``"coo"`` or ``"csr"``.

    Returns:
        A ``len(idx) x n_features`` tensor: sparse for sparse input, dense otherwise.
    """
    rows = np.asarray(idx.cpu() if isinstance(idx, torch.Tensor) else idx, dtype=np.int64).reshape(-1)
    n = matrix.shape[0]
    if rows.size and (rows.min() < 0 or rows.max() >= n):
        raise ValueError(f"Row indices must lie in [0, {n - 1}]. Got values from {rows.min()} to {rows.max()}.")
    if sp.issparse(matrix):
        rows_of = sp.csr_matrix(matrix)  # type: ignore[call-overload]  # issparse() narrows to SparseABC (stubs)
        return to_torch_sparse(rows_of[rows], layout=layout)
    return torch.from_numpy(np.ascontiguousarray(np.asarray(matrix)[rows], dtype=np.float32))

"""Logistic regression on bag-of-n-gram or topic features: one linear layer -> a logit.

Accepts dense float tensors and torch sparse tensors (COO or CSR) of shape (batch, input_dim);
a sparse batch is multiplied by the dense weight with ``torch.sparse.mm`` and never densified.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from textcause.validation import check_int

_SPARSE_LAYOUTS = (torch.sparse_coo, torch.sparse_csr)


def is_sparse(x: torch.Tensor) -> bool:
    """True when ``x`` is a torch sparse COO or CSR tensor."""
    return x.layout in _SPARSE_LAYOUTS


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
        out = torch.sparse.mm(x, layer.weight.t())
        return out + layer.bias if layer.bias is not None else out
    return layer(x)


class LogisticRegression(nn.Module):
    """A linear propensity model: ``logit P(T=1 | x) = w . x + b``.

    Args:
        input_dim: the number of features; the CLI fills it from the data module's feature width.
        bias: learn an intercept ``b`` (False: ``b = 0``).
    """

    def __init__(self, input_dim: Optional[int] = None, bias: bool = True) -> None:
        super().__init__()
        self.input_dim = check_int(input_dim, "input_dim", "LogisticRegression", low=1)
        self.bias = bool(bias)
        self.linear = nn.Linear(self.input_dim, 1, bias=self.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return the logits, shape (batch,), for a dense or sparse (batch, input_dim) tensor."""
        return linear_forward(self.linear, x).squeeze(-1)

"""The paper's "simple neural net": one fully connected hidden layer (size 10, appendix E.3).

The first layer takes dense or sparse (COO / CSR) features without densifying a sparse batch.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from textcause.models.components.linear import linear_forward, use_column_major
from textcause.validation import check_int, check_real

__all__ = [
    "MLP",
]


class MLP(nn.Module):
    """Features -> Linear(input_dim, hidden_size) -> ReLU -> Dropout -> Linear(hidden_size, 1) -> logit.

    Args:
        input_dim: the number of features; the CLI fills it from the data module's feature width.
        hidden_size: units in the hidden layer (10 in the paper).
        dropout: dropout probability after the hidden layer, in [0, 1).
    """

    def __init__(self, input_dim: Optional[int] = None, hidden_size: int = 10, dropout: float = 0.0) -> None:
        super().__init__()
        self.input_dim = check_int(input_dim, "input_dim", "MLP", low=1)
        self.hidden_size = check_int(hidden_size, "hidden_size", "MLP", low=1)
        self.dropout = check_real(dropout, "dropout", "MLP", low=0.0, high=1.0, high_open=True)
        self.hidden = nn.Linear(self.input_dim, self.hidden_size)
        self.drop = nn.Dropout(self.dropout)
        self.out = nn.Linear(self.hidden_size, 1)

    def input_weights(self) -> torch.Tensor:
        """The weights that read the features (the hidden layer's): what ``PropensityModel(l1=...)`` penalises."""
        return self.hidden.weight

    def use_sparse_layout(self) -> None:
        """Lay out the hidden layer's weight for sparse batches (:func:`~textcause.models.components.linear.use_column_major`).

        The same values, so the same numbers; for mini-batch optimizers (Adam), called by the
        propensity model before its optimizer exists. Its steps on n-gram batches are 1.4-2x as fast
        (``benchmarks/bench_sparse_mlp.py``).
        """
        use_column_major(self.hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return the logits, shape (batch,), for a dense or sparse (batch, input_dim) tensor."""
        h = torch.relu(linear_forward(self.hidden, x))
        return self.out(self.drop(h)).squeeze(-1)

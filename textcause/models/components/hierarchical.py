"""SHERBERT (Weld et al., section 6.1 and appendix E.1): hierarchical attention over a frozen encoder.

A history batch is a dict of tensors built by the data module from the frozen-encoder cache:

* ``posts``: float (B, P, D) pooled post vectors, oldest post first;
* ``post_mask``: bool (B, P), True for real posts (histories padded to the longest in the batch);
* optionally ``tokens``: float (B, P, L, D) token states capped at L tokens, and
  ``token_mask``: bool (B, P, L), True for real tokens.

Padding never changes a user's output: masked inputs are zeroed on entry (so NaN or other garbage
in padded slots is harmless), attention uses a masked softmax with ``-inf`` scores on padded slots,
rows with no valid slot at all (the token rows of padded posts) get all-zero weights instead of
NaN, and every sum runs over valid positions only.

This module also holds the helpers shared with :mod:`textcause.models.components.order_count`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple, Optional, Union

import torch
from torch import nn

from textcause.validation import check_int, check_real


class HistoryBatch(NamedTuple):
    """A checked history batch; masked slots of ``posts`` / ``tokens`` are zero."""

    posts: torch.Tensor
    post_mask: torch.Tensor
    tokens: Optional[torch.Tensor]
    token_mask: Optional[torch.Tensor]


def _shape_error(name: str, expected: str, got: torch.Tensor) -> ValueError:
    return ValueError(f"Expected '{name}' of shape {expected}. Got a tensor with shape {tuple(got.shape)} instead.")


def _as_mask(mask: torch.Tensor) -> torch.Tensor:
    return mask if mask.dtype == torch.bool else mask != 0


def history_batch(x: Mapping[str, torch.Tensor], input_dim: int, owner: str, use_tokens: bool) -> HistoryBatch:
    """Check a history batch dict and return it with padded slots zeroed.

    Args:
        x: the batch dict (``posts``, optional ``post_mask``, ``tokens``, ``token_mask``). A missing
            ``post_mask`` means every post is real; a missing ``token_mask`` means every token of a
            real post is real.
        input_dim: the expected vector width D.
        owner: the component's name, for error messages.
        use_tokens: read ``tokens`` when present; otherwise they are ignored.

    Returns:
        A :class:`HistoryBatch`; ``tokens`` and ``token_mask`` are None unless used. The token mask is
        also False on every token of a padded post.

    Raises:
        ValueError: ``x`` is not a dict with a ``posts`` tensor, or a tensor has the wrong shape.
    """
    if not isinstance(x, Mapping) or not isinstance(x.get("posts"), torch.Tensor):
        raise ValueError(
            f"{owner} expects a dict with a 'posts' tensor of shape (batch, posts, {input_dim}). "
            f"Got {type(x).__name__} instead."
        )
    posts = x["posts"]
    if posts.dim() != 3 or posts.shape[-1] != input_dim:
        raise _shape_error("posts", f"(batch, posts, {input_dim})", posts)
    b, p = posts.shape[:2]
    post_mask = x.get("post_mask")
    if post_mask is None:
        post_mask = torch.ones(b, p, dtype=torch.bool, device=posts.device)
    elif tuple(post_mask.shape) != (b, p):
        raise _shape_error("post_mask", f"({b}, {p})", post_mask)
    post_mask = _as_mask(post_mask)
    posts = posts.masked_fill(~post_mask.unsqueeze(-1), 0.0)
    tokens = x.get("tokens") if use_tokens else None
    token_mask = None
    if tokens is not None:
        if tokens.dim() != 4 or tuple(tokens.shape[:2]) != (b, p) or tokens.shape[-1] != input_dim:
            raise _shape_error("tokens", f"({b}, {p}, tokens, {input_dim})", tokens)
        token_mask = x.get("token_mask")
        if token_mask is None:
            token_mask = torch.ones(tokens.shape[:3], dtype=torch.bool, device=tokens.device)
        elif tuple(token_mask.shape) != tuple(tokens.shape[:3]):
            raise _shape_error("token_mask", str(tuple(tokens.shape[:3])), token_mask)
        token_mask = _as_mask(token_mask) & post_mask.unsqueeze(-1)
        tokens = tokens.masked_fill(~token_mask.unsqueeze(-1), 0.0)
    return HistoryBatch(posts, post_mask, tokens, token_mask)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax of ``scores`` over the True slots of ``mask`` along ``dim``.

    Masked slots get exactly zero weight (their scores are set to ``-inf``). A row with no True slot
    gets all-zero weights, not NaN, and passes no gradient.

    Args:
        scores: float scores.
        mask: bool tensor of the same shape, True for valid slots.
        dim: the dimension to normalise over.

    Returns:
        Weights of the same shape as ``scores``, summing to 1 over each row with a valid slot.
    """
    has_any = mask.any(dim=dim, keepdim=True)
    safe = mask | ~has_any  # empty rows: softmax over finite zeros, then zeroed below
    scores = scores.masked_fill(~mask, 0.0).masked_fill(~safe, float("-inf"))
    return torch.softmax(scores, dim=dim) * has_any


def valid_positions(post_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rank of each post among its user's valid posts (0 = oldest), and the number of valid posts.

    Positions come from the mask only, so any padding (left, right or holes) is handled; the rank of
    a padded slot is meaningless and clamped to >= 0.

    Args:
        post_mask: bool (B, P), True for real posts.

    Returns:
        ``(rank, n)``: long (B, P) and long (B,). The position from the end of the history is
        ``n - 1 - rank``.
    """
    rank = (post_mask.long().cumsum(dim=1) - 1).clamp(min=0)
    return rank, post_mask.long().sum(dim=1)


class TokenAttention(nn.Module):
    """Dot-product attention with one learned query over each post's token states -> a post vector.

    ``score_l = (token_l . q) / sqrt(D)``, softmax over the post's valid tokens; a padded post (no
    valid token) gets the zero vector.

    Args:
        input_dim: the token-state width D.
    """

    def __init__(self, input_dim: int) -> None:
        super().__init__()
        self.input_dim = check_int(input_dim, "input_dim", "TokenAttention", low=1)
        self.query = nn.Parameter(torch.randn(self.input_dim) * 0.02)

    def forward(self, tokens: torch.Tensor, token_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return post vectors (B, P, D) and token weights (B, P, L) for zero-padded ``tokens``."""
        scores = tokens @ self.query / math.sqrt(self.input_dim)
        weights = masked_softmax(scores, token_mask, dim=-1)
        return torch.einsum("bpl,bpld->bpd", weights, tokens), weights


Output = Union[torch.Tensor, tuple[torch.Tensor, dict[str, torch.Tensor]]]


class SHERBERT(nn.Module):
    """Hierarchical attention propensity network over a frozen encoder (appendix E.1).

    Per post, dot-product attention with a learned query over the encoder's token states gives a
    post vector (or the pooled post vector is used directly: the "pooled-only" variant); a linear
    layer with tanh projects it to ``hidden_size``; a second dot-product attention with a learned
    query over the user's valid posts gives the history vector; dropout and a linear layer give the
    logit. Attention over posts is normalised and ignores post order, so this model cannot tell
    where in a history a post sits, nor (with sharp attention) how many similar posts there are:
    see :class:`~textcause.models.components.order_count.OrderCountNet`.

    Args:
        input_dim: the encoder's vector width D (384 for all-MiniLM-L6-v2); the CLI fills it from the data module.
        hidden_size: the post-representation width (1000 in the paper, appendix E.3).
        use_tokens: attend over ``x["tokens"]`` when the batch has them; when False, or when the
            batch has no tokens, use the pooled ``x["posts"]`` vectors.
        dropout: dropout probability on the projected posts and the history vector, in [0, 1).
    """

    def __init__(self, input_dim: Optional[int] = None, hidden_size: int = 1000, use_tokens: bool = True,
                 dropout: float = 0.1) -> None:
        super().__init__()
        self.input_dim = check_int(input_dim, "input_dim", "SHERBERT", low=1)
        self.hidden_size = check_int(hidden_size, "hidden_size", "SHERBERT", low=1)
        self.use_tokens = bool(use_tokens)
        self.dropout = check_real(dropout, "dropout", "SHERBERT", low=0.0, high=1.0, high_open=True)
        self.token_attention = TokenAttention(self.input_dim)
        self.project = nn.Linear(self.input_dim, self.hidden_size)
        self.post_query = nn.Parameter(torch.randn(self.hidden_size) * 0.02)
        self.drop = nn.Dropout(self.dropout)
        self.out = nn.Linear(self.hidden_size, 1)

    def forward(self, x: Mapping[str, torch.Tensor], return_attention: bool = False) -> Output:
        """Return the logits of P(T=1 | history), shape (B,).

        Args:
            x: a history batch dict (see the module docstring).
            return_attention: also return ``{"posts": (B, P)}`` post weights, plus
                ``{"tokens": (B, P, L)}`` token weights when tokens were used.

        Returns:
            ``logits``, or ``(logits, attention)`` when ``return_attention``.
        """
        batch = history_batch(x, self.input_dim, "SHERBERT", self.use_tokens)
        attention: dict[str, torch.Tensor] = {}
        posts = batch.posts
        if batch.tokens is not None:
            posts, attention["tokens"] = self.token_attention(batch.tokens, batch.token_mask)
        h = self.drop(torch.tanh(self.project(posts)))
        scores = h @ self.post_query / math.sqrt(self.hidden_size)
        weights = masked_softmax(scores, batch.post_mask, dim=-1)
        attention["posts"] = weights
        history = torch.einsum("bp,bph->bh", weights, h)
        logits = self.out(self.drop(history)).squeeze(-1)
        return (logits, attention) if return_attention else logits

"""An order- and count-aware hierarchical propensity network (beyond the paper).

Weld et al. found every method, SHERBERT included, at chance on Order of Text level 2 (the
sickness post appended at the end vs prepended at the start, appendix H) and SHERBERT weak on Signal
Intensity level 2 (three sickness posts vs one, section 7). Normalised attention pooling is blind to
both: it is invariant to the order of posts, and with sharp attention one matching post and three
matching posts give the same history vector. :class:`OrderCountNet` adds what is missing:

* **positions** taken from the mask: learned embeddings of the position from the end and from the
  start of the history, and the relative recency ``rank / (n - 1)`` (0 = oldest, 1 = newest);
* **counting**: per head ``k`` a sigmoid "detector" score ``s_ik = sigmoid(w_k . c_i + b_k)`` of
  each post's content ``c_i``, summed without normalisation over valid posts: ``count_k = sum_i
  s_ik`` (a soft count of matching posts), also split into a recency-weighted "near the end" count
  ``sum_i r_i s_ik`` and a "near the start" count ``sum_i (1 - r_i) s_ik``;
* **attention**: ``n_heads`` learned queries over position-aware post states, each a masked
  softmax over valid posts;
* **history length** features ``log(1 + n)`` and ``n / max_positions``;

all concatenated into a small MLP head. The input contract and padding guarantees are those of
:mod:`textcause.models.components.hierarchical`.

``input_norm=True`` puts a LayerNorm on each post vector first. A sentence encoder's unit-length
vectors have components near ``1 / sqrt(D)`` (0.05 for D = 384), so their projection starts on the
scale of the position embeddings (sd 0.02). In some Blog cells the plain network fitted positions
instead of content (test accuracy 0.61 at Linguistic Complexity 3 and 4 and Sample Size 3, against
0.89-0.90 with the LayerNorm); on Twitter the plain network had the lower validation loss in 47 of
the grid's 55 fitted cells, the LayerNorm in 8, by 0.004-0.007. The default stays the plain network
(every stored checkpoint is one); the weld grids choose between the two per cell on the validation
loss (docs/baselines.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Optional

import torch
from torch import nn

from textcause.models.components.dropout import FastDropout
from textcause.models.components.hierarchical import (
    Output,
    TokenAttention,
    history_batch,
    masked_softmax,
    valid_positions,
)
from textcause.validation import check_int, check_real

__all__ = [
    "OrderCountNet",
]

#: Initial detector bias: a detector starts "off" (sigmoid(-3) ~ 0.05), as it looks for rare posts.
_DETECTOR_BIAS = -3.0


class OrderCountNet(nn.Module):
    """Position-aware multi-head attention plus soft counting over a user's posts -> a logit.

    Per post: content ``c_i = GELU(W x_i)``, position-aware state
    ``h_i = GELU(A LayerNorm(W x_i + E_end[n - 1 - rank_i] + E_start[rank_i] + v r_i))``; positions
    past ``max_positions - 1`` share the last embedding. The head sees the multi-head attention pool
    of ``h`` (``hidden_size`` values), three soft counts of ``c`` per head (total, near the end, near
    the start) and two history-length features. Sizes that fit: ``hidden_size`` 16-128; it needs a
    few hundred training histories or more, as its head can memorise a small training set.

    Args:
        input_dim: the encoder's vector width D (384 for all-MiniLM-L6-v2); the CLI fills it from the data module.
        hidden_size: the post-representation width; divisible by ``n_heads``.
        n_heads: the number of attention queries and of count detectors.
        max_positions: the number of learned position embeddings (from the end and from the start);
            keep it above the longest history (about 70 posts: 60 real plus inserted ones).
        dropout: dropout probability on the post representations and in the head, in [0, 1).
        use_tokens: attend over ``x["tokens"]`` (one learned query per post, as SHERBERT) when the
            batch has them; otherwise use the pooled ``x["posts"]`` vectors.
        input_norm: LayerNorm each post vector (after token attention) before the network, so the
            content is on a known scale whatever the encoder's (see the module docstring). A
            checkpoint loads only into a network with the same setting.
    """

    def __init__(
        self,
        input_dim: Optional[int] = None,
        hidden_size: int = 128,
        n_heads: int = 4,
        max_positions: int = 128,
        dropout: float = 0.1,
        use_tokens: bool = False,
        input_norm: bool = False,
    ) -> None:
        super().__init__()
        owner = "OrderCountNet"
        self.input_dim = check_int(input_dim, "input_dim", owner, low=1)
        self.hidden_size = check_int(hidden_size, "hidden_size", owner, low=1)
        self.n_heads = check_int(n_heads, "n_heads", owner, low=1)
        self.max_positions = check_int(max_positions, "max_positions", owner, low=1)
        self.dropout = check_real(dropout, "dropout", owner, low=0.0, high=1.0, high_open=True)
        self.use_tokens = bool(use_tokens)
        self.input_norm = bool(input_norm)
        if self.hidden_size % self.n_heads:
            raise ValueError(
                f"The 'hidden_size' parameter of {owner} must be divisible by n_heads={self.n_heads}. "
                f"Got {self.hidden_size} instead."
            )
        h = self.hidden_size
        self.token_attention = TokenAttention(self.input_dim)
        self.in_norm = nn.LayerNorm(self.input_dim) if self.input_norm else None
        self.content = nn.Linear(self.input_dim, h)
        self.from_end = nn.Embedding(self.max_positions, h)
        self.from_start = nn.Embedding(self.max_positions, h)
        self.recency = nn.Linear(1, h, bias=False)
        for emb in (self.from_end, self.from_start):
            nn.init.normal_(emb.weight, std=0.02)
        self.norm = nn.LayerNorm(h)
        self.post_mlp = nn.Linear(h, h)
        self.queries = nn.Parameter(torch.randn(self.n_heads, h) * 0.02)
        self.values = nn.Linear(h, h)
        self.detectors = nn.Linear(h, self.n_heads)
        nn.init.constant_(self.detectors.bias, _DETECTOR_BIAS)
        self.drop = FastDropout(self.dropout)
        self.head = nn.Sequential(
            nn.Linear(h + 3 * self.n_heads + 2, h), nn.GELU(), nn.Dropout(self.dropout), nn.Linear(h, 1)
        )

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):  # type: ignore[no-untyped-def]
        """A checkpoint of the other ``input_norm`` setting is refused in one sentence, not a key list.

        Refused with ``strict=False`` too (torch passes ``strict=True`` here whatever the caller's): the
        LayerNorm's weights would be missing (left at their initial values) or ignored, a network other
        than the one trained, with no error.
        """
        has_norm = f"{prefix}in_norm.weight" in state_dict
        if has_norm != (self.in_norm is not None) and f"{prefix}content.weight" in state_dict:
            raise ValueError(
                f"This OrderCountNet checkpoint was trained with input_norm={has_norm} and the network "
                f"was built with input_norm={not has_norm}; set model.init_args.net.init_args.input_norm: "
                f"{str(has_norm).lower()} in the run's config to load it."
            )
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def forward(self, x: Mapping[str, torch.Tensor], return_attention: bool = False) -> Output:
        """Return the logits of P(T=1 | history), shape (B,).

        Args:
            x: a history batch dict (see :mod:`textcause.models.components.hierarchical`).
            return_attention: also return ``{"posts": (B, P, n_heads)}`` attention weights,
                ``{"detectors": (B, P, n_heads)}`` detector scores (zero on padding), plus
                ``{"tokens": (B, P, L)}`` token weights when tokens were used.

        Returns:
            ``logits``, or ``(logits, attention)`` when ``return_attention``.
        """
        batch = history_batch(x, self.input_dim, "OrderCountNet", self.use_tokens)
        extras: dict[str, torch.Tensor] = {}
        posts = batch.posts
        if batch.tokens is not None:
            posts, extras["tokens"] = self.token_attention(batch.tokens, batch.token_mask)
        if self.in_norm is not None:
            posts = self.in_norm(posts)
        mask = batch.post_mask
        rank, n = valid_positions(mask)
        last = self.max_positions - 1
        from_end = (n.unsqueeze(1) - 1 - rank).clamp(0, last)
        recency = (rank.to(posts.dtype) / (n.unsqueeze(1) - 1).clamp(min=1).to(posts.dtype)).clamp(0.0, 1.0)
        c = self.content(posts)
        u = c + self.from_end(from_end) + self.from_start(rank.clamp(max=last)) + self.recency(recency.unsqueeze(-1))
        h = self.drop(nn.functional.gelu(self.post_mlp(self.norm(u))))
        c = self.drop(nn.functional.gelu(c))
        valid = mask.unsqueeze(-1).to(h.dtype)  # (B, P, 1)

        # Attention pooling: one masked softmax over posts per head, each head pooling its own slice.
        b, p, _ = h.shape
        scores = torch.einsum("bph,kh->bpk", h, self.queries) / math.sqrt(self.hidden_size)
        weights = masked_softmax(scores, mask.unsqueeze(-1).expand(b, p, self.n_heads), dim=1)
        v = self.values(h).view(b, p, self.n_heads, self.hidden_size // self.n_heads)
        pooled = torch.einsum("bpk,bpkd->bkd", weights, v).reshape(b, self.hidden_size)

        # Soft counts: un-normalised sums of detector scores over valid posts.
        detect = torch.sigmoid(self.detectors(c)) * valid  # (B, P, K)
        r = recency.unsqueeze(-1)
        counts = torch.cat([detect.sum(1), (detect * r).sum(1), (detect * (1.0 - r)).sum(1)], dim=-1)

        nf = n.to(h.dtype).unsqueeze(-1)
        length = torch.cat([torch.log1p(nf), nf / self.max_positions], dim=-1)
        logits = self.head(torch.cat([pooled, counts, length], dim=-1)).squeeze(-1)
        if not return_attention:
            return logits
        return logits, {"posts": weights, "detectors": detect, **extras}

"""The masked-gender tagger: a Hugging Face encoder and a binary head over each token's state.

A plain ``nn.Module`` (no Lightning, no data module): :class:`~textcause.gender.model.GenderMaskedModel`
receives it as ``net``. The encoder is any BERT-family model loaded by name or local path, offline
(:func:`textcause.features.encoder.resolve_encoder`; None: the packaged all-MiniLM-L6-v2), without
its pooler (unused here: DDP would find parameters without gradients). The head's logit at a
token is log-odds of *female* (label 1) against *male* (label 0) for the word masked there.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch import nn

from textcause.models.components.text_heads import load_encoder
from textcause.validation import check_real


class GenderTagger(nn.Module):
    """Encoder -> dropout -> linear: one female-vs-male logit per token.

    Args:
        encoder: a BERT-family encoder's name or local path (None: all-MiniLM-L6-v2). The data
            module must mask with the same encoder's tokenizer (declared by :meth:`data_requirements`).
        dropout: dropout on the token states before the head, in [0, 1).
    """

    def __init__(self, encoder: Optional[str] = None, dropout: float = 0.1) -> None:
        super().__init__()
        self.encoder = encoder
        self.dropout = check_real(dropout, "dropout", "GenderTagger", low=0.0, high=1.0, high_open=True)
        self.backbone = load_encoder(encoder).train()  # from_pretrained returns it in eval mode
        hidden = int(self.backbone.config.hidden_size)
        self.drop = nn.Dropout(self.dropout)
        self.head = nn.Linear(hidden, 1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The logit of every token, shape (B, L)."""
        states = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.head(self.drop(states)).squeeze(-1)

    def data_requirements(self) -> dict[str, Any]:
        """The data setting this network needs: the text masked by its own encoder's tokenizer."""
        return {"encoder": self.encoder}

    def extra_repr(self) -> str:
        return f"encoder={self.encoder!r}, dropout={self.dropout}"

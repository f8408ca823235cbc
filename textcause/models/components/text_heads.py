"""Fine-tuned Hugging Face encoders with a head: a sentence classifier and a QA-style span extractor.

Plain ``nn.Module`` s (no Lightning, no data module, no file lookups beyond loading the encoder by
name or local path, offline: :func:`textcause.features.encoder.resolve_encoder`; None: the packaged
all-MiniLM-L6-v2). Each stores its ``__init__`` arguments as attributes of the same name, so a
LightningModule records how to rebuild it (``textcause.models.nets.net_config``).

* :class:`EncoderClassifier`: encoder -> the first token's state ([CLS]) -> dropout -> linear: one
  logit per sentence (log-odds of the positive class).
* :class:`SpanExtractor`: encoder -> dropout -> linear with four outputs per token: the start and
  end logits of the antecedent and of the consequent, QA-style. "No consequent" is a learned
  option as in SQuAD 2.0: the first token ([CLS]) is the null answer of the consequent heads
  (its target is start = end = 0), so "none" competes with every real span in the same softmax.

Why QA-style start/end and not BIO tags: a sentence has exactly one antecedent and at most one
consequent, each one contiguous span scored by its exact offsets. Start/end heads decode exactly
one span per part, and validity (end >= start, inside the sentence, a maximum length) is a
constraint of the search over (start, end) pairs; BIO tags can produce zero, several or broken
spans that need repair rules, and their "no consequent" is only the absence of tags, never an
option scored against the best span.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch import nn

from textcause.validation import check_real

__all__ = [
    "EncoderClassifier",
    "SpanExtractor",
    "load_encoder",
]

#: The four span heads of :class:`SpanExtractor`, in output order.
_SPAN_HEADS = ("antecedent_start", "antecedent_end", "consequent_start", "consequent_end")


def load_encoder(encoder: Optional[str]) -> nn.Module:
    """A pretrained encoder without a pooler (unused by a token or [CLS] head: DDP would find
    parameters without gradients), from local files (None: all-MiniLM-L6-v2), in eval mode as
    ``from_pretrained`` returns it.

    Args:
        encoder: a Hugging Face name or local path (:func:`~textcause.features.encoder_spec.resolve_encoder`).
    """
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    from textcause.features.encoder_spec import resolve_encoder

    path = str(resolve_encoder(encoder).path)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the unused pooler weights of the checkpoint are expected
    try:
        try:
            return AutoModel.from_pretrained(path, add_pooling_layer=False)
        except TypeError:  # a model class without the option
            return AutoModel.from_pretrained(path)
    finally:
        hf_logging.set_verbosity(verbosity)


class _Encoded(nn.Module):
    """The shared part: a pretrained encoder and dropout on its token states."""

    def __init__(self, encoder: Optional[str], dropout: float, owner: str) -> None:
        super().__init__()
        self.encoder = encoder
        self.dropout = check_real(dropout, "dropout", owner, low=0.0, high=1.0, high_open=True)
        self.backbone = load_encoder(encoder).train()  # from_pretrained returns it in eval mode
        self.hidden = int(self.backbone.config.hidden_size)
        self.drop = nn.Dropout(self.dropout)

    def states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Token states after dropout, shape (B, L, H)."""
        return self.drop(self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state)

    def data_requirements(self) -> dict[str, Any]:
        """The data setting this network needs: the text tokenised by its own encoder's tokenizer."""
        return {"encoder": self.encoder}

    def extra_repr(self) -> str:
        return f"encoder={self.encoder!r}, dropout={self.dropout}"


class EncoderClassifier(_Encoded):
    """Encoder -> [CLS] state -> dropout -> linear: one logit per sentence.

    Args:
        encoder: a BERT-family encoder's name or local path (None: all-MiniLM-L6-v2). The data
            module must tokenise with the same encoder (declared by :meth:`data_requirements`).
        dropout: dropout on the [CLS] state before the head, in [0, 1).
    """

    def __init__(self, encoder: Optional[str] = None, dropout: float = 0.1) -> None:
        super().__init__(encoder, dropout, "EncoderClassifier")
        self.head = nn.Linear(self.hidden, 1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The positive-class logit of every sentence, shape (B,)."""
        return self.head(self.states(input_ids, attention_mask)[:, 0]).squeeze(-1)


class SpanExtractor(_Encoded):
    """Encoder -> dropout -> linear: start / end logits of the antecedent and the consequent per token.

    Args:
        encoder: a BERT-family encoder's name or local path (None: all-MiniLM-L6-v2). The data
            module must tokenise with the same encoder (declared by :meth:`data_requirements`).
        dropout: dropout on the token states before the heads, in [0, 1).
    """

    def __init__(self, encoder: Optional[str] = None, dropout: float = 0.1) -> None:
        super().__init__(encoder, dropout, "SpanExtractor")
        self.head = nn.Linear(self.hidden, len(_SPAN_HEADS))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Logits of shape (B, 4, L), heads in :data:`_SPAN_HEADS` order; position 0 is the consequent's null."""
        return self.head(self.states(input_ids, attention_mask)).transpose(1, 2)

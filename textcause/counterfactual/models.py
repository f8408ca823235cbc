"""The LightningModules of the fine-tuned SemEval-2020 Task 5 models.

* :class:`CounterfactualClassifier` (subtask 1) receives a sentence classifier (e.g.
  :class:`~textcause.models.components.text_heads.EncoderClassifier`) and trains it with binary
  cross-entropy weighted for the class imbalance (about 11% counterfactual): the positive class's
  weight is negatives / positives of the fit part (``pos_weight``; the balanced class weights up
  to a constant), read from the data module when not given. The decision threshold is NOT chosen
  here: the evaluation chooses it on the validation split (:mod:`textcause.counterfactual.finetuned`).
* :class:`CounterfactualSpanModel` (subtask 2) receives a span extractor (e.g.
  :class:`~textcause.models.components.text_heads.SpanExtractor`, four heads of start / end logits)
  and trains each head with cross-entropy over the sentence's tokens, QA-style; the consequent
  heads also have position 0 ([CLS]), the learned "no consequent" answer.

Both use AdamW (no weight decay on biases and LayerNorm weights) with a linear warmup then a linear
decay of the learning rate, log ``val_loss`` (and for subtask 1 ``val_f1`` / ``val_acc`` at logit
0), and predict ``{"index", "logit"}`` / ``{"index", "logits", "length"}``. Checkpoints rebuild
themselves (the network's config is stored with the hyperparameters).
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn
from torchmetrics import MeanMetric
from torchmetrics.classification import BinaryAccuracy, BinaryF1Score

from textcause.counterfactual.datamodule import IGNORE
from textcause.counterfactual.spans import NULL
from textcause.models.finetune import FineTunedEncoder
from textcause.models.nets import save_net_config
from textcause.validation import check_int, check_real

Batch = dict[str, torch.Tensor]
#: A logit that no allowed position can lose to (finite, so an all-masked row stays finite).
_MASKED = -1e4


class _FineTuned(FineTunedEncoder):
    """Shared by the two SemEval models: the training loss logged per step, the metrics reset."""

    owner = "_FineTuned"
    metrics: nn.ModuleDict

    def train_loss(self, batch: Batch) -> torch.Tensor:
        """The mean training loss of a batch."""
        raise NotImplementedError

    def training_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        loss = self.train_loss(batch)
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True, batch_size=len(batch["labels"]))
        return loss

    def on_validation_epoch_start(self) -> None:
        self._reset_metrics(self.metrics)


class CounterfactualClassifier(_FineTuned):
    """Fine-tune an encoder to tell counterfactual sentences (1) from the others (0).

    Args:
        net: the network, ``(input_ids, attention_mask) -> logits (B,)``, e.g.
            :class:`~textcause.models.components.text_heads.EncoderClassifier`; picked in YAML by
            ``class_path``.
        lr: AdamW's peak learning rate (> 0).
        weight_decay: AdamW's weight decay (>= 0; none on biases and LayerNorm weights).
        warmup: the fraction of the training steps of linear warmup, in [0, 1).
        pos_weight: the positive class's loss weight (None: negatives / positives of the data
            module's fit part, the balanced class weights).
    """

    owner = "CounterfactualClassifier"

    def __init__(
        self,
        net: nn.Module,
        lr: float = 5e-5,
        weight_decay: float = 0.01,
        warmup: float = 0.1,
        pos_weight: Optional[float] = None,
    ) -> None:
        super().__init__(net, lr, weight_decay, warmup)
        if pos_weight is not None:
            check_real(pos_weight, "pos_weight", self.owner, low=0.0, low_open=True)
        self.save_hyperparameters(ignore=["net"])
        save_net_config(self, self.owner)
        self.register_buffer("class_weight", torch.tensor(float(pos_weight or 1.0)))
        self.metrics = nn.ModuleDict(
            {"loss": MeanMetric().set_dtype(torch.float64), "f1": BinaryF1Score(), "acc": BinaryAccuracy()}
        )

    def setup(self, stage: str) -> None:
        super().setup(stage)
        data = self._datamodule()
        if stage == "fit" and self.hparams.pos_weight is None and hasattr(data, "pos_weight"):
            self.class_weight.fill_(float(data.pos_weight))

    def loss(self, logits: torch.Tensor, labels: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(
            logits.float(), labels.float(), pos_weight=self.class_weight, reduction=reduction
        )

    def train_loss(self, batch: Batch) -> torch.Tensor:
        return self.loss(self(batch["input_ids"], batch["attention_mask"]), batch["labels"])

    def validation_step(self, batch: Batch, batch_idx: int) -> None:
        logits = self(batch["input_ids"], batch["attention_mask"]).float()
        labels = batch["labels"]
        self.metrics["loss"].update(self.loss(logits, labels, reduction="none"))
        prob = torch.sigmoid(logits)
        self.metrics["f1"].update(prob, labels.long())
        self.metrics["acc"].update(prob, labels.long())
        self._log_metrics(self.metrics, "val")

    def predict_step(self, batch: Batch, batch_idx: int, dataloader_idx: int = 0) -> dict[str, torch.Tensor]:
        """The logit of every sentence, with its position in the split."""
        return {"index": batch["index"], "logit": self(batch["input_ids"], batch["attention_mask"]).float()}


class CounterfactualSpanModel(_FineTuned):
    """Fine-tune an encoder to point at the antecedent and the consequent (or "none") of a sentence.

    Args:
        net: the network, ``(input_ids, attention_mask) -> logits (B, 4, L)`` (antecedent start /
            end, consequent start / end), e.g. :class:`~textcause.models.components.text_heads.SpanExtractor`.
        lr: AdamW's peak learning rate (> 0).
        weight_decay: AdamW's weight decay (>= 0; none on biases and LayerNorm weights).
        warmup: the fraction of the training steps of linear warmup, in [0, 1).
        max_span_tokens: the longest span decoded, in tokens (the evaluation reads it).
    """

    owner = "CounterfactualSpanModel"

    def __init__(
        self,
        net: nn.Module,
        lr: float = 5e-5,
        weight_decay: float = 0.01,
        warmup: float = 0.1,
        max_span_tokens: int = 64,
    ) -> None:
        super().__init__(net, lr, weight_decay, warmup)
        self.max_span_tokens = check_int(max_span_tokens, "max_span_tokens", self.owner, low=1)
        self.save_hyperparameters(ignore=["net"])
        save_net_config(self, self.owner)
        self.metrics = nn.ModuleDict({"loss": MeanMetric().set_dtype(torch.float64), "exact": MeanMetric()})

    def masked_logits(self, batch: Batch) -> torch.Tensor:
        """(B, 4, L) float32 logits, masked outside the sentence (the consequent heads keep position 0)."""
        logits = self(batch["input_ids"], batch["attention_mask"]).float()
        allowed = batch["context"].unsqueeze(1).expand_as(logits).clone()
        allowed[:, 2:, NULL] = True
        return logits.masked_fill(~allowed, _MASKED)

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Per-sentence mean cross-entropy of the heads with a target (-100: none), shape (B,)."""
        b, h, length = logits.shape
        per = F.cross_entropy(logits.reshape(b * h, length), labels.reshape(-1), ignore_index=IGNORE, reduction="none")
        per = per.reshape(b, h)
        used = (labels != IGNORE).float()
        return (per * used).sum(1) / used.sum(1).clamp(min=1.0)

    def train_loss(self, batch: Batch) -> torch.Tensor:
        return self.loss(self.masked_logits(batch), batch["labels"]).mean()

    def validation_step(self, batch: Batch, batch_idx: int) -> None:
        logits = self.masked_logits(batch)
        labels = batch["labels"]
        self.metrics["loss"].update(self.loss(logits, labels))
        # token-level exact match of the independent argmaxes (a cheap proxy; the evaluation decodes valid spans)
        self.metrics["exact"].update(((logits.argmax(-1) == labels) | (labels == IGNORE)).all(1).float())
        self._log_metrics(self.metrics, "val")

    def predict_step(self, batch: Batch, batch_idx: int, dataloader_idx: int = 0) -> dict[str, torch.Tensor]:
        """The (masked) logits of every sentence, its position in the split and its token count."""
        return {
            "index": batch["index"],
            "logits": self.masked_logits(batch),
            "length": batch["attention_mask"].sum(1),
        }

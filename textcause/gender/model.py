"""The LightningModule of masked-gender fine-tuning (paper section 4.4): a binary head at the masks.

``GenderMaskedModel`` receives a plain network (:class:`~textcause.gender.components.GenderTagger`)
and trains it with binary cross-entropy at the masked positions only (label 1 female, 0 male;
-100 elsewhere), with AdamW (no weight decay on biases and LayerNorm weights) and a linear warmup
then linear decay of the learning rate. Validation and test log, at the masked positions,
``<stage>_loss`` (mean cross-entropy), ``<stage>_acc`` and ``<stage>_f1`` (female as the positive
class): torchmetrics objects whose states are summed over DDP ranks, so a 2-process run logs the
numbers of one process (the data module serves evaluation splits without repeats). Under DDP
the training loss is also the mean over every mask of the step, not a mean of the ranks' means
(their batches hold different numbers of masks), so the gradient is that of one process.

:meth:`GenderMaskedModel.female_probability` scores probes: P(female) at the one mask of each text.
Through the binary head P(male) = 1 - P(female): the female and male curves of a probe are mirror
images, so the female one is reported. Checkpoints rebuild themselves
(``GenderMaskedModel.load_from_checkpoint(path)``): the network's config is stored with the
hyperparameters, as :class:`~textcause.models.PropensityModel` does.

A fine-tune always validates where it stops: when ``trainer.max_steps`` ends training inside an
epoch (Lightning would validate only at the epoch's end, which never comes), the model asks the
trainer to stop after that step, which runs validation first, so a ``ModelCheckpoint`` watching
``val_loss`` (``configs/gender/*.yaml``) saves ``best-*.ckpt``. Where the trainer's settings still
skip that validation (``min_epochs`` not yet met, ``check_val_every_n_epoch`` above the epochs run),
so that the checkpoint saved nothing, the final weights are saved as ``final-step=N.ckpt`` beside
where ``best-*.ckpt`` would be, with a warning that names the file and says they were not validated.
A checkpoint watching a validation metric with validation switched off (``limit_val_batches: 0``) is
refused before training.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torchmetrics import MeanMetric
from torchmetrics.classification import BinaryAccuracy, BinaryF1Score

from textcause.gender.masking import IGNORE
from textcause.gender.window import model_window, one_mask_batch
from textcause.io import refuse_pickled_code
from textcause.models.finetune import FineTunedEncoder
from textcause.models.nets import save_net_config
from textcause.models.propensity import one_thread_if_forked, world_size
from textcause.validation import check_int

Batch = dict[str, torch.Tensor]
STAGES = ("val", "test")


class GenderMaskedModel(FineTunedEncoder):
    """Fine-tune an encoder to tell female from male at the masked gendered words.

    Args:
        net: the network, ``(input_ids, attention_mask) -> logits (B, L)``, e.g.
            :class:`~textcause.gender.components.GenderTagger`; picked in YAML by ``class_path``
            (a ``{"class_path", "init_args"}`` dict, as stored in checkpoints, also works).
        lr: AdamW's peak learning rate (> 0).
        weight_decay: AdamW's weight decay (>= 0; none on biases and LayerNorm weights).
        warmup: the fraction of the training steps over which the learning rate rises linearly
            from 0 to ``lr`` (then it falls linearly to 0 at the last step), in [0, 1).
    """

    owner = "GenderMaskedModel"
    encoder_mismatch = (
        "The data were masked with the tokenizer of the encoder {data!r}, but the network's encoder is {net!r}: "
        "set data.encoder to the network's encoder (null: all-MiniLM-L6-v2)."
    )

    def __init__(self, net: nn.Module, lr: float = 1e-4, weight_decay: float = 0.01, warmup: float = 0.1) -> None:
        super().__init__(net, lr, weight_decay, warmup)
        self.save_hyperparameters(ignore=["net"])
        save_net_config(self, self.owner)
        self.metrics = nn.ModuleDict(
            {
                stage: nn.ModuleDict(
                    {"loss": MeanMetric().set_dtype(torch.float64), "acc": BinaryAccuracy(), "f1": BinaryF1Score()}
                )
                for stage in STAGES
            }
        )
        self._tokenizer: Any = None

    def setup(self, stage: str) -> None:
        one_thread_if_forked(self)
        # The text must be masked by the tokenizer of the network's encoder (the data module's
        # typed settings say which; a data module without them is not checked).
        super().setup(stage)

    def on_fit_start(self) -> None:
        trainer = self.trainer
        if trainer.limit_val_batches != 0:
            return
        watched = [c.monitor for c in trainer.checkpoint_callbacks if str(getattr(c, "monitor", "")).startswith("val_")]
        if watched:
            raise ValueError(
                f"The checkpoint watches {watched[0]!r} but validation is switched off (limit_val_batches 0), so no "
                "checkpoint would be saved: let validation run or give the checkpoint monitor: null."
            )

    def on_train_batch_end(self, outputs: Any, batch: Batch, batch_idx: int) -> None:
        trainer = self.trainer
        # max_steps reached inside an epoch: stopping through should_stop validates first (Lightning's
        # early-stopping path), so the checkpoint watching val_loss has a value to save.
        if trainer.max_steps is not None and 0 <= trainer.max_steps <= trainer.global_step:
            trainer.should_stop = True

    def on_train_end(self) -> None:
        # A checkpoint watching a validation metric that never got a value saved nothing: leave the
        # final weights, named for what they are, so a fine-tune always ends with a loadable file.
        trainer = self.trainer
        watched = [c for c in trainer.checkpoint_callbacks if str(getattr(c, "monitor", "") or "").startswith("val_")]
        if not watched or any(getattr(c, "best_model_path", "") or getattr(c, "last_model_path", "") for c in watched):
            return  # a checkpoint was saved (the best, or save_last's last.ckpt)
        if any(c.monitor in trainer.callback_metrics for c in watched):
            return  # validation ran: a callback that saved nothing was told to (save_top_k 0)
        folder = getattr(watched[0], "dirpath", None)
        if not folder:
            return
        path = f"{folder}/final-step={trainer.global_step}.ckpt"
        trainer.save_checkpoint(path)
        if trainer.is_global_zero:
            warnings.warn(
                f"No validation ran before the fine-tune stopped at step {trainer.global_step} (min_epochs or "
                f"check_val_every_n_epoch skipped it), so the checkpoint watching {watched[0].monitor!r} saved "
                f"nothing; the final weights, not validated, are in {path}.",
                stacklevel=1,
            )

    def masked_logits(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits (float32) and labels at the masked positions of a batch, flattened."""
        logits = self(batch["input_ids"], batch["attention_mask"]).float()
        at = batch["labels"] != IGNORE
        return logits[at], batch["labels"][at]

    def training_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        logits, labels = self.masked_logits(batch)
        world = world_size(self)
        if world <= 1:
            loss = F.binary_cross_entropy_with_logits(logits, labels.float())
            self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True, batch_size=int(labels.numel()))
            return loss
        # DDP averages the ranks' gradients, but the ranks' batches hold different numbers of masks:
        # the mean over all masks of the step is sum_r(loss sum of rank r) / total masks, so each rank
        # scales its sum by world / total (one scalar all-reduce), as one process would with the whole batch.
        total = self.trainer.strategy.reduce(torch.tensor(float(labels.numel()), device=logits.device), reduce_op="sum")
        summed = F.binary_cross_entropy_with_logits(logits, labels.float(), reduction="sum")
        loss = summed * (world / total.clamp(min=1.0))
        mean = summed.detach() / max(int(labels.numel()), 1)
        self.log(
            "train_loss",
            mean,
            on_step=True,
            on_epoch=True,
            prog_bar=True,
            sync_dist=True,
            batch_size=int(labels.numel()),
        )
        return loss

    def _evaluate(self, batch: Batch, stage: str) -> None:
        logits, labels = self.masked_logits(batch)
        metrics = self.metrics[stage]
        metrics["loss"].update(F.binary_cross_entropy_with_logits(logits, labels.float(), reduction="none"))
        prob = torch.sigmoid(logits)
        metrics["acc"].update(prob, labels)
        metrics["f1"].update(prob, labels)
        self._log_metrics(metrics, stage)

    def on_validation_epoch_start(self) -> None:
        self._reset_metrics(self.metrics["val"])

    def on_test_epoch_start(self) -> None:
        self._reset_metrics(self.metrics["test"])

    def validation_step(self, batch: Batch, batch_idx: int) -> None:
        self._evaluate(batch, "val")

    def test_step(self, batch: Batch, batch_idx: int) -> None:
        self._evaluate(batch, "test")

    def predict_step(self, batch: Batch, batch_idx: int, dataloader_idx: int = 0) -> dict[str, torch.Tensor]:
        """P(female) and the label at every masked position, with the example index of each."""
        logits, labels = self.masked_logits(batch)
        at = batch["labels"] != IGNORE
        index = batch["index"][:, None].expand_as(at)[at]
        return {"index": index, "p_female": torch.sigmoid(logits), "label": labels}

    # ------------------------------------------------------------------ probes
    @property
    def tokenizer(self) -> Any:
        """The tokenizer of the network's encoder (loaded from local files on first use)."""
        if self._tokenizer is None:
            from textcause.gender.build import load_tokenizer

            self._tokenizer = load_tokenizer(getattr(self.net, "encoder", None))
        return self._tokenizer

    def female_probability(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """P(female) at the one mask token of each text (P(male) is one minus it).

        Args:
            texts: texts holding the tokenizer's mask token once each (``tokenizer.mask_token``).
            batch_size: texts per forward pass.

        Raises:
            ValueError: no texts, a bad batch size, or a text without exactly one mask token within the
                encoder's window (a longer text is cut to it before it is tokenised).
        """
        batch_size = check_int(batch_size, "batch_size", "female_probability", low=1)
        if not texts:
            raise ValueError("There are no texts to score: give at least one text with a mask token.")
        tok = self.tokenizer
        window = model_window(tok, getattr(getattr(self.net, "backbone", None), "config", None))
        device = next(self.parameters()).device
        was_training = self.training
        self.eval()
        out = np.empty(len(texts))
        try:
            with torch.inference_mode():
                for start in range(0, len(texts), batch_size):
                    batch = list(texts[start : start + batch_size])
                    enc, at = one_mask_batch(tok, batch, window, device)
                    logits = self(enc["input_ids"], enc["attention_mask"]).float()[at]
                    out[start : start + len(batch)] = torch.sigmoid(logits.double()).cpu().numpy()
        finally:
            self.train(was_training)
        return out


def load_finetuned(path: str, *, device: str = "cpu") -> GenderMaskedModel:
    """A fine-tuned model from its Lightning checkpoint, in eval mode.

    Raises:
        ValueError: the file is not a checkpoint of a :class:`GenderMaskedModel`, or it holds objects a
            weights-only load refuses (nothing in it is unpickled as code).
    """
    try:
        with warnings.catch_warnings():  # Lightning's own use of a deprecated jsonargparse name
            warnings.filterwarnings("ignore", message=r"(?s).*(instantiate_classes|JsonargparseDeprecationWarning)")
            with refuse_pickled_code(path):
                model = GenderMaskedModel.load_from_checkpoint(path, map_location=device, weights_only=True)
    except (KeyError, TypeError, RuntimeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"The checkpoint {path!r} is not a fine-tuned masked-gender model: {first}") from None
    return model.eval()

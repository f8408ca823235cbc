"""The LightningDataModule of masked-gender fine-tuning: texts with author metadata -> masked batches.

``GenderDataModule`` holds :class:`~textcause.gender.build.GenderDataSettings` (what is built) and
serving options; the examples come from :func:`textcause.gender.build.build_gender_data`, memoised
per process. A batch is ``{"input_ids", "attention_mask", "labels", "index"}``, padded to its
longest example, ``labels`` -100 except at the masks (1 female, 0 male).

Training batches are drawn in a seeded random order, re-drawn every epoch; with
``length_buckets`` > 0 the order is bucketed by length (each run of ``length_buckets`` batches is
sorted by length, then the batches are shuffled), so a batch pads little: blog sentences padded to
the longest of a random batch of 32 hold 2.3 times the tokens they need, bucketed ones 1.02 times.
Evaluation splits are served sorted by length (their metrics do not depend on the order).

Under DDP the validation and test splits are served with Lightning's
``UnrepeatedDistributedSampler`` (each example on exactly one rank, none repeated), so the metrics,
whose torchmetrics states are summed over ranks, equal those of one process.

Pick it in YAML by ``class_path`` (``configs/gender/finetune.yaml``)::

    data:
      class_path: textcause.gender.GenderDataModule
      init_args: {source: blogs, prefix: age, n_sentences: 20000}
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch
from torch.utils.data import DataLoader

from textcause.corpus.types import SPLITS
from textcause.data.serving import SplitServing, length_ordered_loader
from textcause.gender.build import GenderData, GenderDataSettings, build_gender_data
from textcause.gender.masking import IGNORE

_D = GenderDataSettings()


class MaskedCollate:
    """Pads the examples of a batch of indices to their longest (``attention_mask`` 0 on padding)."""

    def __init__(self, data: GenderData) -> None:
        self.data = data

    def __call__(self, indices: list[int]) -> dict[str, torch.Tensor]:
        n, width = len(indices), max(len(self.data.input_ids[i]) for i in indices)
        ids = torch.full((n, width), self.data.pad_token_id, dtype=torch.long)
        labels = torch.full((n, width), IGNORE, dtype=torch.long)
        attention = torch.zeros((n, width), dtype=torch.long)
        for row, i in enumerate(indices):
            length = len(self.data.input_ids[i])
            ids[row, :length] = torch.from_numpy(self.data.input_ids[i].astype(np.int64))
            labels[row, :length] = torch.from_numpy(self.data.labels[i].astype(np.int64))
            attention[row, :length] = 1
        return {"input_ids": ids, "attention_mask": attention, "labels": labels, "index": torch.tensor(indices)}


class GenderDataModule(SplitServing):
    """Sentences of texts with author metadata, every gendered word masked and labelled.

    Args:
        source: a short corpus name (``blogs``), a history JSONL (one document per post, with its
            author's ``meta``) or a CSV / Parquet / NDJSON table (one per row; the other columns
            are metadata).
        text_col: a table's text column.
        author_col: a table's author column (None: each row is its own author).
        prefix: the metadata field written before each sentence, e.g. ``age`` -> ``"age: 23. "``
            (None: no prefix).
        w_file: a CSV of W per author (columns ``author`` and one named like ``prefix``) used
            instead of the metadata, e.g. a W drawn at random per author.
        prefix_format: how the prefix is written, from ``{name}`` and ``{value}``.
        encoder: the encoder whose tokenizer masks the text (None: the packaged all-MiniLM-L6-v2);
            the model's encoder must be the same one (the model checks).
        words: a gendered word YAML (None: table 3).
        max_tokens: a sentence's tokens kept (prefix and special tokens on top).
        n_sentences: masked sentences drawn (None: all).
        seed: the draw's and the author split's seed (linked to ``seed_everything`` by the CLI).
        fractions: train, validation and test fractions of the authors.
        batch_size: sentences per batch.
        length_buckets: training batches per length bucket (0: plain random batches; see above).
        num_workers: DataLoader worker processes.
        predict_split: the split ``predict_dataloader`` serves.
    """

    def __init__(
        self,
        source: str = _D.source,
        text_col: str = _D.text_col,
        author_col: Optional[str] = _D.author_col,
        prefix: Optional[str] = _D.prefix,
        w_file: Optional[str] = _D.w_file,
        prefix_format: str = _D.prefix_format,
        encoder: Optional[str] = _D.encoder,
        words: Optional[str] = _D.words,
        max_tokens: int = _D.max_tokens,
        n_sentences: Optional[int] = _D.n_sentences,
        seed: int = _D.seed,
        fractions: tuple[float, float, float] = _D.fractions,
        batch_size: int = 32,
        length_buckets: int = 50,
        num_workers: int = 0,
        predict_split: str = "test",
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.settings = self.settings_from_hparams(GenderDataSettings, "GenderDataModule", SPLITS)
        self._built: Optional[GenderData] = None

    @property
    def built(self) -> GenderData:
        """The examples (built on first use; the build is memoised per process)."""
        if self._built is None:
            self._built = build_gender_data(self.settings)
        return self._built

    @property
    def info(self) -> dict[str, Any]:
        """The build's counts: documents, sentences, examples, masks, female share, split sizes."""
        return self.built.info

    def setup(self, stage: Optional[str] = None) -> None:
        self.built  # noqa: B018 - build (or fetch from the memo) on every rank

    def loader(self, split: str, *, shuffle: bool = False) -> DataLoader:
        """A loader over one split (``train`` in the bucketed random order when ``shuffle``)."""
        data = self.built
        indices = data.split[split]
        return length_ordered_loader(
            indices,
            np.array([len(data.input_ids[i]) for i in indices]),
            MaskedCollate(data),
            shuffle=shuffle,
            batch_size=self.hparams.batch_size,
            length_buckets=self.hparams.length_buckets,
            seed=self.hparams.seed,
            num_workers=self.hparams.num_workers,
            trainer=getattr(self, "trainer", None),
        )

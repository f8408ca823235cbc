"""New users' text served for ``trainer.predict``, featurised by a trained model's saved featurizer.

:class:`ScoringDataModule` is what ``textcause predict`` scores: the texts of users the model never
saw, turned into the model's input by :func:`textcause.data.featurizer.featurize` (the saved
vocabulary, topics or encoder; nothing is refitted on the new users). Its batches have the shape of
:class:`~textcause.data.CausalTextDataModule`'s; new users have no treatment or outcome, so ``t``
and ``y`` are zeros (a propensity does not depend on them) and ``p_true`` is NaN.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader

from textcause.data.batches import FeatureCollate, HistoryCollate, IndexDataset
from textcause.data.featurizer import featurize
from textcause.features.kinds import EMBEDDING_KINDS
from textcause.validation import check_int

__all__ = [
    "ScoringDataModule",
]


class ScoringDataModule(L.LightningDataModule):
    """New users' histories featurised with a saved featurizer, served as predict batches.

    Args:
        texts: one list of post strings per user.
        featurizer: the featurizer state saved with the model's checkpoint.
        batch_size: users per batch.
        settings: the run's :class:`~textcause.data.build.DataSettings`, so that a network that
            declares data requirements is checked as in training (None: not checked).
        token_dtype: the dtype of token-state batches (``post_tokens``): bfloat16 under bf16 precision.
    """

    def __init__(
        self,
        texts: Sequence[Sequence[str]],
        featurizer: Mapping[str, Any],
        batch_size: int = 64,
        settings: Optional[Any] = None,
        token_dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.texts = [list(u) for u in texts]
        self.featurizer = dict(featurizer)
        self.batch_size = check_int(batch_size, "batch_size", "ScoringDataModule", low=1)
        self.settings = settings
        self.token_dtype = token_dtype
        self._features: Any = None

    @property
    def features(self) -> Any:
        """The new users' features (computed on first use)."""
        if self._features is None:
            self._features = featurize(self.featurizer, self.texts)
        return self._features

    def setup(self, stage: Optional[str] = None) -> None:
        self.features  # noqa: B018 - featurise before the loop starts

    def predict_dataloader(self) -> DataLoader[Any]:
        n = len(self.texts)
        zeros, nan = np.zeros(n, dtype=np.float32), np.full(n, np.nan, dtype=np.float32)
        if self.featurizer["representation"] in EMBEDDING_KINDS:
            collate: Any = HistoryCollate(
                self.features,
                zeros,
                zeros,
                nan,
                use_tokens=self.featurizer["representation"] == "post_tokens",
                token_dtype=self.token_dtype,
            )
        else:
            collate = FeatureCollate(self.features, zeros, zeros, nan)
        return DataLoader(IndexDataset(np.arange(n)), batch_size=self.batch_size, shuffle=False, collate_fn=collate)

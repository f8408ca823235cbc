"""The LightningDataModule of the fine-tuned SemEval-2020 Task 5 models (subtask 1 and subtask 2).

``SemEvalDataModule`` reads the official training and test files (validated,
:mod:`textcause.counterfactual.data`), carves a seeded, stratified validation part from the
TRAINING file (:func:`~textcause.counterfactual.data.carve_validation`; stratified on the label in
subtask 1, on having a consequent in subtask 2), and tokenises every sentence once with the
encoder's fast tokenizer (truncated to ``max_length`` tokens, special tokens included). The test
file is read, tokenised and served for prediction only: nothing is chosen on it.

A batch is ``{"input_ids", "attention_mask", "context", "labels", "index"}``, padded to its longest
sentence; ``context`` is True at the sentence's own tokens (not [CLS], [SEP] or padding). Labels:

* subtask 1: the 0/1 label (float);
* subtask 2: four token positions, antecedent start / end and consequent start / end (inclusive),
  mapped from the END-INCLUSIVE character offsets through the tokenizer's offset mapping
  (:func:`~textcause.counterfactual.spans.char_to_tokens`); "no consequent" is position 0 (the
  null answer); a span cut off by truncation is -100 (ignored by the loss).

Training batches come in a seeded random order re-drawn every epoch, bucketed by length (each run of
``length_buckets`` batches sorted by length, then the batches shuffled) so a batch pads little.
Evaluation splits are served sorted by length (``index`` says which sentence each row is).
The raw sentences of each split are ``splits[name].sentences`` (the fit part is ``"train"``): the
scikit-learn baselines of :mod:`textcause.counterfactual.fitted` fit and score on them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd
import torch
from torch.utils.data import DataLoader

from textcause.counterfactual.data import (
    OFFSET_COLUMNS,
    carve_validation,
    check_disjoint,
    default_path,
    read_subtask1,
    read_subtask2,
)
from textcause.counterfactual.spans import NULL, char_to_tokens, tokens_to_chars
from textcause.data.serving import SplitServing, length_ordered_loader
from textcause.features.encoder_inputs import window_texts
from textcause.validation import check_int, check_options, check_real

IGNORE = -100
SPLIT_NAMES = ("train", "val", "test")


@dataclasses.dataclass(frozen=True)
class SemEvalSettings:
    """What decides the examples (how they are batched is the data module's business).

    Attributes:
        subtask: 1 (is the sentence counterfactual?) or 2 (antecedent and consequent spans).
        train: the training file (None: the official ``subtask<k>_train.csv`` under the data root).
        test: the test file (None: the official ``subtask<k>_test.csv``).
        encoder: the encoder whose fast tokenizer tokenises (None: the packaged all-MiniLM-L6-v2).
        max_length: tokens kept per sentence, special tokens included.
        val_fraction: the share of the training file held out for validation.
        seed: the validation split's and the training order's seed.
        n_train: keep only this many sentences of the fit part (seeded; None: all), for smoke runs.
    """

    subtask: int = 1
    train: Optional[str] = None
    test: Optional[str] = None
    encoder: Optional[str] = None
    max_length: int = 128
    val_fraction: float = 0.15
    seed: int = 0
    n_train: Optional[int] = None

    def __post_init__(self) -> None:
        owner = "SemEvalDataModule"
        check_options(self.subtask, "subtask", owner, (1, 2))
        check_int(self.max_length, "max_length", owner, low=8, high=512)
        check_real(self.val_fraction, "val_fraction", owner, low=0.0, high=0.5, low_open=True)
        check_int(self.seed, "seed", owner, low=0)
        if self.n_train is not None:
            check_int(self.n_train, "n_train", owner, low=2)


@dataclasses.dataclass
class Split:
    """One split, tokenised: the frame (official columns), and per sentence its ids, offsets and mask."""

    frame: pd.DataFrame
    input_ids: list[np.ndarray]
    offsets: list[np.ndarray]
    context: list[np.ndarray]
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def sentences(self) -> list[str]:
        """The raw sentences, in the split's order (the fitted baselines read these, not the token ids)."""
        return self.frame["sentence"].tolist()


def load_tokenizer(encoder: Optional[str]) -> Any:
    """The encoder's fast tokenizer, from local files (None: all-MiniLM-L6-v2)."""
    from transformers import AutoTokenizer

    from textcause.features.encoder_spec import resolve_encoder

    tok = AutoTokenizer.from_pretrained(str(resolve_encoder(encoder).path), use_fast=True)
    if not getattr(tok, "is_fast", False):
        raise ValueError(f"The encoder {encoder!r} has no fast tokenizer: span offsets need one.")
    return tok


def window_sentences(tok: Any, sentences: list[str], max_length: int) -> list[str]:
    """The start of each sentence that a window of ``max_length`` tokens can use (the sentence itself
    when short): :func:`~textcause.features.encoder_inputs.window_texts`, cut with ``cut_post`` at
    ``max_length * CHARS_PER_TOKEN`` characters, and cut four times longer while the start does not
    fill the window, up to ``max_length * MAX_CHARS_PER_TOKEN``. The start is a prefix, so character
    offsets into it are offsets into the whole sentence; truncated to ``max_length``, its tokens are
    those of the whole sentence (for tokenizers that split words at spaces)."""
    return window_texts(tok, sentences, max_length)


def tokenise(tok: Any, sentences: list[str], max_length: int) -> tuple[list, list, list]:
    """Token ids, (L, 2) character offsets (end exclusive) and the sentence-token mask of each sentence.

    Only the start of a long sentence that ``max_length`` tokens can use is tokenised
    (:func:`window_sentences`), so a 50 MB sentence costs what a short one does; ids, offsets and
    masks are those of the whole sentence truncated to ``max_length`` tokens.
    """
    if not sentences:
        return [], [], []
    texts = window_sentences(tok, sentences, max_length)
    enc = tok(texts, truncation=True, max_length=max_length, return_offsets_mapping=True)
    ids, offsets, contexts = [], [], []
    for i in range(len(sentences)):
        ids.append(np.asarray(enc["input_ids"][i], dtype=np.int32))
        offsets.append(np.asarray(enc["offset_mapping"][i], dtype=np.int64).reshape(-1, 2))
        contexts.append(np.array([s == 0 for s in enc.sequence_ids(i)], dtype=bool))
    return ids, offsets, contexts


def span_labels(frame: pd.DataFrame, offsets: list[np.ndarray], contexts: list[np.ndarray]) -> np.ndarray:
    """(n, 4) token targets of subtask 2: NULL for no consequent, IGNORE for a span cut off by truncation."""
    out = np.full((len(frame), 4), IGNORE, dtype=np.int64)
    values = frame[list(OFFSET_COLUMNS)].to_numpy(dtype=np.int64)
    for k, (off, ctx) in enumerate(zip(offsets, contexts)):
        ante = char_to_tokens(off, ctx, values[k, 0], values[k, 1])
        if ante is not None:
            out[k, :2] = ante
        if values[k, 2] == -1:
            out[k, 2:] = NULL
        else:
            cons = char_to_tokens(off, ctx, values[k, 2], values[k, 3])
            if cons is not None:
                out[k, 2:] = cons
    return out


def round_trip(split: Split) -> dict[str, int]:
    """How many gold spans map to tokens and back to the exact same characters (a diagnostic)."""
    values = split.frame[list(OFFSET_COLUMNS)].to_numpy(dtype=np.int64)
    exact = mapped = total = 0
    for k, off in enumerate(split.offsets):
        for j in (0, 2):
            if values[k, j] < 0:
                continue
            total += 1
            if split.labels[k, j] == IGNORE:
                continue
            mapped += 1
            exact += tokens_to_chars(off, split.labels[k, j], split.labels[k, j + 1]) == tuple(values[k, j : j + 2])
    return {"spans": total, "spans_in_window": mapped, "spans_exact_round_trip": int(exact)}


def build_splits(settings: SemEvalSettings) -> dict[str, Split]:
    """Read, split and tokenise: ``{"train", "val", "test"}`` (validation carved from train only)."""
    k = settings.subtask
    train_path = Path(settings.train) if settings.train else default_path(f"subtask{k}_train")
    test_path = Path(settings.test) if settings.test else default_path(f"subtask{k}_test")
    read = read_subtask1 if k == 1 else read_subtask2
    train, test = read(train_path), read(test_path)
    check_disjoint(train, test)
    label = "gold_label"
    if k == 2:
        train = train.assign(has_consequent=(train["consequent_startid"] >= 0).astype(np.int8))
        label = "has_consequent"
    fit, val = carve_validation(train, fraction=settings.val_fraction, seed=settings.seed, label=label)
    if settings.n_train is not None and settings.n_train < len(fit):
        rng = np.random.default_rng(settings.seed)
        fit = fit.iloc[np.sort(rng.choice(len(fit), settings.n_train, replace=False))].reset_index(drop=True)
    tok = load_tokenizer(settings.encoder)
    out = {}
    for name, frame in zip(SPLIT_NAMES, (fit, val, test)):
        ids, offsets, contexts = tokenise(tok, frame["sentence"].tolist(), settings.max_length)
        labels = frame["gold_label"].to_numpy(dtype=np.float32) if k == 1 else span_labels(frame, offsets, contexts)
        out[name] = Split(frame.reset_index(drop=True), ids, offsets, contexts, labels)
    return out


class Collate:
    """Pads a batch of one split's positions to its longest sentence."""

    def __init__(self, split: Split, pad_id: int) -> None:
        self.split, self.pad_id = split, pad_id

    def __call__(self, positions: list[int]) -> dict[str, torch.Tensor]:
        s = self.split
        n, width = len(positions), max(len(s.input_ids[i]) for i in positions)
        ids = torch.full((n, width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((n, width), dtype=torch.long)
        context = torch.zeros((n, width), dtype=torch.bool)
        for row, i in enumerate(positions):
            length = len(s.input_ids[i])
            ids[row, :length] = torch.from_numpy(s.input_ids[i].astype(np.int64))
            attention[row, :length] = 1
            context[row, :length] = torch.from_numpy(s.context[i])
        return {
            "input_ids": ids,
            "attention_mask": attention,
            "context": context,
            "labels": torch.from_numpy(np.asarray(s.labels[positions])),
            "index": torch.tensor(positions, dtype=torch.long),
        }


class SemEvalDataModule(SplitServing):
    """SemEval-2020 Task 5 sentences, tokenised for a fine-tuned encoder (see the module docstring).

    Args:
        subtask: 1 (classification) or 2 (antecedent / consequent spans).
        train: the training CSV (None: the official one under the data root).
        test: the test CSV (None: the official one).
        encoder: the encoder whose fast tokenizer tokenises (None: the packaged all-MiniLM-L6-v2);
            the model's encoder must be the same one (the model checks).
        max_length: tokens kept per sentence, special tokens included.
        val_fraction: the share of the training file held out for validation (never the test file).
        seed: the split's and the training order's seed (linked to ``seed_everything`` by the CLI).
        n_train: keep only this many fit sentences (seeded; None: all), for smoke runs.
        batch_size: sentences per batch.
        length_buckets: training batches per length bucket (0: plain random batches).
        num_workers: DataLoader worker processes.
        predict_split: the split ``predict_dataloader`` serves (``train``, ``val`` or ``test``).
    """

    def __init__(
        self,
        subtask: int = 1,
        train: Optional[str] = None,
        test: Optional[str] = None,
        encoder: Optional[str] = None,
        max_length: int = 128,
        val_fraction: float = 0.15,
        seed: int = 0,
        n_train: Optional[int] = None,
        batch_size: int = 32,
        length_buckets: int = 50,
        num_workers: int = 0,
        predict_split: str = "test",
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.settings = self.settings_from_hparams(SemEvalSettings, "SemEvalDataModule", SPLIT_NAMES)
        self._splits: Optional[dict[str, Split]] = None
        self._pad_id = 0

    @property
    def splits(self) -> dict[str, Split]:
        """The tokenised splits (built on first use)."""
        if self._splits is None:
            self._splits = build_splits(self.settings)
            self._pad_id = int(load_tokenizer(self.settings.encoder).pad_token_id or 0)
        return self._splits

    @property
    def pos_weight(self) -> float:
        """Subtask 1's balanced class weight of the positive class: negatives / positives of the fit part."""
        y = self.splits["train"].labels
        positives = float(y.sum())
        if positives == 0 or positives == len(y):
            raise ValueError("The training part has one class only: both classes are needed to fine-tune.")
        return (len(y) - positives) / positives

    @property
    def info(self) -> dict[str, Any]:
        """Split sizes (and for subtask 2 the offset round trip of the gold spans)."""
        out: dict[str, Any] = {f"n_{name}": len(split) for name, split in self.splits.items()}
        if self.settings.subtask == 2:
            out |= {f"{name}_{k}": v for name in SPLIT_NAMES for k, v in round_trip(self.splits[name]).items()}
        return out

    def setup(self, stage: Optional[str] = None) -> None:
        self.splits  # noqa: B018 - build once, on every rank

    def loader(self, split: str, *, shuffle: bool = False) -> DataLoader:
        """A loader over one split (``train`` in the bucketed random order when ``shuffle``); each batch
        says which sentences it holds (``index``)."""
        data = self.splits[split]
        return length_ordered_loader(
            np.arange(len(data)),
            np.array([len(x) for x in data.input_ids]),
            Collate(data, self._pad_id),
            shuffle=shuffle,
            batch_size=self.hparams.batch_size,
            length_buckets=self.hparams.length_buckets,
            seed=self.hparams.seed,
            num_workers=self.hparams.num_workers,
        )

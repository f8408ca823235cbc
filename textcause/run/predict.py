"""Score new users with a trained run: ``textcause predict RUN_DIR --corpus new.csv --out propensities.csv``.

:func:`predict_corpus` loads the run's best checkpoint (``torch.load(weights_only=True)``: nothing
in it is unpickled as code) and its ``config.yaml`` (every class it names checked by
:func:`~textcause.run.class_paths.check_class_paths` before anything is imported), reads the new
corpus through the corpus readers (any path they accept, with the column options of the data
module), featurises it with the featurizer saved in the checkpoint (the training vocabulary, topics
or encoder: nothing is refitted on the new users; :class:`~textcause.data.scoring.ScoringDataModule`),
predicts with ``trainer.predict`` and writes one row per user, ``user_id,propensity``, atomically.
The training corpus is not needed.
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from textcause.io import atomic_write_text, load_torch, refuse_pickled_code

__all__ = [
    "Predictions",
    "load_checkpoint",
    "predict_corpus",
    "score_texts",
]


@dataclass
class Predictions:
    """What :func:`predict_corpus` scored.

    Attributes:
        user_ids: the new corpus's users, in its order.
        propensity: each user's P(T = 1 | text).
        checkpoint: the checkpoint that scored them.
        out: the CSV written (None: none was asked for).
    """

    user_ids: list[str]
    propensity: np.ndarray
    checkpoint: Path
    out: Optional[Path] = None


def load_checkpoint(path: Path) -> dict[str, Any]:
    """A checkpoint read with ``torch.load(weights_only=True)`` (plain values and tensors only)."""
    return load_torch(path)


def _saved_featurizer(checkpoint: dict[str, Any], data_class: str, source: str) -> dict[str, Any]:
    """The featurizer state a checkpoint's data module saved, or a ValueError saying to retrain."""
    from textcause.data.featurizer import FEATURIZER_KEY, check_state

    state = checkpoint.get(data_class.rpartition(".")[2])
    return check_state(state.get(FEATURIZER_KEY) if isinstance(state, dict) else None, f"The checkpoint '{source}'")


def predict_corpus(
    run_dir: str | Path,
    corpus: str | Path,
    out: str | Path | None = None,
    *,
    ckpt: str | Path | None = None,
    author_col: str = "author",
    text_col: str = "text",
    time_col: Optional[str] = "time",
    drop_duplicates: bool = False,
    min_posts: int = 1,
    max_posts: Optional[int] = -1,
    batch_size: Optional[int] = None,
    allow_modules: Sequence[str] = (),
    progress: Optional[bool] = None,
) -> Predictions:
    """Per-user propensities of a new corpus from a trained run (see the module docstring).

    Args:
        run_dir: the run's folder (``config.yaml`` and ``checkpoints/``), as written by ``train.py fit``.
        corpus: the new users: a history JSONL, a CSV / Parquet / NDJSON comment table, a Hugging
            Face dataset (whatever :func:`textcause.corpus.read_corpus` reads).
        out: the CSV to write (``user_id,propensity``); None writes nothing.
        ckpt: the checkpoint (default: the run's best).
        author_col: a comment table's author column, as for the data module.
        text_col: its text column.
        time_col: its time column.
        drop_duplicates: drop a post whose text and time repeat an earlier post of the same user.
        min_posts: score users with at least this many posts.
        max_posts: keep each user's first ``max_posts`` posts (-1: the run's own ``max_posts``, as in
            training; None: all).
        batch_size: users per batch (default: the run's).
        allow_modules: packages beyond textcause, lightning, torch and torchmetrics whose classes the
            run's config may name.
        progress: a progress bar while predicting (None: on a terminal only).

    Raises:
        FileNotFoundError: no run folder, no ``config.yaml``, no checkpoint, no corpus.
        ValueError: a config naming classes outside the allowed packages, a checkpoint without a
            featurizer (trained by an older version), a model that reads no text, a corpus without
            users with ``min_posts`` posts.
    """
    from textcause.run.class_paths import check_class_paths
    from textcause.run.fit import find_checkpoint, read_config
    from textcause.run.lightning_cli import DEFAULT_DATA

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"No run folder at '{run_dir}': give the folder of a run made by train.py fit.")
    config_path = run_dir / "config.yaml"
    if not config_path.is_file():
        raise FileNotFoundError(f"No config.yaml in '{run_dir}': give the folder of a run made by train.py fit.")
    config = read_config(config_path)
    check_class_paths(config, str(config_path), allow=allow_modules)
    checkpoint = Path(ckpt) if ckpt else find_checkpoint(run_dir)
    if checkpoint is None or not checkpoint.is_file():
        where = f"at '{checkpoint}'" if ckpt else f"in '{run_dir / 'checkpoints'}'"
        raise FileNotFoundError(f"No checkpoint {where}: train the run first (train.py fit), or pass --ckpt.")
    saved = load_checkpoint(checkpoint)
    data_class = str((config.get("data") or {}).get("class_path") or DEFAULT_DATA)
    featurizer = _saved_featurizer(saved, data_class, str(checkpoint))
    if featurizer["representation"] == "none":
        raise ValueError(
            "The run's model reads no text (representation 'none': a baseline such as the oracle), so it cannot "
            "score new users."
        )
    model_path = (config.get("model") or {}).get("class_path")
    hparams = saved.get("hyper_parameters") or {}
    check_class_paths({"model": {"class_path": model_path, "init_args": hparams}}, str(checkpoint), allow=allow_modules)
    data_hp = {k: v for k, v in (saved.get("datamodule_hyper_parameters") or {}).items() if not k.startswith("_")}

    from textcause.corpus import read_corpus

    if max_posts == -1:
        max_posts = featurizer.get("max_posts")
    users = read_corpus(
        corpus,
        min_posts=min_posts,
        max_posts=max_posts,
        author_col=author_col,
        text_col=text_col,
        time_col=time_col,
        drop_duplicates=drop_duplicates,
    )
    propensity = score_texts(
        model_path,
        checkpoint,
        featurizer,
        users.texts,
        config=config,
        data_hparams=data_hp,
        batch_size=batch_size or int(data_hp.get("batch_size") or 64),
        progress=sys.stderr.isatty() if progress is None else progress,
    )
    result = Predictions(users.user_ids, propensity, checkpoint)
    if out is not None:
        result.out = _write_propensities(Path(out), result.user_ids, propensity)
    return result


def score_texts(
    model_path: str,
    checkpoint: Path,
    featurizer: dict[str, Any],
    texts: Sequence[Sequence[str]],
    *,
    config: dict[str, Any],
    data_hparams: dict[str, Any],
    batch_size: int,
    progress: bool,
) -> np.ndarray:
    """The propensities of ``texts`` (one list of posts per user) by the model of ``checkpoint``."""
    import importlib

    import lightning as L
    import torch

    from textcause.data.build import DataSettings
    from textcause.data.scoring import ScoringDataModule

    module, _, name = model_path.rpartition(".")
    model_class = getattr(importlib.import_module(module), name)
    with refuse_pickled_code(checkpoint):
        model = model_class.load_from_checkpoint(checkpoint, map_location="cpu", weights_only=True)
    trainer_cfg = config.get("trainer") or {}
    precision = trainer_cfg.get("precision")
    fields = set(DataSettings.__dataclass_fields__)
    settings = DataSettings(**{k: v for k, v in data_hparams.items() if k in fields}) if data_hparams else None
    data = ScoringDataModule(
        texts,
        featurizer,
        batch_size=batch_size,
        settings=settings,
        token_dtype=torch.bfloat16 if str(precision or "").startswith("bf16") else torch.float32,
    )
    trainer = L.Trainer(
        accelerator=trainer_cfg.get("accelerator") or "auto",
        devices=1,
        precision=precision,
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        enable_progress_bar=progress,
        default_root_dir=str(checkpoint.parent),
    )
    outputs = trainer.predict(model, datamodule=data)
    index = np.concatenate([o["index"].cpu().numpy().reshape(-1) for o in outputs])
    p = np.concatenate([o["propensity"].float().cpu().numpy().reshape(-1) for o in outputs])
    return p[np.argsort(index, kind="stable")].astype(np.float64)


def _write_propensities(path: Path, user_ids: Sequence[str], propensity: np.ndarray) -> Path:
    """``user_id,propensity`` rows, written atomically (a failed write leaves the old file as it was)."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["user_id", "propensity"])
    for uid, p in zip(user_ids, propensity):
        writer.writerow([uid, repr(float(p))])
    return atomic_write_text(path, buf.getvalue())

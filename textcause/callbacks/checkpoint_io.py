"""Checkpoints written to local disk in 1 MiB writes: :class:`ChunkedCheckpointIO`.

:class:`ChunkedCheckpointIO` writes the bytes Lightning's
:class:`~lightning.fabric.plugins.io.torch_io.TorchCheckpointIO` would (the same ``torch.save``) in
writes of :data:`textcause.io.WRITE_CHUNK`, to a temporary file beside the checkpoint that is renamed
onto it (:func:`textcause.io.atomic_write_bytes`): a killed run leaves the old checkpoint or the new
one, never half of one. Remote paths and ``storage_options`` go to Lightning's own implementation.
Why (one large ``write()`` into a new file is slow on some hosts): benchmarks/README.md.

:class:`~textcause.run.lightning_cli.TextCauseCLI` gives it to every Trainer whose strategy has the
default ``TorchCheckpointIO``; a ``CheckpointIO`` plugin named in a config is kept.
"""

from __future__ import annotations

import io
import os
from typing import Any, Optional

import torch
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO

from textcause.io import atomic_write_bytes

__all__ = [
    "ChunkedCheckpointIO",
    "use_chunked_checkpoints",
]


class ChunkedCheckpointIO(TorchCheckpointIO):
    """:class:`~lightning.fabric.plugins.io.torch_io.TorchCheckpointIO` that writes local checkpoints
    in writes of at most 1 MiB (the same file, byte for byte); loading is Lightning's."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Optional[Any] = None) -> None:
        from fsspec.core import url_to_fs
        from fsspec.implementations.local import LocalFileSystem

        fs, dest = url_to_fs(os.fspath(path))  # a file:// URL: its local path
        if storage_options is not None or not isinstance(fs, LocalFileSystem):
            super().save_checkpoint(checkpoint, path, storage_options=storage_options)
            return
        buffer = io.BytesIO()
        torch.save(checkpoint, buffer)
        atomic_write_bytes(dest, buffer.getbuffer())


def use_chunked_checkpoints(trainer: Any) -> None:
    """Give ``trainer``'s strategy a :class:`ChunkedCheckpointIO` where it has Lightning's default
    ``TorchCheckpointIO`` (exactly that class; another plugin, e.g. ``AsyncCheckpointIO``, is kept)."""
    strategy = trainer.strategy
    if type(strategy.checkpoint_io) is TorchCheckpointIO:
        strategy.checkpoint_io = ChunkedCheckpointIO()

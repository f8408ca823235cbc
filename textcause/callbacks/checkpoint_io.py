"""Checkpoints written to local disk in 1 MiB writes: :class:`ChunkedCheckpointIO`.

Lightning's :class:`~lightning.fabric.plugins.io.torch_io.TorchCheckpointIO` serialises a checkpoint
into memory and writes it with one ``write()`` call, through an fsspec transaction (a temporary file
in the system's temporary folder, then moved into place). On this project's 2-core VM one write of
several MiB into a new file took 7.5-10.4 ms a MiB, against 0.2-0.4 ms a MiB in writes of 1 MiB
(:data:`textcause.io.WRITE_CHUNK`): a SHERBERT cell of the smoke grid writes two 4.7 MB checkpoints,
which at the first rate comes to about 0.09 s of its 0.26 s. :class:`ChunkedCheckpointIO` writes the same bytes (the same
``torch.save``) in 1 MiB writes, to a temporary file beside the checkpoint that is renamed onto it
(:func:`textcause.io.atomic_write_bytes`): a killed run leaves the old checkpoint or the new one, never
half of one. Remote paths and ``storage_options`` go to Lightning's own implementation.

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

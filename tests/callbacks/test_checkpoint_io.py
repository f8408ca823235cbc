"""Checkpoints in 1 MiB writes (ChunkedCheckpointIO): the same file as Lightning's TorchCheckpointIO writes,
at most 1 MiB per write() call, atomic, Lightning's for remote paths, and given to the CLI's trainers."""

from __future__ import annotations

import io
from pathlib import Path

import lightning as L
import pytest
import torch
from conftest import write_history_jsonl
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO
from lightning.pytorch.plugins.io import AsyncCheckpointIO

from textcause import io as tio
from textcause.callbacks.checkpoint_io import ChunkedCheckpointIO, use_chunked_checkpoints

ROOT = Path(__file__).resolve().parents[2]


def _checkpoint() -> dict:
    g = torch.Generator().manual_seed(0)
    return {  # about 3.3 MB: four writes
        "state_dict": {"w": torch.randn(1000, 800, generator=g), "b": torch.randn(800, generator=g)},
        "epoch": 3,
        "callbacks": {"ModelCheckpoint": {"best_model_path": "x.ckpt", "best_model_score": torch.tensor(0.25)}},
    }


class _Recorder(io.BytesIO):
    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def write(self, b) -> int:  # type: ignore[override]
        self.sizes.append(len(memoryview(b).cast("B")))
        return super().write(b)


def test_write_chunks_writes_the_same_bytes_in_writes_of_at_most_one_mib():
    data = bytes(range(256)) * (3 * tio.WRITE_CHUNK // 256 + 5)  # 3 MiB and 1,280 bytes
    fh = _Recorder()
    assert tio.write_chunks(fh, data) == len(data)
    assert fh.getvalue() == data
    assert fh.sizes == [tio.WRITE_CHUNK] * 3 + [1280]
    empty = _Recorder()
    assert tio.write_chunks(empty, b"") == 0 and empty.sizes == []


def test_atomic_write_bytes_takes_any_contiguous_buffer(tmp_path):
    arr = torch.arange(300_000, dtype=torch.float64).numpy()  # 2.4 MB of 8-byte items
    assert tio.atomic_write_bytes(tmp_path / "a.bin", arr) == tmp_path / "a.bin"
    assert (tmp_path / "a.bin").read_bytes() == arr.tobytes()
    assert [p.name for p in tmp_path.iterdir()] == ["a.bin"]


def test_a_checkpoint_is_lightnings_file_byte_for_byte(tmp_path):
    ckpt = _checkpoint()
    TorchCheckpointIO().save_checkpoint(ckpt, tmp_path / "lightning" / "a.ckpt")
    ChunkedCheckpointIO().save_checkpoint(ckpt, tmp_path / "chunked" / "a.ckpt")
    ours = (tmp_path / "chunked" / "a.ckpt").read_bytes()
    assert ours == (tmp_path / "lightning" / "a.ckpt").read_bytes()
    assert len(ours) > 3 * tio.WRITE_CHUNK
    loaded = ChunkedCheckpointIO().load_checkpoint(tmp_path / "chunked" / "a.ckpt", weights_only=False)
    assert torch.equal(loaded["state_dict"]["w"], ckpt["state_dict"]["w"]) and loaded["epoch"] == 3
    assert [p.name for p in (tmp_path / "chunked").iterdir()] == ["a.ckpt"]  # no temporary file left


def test_writes_are_at_most_one_mib_each(tmp_path, monkeypatch):
    sizes: list[int] = []
    real = tio.write_chunks

    def spy(fh, data):
        class Fh:
            def write(self, b):
                sizes.append(len(b))
                return fh.write(b)

        return real(Fh(), data)

    monkeypatch.setattr("textcause.io.write_chunks", spy)
    ChunkedCheckpointIO().save_checkpoint(_checkpoint(), tmp_path / "a.ckpt")
    assert len(sizes) >= 4 and max(sizes) <= tio.WRITE_CHUNK
    assert sum(sizes) == (tmp_path / "a.ckpt").stat().st_size


def test_a_failed_write_leaves_the_old_checkpoint_and_no_temporary_file(tmp_path, monkeypatch):
    dest = tmp_path / "last.ckpt"
    ChunkedCheckpointIO().save_checkpoint({"epoch": 1}, dest)
    before = dest.read_bytes()

    def broken(fh, data):
        fh.write(bytes(memoryview(data)[:100]))
        raise OSError("disk full")

    monkeypatch.setattr("textcause.io.write_chunks", broken)
    with pytest.raises(OSError, match="disk full"):
        ChunkedCheckpointIO().save_checkpoint(_checkpoint(), dest)
    assert dest.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["last.ckpt"]


def test_a_file_url_is_written_at_its_local_path(tmp_path, monkeypatch):
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    ChunkedCheckpointIO().save_checkpoint(_checkpoint(), f"file://{tmp_path}/ckpts/a.ckpt")
    assert torch.load(tmp_path / "ckpts" / "a.ckpt", weights_only=False)["epoch"] == 3
    assert list((tmp_path / "cwd").iterdir()) == []  # no "file:" folder made beside the run


def test_remote_paths_and_storage_options_are_lightnings():
    import fsspec

    ChunkedCheckpointIO().save_checkpoint({"epoch": 2}, "memory://textcause-test/a.ckpt")
    with fsspec.open("memory://textcause-test/a.ckpt", "rb") as fh:
        assert torch.load(fh, weights_only=True)["epoch"] == 2
    with pytest.raises(TypeError, match="storage_options"):
        ChunkedCheckpointIO().save_checkpoint({"epoch": 2}, "x.ckpt", storage_options={"a": 1})


def test_only_lightnings_default_plugin_is_replaced(tmp_path):
    trainer = L.Trainer(default_root_dir=tmp_path, logger=False, enable_progress_bar=False)
    use_chunked_checkpoints(trainer)
    assert type(trainer.strategy.checkpoint_io) is ChunkedCheckpointIO
    chosen = AsyncCheckpointIO()
    trainer = L.Trainer(default_root_dir=tmp_path, logger=False, enable_progress_bar=False, plugins=[chosen])
    use_chunked_checkpoints(trainer)
    assert trainer.strategy.checkpoint_io is chosen


def test_the_cli_trains_with_chunked_checkpoints_that_load(tmp_path):
    from textcause.run.lightning_cli import make_cli

    corpus = write_history_jsonl(tmp_path / "c.jsonl.gz", n_users=120)
    cli = make_cli(
        [
            "fit",
            "--config",
            str(ROOT / "configs" / "model" / "nn_unigram_binary.yaml"),
            "--data.corpus",
            corpus,
            "--data.min_users",
            "3",
            "--trainer.max_epochs",
            "2",
            "--trainer.enable_progress_bar",
            "false",
            "--trainer.default_root_dir",
            str(tmp_path / "run"),
        ]
    )
    assert type(cli.trainer.strategy.checkpoint_io) is ChunkedCheckpointIO
    best = Path(cli.trainer.checkpoint_callback.best_model_path)
    assert best.is_file() and best.name.startswith("best")
    state = torch.load(best, map_location="cpu", weights_only=False)["state_dict"]
    assert state.keys() == cli.model.state_dict().keys()
    assert not [p for p in best.parent.iterdir() if p.name.endswith(".tmp")]

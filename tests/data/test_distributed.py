"""Distributed serving and building: evaluation shards that never repeat a unit, and one cache build
per machine when the ranks of a torchrun / SLURM job start at once."""

from __future__ import annotations

import json
import multiprocessing as mp
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import textcause.data.build as build_module
from textcause.data import CausalTextDataModule
from textcause.data.batches import IndexDataset
from textcause.data.build import DataSettings, build_data, clear_built
from textcause.data.distributed import evaluation_sampler, launched_world_size, one_build_at_a_time
from textcause.paths import cache_root


def fake_trainer(world: int, rank: int) -> SimpleNamespace:
    return SimpleNamespace(world_size=world, global_rank=rank, precision="32-true")


def test_one_process_gets_no_sampler():
    dataset = IndexDataset(np.arange(5))
    assert evaluation_sampler(dataset, None, "val") is None
    assert evaluation_sampler(dataset, fake_trainer(1, 0), "val") is None


@pytest.mark.parametrize("world", [2, 3])
def test_evaluation_shards_hold_every_unit_once(world):
    dataset = IndexDataset(np.arange(100, 123))  # 23 units: a padding sampler would repeat some
    shards = [list(evaluation_sampler(dataset, fake_trainer(world, r), "val")) for r in range(world)]
    positions = sorted(i for shard in shards for i in shard)
    assert positions == list(range(23))
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


def test_a_split_smaller_than_the_world_is_refused():
    with pytest.raises(ValueError, match="The val split has 1 units, fewer than the 2 processes"):
        evaluation_sampler(IndexDataset(np.arange(1)), fake_trainer(2, 0), "val")


def test_the_data_module_shards_its_evaluation_splits(tiny_corpus):
    dm = CausalTextDataModule(corpus=tiny_corpus, n_users=230, min_users=3, batch_size=8)
    served = {}
    for split, loader in (("val", "val_dataloader"), ("test", "test_dataloader"), ("predict", "predict_dataloader")):
        got = []
        for rank in range(2):
            dm.trainer = fake_trainer(2, rank)
            got += [int(i) for batch in getattr(dm, loader)() for i in batch["index"]]
        served[split] = got
    dm.trainer = None
    assert sorted(served["val"]) == dm.task.split.val.tolist()  # 23 units, none repeated
    assert sorted(served["test"]) == sorted(served["predict"]) == dm.task.split.test.tolist()
    # One process: the plain loader, in split order.
    assert [int(i) for b in dm.val_dataloader() for i in b["index"]] == dm.task.split.val.tolist()


def test_launched_world_size(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("SLURM_NTASKS", raising=False)
    assert launched_world_size() == 1
    monkeypatch.setenv("SLURM_NTASKS", "4")
    assert launched_world_size() == 4
    monkeypatch.setenv("WORLD_SIZE", "8")
    assert launched_world_size() == 8


def test_one_process_takes_no_lock(tiny_corpus, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("SLURM_NTASKS", raising=False)
    clear_built()
    build_data(DataSettings(corpus=tiny_corpus, min_users=3, seed=11))
    assert not (cache_root() / "locks").exists()


def _rank(corpus: str, log: str) -> None:
    """One rank of a 'torchrun' job: build the data, recording when its feature build ran."""
    original = build_module._features

    def timed(task, settings, cache):
        started = time.time()
        out = original(task, settings, cache)
        time.sleep(0.3)  # long enough for the other rank to arrive in the meantime
        with open(log, "a") as fh:
            fh.write(json.dumps([started, time.time()]) + "\n")
        return out

    build_module._features = timed
    clear_built()
    build_data(DataSettings(corpus=corpus, min_users=3, seed=12))


def test_ranks_take_turns_on_the_first_build(tiny_corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    log = str(tmp_path / "builds.jsonl")
    ctx = mp.get_context("fork")
    ranks = [ctx.Process(target=_rank, args=(tiny_corpus, log)) for _ in range(2)]
    for p in ranks:
        p.start()
    for p in ranks:
        p.join(60)
    assert [p.exitcode for p in ranks] == [0, 0]
    (a_start, a_end), (b_start, b_end) = sorted(json.loads(line) for line in Path(log).read_text().splitlines())
    assert b_start >= a_end  # the second rank read the caches after the first had filled them
    assert len(list((cache_root() / "locks").glob("build-*.done"))) == 1
    # A later rank finds the marker and takes no lock at all.
    key = DataSettings(corpus=tiny_corpus, min_users=3, seed=12).key()
    with one_build_at_a_time(key):
        pass


def test_a_failed_build_leaves_no_marker(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(RuntimeError, match="boom"), one_build_at_a_time("k1"):
        raise RuntimeError("boom")
    assert not (cache_root() / "locks" / "build-k1.done").exists()
    with one_build_at_a_time("k1"):
        pass
    assert (cache_root() / "locks" / "build-k1.done").exists()

"""A worker forked from the fork server ends when the ``textcause benchmark`` process that started it is SIGKILLed.

Found by ``benchmarks/soak.py``: after a SIGKILL of the command, its two forked workers went on
claiming and finishing every remaining cell for 22 s (until the grid was done). Every client of a
fork server, each forked worker included, holds the write end of the server's "alive" pipe
(``multiprocessing.forkserver``), so the server, the worker's parent, outlives the runner for as
long as any worker lives, and ``PR_SET_PDEATHSIG`` on the server never fires.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TARGET = """
import time

from textcause.grid import worker


def busy(argv, grid=None):  # a worker busy with a long cell
    open("ready", "w").close()
    time.sleep(300)
    return 0


def target(log, cwd, env):
    worker.main = busy
    worker.forked_main([], log, cwd, env)
"""

RUNNER = """
import multiprocessing, os, sys, time

sys.path[:0] = [{root!r}, {here!r}]
import sleepy_worker

if __name__ == "__main__":
    context = multiprocessing.get_context("forkserver")  # what runner._fork_server starts (no preload here)
    process = context.Process(target=sleepy_worker.target, args=({log!r}, os.getcwd(), dict(os.environ)))
    process.start()
    print(process.pid, flush=True)
    time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow  # a fork server and a forked worker that imports textcause.grid.worker: a few seconds
@pytest.mark.skipif(sys.platform != "linux", reason="fork server workers and /proc: Linux")
def test_a_forked_worker_ends_when_its_runner_is_sigkilled(tmp_path):
    (tmp_path / "sleepy_worker.py").write_text(TARGET, encoding="utf-8")
    script = tmp_path / "runner.py"
    script.write_text(
        textwrap.dedent(RUNNER).format(root=str(ROOT), here=str(tmp_path), log=str(tmp_path / "worker.log")),
        encoding="utf-8",
    )
    runner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    worker = int(runner.stdout.readline())
    try:
        end = time.monotonic() + 60
        while not (tmp_path / "ready").exists() and time.monotonic() < end:
            time.sleep(0.05)  # until the worker has set itself up (forked_main) and sleeps in its "cell"
        assert (tmp_path / "ready").exists() and _alive(worker)
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait()
        end = time.monotonic() + 20
        while _alive(worker) and time.monotonic() < end:
            time.sleep(0.1)
        assert not _alive(worker), "the forked worker outlived its runner by 20 s"
    finally:
        if _alive(worker):
            os.kill(worker, signal.SIGKILL)
        if runner.poll() is None:
            runner.kill()


@pytest.mark.slow  # a benchmark command with two forked workers on a tiny grid: 20-90 s
@pytest.mark.skipif(sys.platform != "linux", reason="fork server workers and /proc: Linux")
def test_a_sigtermed_benchmark_stops_its_workers_and_its_archive_matches_its_store(tmp_path, tiny_corpus):
    """``kill`` of ``textcause benchmark --workers 2`` (its workers get no signal of their own): the
    runner used to write its archive, then wait at its exit (multiprocessing joins its children)
    while both workers ran the rest of the grid, leaving the store ahead of the archive."""
    import gzip
    import json
    import sqlite3

    from tinygrid import grid_spec, write_grid_spec

    models = ("oracle", "unadjusted", "lr_unigram_binary")
    spec = grid_spec(
        tiny_corpus, name="tiny", tasks={"linguistic_complexity": [1, 2, 3, 4]}, models=models, seeds=[0, 1]
    )
    config, out, archive = write_grid_spec(tmp_path, spec), tmp_path / "out", tmp_path / "kept.jsonl.gz"
    command = [sys.executable, "-m", "textcause", "benchmark", "--config", str(config), "--out", str(out)]
    runner = subprocess.Popen([*command, "--workers", "2", "--archive", str(archive)], cwd=ROOT, stderr=subprocess.PIPE)

    def ledger() -> list[tuple[str, int]]:
        with contextlib.closing(sqlite3.connect(out / "results.db")) as db:
            return db.execute("SELECT status, pid FROM cells").fetchall()

    try:
        end = time.monotonic() + 300
        while time.monotonic() < end and runner.poll() is None:
            with contextlib.suppress(sqlite3.Error):
                if any(status == "ok" for status, _ in ledger()):
                    break
            time.sleep(0.2)
        assert runner.poll() is None, f"the grid ended before a cell was seen: {runner.stderr.read().decode()[-600:]}"
        os.kill(runner.pid, signal.SIGTERM)
        assert runner.wait(timeout=60) == 143
    finally:
        if runner.poll() is None:
            runner.kill()
    err = runner.stderr.read().decode()
    assert "terminated (SIGTERM): rerun the same command to resume." in err
    finished = sum(status == "ok" for status, _ in ledger())
    workers = {pid for _, pid in ledger() if pid is not None}
    assert workers and not any(_alive(pid) for pid in workers)  # no worker outlives the runner
    time.sleep(2)
    assert sum(status == "ok" for status, _ in ledger()) == finished < 24  # nothing ran on after the stop
    with gzip.open(archive, "rt", encoding="utf-8") as fh:
        assert json.loads(fh.readline())["cells"] == finished  # the archive's last write holds every finished cell

"""A worker forked from the fork server ends when the ``textcause benchmark`` process that started it is SIGKILLed.

Found by ``benchmarks/soak.py``: after a SIGKILL of the command, its two forked workers went on
claiming and finishing every remaining cell for 22 s (until the grid was done). Every client of a
fork server, each forked worker included, holds the write end of the server's "alive" pipe
(``multiprocessing.forkserver``), so the server, the worker's parent, outlives the runner for as
long as any worker lives, and ``PR_SET_PDEATHSIG`` on the server never fires.
"""

from __future__ import annotations

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

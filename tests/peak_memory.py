"""How far a call raises this process's peak resident memory (Linux), for the long-input tests."""

from __future__ import annotations

import re
from pathlib import Path

import pytest


def peak_growth(fn):
    """``fn()`` and how far this process's peak resident memory rose above its memory before it
    (Linux: the peak is reset through ``/proc/self/clear_refs``, so earlier tests do not hide it;
    the test is skipped where it cannot be reset)."""
    status = Path("/proc/self/status")

    def kib(field: str) -> int:
        return int(re.search(rf"{field}:\s+(\d+) kB", status.read_text()).group(1))

    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pytest.skip("the peak memory of a process cannot be reset here")
    before = kib("VmRSS")
    out = fn()
    return out, (kib("VmHWM") - before) * 1024

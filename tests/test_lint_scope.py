"""Lint covers everything that ships: ruff's file list is every tracked Python file, and the
exclude patterns hide only the top-level output folders (a bare ``"runs"`` once hid the package's ``runs/`` room, now ``textcause/run/``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff_files(*extra: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--show-files", *extra, "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {str(Path(line.strip()).resolve().relative_to(ROOT)) for line in out.splitlines() if line.strip()}


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout")
def test_ruff_sees_every_tracked_python_file():
    tracked = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert any(path.startswith("textcause/run/") for path in tracked)
    missing = sorted(set(tracked) - _ruff_files())
    assert missing == [], f"ruff skips tracked files: {missing[:10]}"


def test_the_output_folder_stays_excluded(tmp_path):
    """A stray script under the git-ignored top-level runs/ is not linted (the exclude still works)."""
    runs = ROOT / "runs"
    made = not runs.exists()
    probe = runs / f"lint_probe_{tmp_path.name}"
    probe.mkdir(parents=True)
    try:
        (probe / "probe.py").write_text("import os\n", encoding="utf-8")
        assert not any(path.startswith("runs/") for path in _ruff_files())
    finally:
        (probe / "probe.py").unlink()
        probe.rmdir()
        if made:
            runs.rmdir()

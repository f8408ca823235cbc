"""The type checker's scope: mypy is strict on the lower rooms named in pyproject.toml, `make lint` runs
it (CI runs `make lint`), and a module of another room is not reported yet; `make test` runs the lower
rooms' docstring examples."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[1]
LOWER_ROOMS = ("io", "paths", "progress", "startup", "version", "specs")
LOWER_PACKAGES = (
    "validation",
    "estimators",
    "metrics",
    "simulation",
    "observational",
    "sensitivity",
    "corpus",
    "features",
    "data",
)


def _mypy_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def test_the_lower_rooms_are_checked_strictly():
    config = _mypy_config()
    assert config["strict"] is True
    files = set(config["files"])
    assert {f"textcause/{m}.py" for m in LOWER_ROOMS} | {f"textcause/{p}" for p in LOWER_PACKAGES} <= files
    strict = next(o for o in config["overrides"] if o.get("ignore_errors") is False)["module"]
    # every checked file has its errors reported (a file in `files` left under ignore_errors checks nothing)
    for f in files:
        module = f.removesuffix(".py").replace("/", ".")
        assert module in strict or f"{module}.*" in strict, module


def test_make_lint_runs_the_type_checker():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    lint = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "typecheck" in lint
    assert "$(VENV)/bin/mypy" in makefile.split("\ntypecheck:", 1)[1].split("\n\n", 1)[0]


def test_make_test_runs_the_docstring_examples_of_the_lower_rooms():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    test = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "--doctest-modules $(DOCTEST_PATHS)" in test
    paths = makefile.split("DOCTEST_PATHS :=", 1)[1].split("\n\n", 1)[0].replace("\\\n", " ").split()
    assert paths[0] == "textcause" or {f"textcause/{p}" for p in LOWER_PACKAGES} <= set(paths)  # the whole package


@pytest.mark.parametrize(("room", "reported"), [("estimators", True), ("runs", False)])
def test_an_untyped_function_fails_only_in_a_strict_room(tmp_path, room, reported):
    pytest.importorskip("mypy")
    package = tmp_path / "textcause" / room
    package.mkdir(parents=True)
    (tmp_path / "textcause" / "__init__.py").write_text("", encoding="utf-8")
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "probe.py").write_text("def f(x):\n    return x\n", encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "c"),
        ]
        + [f"textcause/{room}/probe.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    if reported:
        assert result.returncode == 1 and "Function is missing a type annotation" in result.stdout, result.stdout
    else:
        assert result.returncode == 0, result.stdout

"""``textcause --version``: the installed distribution's version."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest

import textcause.version
from textcause.cli import main as cli_main


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_installed_distributions_version(flag, capsys):
    assert cli_main.main([flag]) == 0
    assert capsys.readouterr().out == f"textcause {importlib.metadata.version('textcause')}\n"


def test_an_uninstalled_source_tree_prints_the_packages_version(monkeypatch, capsys):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    monkeypatch.setattr(textcause.version, "__version__", "9.8.7")
    assert cli_main.main(["--version"]) == 0
    assert capsys.readouterr().out == "textcause 9.8.7\n"


def test_the_command_line_prints_it_without_importing_lightning():
    code = (
        "import sys; from textcause.cli.main import main; rc = main(['--version']); "
        "assert 'lightning' not in sys.modules and 'torch' not in sys.modules; sys.exit(rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("textcause ") and out.strip().split()[-1] == importlib.metadata.version("textcause")
    listed = subprocess.run([sys.executable, "-m", "textcause", "--help"], capture_output=True, text=True, check=True)
    assert "textcause --version" in listed.stdout

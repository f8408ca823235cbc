"""Where the package finds its configs, corpora and caches (textcause.paths)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from textcause import paths

ROOT = Path(__file__).resolve().parents[1]


def test_the_checkout_configs_are_found():
    assert paths.config_dir() == ROOT / "configs"
    assert paths.default_configs() == (
        ROOT / "configs" / "trainer" / "default.yaml",
        ROOT / "configs" / "data" / "twitter.yaml",
    )
    assert paths.model_config_path("oracle") == ROOT / "configs" / "model" / "oracle.yaml"
    assert paths.model_config_path("x/y.yaml") == Path("x/y.yaml")


def test_missing_configs_are_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "PROJECT_ROOT", tmp_path)
    monkeypatch.setattr(paths, "_installed_configs", lambda: None)
    with pytest.raises(FileNotFoundError, match="textcause's configs were not found"):
        paths.config_dir()


def test_a_missing_default_config_is_an_error_not_skipped(tmp_path, monkeypatch):
    (tmp_path / "configs" / "trainer").mkdir(parents=True)
    (tmp_path / "configs" / "trainer" / "default.yaml").write_text("trainer: {}\n")
    monkeypatch.setattr(paths, "PROJECT_ROOT", tmp_path)
    monkeypatch.setattr(paths, "_installed_configs", lambda: None)
    with pytest.raises(FileNotFoundError, match=r"default config file\(s\) .*twitter.yaml.* are missing"):
        paths.default_configs()


def test_data_and_cache_roots_follow_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTCAUSE_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("TEXTCAUSE_CACHE", str(tmp_path / "cache"))
    assert paths.resolve_corpus("twitter") == str(tmp_path / "data" / "pan19-twitter-histories.jsonl.gz")
    assert paths.resolve_corpus("my/file.csv") == "my/file.csv"
    assert paths.cache_root() == tmp_path / "cache" and (tmp_path / "cache").is_dir()


@pytest.mark.slow  # builds a wheel (about 10 s)
def test_a_regular_install_carries_the_configs(tmp_path):
    """A non-editable install (a wheel unpacked elsewhere) finds every config through the package."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "wheel"),
            str(ROOT),
        ],
        check=True,
    )
    wheel = next((tmp_path / "wheel").glob("textcause-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n for n in names if n.startswith("textcause/configs/") and n.endswith(".yaml")}
    expected = {
        f"textcause/configs/{p.relative_to(ROOT / 'configs').as_posix()}" for p in (ROOT / "configs").rglob("*.yaml")
    }
    assert shipped == expected
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = "from textcause.paths import config_dir, default_configs; print(config_dir()); print(len(default_configs()))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == [str(site / "textcause" / "configs"), "2"]

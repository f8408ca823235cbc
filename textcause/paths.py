"""Where things are: the configs installed with the package, the corpora, the cache root.

Every path the package needs is decided here, once:

* :func:`config_dir`: the YAML configs. In a checkout (or an editable install) that is the
  top-level ``configs/`` folder; a regular install carries the same folder as package data
  (``textcause/configs``, see ``setup.py``), found through :mod:`importlib.resources`.
* :func:`data_root`: the real corpora, ``$TEXTCAUSE_DATA`` or ``../shared/data`` beside the checkout.
* :func:`cache_root`: ``$TEXTCAUSE_CACHE`` or ``~/.cache/textcause``.

Importing this module is cheap (the standard library only).
"""

from __future__ import annotations

import importlib.resources
import os
from pathlib import Path

__all__ = [
    "PACKAGE_DIR",
    "PROJECT_ROOT",
    "DEFAULT_CONFIG_NAMES",
    "CORPORA",
    "config_dir",
    "default_configs",
    "model_config_path",
    "data_root",
    "resolve_corpus",
    "cache_root",
]

#: The package folder and, in a checkout, the project folder above it.
PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parent

#: The config files every ``train.py`` run starts from, relative to :func:`config_dir`.
DEFAULT_CONFIG_NAMES = ("trainer/default.yaml", "data/twitter.yaml")

#: Short names of the corpora in ../shared/data, usable wherever a corpus path is taken.
CORPORA = {
    "twitter": "pan19-twitter-histories.jsonl.gz",
    "blogs": "blogs-histories.jsonl.gz",
    "reddit-drunk": "reddit-sample/lifestyle_drunk.csv",
}


def _installed_configs() -> Path | None:
    try:
        folder = Path(str(importlib.resources.files("textcause") / "configs"))
    except (ModuleNotFoundError, TypeError):
        return None
    return folder if folder.is_dir() else None


def config_dir() -> Path:
    """The folder of the YAML configs: the installed copy (``textcause/configs``), else the checkout's ``configs/``.

    Raises:
        FileNotFoundError: neither exists (a broken install).
    """
    for folder in (_installed_configs(), PROJECT_ROOT / "configs"):
        if folder is not None and (folder / DEFAULT_CONFIG_NAMES[0]).is_file():
            return folder
    raise FileNotFoundError(
        f"textcause's configs were not found (looked in {PROJECT_ROOT / 'configs'} and the installed package): "
        "reinstall textcause."
    )


def default_configs() -> tuple[Path, ...]:
    """The default config files of every run (trainer defaults, then the Twitter data defaults).

    Raises:
        FileNotFoundError: one of them is missing: a run without them would train with no early
            stopping, checkpoint or causal-metrics callback, so this is an error, never skipped.
    """
    folder = config_dir()
    paths = tuple(folder / name for name in DEFAULT_CONFIG_NAMES)
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"The default config file(s) {missing} are missing: reinstall textcause.")
    return paths


def model_config_path(name: str) -> Path:
    """The model YAML of a config name (``configs/<name>.yaml``) or of a path ending in .yaml / .yml."""
    return Path(name) if name.endswith((".yaml", ".yml")) else config_dir() / f"{name}.yaml"


def data_root() -> Path:
    """The folder of the real corpora: ``$TEXTCAUSE_DATA`` or ``../shared/data`` beside the project."""
    env = os.environ.get("TEXTCAUSE_DATA")
    if env:
        return Path(env)
    return PROJECT_ROOT.parent / "shared" / "data"


def resolve_corpus(source: str | os.PathLike[str]) -> str:
    """Map a short corpus name (``twitter``, ``blogs``, ``reddit-drunk``) to its path under the data root.

    Anything else (a path, a Hugging Face dataset name) is returned unchanged.
    """
    s = str(source)
    if s in CORPORA:
        return str(data_root() / CORPORA[s])
    return s


def cache_root() -> Path:
    """The cache folder: ``$TEXTCAUSE_CACHE`` or ``~/.cache/textcause`` (created on demand)."""
    root = Path(os.environ.get("TEXTCAUSE_CACHE") or Path.home() / ".cache" / "textcause")
    root.mkdir(parents=True, exist_ok=True)
    return root

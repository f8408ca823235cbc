"""Where things are: the configs installed with the package, the corpora, the cache root.

Every path the package needs is decided here, once:

* :func:`config_dir`: the YAML configs. In a checkout (or an editable install) that is the
  top-level ``configs/`` folder; a regular install carries the same folder as package data
  (``textcause/configs``, see ``setup.py``), found through :mod:`importlib.resources`. One folder
  per kind of config: ``model/``, ``data/``, ``trainer/``, ``benchmark/``, ...
* :func:`model_config_path`: a model config by its bare name (``lr_bigram_binary`` is
  ``configs/model/lr_bigram_binary.yaml``) or by path; a model config's old place at the top of
  ``configs/`` still works for one release, with a :class:`FutureWarning` naming the new path
  (:func:`resolve_config_path`).
* :func:`data_root`: the real corpora, ``$TEXTCAUSE_DATA`` or ``../shared/data`` beside the checkout.
* :func:`cache_root`: ``$TEXTCAUSE_CACHE`` or ``~/.cache/textcause``.

Importing this module is cheap (the standard library only).
"""

from __future__ import annotations

import importlib.resources
import os
import warnings
from pathlib import Path

__all__ = [
    "PACKAGE_DIR",
    "PROJECT_ROOT",
    "DEFAULT_CONFIG_NAMES",
    "CORPORA",
    "config_dir",
    "default_configs",
    "MODEL_CONFIG_FOLDER",
    "model_config_dir",
    "model_config_names",
    "model_config_path",
    "moved_config",
    "resolve_config_path",
    "data_root",
    "resolve_corpus",
    "cache_root",
]

#: The package folder and, in a checkout, the project folder above it.
PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parent

#: The config files every ``train.py`` run starts from, relative to :func:`config_dir`.
DEFAULT_CONFIG_NAMES = ("trainer/default.yaml", "data/twitter.yaml")

#: The folder of the model configs under :func:`config_dir` (until release 0.2 they lay at its top).
MODEL_CONFIG_FOLDER = "model"

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


def model_config_dir() -> Path:
    """The folder of the model configs: ``configs/model``.

    Raises:
        FileNotFoundError: the configs are not found (see :func:`config_dir`).
    """
    return config_dir() / MODEL_CONFIG_FOLDER


def model_config_names() -> list[str]:
    """The bare names of the model configs, sorted (``joint_pooled``, ..., ``unadjusted``).

    >>> "lr_bigram_binary" in model_config_names()
    True
    """
    return sorted(p.stem for p in model_config_dir().glob("*.yaml"))


def moved_config(path: str | os.PathLike[str]) -> Path | None:
    """Where a model config given at its old place (``configs/<name>.yaml``) now is; None for any other path.

    A path is at the old place when it does not exist, its folder is named ``configs`` (or is
    :func:`config_dir`) and ``model/<name>`` beside it exists. The new path keeps the old one's form
    (``configs/lr_bigram_binary.yaml`` -> ``configs/model/lr_bigram_binary.yaml``).

    >>> moved_config("configs/lr_bigram_binary.yaml").as_posix().endswith("configs/model/lr_bigram_binary.yaml")
    True
    >>> moved_config("configs/model/lr_bigram_binary.yaml") is None
    True
    """
    old = Path(path)
    if old.suffix not in (".yaml", ".yml") or old.exists():
        return None
    candidates = []
    if old.parent.name == "configs":
        candidates.append(old.parent / MODEL_CONFIG_FOLDER / old.name)
    try:
        if old.parent.resolve() == config_dir().resolve() or old.parent.name == "configs":
            candidates.append(model_config_dir() / old.name)
    except FileNotFoundError:
        pass
    return next((c for c in candidates if c.is_file()), None)


def resolve_config_path(path: str | os.PathLike[str]) -> Path:
    """``path``, or the new place of a model config given at its old one (with a :class:`FutureWarning`).

    The old place (``configs/<name>.yaml``) keeps working for one release; the warning names the new
    path. The file's text is what a grid cell's config hash covers, never its path, so a cell is the
    same cell either way.
    """
    new = moved_config(path)
    if new is None:
        return Path(path)
    warnings.warn(
        f"the model config {os.fspath(path)} has moved to {new.as_posix()}; the old path goes in the next release.",
        FutureWarning,
        stacklevel=2,
    )
    return new


def model_config_path(name: str) -> Path:
    """The model YAML of a bare config name (``configs/model/<name>.yaml``) or of a path ending in .yaml / .yml.

    A path at a model config's old place resolves to its new one (:func:`resolve_config_path`).

    >>> model_config_path("oracle").parts[-2:]
    ('model', 'oracle.yaml')
    """
    if name.endswith((".yaml", ".yml")):
        return resolve_config_path(name)
    return model_config_dir() / f"{name}.yaml"


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

"""What a saved run's config may name: classes under the allowed packages, of the kind each place expects.

A saved run's config (``evaluate.py``, ``textcause predict``) is checked by :func:`check_class_paths`
before anything it names is imported: every ``class_path`` must lie under :data:`ALLOWED_PACKAGES`
(or a package the user allows explicitly) and resolve to a subclass of what its place expects (a
``LightningModule`` for ``model``, a ``LightningDataModule`` for ``data``, an ``nn.Module`` for
``model...net``).
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional

__all__ = ["ALLOWED_PACKAGES", "check_class_paths", "class_from_path"]

#: The packages whose classes a saved run config may name without the user allowing more.
ALLOWED_PACKAGES = ("textcause", "lightning", "torch", "torchmetrics")
#: Keys whose plain string value the parser may take for a class to import (besides ``class_path``).
_CLASS_VALUED = ("model", "data", "net", "logger", "callbacks", "strategy", "plugins", "profiler", "accelerator")
_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")


def class_from_path(class_path: Any) -> Optional[type]:
    """The class a dotted ``class_path`` names (importing its module), or None if there is none."""
    if not isinstance(class_path, str) or "." not in class_path:
        return None
    module, _, name = class_path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    return cls if isinstance(cls, type) else None


def _expected_bases() -> dict[str, type]:
    import lightning as L
    import torch
    from lightning.pytorch.callbacks import Callback
    from lightning.pytorch.loggers import Logger

    return {
        "model": L.LightningModule,
        "data": L.LightningDataModule,
        "model.init_args.net": torch.nn.Module,
        "trainer.callbacks": Callback,
        "trainer.logger": Logger,
    }


def _named_classes(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every (place, import path) a config could make the parser import."""
    if isinstance(value, Mapping):
        path = value.get("class_path")
        if isinstance(path, str):
            yield where, path
        for key, item in value.items():
            if key == "class_path":
                continue
            sub = f"{where}.{key}" if where else str(key)
            if isinstance(item, str) and key in _CLASS_VALUED and _DOTTED.match(item):
                yield sub, item
            else:
                yield from _named_classes(item, sub)
    elif isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, str) and where.rsplit(".", 1)[-1] in _CLASS_VALUED and _DOTTED.match(item):
                yield where, item
            else:
                yield from _named_classes(item, where)


def _allowed(path: str, packages: Sequence[str]) -> bool:
    if "." not in path:  # a bare class name: resolved among classes already imported, never imported
        return True
    return any(path == pkg or path.startswith(pkg.rstrip(".") + ".") for pkg in packages)


def check_class_paths(config: Mapping[str, Any], source: str, *, allow: Sequence[str] = ()) -> None:
    """Refuse a run config naming classes outside the allowed packages, or of the wrong kind.

    Every import path is checked against ``ALLOWED_PACKAGES + allow`` BEFORE anything is imported;
    then each is imported and must be a class, and a subclass of what its place expects.

    Args:
        config: the run's config (as read from its ``config.yaml``).
        source: the file, for the message.
        allow: more package prefixes the user trusts (``--allow-module``).

    Raises:
        ValueError: one sentence naming the file, the key and the class.
    """
    packages = tuple(ALLOWED_PACKAGES) + tuple(str(a) for a in allow)
    named = list(_named_classes(config, ""))
    for where, path in named:
        if not _allowed(path, packages):
            raise ValueError(
                f"The run config '{source}' names the class '{path}' at '{where}', outside the packages "
                f"{', '.join(packages)}: it was not imported (pass --allow-module "
                f"{path.split('.')[0]} if you trust this run folder)."
            )
    bases = _expected_bases()
    for where, path in named:
        if "." not in path:
            continue
        module, _, name = path.rpartition(".")
        try:
            cls = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            raise ValueError(
                f"The run config '{source}' names the class '{path}' at '{where}', which does not exist."
            ) from None
        base = bases.get(where)
        if not inspect.isclass(cls) or (base is not None and not issubclass(cls, base)):
            kind = f"a {base.__name__} subclass" if base is not None else "a class"
            raise ValueError(f"The run config '{source}' names '{path}' at '{where}', which is not {kind}.")

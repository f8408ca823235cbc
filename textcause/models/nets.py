"""The network a LightningModule receives: how to rebuild it from a checkpoint, and what data it needs.

Checkpoints rebuild themselves: a module that calls :func:`save_net_config` stores the network's
rebuild config (:func:`net_config`) as ``hparams["net"]``, and :func:`as_net` / :func:`build_net` turn
it back into the network, so ``load_from_checkpoint(path)`` needs no arguments. A network that needs
data built a certain way declares it (``net.data_requirements()``), and
:func:`check_data_requirements` compares it with the data module's settings at setup.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import warnings
from collections.abc import Mapping
from typing import Any, Optional

import lightning as L
from torch import nn

__all__ = [
    "as_net",
    "build_net",
    "check_data_requirements",
    "net_config",
    "save_net_config",
]


def net_config(net: nn.Module) -> Optional[dict[str, Any]]:
    """``{"class_path", "init_args"}`` that rebuilds ``net``, or None if it cannot be read off.

    The init arguments are read from attributes named like the ``__init__`` parameters (the
    convention of ``textcause.models.components``, as scikit-learn's ``get_params``); a parameter
    without such an attribute, or with a value that is not a plain YAML scalar/list/dict, gives None.
    """
    cls = type(net)
    init_args: dict[str, Any] = {}
    for name, param in inspect.signature(cls.__init__).parameters.items():
        if name == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if not hasattr(net, name):
            return None
        value = getattr(net, name)
        if not _is_plain(value):
            return None
        init_args[name] = value
    return {"class_path": f"{cls.__module__}.{cls.__qualname__}", "init_args": init_args}


def build_net(config: dict[str, Any]) -> nn.Module:
    """Instantiate a network from a ``{"class_path", "init_args"}`` dict (as stored in checkpoints).

    Only modules already imported, or inside the ``textcause`` package, are looked up: a checkpoint
    cannot make this import arbitrary code.

    Raises:
        ValueError: a malformed config, an unknown class, or a class that is not an ``nn.Module``.
    """
    class_path = config.get("class_path") if isinstance(config, dict) else None
    if not isinstance(class_path, str) or "." not in class_path:
        raise ValueError(
            f"The 'net' config must be a dict with a dotted 'class_path' and 'init_args'. Got {config!r} instead."
        )
    module_name, _, name = class_path.rpartition(".")
    module = sys.modules.get(module_name)
    if module is None and (module_name == "textcause" or module_name.startswith("textcause.")):
        module = importlib.import_module(module_name)
    cls = getattr(module, name, None) if module is not None else None
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise ValueError(
            f"The net class {class_path!r} is not an imported torch nn.Module: import the module that "
            "defines it before loading the checkpoint."
        )
    return cls(**dict(config.get("init_args") or {}))


def as_net(net: Any, owner: str) -> nn.Module:
    """The network a LightningModule receives: a module, or a ``{"class_path", "init_args"}`` dict (checkpoints).

    Raises:
        ValueError: ``net`` is neither.
    """
    module = build_net(net) if isinstance(net, dict) else net
    if not isinstance(module, nn.Module):
        raise ValueError(f"The 'net' parameter of {owner} must be a torch nn.Module. Got {type(net).__name__} instead.")
    return module


def save_net_config(model: L.LightningModule, owner: str) -> None:
    """Add to ``model``'s hyperparameters how to rebuild ``model.net`` (call after ``save_hyperparameters(ignore=["net"])``).

    The module itself is in the state dict; the config is read off the module (:func:`net_config`:
    the real ``input_dim``, even where the CLI's parsed config left it to a link), so
    ``load_from_checkpoint(path)`` needs no arguments. A network that does not expose its ``__init__``
    arguments gets a warning instead.
    """
    config = net_config(model.net)
    if config is None:
        warnings.warn(
            f"{type(model.net).__name__} does not expose its __init__ arguments as attributes: pass "
            f"net=... to {owner}.load_from_checkpoint.",
            stacklevel=3,
        )
    else:
        model.save_hyperparameters({"net": config})  # merged into the saved ones


def _is_plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    return False


def check_data_requirements(net: nn.Module, settings: Any) -> None:
    """Refuse data settings that do not give ``net`` the data it declares it needs.

    Args:
        net: a network; one with a ``data_requirements()`` method returns ``{setting: value}``
            (fields of :class:`~textcause.data.build.DataSettings`) or None when any data will do.
            An ``encoder`` is compared by identity (the same weights under another name or path
            are the same encoder).
        settings: the data module's settings (``datamodule.settings``).

    Raises:
        ValueError: a setting differs from the required value (the message names the setting and
            the value to set).
    """
    declared = getattr(net, "data_requirements", None)
    needs: Optional[Mapping[str, Any]] = declared() if callable(declared) else None
    for key, want in (needs or {}).items():
        if not hasattr(settings, key):
            raise ValueError(
                f"{type(net).__name__} requires the data setting {key!r}, which the data module does not have."
            )
        have = getattr(settings, key)
        if key == "encoder":
            from textcause.features.encoder_spec import check_same_encoder

            check_same_encoder(
                have,
                want,
                f"{_describe(net)} needs the token states of its own encoder {want!r}, not of the data "
                f"module's encoder {have!r}: set data.encoder to the encoder of its layers.",
            )
        elif have != want:
            raise ValueError(f"{_describe(net)} needs data.{key}={want!r}. Got {have!r} instead.")


def _describe(net: nn.Module) -> str:
    """``Name(extra_repr)`` of a network in one line, e.g. ``SHERBERT(input_dim=32, ..., unfreeze_top=1, ...)``."""
    extra = net.extra_repr().replace("\n", " ")
    return f"{type(net).__name__}({extra})" if extra else type(net).__name__

"""Where a run's outputs go: ``--trainer.default_root_dir`` moves them.

Lightning writes a run's checkpoints, ``config.yaml`` and ``metrics.csv`` into its first logger's
folder (``<save_dir>/<name>/version_N``), and uses ``trainer.default_root_dir`` only when no logger
is given. textcause's trainer defaults give a CSV logger whose ``save_dir`` is the same ``runs`` as
their ``default_root_dir`` (a model config such as ``configs/gender/finetune.yaml`` pairs
``runs/gender`` with ``runs/gender``), so a ``--trainer.default_root_dir elsewhere/`` alone used to
change nothing. Here a logger whose ``save_dir`` is a root that a config file gives
(:func:`config_roots`) follows the resolved ``default_root_dir`` (:func:`follow_root`); a logger
given a folder of its own (``--trainer.logger.init_args.save_dir mine``, or a config that puts it
elsewhere than its root) keeps it. Everything else follows the logger: the checkpoints, the model
card and figure of ``train.py test`` / ``evaluate.py``, and the run that ``--ckpt_path last`` resumes
(:mod:`textcause.run.resume` looks under the CSV logger's folder).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

__all__ = ["config_roots", "follow_root"]


def _norm(path: Any) -> str:
    return os.path.normpath(str(path))


def follow_root(trainer: Any, roots: Iterable[str]) -> int:
    """Move the loggers of a trainer config whose ``save_dir`` is one of ``roots`` to its ``default_root_dir``.

    Args:
        trainer: the ``trainer`` part of a config (a mapping or a jsonargparse namespace), changed in place.
        roots: the ``default_root_dir`` values the config files give (:func:`config_roots`).

    Returns:
        How many loggers were moved (0 when ``default_root_dir`` is unset or is where they are already).

    Examples:
        >>> trainer = {"default_root_dir": "elsewhere", "logger": {"init_args": {"save_dir": "runs"}}}
        >>> follow_root(trainer, {"runs"}), trainer["logger"]["init_args"]["save_dir"]
        (1, 'elsewhere')
    """
    root = trainer.get("default_root_dir") if trainer is not None else None
    if root is None:
        return 0
    given = {_norm(r) for r in roots}
    loggers = trainer.get("logger")
    moved = 0
    for logger in loggers if isinstance(loggers, list) else [loggers]:
        args = logger.get("init_args") if hasattr(logger, "get") else None
        save_dir = args.get("save_dir") if args is not None and hasattr(args, "get") else None
        if save_dir is not None and _norm(save_dir) in given and _norm(save_dir) != _norm(root):
            args["save_dir"] = str(root)
            moved += 1
    return moved


def config_roots(config_files: Iterable[Any], subcommand: str | None = None) -> set[str]:
    """The ``trainer.default_root_dir`` values that ``config_files`` give (a subcommand's section too).

    Args:
        config_files: the default config files and the ``--config`` files, as paths (jsonargparse's
            ``Path`` objects are read through their ``absolute`` path); a file that cannot be read
            gives nothing (it was parsed already, or is not a config file).
        subcommand: also read ``<subcommand>: trainer: ...`` sections.
    """
    import yaml

    from textcause.io import load_yaml

    roots: set[str] = set()
    for path in config_files:
        try:
            absolute = getattr(path, "absolute", None)  # a jsonargparse Path's; a pathlib Path's is a method
            with open(absolute if isinstance(absolute, str) else str(path), encoding="utf-8") as fh:
                config = load_yaml(fh.read())
        except (OSError, UnicodeDecodeError, yaml.YAMLError):  # the parser has reported such a file already
            continue
        if not isinstance(config, dict):
            continue
        sections = [config, config.get(subcommand)] if subcommand else [config]
        for section in sections:
            trainer = section.get("trainer") if isinstance(section, dict) else None
            if isinstance(trainer, dict) and trainer.get("default_root_dir") is not None:
                roots.add(str(trainer["default_root_dir"]))
    return roots

"""Checks of a ``train.py`` / ``textcause train`` command line made before Lightning is imported.

Importing Lightning, torch and the data module takes seconds (far more on a busy machine), and the
parser only sees the command line after that. What can be checked from the text alone is checked
here first, with the closest valid name suggested (:func:`difflib.get_close_matches`):

* an unknown top-level option, ``--trainer.X`` (the arguments of ``lightning.Trainer``) or ``--data.X``
  (the arguments of :class:`~textcause.data.CausalTextDataModule`, when the data module is that one);
* ``--data.task`` naming no registered task, ``--data.level`` outside the levels of the task (given
  on the command line, in a ``--config`` file, or the default data config).

The option names come from the classes' source (:mod:`ast`), so nothing heavy is imported. Anything
this module cannot tell for sure (another data module, a config it cannot read, a value that is not
a plain token) is left to the full parser, which says it later.
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib.util
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "TOP_LEVEL",
    "early_error",
]

#: The top-level options of each subcommand (besides ``--help``), as LightningCLI builds them.
TOP_LEVEL = {
    "fit": ("config", "print_config", "seed_everything", "trainer", "model", "data", "ckpt_path", "weights_only"),
    "validate": ("config", "print_config", "seed_everything", "trainer", "model", "data", "ckpt_path", "verbose"),
    "test": ("config", "print_config", "seed_everything", "trainer", "model", "data", "ckpt_path", "verbose"),
    "predict": ("config", "print_config", "seed_everything", "trainer", "model", "data", "ckpt_path"),
}
for _sub in ("validate", "test", "predict"):
    TOP_LEVEL[_sub] += ("weights_only",) + (("evaluation",) if _sub == "test" else ())
TOP_LEVEL["predict"] += ("return_predictions",)
_DEFAULT_DATA = "textcause.data.CausalTextDataModule"


def early_error(argv: Sequence[str], prog: str = "train.py") -> str | None:
    """The sentence for the first mistake in ``argv`` that is certain without importing Lightning, or None."""
    args = [str(a) for a in argv]
    if not args or args[0] not in TOP_LEVEL or {"-h", "--help"} & set(args):
        return None
    sub = args[0]
    options = _options(args[1:])
    see = f"(all options: {prog} {sub} --help)"
    data_class = _data_class(options)
    for key, _ in options:
        parts = key.rstrip("+").split(".")
        if parts[0] not in TOP_LEVEL[sub]:
            return _unknown(f"--{key}", [f"--{o}" for o in TOP_LEVEL[sub]], see)
        if len(parts) < 2:
            continue
        if parts[0] == "trainer":
            names = _init_args(_lightning_file("pytorch/trainer/trainer.py"), "Trainer")
        elif parts[0] == "data" and data_class == _DEFAULT_DATA and parts[1] not in ("class_path", "init_args"):
            names = _init_args(Path(__file__).resolve().parents[1] / "data" / "datamodule.py", "CausalTextDataModule")
        else:
            continue
        if names and parts[1] not in names:
            return _unknown(f"--{parts[0]}.{parts[1]}", [f"--{parts[0]}.{n}" for n in names], see)
    if data_class != _DEFAULT_DATA or _names_other_packages(args):
        return None  # another package's class may register more tasks when it is imported
    return _task_error(options)


def _options(args: Sequence[str]) -> list[tuple[str, str | None]]:
    """``(key, value)`` of every ``--key value`` / ``--key=value`` (value None: none follows)."""
    out = []
    for i, arg in enumerate(args):
        if not arg.startswith("--") or arg == "--":
            continue
        key, eq, value = arg[2:].partition("=")
        if not eq:
            nxt = args[i + 1] if i + 1 < len(args) else None
            value = nxt if nxt is not None and not nxt.startswith("--") else None
        out.append((key, value))
    return out


def _unknown(given: str, valid: Sequence[str], see: str) -> str:
    close = difflib.get_close_matches(given, valid, n=1, cutoff=0.6)
    return f"Unknown option {given}: did you mean {close[0]}? {see}" if close else f"Unknown option {given} {see}"


def _lightning_file(relative: str) -> Path | None:
    spec = importlib.util.find_spec("lightning")  # the top-level package only: nothing is imported
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / relative


@functools.cache
def _init_args(path: Path | None, cls: str) -> tuple[str, ...]:
    """The named ``__init__`` arguments of class ``cls`` in the source file ``path`` (empty: not found,
    or it takes ``**kwargs``: then any name may be valid)."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8")) if path is not None else None
    except (OSError, SyntaxError, ValueError):
        return ()
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    a = item.args
                    if a.kwarg is not None:
                        return ()
                    return tuple(x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs] if x.arg != "self")
    return ()


def _load_yaml(path: str) -> Any:
    try:
        import yaml

        return yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except Exception:  # unreadable or malformed: the full parser says so
        return None


def _data_configs(options: list[tuple[str, str | None]]) -> list[dict[str, Any]]:
    """The ``data`` mappings in effect, lowest priority first: the default data config, then each ``--config``."""
    from textcause.paths import default_configs

    try:
        defaults = [str(p) for p in default_configs()]
    except FileNotFoundError:  # a broken install: the full parser says so
        defaults = []
    found = []
    for path in [*defaults, *(v for k, v in options if k == "config" and v)]:
        config = _load_yaml(path)
        if isinstance(config, dict) and isinstance(config.get("data"), dict):
            found.append(config["data"])
    return found


def _data_class(options: list[tuple[str, str | None]]) -> str | None:
    """The data module's class path, or None when it cannot be told from the text."""
    if any(k == "data" or k.startswith(("data.class_path", "data.init_args")) for k, _ in options):
        return None
    cls = _DEFAULT_DATA
    for data in _data_configs(options):
        cls = str(data.get("class_path", cls))
    return cls


def _names_other_packages(args: Sequence[str]) -> bool:
    """Whether the command line or its ``--config`` files name a class outside textcause, lightning, torch."""
    texts = list(args)
    for key, value in _options(args):
        if key == "config" and value:
            try:
                texts.append(Path(value).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                return True
    paths = re.findall(r"class_path\W+([A-Za-z_][\w]*)", "\n".join(texts))
    return any(p not in ("textcause", "lightning", "torch", "torchmetrics") for p in paths)


def _task_error(options: list[tuple[str, str | None]]) -> str | None:
    given = {k: v for k, v in options if k in ("data.task", "data.level")}
    if not given:
        return None
    task = given.get("data.task")
    if task is None:
        for data in _data_configs(options):
            task = str(data.get("task", task)) if data.get("task") is not None else task
    from textcause.simulation.tasks import TASKS  # no torch, no Lightning

    if task is None or task not in TASKS:
        if "data.task" not in given or task is None:
            return None
        close = difflib.get_close_matches(task, list(TASKS), n=1, cutoff=0.6)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return f"Unknown task '{task}'{hint}. Choose one of {list(TASKS)}."
    level = given.get("data.level")
    if level is None:
        return None
    try:
        number = int(level)
    except ValueError:
        return None  # not an int: the parser says what it expects
    levels = list(TASKS[task].levels)
    if number not in levels:
        return f"The task '{task}' has levels {levels}. Got level {number} instead."
    return None

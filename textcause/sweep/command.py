"""A sweep's ``command``: the train.py line ``wandb agent`` runs, read into config files and options.

Its ``--config`` files are each trial's model configs and its ``--key=value`` options their
overrides; ``${args}`` is where the trial's parameters go (:func:`parse_command`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

import yaml

from textcause.paths import config_dir, resolve_config_path
from textcause.specs import SpecFile

__all__ = ["ARGS_MACROS", "COMMAND_DOC", "OPTION", "parse_command"]

ARGS_MACROS = ("${args}", "${args_no_equals}")
_DROPPED_MACROS = ("${env}", "${interpreter}")
OPTION = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_FLOAT = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+$")
COMMAND_DOC = (
    "the train.py fit command as a list of strings, e.g. [${env}, ${interpreter}, ${program}, fit, "
    "--config, configs/model/sherbert_pooled.yaml, ${args}]"
)


def _yaml_value(text: str) -> Any:
    """A command-line value as jsonargparse reads it: YAML, with ``1e-05`` (wandb's float format) a float."""
    if _FLOAT.match(text):
        return float(text)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def _config_path(value: str, file: SpecFile) -> Path:
    path = resolve_config_path(value)  # a model config's old place: its new one, with a FutureWarning
    if path.is_file():
        return path
    parts = path.parts
    if not path.is_absolute() and parts and parts[0] == "configs" and (config_dir().joinpath(*parts[1:])).is_file():
        return config_dir().joinpath(*parts[1:])  # a non-editable install: the packaged configs
    raise file.fail(f"'command' names the config file '{value}', which does not exist.")


def parse_command(command: list[str], program: Optional[str], file: SpecFile) -> tuple[list[Path], dict[str, Any]]:
    """The ``--config`` files and ``--key=value`` options of a sweep's train.py command.

    Raises:
        ValueError: one sentence (through ``file``) for a command that is not ``train.py fit ... ${args}``,
            an option without a value, or a missing config file.
    """
    tokens = [str(t) for t in command]
    if "fit" not in tokens:
        raise file.fail(f"'command' must be {COMMAND_DOC}. Got {tokens!r} instead.")
    at = tokens.index("fit")
    if "${program}" in tokens[:at] and not program:
        raise file.fail("the key 'program' is required: 'command' uses ${program}.")
    launcher = [program if t == "${program}" else t for t in tokens[:at] if t not in _DROPPED_MACROS]
    names = [Path(str(t)).name for t in launcher]
    if "train.py" not in names and not any(a == "textcause" and b == "train" for a, b in zip(names, names[1:])):
        raise file.fail(f"'command' must run train.py fit (or textcause train fit). Got {tokens[: at + 1]!r} instead.")
    rest = tokens[at + 1 :]
    macros = [t for t in rest if t.startswith("${")]
    if len([t for t in macros if t in ARGS_MACROS]) != 1 or any(t not in ARGS_MACROS for t in macros):
        raise file.fail(
            "'command' must pass the parameters once with ${args} (or ${args_no_equals}) after fit, "
            f"the --key=value options train.py reads. Got {rest!r} instead."
        )
    configs: list[Path] = []
    overrides: dict[str, Any] = {}
    i = 0
    while i < len(rest):
        token = rest[i]
        i += 1
        if token in ARGS_MACROS:
            continue
        name, eq, value = token[2:].partition("=") if token.startswith("--") else ("", "", "")
        if not OPTION.match(name):
            raise file.fail(f"'command' has {token!r} after fit; expected --config FILE or --option=value.")
        if not eq:
            if i >= len(rest) or rest[i].startswith(("--", "${")):
                raise file.fail(f"'command' gives no value to --{name}.")
            value, i = rest[i], i + 1
        if name == "config":
            configs.append(_config_path(value, file))
        else:
            overrides[name] = _yaml_value(value)
    if not configs:
        raise file.fail("'command' must name a model config with --config (e.g. configs/model/sherbert_pooled.yaml).")
    return configs, overrides

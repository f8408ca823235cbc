"""The one flag style of every command, its deprecated spellings, and ``--help`` as plain text.

The flag rule, for ``train.py``, ``evaluate.py`` and every ``textcause`` subcommand:

* A flag that sets a key of a run's config (the ``data``, ``model``, ``trainer`` and
  ``evaluation`` groups that ``train.py`` reads from YAML) is spelled as that key, dotted:
  ``--data.author_col``, ``--evaluation.n_boot``. One key has one spelling in the YAML, in
  ``train.py`` and in every other command that takes it.
* Every other flag (what the command reads and writes, how it runs) is kebab-case:
  ``--out``, ``--dry-run``, ``--retry-failed``, ``--allow-module``.
* ``train.py``'s own LightningCLI options keep their names (``--print_config``, ``--ckpt_path``,
  ``--seed_everything``: the saved config's top-level keys).

An old spelling keeps working for one release: :class:`CommandParser` rewrites it to the new one
and says so in one line on stderr. Help texts are module docstrings written for Sphinx; a
terminal shows them through :func:`plain_text` (no double backticks, no ``:func:`` roles).

Importing this module is cheap (the standard library only).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "CommandParser",
    "lightning_help_kwargs",
    "options",
    "plain_text",
    "progress_option",
    "rewrite_config_args",
    "rewrite_renamed",
]

_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|obj|exc|const|ref|doc|term):`~?([^`]+)`")
_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)
_INTERPRETED = re.compile(r"(?<![`\w])`([^`\n]+)`(?![`\w])")


def plain_text(text: str) -> str:
    """``text`` with Sphinx markup rendered as plain text for a terminal.

    ``:func:`a.b``` and ``:class:`~a.B``` become ``a.b`` and ``B``; double and single backticks are
    dropped around what they quote. Anything else is unchanged.

    >>> plain_text("see :func:`textcause.run.fit.evaluate_run` and ``--out`` (`wandb sweep`)")
    'see textcause.run.fit.evaluate_run and --out (wandb sweep)'
    >>> plain_text(":class:`~textcause.run.evaluation.EvaluationSettings`")
    'EvaluationSettings'
    """

    def role(match: re.Match[str]) -> str:
        target = match.group(1)
        if match.group(0).split("`", 1)[1].startswith("~"):
            return target.rsplit(".", 1)[-1]
        return target

    text = _ROLE.sub(role, text)
    text = _LITERAL.sub(r"\1", text)
    return _INTERPRETED.sub(r"\1", text)


def rewrite_renamed(args: Sequence[str], renamed: Mapping[str, str], prog: str) -> list[str]:
    """``args`` with each old flag spelling replaced by its new one, one stderr line per old flag.

    Both ``--old VALUE`` and ``--old=VALUE`` are rewritten; anything after ``--`` is left alone.

    >>> rewrite_renamed(["run", "--n-boot=5"], {"--n-boot": "--evaluation.n_boot"}, "x")
    ['run', '--evaluation.n_boot=5']
    """
    out: list[str] = []
    warned: set[str] = set()
    rest = False
    for arg in args:
        flag, eq, value = arg.partition("=")
        if not rest and flag in renamed:
            new = renamed[flag]
            if flag not in warned:
                warned.add(flag)
                print(f"{prog}: {flag} is deprecated and goes in the next release; use {new}.", file=sys.stderr)
            arg = new + eq + value
        rest = rest or arg == "--"
        out.append(arg)
    return out


def rewrite_config_args(args: Sequence[str], prog: str) -> list[str]:
    """``train.py`` arguments with a model config at its old place (``--config configs/<name>.yaml``)
    given its new one (``configs/model/<name>.yaml``), one stderr line each.

    The old place keeps working for one release (:func:`textcause.paths.moved_config`).

    >>> rewrite_config_args(["fit", "--config", "configs/model/oracle.yaml"], "train.py")
    ['fit', '--config', 'configs/model/oracle.yaml']
    """
    from textcause.paths import moved_config

    out = list(args)
    for i, arg in enumerate(out):
        flag, eq, value = arg.partition("=")
        if eq and flag in ("--config", "-c"):
            at, old = i, value
        elif arg in ("--config", "-c") and i + 1 < len(out):
            at, old = i + 1, out[i + 1]
        else:
            continue
        new = moved_config(old)
        if new is not None:
            print(
                f"{prog}: {old} has moved to {new.as_posix()}; the old path goes in the next release.", file=sys.stderr
            )
            out[at] = f"{flag}={new.as_posix()}" if at == i else new.as_posix()
    return out


class CommandParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` with the house's help text and deprecated spellings.

    * The help and usage are plain text (:func:`plain_text`), so a description taken from a module
      docstring reads well in a terminal; the description keeps its own line breaks.
    * ``renamed`` maps old flag spellings to new ones: an old one still parses, with one line on
      stderr naming the new spelling (:func:`rewrite_renamed`); it is not listed in ``--help``.

    Sub-parsers (``add_subparsers().add_parser``) are :class:`CommandParser` too.

    >>> p = CommandParser(prog="demo", renamed={"--n-boot": "--evaluation.n_boot"})
    >>> _ = p.add_argument("--evaluation.n_boot", dest="n_boot", type=int, default=0)
    >>> p.parse_args(["--evaluation.n_boot", "3"]).n_boot
    3
    """

    def __init__(self, *args: Any, renamed: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        self.renamed: dict[str, str] = dict(renamed or {})

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Parse ``args`` (default ``sys.argv[1:]``) after rewriting deprecated spellings."""
        args = list(sys.argv[1:] if args is None else args)
        if self.renamed:
            args = rewrite_renamed(args, self.renamed, self.prog)
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        """The help as plain text."""
        return plain_text(super().format_help())

    def format_usage(self) -> str:
        """The usage line as plain text."""
        return plain_text(super().format_usage())


def lightning_help_kwargs() -> dict[str, Any]:
    """Keyword arguments of :func:`textcause.run.lightning_cli.make_cli` that make its help plain text.

    Imports Lightning (call it where the CLI is being built anyway): the parser class is the CLI's
    own with its help (option help taken from docstrings) passed through :func:`plain_text`.
    """
    from textcause.run.lightning_cli import OneLineParser

    class PlainHelpParser(OneLineParser):
        def format_help(self, *args: Any, **kwargs: Any) -> str:
            return plain_text(super().format_help(*args, **kwargs))

    return {"parser_class": PlainHelpParser}


def options(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The parsed options ``names`` as keyword arguments, for a call that takes them under the same names.

    Examples:
        >>> options(argparse.Namespace(seed=3, out="x", db=None), "seed", "db")
        {'seed': 3, 'db': None}
    """
    return {name: getattr(args, name) for name in names}


def progress_option(args: argparse.Namespace) -> bool | None:
    """The ``progress`` argument of a command with ``--no-progress``: False when given, else None (the
    progress-bar policy of :mod:`textcause.progress` decides)."""
    return False if args.no_progress else None

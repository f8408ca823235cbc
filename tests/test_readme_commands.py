"""Every command in the code blocks of README and of the documentation site's pages (docs/, the
generated reports aside) parses: the CLI accepts its subcommand and flags, the config files it names
exist, `make` targets exist. The docs cannot drift from the code unnoticed.

A command is parsed, never run: argparse-based subcommands stop right after a successful
``parse_args``; ``train.py`` / ``textcause train`` go through the real LightningCLI parser (class
paths resolved, types checked) with instantiation and the subcommand's run switched off.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# The pages of the documentation site (docs/reports/ holds generated reports, not commands).
PAGES = [
    README,
    *sorted(p for p in (ROOT / "docs").rglob("*.md") if "reports" not in p.relative_to(ROOT / "docs").parts),
]
SHELL_FENCES = ("", "bash", "sh", "shell", "console")
PLACEHOLDER = re.compile(r"<[^>]+>|\bRUN_DIR\b|\bPATH_OR_NAME\b|\.\.\.")


def _code_lines(text: str) -> list[tuple[int, str]]:
    """(line number, command) of every command line in shell code blocks, continuations joined."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else stripped[3:].strip().lower()
            continue
        if fence is None or fence not in SHELL_FENCES:
            continue
        if not pending:
            start = number
        line = stripped.split(" #", 1)[0].rstrip() if not stripped.startswith("#") else ""
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = (pending + line).strip(), ""
        if line:
            out.append((start, line))
    return out


def _program(tokens: list[str]) -> tuple[str, list[str]] | None:
    """(program, its arguments) for the commands this test checks; None for others (pip, wandb, ...)."""
    while tokens and "=" in tokens[0] and not tokens[0].startswith("-"):  # VAR=value prefixes
        tokens = tokens[1:]
    if not tokens:
        return None
    head = tokens[0]
    if head == "make":
        return "make", tokens[1:]
    if head == "textcause":
        return "textcause", tokens[1:]
    if head.endswith("python") or head.endswith("python3"):
        if tokens[1:3] == ["-m", "textcause"]:
            return "textcause", tokens[3:]
        if len(tokens) > 1 and tokens[1] in ("train.py", "evaluate.py"):
            return tokens[1], tokens[2:]
        if len(tokens) > 1 and tokens[1].startswith("benchmarks/"):
            return "script", tokens[1:]
    return None


def _split(line: str) -> list[str]:
    """The words of a command line (before any pipe); output lines that are not shell parse to []."""
    try:
        return shlex.split(line.replace("|", " | ").split(" | ")[0])
    except ValueError:  # unbalanced quotes: printed output in a plain ``` block, not a command
        return []


def _commands(page: Path) -> list[tuple[str, str, tuple[str, list[str]]]]:
    """(where, command line, (program, arguments)) of every command this test checks on a page."""
    name = page.relative_to(ROOT).as_posix()
    return [
        (f"{name}:{n}", line, parsed)
        for n, line in _code_lines(page.read_text(encoding="utf-8"))
        if (parsed := _program(_split(line))) is not None
    ]


COMMANDS = [command for page in PAGES for command in _commands(page)]


def test_readme_has_the_commands_it_should():
    readme = _commands(README)
    programs = {p for _, _, (p, _) in readme}
    assert {"make", "textcause", "train.py"} <= programs
    quick = [line for _, line, (p, _) in readme if p == "make"]
    assert quick[:2] == ["make demo", "make test"]  # the two quick-start commands


def test_the_docs_pages_are_checked_too():
    """The site's pages (the guide, results, families) are in the check, not only README."""
    pages = {where.split(":")[0] for where, _, _ in COMMANDS}
    assert {"README.md", "docs/guide.md", "docs/results.md", "docs/semeval.md"} <= pages
    assert not any(where.startswith("docs/reports/") for where in pages)


class _Parsed(Exception):
    pass


def _parse_textcause(args: list[str], monkeypatch) -> None:
    from textcause.cli import main as cli_main

    if args and args[0] in ("train",):
        return _parse_train(args[1:], monkeypatch)
    if args[:2] == ["gender", "finetune"]:  # = train.py fit OPTIONS: parse it, never fine-tune
        return _parse_train(["fit", *args[2:]], monkeypatch)
    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, *a, **k):
        original(self, *a, **k)
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    with pytest.raises((_Parsed, SystemExit)) as exc:
        cli_main.main(list(args))
    if exc.type is SystemExit:
        assert exc.value.code in (0, None), f"textcause {' '.join(args)} was refused (exit {exc.value.code})"


def _parse_train(args: list[str], monkeypatch) -> None:
    from textcause.run import lightning_cli

    monkeypatch.setattr(lightning_cli.TextCauseCLI, "instantiate_classes", lambda self: None)
    monkeypatch.setattr(lightning_cli.TextCauseCLI, "_run_subcommand", lambda self, sub: None)
    try:
        lightning_cli.make_cli(args=list(args))
    except SystemExit as err:
        assert err.code in (0, None), f"train.py {' '.join(args)} was refused (exit {err.code})"


def _saved_config(token: str) -> str:
    """A saved run's ``runs/.../config.yaml`` exists only after a fit: parse the flags against a shipped
    model config instead (the same parser, so every option must still exist and type-check)."""
    return "configs/model/lr_bigram_binary.yaml" if re.fullmatch(r"runs/[\w./-]*config\.yaml", token) else token


@pytest.mark.parametrize(("number", "line", "parsed"), COMMANDS, ids=[where for where, _, _ in COMMANDS])
def test_a_readme_command_parses(number, line, parsed, monkeypatch, capsys):
    program, args = parsed
    monkeypatch.chdir(ROOT)
    for token in args:  # every config file a command names exists (placeholders aside)
        for path in re.findall(r"(?:^|=)((?:configs|benchmarks|examples)/[\w./-]+\.(?:yaml|yml|py|sh))", token):
            assert (ROOT / path).is_file(), f"{number} names {path}, which does not exist"
    if PLACEHOLDER.search(line) and program in ("train.py",):
        return
    if program == "make":
        targets = set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M))
        assert set(args) <= targets, f"{number}: no make target {sorted(set(args) - targets)}"
    elif program == "script":
        assert (ROOT / args[0]).is_file(), f"{number}: no script {args[0]}"
    elif program == "train.py":
        _parse_train([_saved_config(a) for a in args], monkeypatch)
    elif program == "evaluate.py":
        _parse_textcause(["evaluate", *args], monkeypatch)
    else:
        _parse_textcause(args, monkeypatch)
    old = re.search(r"\S+ is deprecated and goes in the next release; use \S+", capsys.readouterr().err)
    assert old is None, f"{number} uses a deprecated spelling: {old.group(0)}"


@pytest.mark.parametrize(
    "args",
    [
        ["benchmark", "--config", "configs/benchmark/smoke.yaml", "--wrokers", "2"],
        ["sweep", "--summary"],  # --config is required
        ["train", "fit", "--config", "configs/model/lr_bigram_binary.yaml", "--data.levell", "3"],
        ["train", "fit", "--config", "configs/model/lr_bigram_binary.yaml", "--trainer.max_epochs", "abc"],
        ["gender", "finetune", "--config", "configs/gender/finetune_age.yaml", "--trainer.max_epochs", "abc"],
    ],
)
def test_the_check_itself_refuses_a_wrong_command(args, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    with pytest.raises(AssertionError, match="was refused"):
        _parse_textcause(args, monkeypatch)

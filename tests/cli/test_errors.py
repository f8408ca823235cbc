"""How an entry point ends: exit codes, one sentence for a user's mistake, Ctrl-C, warnings."""

from __future__ import annotations

import warnings

import pytest

from textcause.cli.errors import command, friendly_errors, package_warnings


class Ambiguous:
    """Like a DataFrame: its truth value is an error."""

    def __bool__(self) -> bool:
        raise ValueError("The truth value of an Ambiguous is ambiguous.")


def test_the_body_return_value_is_the_exit_code():
    assert command(lambda: 1) == 1 and command(lambda: None) == 0 and command(lambda: True) == 0
    assert command(lambda: {"rows": []}) == 0


def test_friendly_errors_ignores_the_return_value_whatever_it_is():
    assert friendly_errors(lambda: Ambiguous()) == 0  # compare_main returns a DataFrame
    assert friendly_errors(lambda: 3) == 0


def test_a_users_mistake_is_one_sentence_and_exit_2(capsys, monkeypatch):
    monkeypatch.delenv("TEXTCAUSE_DEBUG", raising=False)

    def bad():
        raise ValueError("The 'level' parameter of make_task must be an int >= 1. Got 0 instead.")

    assert command(bad) == 2
    assert capsys.readouterr().err == "error: The 'level' parameter of make_task must be an int >= 1. Got 0 instead.\n"

    def missing():
        raise FileNotFoundError("No config.yaml in 'x'.")

    assert friendly_errors(missing) == 2


def test_debug_shows_the_traceback(monkeypatch):
    monkeypatch.setenv("TEXTCAUSE_DEBUG", "1")
    with pytest.raises(ValueError, match="boom"):
        command(lambda: (_ for _ in ()).throw(ValueError("boom")))


def test_ctrl_c_says_how_to_go_on(capsys):
    def interrupted():
        raise KeyboardInterrupt

    assert command(interrupted) == 130
    assert capsys.readouterr().err.strip() == "interrupted: rerun the same command to resume."
    assert command(interrupted, interrupted="rerun it.") == 130
    assert capsys.readouterr().err.strip() == "interrupted: rerun it."


def test_package_warnings_become_lines_and_others_stay(capsys, monkeypatch):
    import textcause.cli.errors as here

    shown = []
    monkeypatch.setattr(
        warnings,
        "showwarning",
        lambda message, category, filename, lineno, *a: shown.append((str(message), filename, lineno)),
    )
    with package_warnings():
        warnings.warn_explicit("from the package", UserWarning, here.__file__, 1)
        warnings.warn_explicit("from elsewhere", UserWarning, "/elsewhere/mod.py", 7)
    assert capsys.readouterr().err == "warning: from the package\n"
    assert shown == [("from elsewhere", "/elsewhere/mod.py", 7)]  # shown the way Python shows it, once

"""How an entry point ends: exit codes, one sentence for a user's mistake, Ctrl-C, warnings."""

from __future__ import annotations

import os
import signal
import threading
import time
import warnings

import pytest

from textcause.cli.errors import command, friendly_errors, package_warnings, sigterm_as_interrupt


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


def test_sigterm_ends_a_command_as_ctrl_c_does_and_the_handler_is_put_back(capsys):
    received = []
    previous = signal.signal(signal.SIGTERM, lambda *a: received.append("previous"))  # not pytest's death
    cleaned = []

    def killed():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)  # the handler raises at the next bytecode: never slept through
        finally:
            cleaned.append(True)

    try:
        start = time.monotonic()
        assert command(killed, sigterm=True) == 143
        assert time.monotonic() - start < 10 and cleaned == [True] and received == []
        assert capsys.readouterr().err.strip() == "terminated (SIGTERM): rerun the same command to resume."
        os.kill(os.getpid(), signal.SIGTERM)  # the previous handler is back
        assert received == ["previous"]
        # without sigterm=True the command leaves SIGTERM alone (here: the previous handler)
        assert command(lambda: os.kill(os.getpid(), signal.SIGTERM)) == 0 and received == ["previous"] * 2
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_sigterm_during_a_trainers_fit_ends_the_command_the_same_way(capsys):
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    def fit():
        raise SIGTERMException()  # what Lightning's own handler raises at the next step

    assert command(fit, sigterm=True) == 143
    assert "terminated (SIGTERM)" in capsys.readouterr().err
    with pytest.raises(SIGTERMException):
        command(fit)  # a command that does not ask for it keeps Lightning's exit
    with pytest.raises(SystemExit):
        command(lambda: (_ for _ in ()).throw(SystemExit(3)), sigterm=True)


def test_sigterm_as_interrupt_does_nothing_outside_the_main_thread():
    before, seen = signal.getsignal(signal.SIGTERM), []

    def body():
        with sigterm_as_interrupt():
            seen.append(signal.getsignal(signal.SIGTERM))

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert seen == [before]


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


def test_a_stop_that_a_library_turned_into_an_exit_or_an_error_is_still_a_stop(capsys):
    from textcause.interrupts import Terminated

    def raised_while_handling(stop, then):
        def body():
            try:
                raise stop
            except KeyboardInterrupt:
                raise then  # noqa: B904 - the implicit context, as Lightning's sys.exit(1) in a fit has

        return body

    assert command(raised_while_handling(Terminated(), SystemExit(1))) == 143
    assert capsys.readouterr().err.strip() == "terminated (SIGTERM): rerun the same command to resume."
    assert command(raised_while_handling(KeyboardInterrupt(), SystemExit(1))) == 130
    assert capsys.readouterr().err.strip() == "interrupted: rerun the same command to resume."
    assert command(raised_while_handling(Terminated(), RuntimeError("teardown failed"))) == 143
    with pytest.raises(SystemExit):  # an exit with no stop behind it stays an exit
        command(lambda: (_ for _ in ()).throw(SystemExit(1)))

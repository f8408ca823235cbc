"""How an entry point ends: its exit code, one sentence for a user's mistake, never a traceback.

Every command's body runs through :func:`command`: a ``ValueError`` or ``FileNotFoundError`` (a bad
path, an unknown task, a malformed config: the package raises them with one sentence saying what is
wrong) prints ``error: <sentence>`` and exits 2; Ctrl-C says how to go on and exits 130. Set
``TEXTCAUSE_DEBUG=1`` to see the traceback instead. A command run with ``sigterm=True`` ends on
SIGTERM (``kill``, a scheduler's stop) the way it ends on Ctrl-C, its cleanup included, and exits 143.

Mistakes caught by the libraries underneath get one line too (:func:`user_error_line`): an option
the LightningCLI parser rejects (the key, what was expected, what was given; the full usage only
with ``--help``), Lightning's own ``MisconfigurationException`` (``--trainer.max_epochs -5``), and a
checkpoint that ``torch.load(weights_only=True)`` refuses (named, never unpickled) or cannot read whole (truncated).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import pickle
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from textcause.interrupts import Terminated, interrupt_behind, sigterm_as_interrupt
from textcause.io import damaged_sentence, is_damaged_torch_file
from textcause.validation import option_error_sentence

__all__ = [
    "Terminated",
    "command",
    "friendly_errors",
    "package_warnings",
    "sigterm_as_interrupt",
    "user_error_line",
]

#: What Ctrl-C tells the user of a resumable command.
RESUME = "rerun the same command to resume."


def command(fn: Callable[[], Any], *, interrupted: str = RESUME, offline: bool = True, sigterm: bool = False) -> int:
    """Run a command's body and return its exit code.

    Args:
        fn: the body; an int it returns is the exit code, anything else means 0.
        interrupted: what to tell the user after Ctrl-C (and after SIGTERM, with ``sigterm``).
        offline: keep the Hugging Face hub offline (a command's ``--allow-download`` turns it off).
        sigterm: end on SIGTERM as on Ctrl-C (:func:`sigterm_as_interrupt`), exit code 143.
    """
    if offline:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("WANDB_MODE", "offline")
    try:
        with sigterm_as_interrupt() if sigterm else contextlib.nullcontext():
            code = fn()
    except Terminated as err:
        return _stopped(err, interrupted)
    except SystemExit as err:
        # Lightning's exit(1) after catching a Ctrl-C or our SIGTERM in a fit (a method cell's, say), or
        # its SIGTERMException (a SIGTERM during a fit with no handler of ours): a stop, said as one
        if sigterm and type(err).__name__ == "SIGTERMException":
            return _stopped(Terminated(), interrupted)
        stop = interrupt_behind(err)
        if stop is None:
            raise
        return _stopped(stop, interrupted)
    except (ValueError, FileNotFoundError) as err:
        if os.environ.get("TEXTCAUSE_DEBUG"):
            raise
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        return _stopped(err, interrupted)
    except Exception as err:
        stop = interrupt_behind(err)  # raised while a library handled a Ctrl-C or our SIGTERM
        if stop is not None:
            return _stopped(stop, interrupted)
        line = None if os.environ.get("TEXTCAUSE_DEBUG") else user_error_line(err)
        if line is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        return 2
    return code if isinstance(code, int) and not isinstance(code, bool) else 0


def _stopped(stop: KeyboardInterrupt, interrupted: str) -> int:
    """Say a stop and give its exit code: 143 for SIGTERM (:class:`Terminated`), 130 for Ctrl-C."""
    if isinstance(stop, Terminated):
        print(f"\nterminated (SIGTERM): {interrupted}", file=sys.stderr)
        return 143
    print(f"\ninterrupted: {interrupted}", file=sys.stderr)
    return 130


def user_error_line(err: BaseException) -> str | None:
    """One line for a user's mistake that a library raised (None: not one of them, a real bug).

    * an ``argparse.ArgumentError`` of the LightningCLI parser (jsonargparse): see
      :func:`textcause.validation.option_error_sentence`;
    * Lightning's ``MisconfigurationException``: its own first sentence, said to come from the trainer;
    * an ``OSError`` of a full, read-only or forbidden disk (``ENOSPC``, ``EDQUOT``, ``EROFS``, ``EACCES``,
      ``EPERM``): the file and what to do;
    * ``pickle.UnpicklingError`` from ``torch.load(weights_only=True)``: the checkpoint is named and refused;
    * a checkpoint ``torch.load`` cannot read whole (``EOFError``, a zip reader's ``RuntimeError``): named
      as damaged or truncated (:func:`textcause.io.damaged_sentence`).
    """
    if isinstance(err, argparse.ArgumentError):
        return option_error_sentence(str(err))
    if isinstance(err, OSError) and err.errno in _DISK_ERRORS:
        what = f"'{err.filename}'" if err.filename else "a file"
        return f"Could not write {what} ({err.strerror or _DISK_ERRORS[err.errno]}): {_DISK_HINTS[err.errno]}"
    if type(err).__name__ == "MisconfigurationException" and type(err).__module__.startswith("lightning"):
        first = _first_line(str(err)) or "no reason given"
        return f"Lightning refused the run's configuration: {first}"
    damaged = isinstance(err, (EOFError, RuntimeError, OSError)) and is_damaged_torch_file(err)
    if damaged and _in_torch_load(err.__traceback__):
        return damaged_sentence(_checkpoint_path(err.__traceback__) or "(unnamed)")
    if isinstance(err, pickle.UnpicklingError):
        path = _checkpoint_path(err.__traceback__)
        what = f"The checkpoint '{path}'" if path else "The checkpoint"
        return (
            f"{what} was refused: it holds objects that torch.load(weights_only=True) does not allow "
            "(it is not a plain checkpoint of this tool, or it was crafted); load only checkpoints you trust."
        )
    return None


#: What a full, read-only or forbidden disk is called, and what to do about it.
_DISK_ERRORS = {
    errno.ENOSPC: "No space left on device",
    errno.EDQUOT: "Disk quota exceeded",
    errno.EROFS: "Read-only file system",
    errno.EACCES: "Permission denied",
    errno.EPERM: "Operation not permitted",
}
_DISK_HINTS = {
    errno.ENOSPC: "free some space and rerun the same command.",
    errno.EDQUOT: "free some space and rerun the same command.",
    errno.EROFS: "write somewhere else (--out) or make the file system writable.",
    errno.EACCES: "it or its folder may not be written (or read) by you; use another place (--out).",
    errno.EPERM: "it or its folder may not be changed (immutable?); use another place (--out).",
}


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return lines[0] if lines else ""


def _is_torch_load(frame: Any) -> bool:
    code = frame.f_code
    return code.co_name == "load" and code.co_filename.endswith(os.path.join("torch", "serialization.py"))


def _in_torch_load(tb: TracebackType | None) -> bool:
    while tb is not None:
        if _is_torch_load(tb.tb_frame):
            return True
        tb = tb.tb_next
    return False


def _checkpoint_path(tb: TracebackType | None) -> str | None:
    """The file that ``torch.load`` was reading when it refused it (its ``f`` argument), if any."""
    found = None
    while tb is not None:
        frame = tb.tb_frame
        if _is_torch_load(frame):
            f = frame.f_locals.get("f")
            name = f if isinstance(f, (str, os.PathLike)) else getattr(f, "path", None) or getattr(f, "name", None)
            found = os.fspath(name) if isinstance(name, (str, os.PathLike)) else found
        tb = tb.tb_next
    return found


def friendly_errors(fn: Callable[[], Any]) -> int:
    """:func:`command` for a body whose return value is not an exit code (``train.py``, ``evaluate.py``)."""

    def body() -> None:
        fn()

    return command(body)


@contextlib.contextmanager
def package_warnings() -> Iterator[None]:
    """Show the package's own warnings as ``warning: ...`` lines, any other as Python shows it.

    They are shown when the body ends, outside the recording: a warning shown while recording would
    be recorded again.
    """
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        package = str(Path(__file__).resolve().parents[1])
        for w in caught:
            if str(Path(w.filename).resolve()).startswith(package):
                print(f"warning: {w.message}", file=sys.stderr)
            else:
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)

"""Command-line wording of errors: a jsonargparse message as one sentence, parameters as options."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["option_error_sentence", "as_typed_options"]
_TYPE_NAMES = {"NoneType": "null", "str": "a string", "int": "an int", "float": "a float", "bool": "a bool"}


def _type_name(text: str) -> str:
    name = text.strip().removeprefix("<class '").removesuffix("'>").rsplit(".", 1)[-1]
    return _TYPE_NAMES.get(name, f"a {name}")


def option_error_sentence(message: str) -> str:
    """One line from a jsonargparse error message: the option, what was expected and what was given.

    ``Parser key "trainer.max_epochs": ... Subtypes: [<class 'int'>, <class 'NoneType'>] ... Given
    value: abc`` becomes "The option --trainer.max_epochs must be an int or null. Got 'abc' instead."
    Options are named as the user types them (``--data.n_users``).
    """
    text = str(message)
    unknown = re.search(r"unrecognized arguments: (.+)", text)
    if unknown:
        given = unknown.group(1).strip().split()
        options = [a for a in given if a.startswith("-")] or given
        return f"Unknown option {' '.join(options)}: run with --help for the options."
    keys = re.findall(r'Parser key "([^"]+)"', text)
    key = keys[0] if keys else None
    if key and len(keys) > 1 and key in ("model", "data"):
        key = f"{key}.{keys[-1]}"
    not_accepted = re.search(r"Option '([^']+)' is not accepted", text)
    owner = re.search(r"Problem with given class_path '([^']+)'", text)
    if not_accepted:
        full = f"{keys[0]}.{not_accepted.group(1)}" if keys else not_accepted.group(1)
        who = f" ({owner.group(1)} takes no such argument)" if owner else ""
        return f"Unknown option --{full}{who}: run with --help for the options."
    missing = re.search(r"File does not exist: '([^']+)'", text)
    if missing:
        return f"No file at '{missing.group(1)}' (the option --{key or 'config'})."
    expected = re.search(r"Expected an? <class '([^']+)'>\. Got value: (.*)", text)
    if expected:
        return f"The option --{key} must be {_type_name(expected.group(1))}. Got {expected.group(2).strip()!r} instead."
    # the innermost key's types and value ('data.n_users': int or null, not the data module's Union)
    inner = text[[m.start() for m in re.finditer(r'Parser key "', text)][-1] :] if keys else text
    subtypes = re.search(r"Subtypes: \[(.*)\]", inner)
    given = re.search(r"Given value: (.*)", inner)
    if key and subtypes:
        kinds = [_type_name(t) for t in subtypes.group(1).split(",") if t.strip()]
        got = f" Got {given.group(1).strip()!r} instead." if given else ""
        return f"The option --{key} must be {' or '.join(kinds)}.{got}"
    first = _first_text_line(text).rstrip(":")
    detail = next((ln.strip(" -") for ln in text.splitlines()[1:] if ln.strip(" -")), "")
    return f"{first}: {detail}" if detail and first.startswith("Parser key") else first or "The options were rejected."


def _first_text_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return lines[0] if lines else ""


def as_typed_options(message: str, names: Iterable[str], prefix: str) -> str:
    """``message`` with the Python parameters ``names`` spelled as the command-line options a user typed.

    A library check says "The 'batch_size' parameter of CausalTextDataModule ...", "(the text_col
    parameter)" or "pass text_col=<one of them>"; on the command line that is ``--data.batch_size``,
    ``--data.text_col``: with ``prefix="--data."`` the message says so. Other words are left alone.
    """
    names = set(names)
    text = str(message)

    def option(name: str) -> str:
        return f"{prefix}{name}"

    text = re.sub(
        r"The '(\w+)' parameter of [\w.]+",
        lambda m: f"The option {option(m.group(1))}" if m.group(1) in names else m.group(0),
        text,
    )
    text = re.sub(
        r"\bthe (\w+) parameter\b",
        lambda m: f"the option {option(m.group(1))}" if m.group(1) in names else m.group(0),
        text,
    )
    text = re.sub(
        r"(?<![\w.-])(\w+)=None\b",
        lambda m: f"{option(m.group(1))}=null" if m.group(1) in names else m.group(0),
        text,
    )
    return re.sub(
        r"(?<![\w.-])(\w+)=(?=[<'\"\w])",
        lambda m: f"{option(m.group(1))}=" if m.group(1) in names else m.group(0),
        text,
    )

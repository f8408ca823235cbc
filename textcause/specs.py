"""One parser for the YAML specs: benchmark grids, observational studies (and, later, sweeps).

A spec is a frozen dataclass whose fields are the YAML's keys. Each field's type hint is checked by
jsonargparse; each field says with :func:`key` what its value must be (``doc``) and which rules of
:mod:`textcause.validation` it obeys. A field whose type is itself a spec dataclass is a nested block
(its keys are dotted in messages). :meth:`SpecFile.parse` turns a parsed YAML mapping into the
dataclass, or raises one ``ValueError`` sentence that names the file and the key::

    Benchmark config 'g.yaml': 'evaluation.split' must be one of ['train', 'val', 'test']. Got 'dev' instead.
    Benchmark config 'g.yaml': unknown key(s) ['color']; expected some of ['tasks', 'seeds', ...].

``null`` for a key that is not Optional means its default. Values are never coerced (jsonargparse
would read ``n_boot: "5"`` as 5, ``name: "null"`` as None): a value that parses to something else
is an error. Checks between keys stay in the spec's own module, raised with :meth:`SpecFile.fail`.
Importing this module is cheap (no torch, no Lightning).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar, Union

import yaml
from jsonargparse import ArgumentError, ArgumentParser

from textcause.io import load_yaml
from textcause.validation import check_int, check_options, check_real, check_subset, check_that

__all__ = [
    "Rule",
    "NAME",
    "NAME_DOC",
    "key",
    "ints",
    "reals",
    "one_of",
    "some_of",
    "holds",
    "is_name",
    "read_yaml",
    "SpecFile",
]

_T = TypeVar("_T")
#: A rule: ``rule(value, key, doc)`` raises ``ValueError`` (one sentence naming ``key``) if ``value`` breaks it.
Rule = Callable[[Any, str, str], Any]

#: A name used in paths and ids (a grid's, a study's, a corpus column's).
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
NAME_DOC = "made of letters, digits, '_', '.', '-'"
_PARSER_KEY = re.compile(r'Parser key "([^"]+)"')


# ------------------------------------------------------------------------------------ declaring a spec
def key(*rules: Rule, default: Any = dataclasses.MISSING, doc: str = "") -> Any:
    """A spec field: its rules, its default (none: the key is required) and what its value must be.

    A list, dict or dataclass default is copied for each instance. ``doc`` completes "'<key>' must
    be ..." in the messages of a value of the wrong type and of :func:`holds` rules.
    """
    metadata = {"rules": rules, "doc": doc}
    if isinstance(default, (list, dict, set)) or dataclasses.is_dataclass(default):
        return dataclasses.field(default_factory=functools.partial(copy.deepcopy, default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def ints(low: int | None = None, high: int | None = None) -> Rule:
    """An int in ``[low, high]`` (:func:`~textcause.validation.check_int`).

    Examples:
        >>> from textcause.specs import ints
        >>> ints(low=1)(0, "n_users", "")
        Traceback (most recent call last):
            ...
        ValueError: 'n_users' must be an int >= 1. Got 0 instead.
    """
    return lambda value, name, doc: check_int(value, name, None, low=low, high=high)


def reals(
    low: float | None = None, high: float | None = None, *, low_open: bool = False, high_open: bool = False
) -> Rule:
    """A finite number in the range (:func:`~textcause.validation.check_real`)."""
    return lambda value, name, doc: check_real(
        value, name, None, low=low, high=high, low_open=low_open, high_open=high_open
    )


def one_of(options: Iterable[Any] | Callable[[], Iterable[Any]]) -> Rule:
    """One of ``options`` (or of what a function returns, for a registry read when it is needed)."""
    return lambda value, name, doc: check_options(value, name, None, _options(options))


def some_of(options: Iterable[Any] | Callable[[], Iterable[Any]]) -> Rule:
    """A non-empty list of distinct ``options`` (:func:`~textcause.validation.check_subset`)."""
    return lambda value, name, doc: check_subset(value, name, None, _options(options))


def holds(test: Callable[[Any], bool]) -> Rule:
    """``test(value)`` is true; else "'<key>' must be <doc>. Got <value> instead."."""

    def rule(value: Any, name: str, doc: str) -> None:
        try:
            ok = bool(test(value))
        except (TypeError, ValueError, AttributeError, KeyError):
            ok = False
        check_that(ok, value, name, None, doc)

    return rule


_WRONG_TYPE = holds(lambda value: False)


def is_name(value: Any) -> bool:
    """Whether ``value`` is a string matching :data:`NAME`.

    Examples:
        >>> from textcause.specs import is_name
        >>> is_name("twitter_v2"), is_name("../up")
        (True, False)
    """
    return isinstance(value, str) and NAME.match(value) is not None


def _options(options: Any) -> list[Any]:
    return list(options() if callable(options) else options)


# ------------------------------------------------------------------------------------ reading a spec
def read_yaml(path: str | Path, *, kind: str, example: str) -> tuple[Any, str]:
    """The parsed YAML of the ``kind`` (e.g. "Benchmark config") file ``path``, and its text.

    Raises:
        FileNotFoundError: ``path`` is not a file (the message shows ``example``).
        ValueError: the file is not valid YAML.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No {kind.lower()} at '{path}': give a YAML file such as {example}.")
    text = path.read_text(encoding="utf-8")
    try:
        return load_yaml(text), text
    except yaml.YAMLError as err:
        problem = getattr(err, "problem", None) or " ".join(str(err).split())
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise SpecFile(kind, str(path)).fail(f"not valid YAML ({problem}{where}).") from None


@dataclasses.dataclass(frozen=True)
class SpecFile:
    """Where a spec comes from, for its messages: ``SpecFile("Benchmark config", "g.yaml")``."""

    kind: str
    source: str

    def fail(self, message: str) -> ValueError:
        """The error of a mistake in this file: "<kind> '<source>': <message>"."""
        return ValueError(f"{self.kind} '{self.source}': {message}")

    def check(self, check: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """Run a check of :mod:`textcause.validation` (owner None), its ``ValueError`` prefixed with this file."""
        try:
            return check(*args, **kwargs)
        except ValueError as err:
            raise self.fail(str(err)) from None

    def name_or(self, name: str | None, default: str) -> str:
        """A spec's ``name`` key, else ``default`` (the file's stem), checked against :data:`NAME`."""
        name = default if name is None else name
        self.check(check_that, is_name(name), name, "name", None, NAME_DOC)
        return name

    def parse(self, cls: type[_T], data: Any) -> _T:
        """The spec dataclass ``cls`` of a parsed YAML mapping.

        Raises:
            ValueError: not a mapping, an unknown or missing key, a value of the wrong type or one that
                breaks its rules (one sentence naming this file and the key).
        """
        data = self._structure(cls, data, "")
        parser = _parser(cls)
        try:
            namespace = parser.parse_object(copy.deepcopy(data))
        except ArgumentError as err:  # its message starts 'Parser key "<dotted key>":'
            found = _PARSER_KEY.search(str(err))
            if found is None:
                raise self.fail(" ".join(str(err).split())) from None
            raise self._type_error(cls, data, found.group(1)) from None
        instance = cls(**vars(parser.instantiate(namespace)))
        instance = typing.cast(_T, _keep_ints(instance, data))
        self._check(instance, data, "")
        return instance

    def _structure(self, cls: type, data: Any, path: str) -> dict[str, Any]:
        """``data`` with the defaulted ``null`` values left out; raise on a non-mapping, unknown or missing key."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        if not isinstance(data, Mapping):
            if not path:
                raise self.fail(
                    f"expected a mapping with some of the keys {list(fields)}. Got {type(data).__name__} instead."
                )
            self.check(check_that, False, data, path, None, f"a mapping with some of the keys {list(fields)}")
        unknown = [k for k in data if k not in fields]
        if unknown:
            where = f" in '{path}'" if path else ""
            raise self.fail(f"unknown key(s) {unknown}{where}; expected some of {list(fields)}.")
        hints = _hints(cls)
        out = {}
        for name, f in fields.items():
            value = data.get(name)
            if value is None and not (name in data and _optional(hints[name])):
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise self.fail(f"the key '{_join(path, name)}' is required.")
                continue
            block = _spec_type(hints[name])
            out[name] = self._structure(block, value, _join(path, name)) if block else value
        return out

    def _check(self, instance: Any, data: Mapping[str, Any], path: str) -> None:
        """Raise if a given value was coerced by the parser or breaks a rule of its field."""
        hints = _hints(type(instance))
        for f in dataclasses.fields(instance):
            if f.name not in data:
                continue
            value, name = getattr(instance, f.name), _join(path, f.name)
            if _spec_type(hints[f.name]):
                self._check(value, data[f.name], name)
            elif not _same(data[f.name], value):
                raise self._type_error(type(instance), data, f.name, path)
            elif value is not None:  # the rules see the value as written (a list, not the parsed tuple)
                for rule in f.metadata.get("rules", ()):
                    self.check(rule, data[f.name], name, f.metadata.get("doc", ""))

    def _type_error(self, cls: type, data: Mapping[str, Any], dotted: str, path: str = "") -> ValueError:
        """The error of a value of the wrong type at ``dotted`` (below ``path``): its first broken rule, else its doc."""
        *blocks, last = dotted.split(".")
        for block in blocks:
            nested = _spec_type(_hints(cls)[block])
            if nested is None:  # pragma: no cover (the parser names a dotted key only inside a nested block)
                raise AssertionError(f"'{block}' of {cls.__name__} is not a nested spec")
            cls, data, path = nested, data.get(block, {}), _join(path, block)
        f = {f.name: f for f in dataclasses.fields(cls)}[last]
        value, doc = data.get(last), f.metadata.get("doc") or _describe(_hints(cls)[last])
        for rule in (*f.metadata.get("rules", ()), _WRONG_TYPE):
            try:
                rule(value, _join(path, last), doc)
            except ValueError as err:
                return self.fail(str(err))
            except Exception:  # a rule written for the declared type: the next one, or the doc, says it
                continue
        raise AssertionError(f"no message for {dotted!r}")  # pragma: no cover (_WRONG_TYPE always raises)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# ------------------------------------------------------------------------------------ type helpers
# memoised per spec class in plain dicts: functools.cache's wrapper is typed to take a Hashable, which mypy
# does not see a class object as
_PARSERS: dict[type, ArgumentParser] = {}
_HINTS: dict[type, dict[str, Any]] = {}


def _parser(cls: type) -> ArgumentParser:
    if cls not in _PARSERS:
        parser = ArgumentParser(exit_on_error=False)
        parser.add_class_arguments(cls, nested_key=None, fail_untyped=True)
        _PARSERS[cls] = parser
    return _PARSERS[cls]


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _spec_type(hint: Any) -> type | None:
    """The dataclass of a nested block, or None."""
    return hint if isinstance(hint, type) and dataclasses.is_dataclass(hint) else None


def _optional(hint: Any) -> bool:
    return hint is Any or (typing.get_origin(hint) is Union and type(None) in typing.get_args(hint))


def _keep_ints(instance: Any, data: Mapping[str, Any]) -> Any:
    """``instance`` with every int written in ``data`` kept an int where its field admits ints.

    Once jsonargparse has parsed a field annotated ``Union[float, int, None]`` in this process (a
    model's signature, through LightningCLI), it parses a field annotated ``Union[int, float, None]``
    float first too, and a written ``1`` comes back ``1.0`` (``tests/test_specs.py``).
    """
    hints, changes = _hints(type(instance)), {}
    for f in dataclasses.fields(instance):
        if f.name not in data:
            continue
        raw, value, hint = data[f.name], getattr(instance, f.name), hints[f.name]
        if _spec_type(hint) and isinstance(raw, Mapping) and value is not None:
            kept = _keep_ints(value, raw)
            if kept is not value:
                changes[f.name] = kept
        elif (
            isinstance(raw, int)
            and not isinstance(raw, bool)
            and isinstance(value, float)
            and value == raw
            and (hint is int or int in typing.get_args(hint))
        ):
            changes[f.name] = raw
    return dataclasses.replace(instance, **changes) if changes else instance


def _same(raw: Any, parsed: Any) -> bool:
    """Whether the parser kept ``raw`` (an int may become a float, a list a tuple; nothing else changes)."""
    if isinstance(raw, bool) or isinstance(parsed, bool):
        return type(raw) is type(parsed) and raw == parsed
    if isinstance(raw, (int, float)) and isinstance(parsed, (int, float)):
        return raw == parsed and (isinstance(parsed, float) or isinstance(raw, int))
    if isinstance(raw, (list, tuple)) and isinstance(parsed, (list, tuple)):
        return len(raw) == len(parsed) and all(_same(a, b) for a, b in zip(raw, parsed))
    if isinstance(raw, Mapping) and isinstance(parsed, Mapping):
        return list(raw) == list(parsed) and all(_same(raw[k], parsed[k]) for k in raw)
    return type(raw) is type(parsed) and raw == parsed


_NAMES = {
    int: "an int",
    float: "a number",
    str: "a string",
    bool: "true or false",
    dict: "a mapping",
    type(None): "null",
}
_PLURALS = {int: "ints", float: "numbers", str: "strings", bool: "booleans"}


def _describe(hint: Any) -> str:
    """A type hint in words, for a field without a ``doc``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Union:
        return " or ".join(_describe(a) for a in args)
    if origin is typing.Literal:
        return " or ".join(repr(a) for a in args)
    if origin in (list, tuple):
        return f"a list of {_PLURALS[args[0]]}" if args and args[0] in _PLURALS else "a list"
    if origin is dict:
        return "a mapping"
    return _NAMES.get(hint, getattr(hint, "__name__", str(hint)))

"""The one YAML spec parser (textcause.specs): typed dataclasses, declared rules, one-sentence errors."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from typing import Literal, Optional, Union

import pytest
from jsonargparse import ArgumentError

from textcause import specs
from textcause.specs import SpecFile, holds, ints, key, one_of, read_yaml, reals, some_of
from textcause.validation import check_int, check_that

COLOURS = ("red", "green")


@dataclass(frozen=True, kw_only=True)
class Block:
    size: int = key(ints(low=1), default=3)
    share: float = key(reals(low=0.0, high=1.0, high_open=True), default=0.5)
    colour: str = key(one_of(lambda: COLOURS), default="red")


@dataclass(frozen=True, kw_only=True)
class Toy:
    label: str = key(holds(bool), doc="a non-empty label")
    block: Block = key(default=Block())
    tags: tuple[str, ...] = key(some_of(("a", "b", "c")), default=("a",))
    mode: Union[Literal["auto"], int] = key(default="auto")
    limit: Optional[int] = key(ints(low=0), default=None)
    options: dict = key(default={})
    words: list[str] = key(default=["x"])


TOY = SpecFile("Toy config", "toy.yaml")


def test_a_spec_parses_into_its_dataclass():
    toy = TOY.parse(
        Toy,
        {
            "label": "t",
            "block": {"size": 2, "share": 0},
            "tags": ["b", "c"],
            "mode": 4,
            "options": {"a": "null", "b": "1", "c": [1, "2"]},
        },
    )
    assert toy == Toy(
        label="t",
        block=Block(size=2, share=0.0),
        tags=("b", "c"),
        mode=4,
        options={"a": "null", "b": "1", "c": [1, "2"]},
    )  # options' strings stay strings
    assert isinstance(toy.block.share, float) and toy.tags == ("b", "c")
    defaults = TOY.parse(Toy, {"label": "t", "block": None, "tags": None, "limit": None})
    assert defaults == Toy(label="t") and defaults.limit is None  # null: the default (or None if Optional)
    assert defaults.words is not TOY.parse(Toy, {"label": "u"}).words  # a list default is copied


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (["label"], r"expected a mapping with some of the keys \['label', 'block', .*\]. Got list instead"),
        (
            {"label": "t", "colour": "red"},
            r"unknown key\(s\) \['colour'\]; expected some of \['label', 'block', 'tags'",
        ),
        (
            {"label": "t", "block": {"sise": 2}},
            r"unknown key\(s\) \['sise'\] in 'block'; expected some of \['size', 'share', 'colour'\]",
        ),
        (
            {"label": "t", "block": 3},
            r"'block' must be a mapping with some of the keys \['size', 'share', 'colour'\]. Got 3 instead",
        ),
        ({}, r"the key 'label' is required"),
        ({"label": None}, r"the key 'label' is required"),
        ({"label": ""}, r"'label' must be a non-empty label. Got '' instead"),
        ({"label": 5}, r"'label' must be a non-empty label. Got 5 instead"),
        ({"label": "t", "block": {"size": 0}}, r"'block.size' must be an int >= 1. Got 0 instead"),
        ({"label": "t", "block": {"size": "5"}}, r"'block.size' must be an int >= 1. Got '5' instead"),
        ({"label": "t", "block": {"size": 2.0}}, r"'block.size' must be an int >= 1. Got 2.0 instead"),
        ({"label": "t", "block": {"share": 1.0}}, r"'block.share' must be a float >= 0.0 and < 1.0. Got 1.0 instead"),
        (
            {"label": "t", "block": {"colour": "blue"}},
            r"'block.colour' must be one of \['red', 'green'\]. Got 'blue' instead",
        ),
        (
            {"label": "t", "tags": ["a", "d"]},
            r"'tags' must be a non-empty list of distinct values among \['a', 'b', 'c'\]. Got \['a', 'd'\]",
        ),
        ({"label": "t", "tags": "a"}, r"'tags' must be a list of strings. Got 'a' instead"),
        ({"label": "t", "mode": "manual"}, r"'mode' must be 'auto' or an int. Got 'manual' instead"),
        ({"label": "t", "mode": "4"}, r"'mode' must be 'auto' or an int. Got '4' instead"),  # not coerced to 4
        ({"label": "t", "limit": -1}, r"'limit' must be an int >= 0. Got -1 instead"),
        ({"label": "t", "options": ["x"]}, r"'options' must be a mapping. Got \['x'\] instead"),
        ({"label": "t", "words": "[a, b]"}, r"'words' must be a list of strings. Got '\[a, b\]' instead"),
        ({"label": "t", "words": ["1", 2]}, r"'words' must be a list of strings. Got \['1', 2\] instead"),
    ],
)
def test_every_mistake_is_one_sentence_naming_the_file_and_the_key(data, message):
    with pytest.raises(ValueError, match=r"^Toy config 'toy.yaml': " + message) as err:
        TOY.parse(Toy, data)
    assert "\n" not in str(err.value)


def test_a_parser_error_without_a_key_is_still_one_sentence(monkeypatch):
    class Broken:
        def parse_object(self, data):
            raise ArgumentError(None, "Something\n  went wrong")

    monkeypatch.setattr(specs, "_parser", lambda cls: Broken())
    with pytest.raises(ValueError, match=r"^Toy config 'toy.yaml': Something went wrong$"):
        TOY.parse(Toy, {"label": "t"})


def test_checks_between_keys_use_the_same_prefix():
    assert TOY.check(check_int, 3, "block.size", None, low=1) == 3
    with pytest.raises(ValueError, match=r"^Toy config 'toy.yaml': 'block.size' must be an int >= 1. Got 0 instead.$"):
        TOY.check(check_int, 0, "block.size", None, low=1)
    with pytest.raises(ValueError, match=r"^Toy config 'toy.yaml': 'x' must be even. Got 3 instead.$"):
        TOY.check(check_that, False, 3, "x", None, "even")
    assert str(TOY.fail("give 'a' or 'b', not both.")) == "Toy config 'toy.yaml': give 'a' or 'b', not both."
    assert TOY.name_or(None, "toy") == "toy" and TOY.name_or("g-1.b", "toy") == "g-1.b"
    with pytest.raises(ValueError, match=r"^Toy config 'toy.yaml': 'name' must be made of letters, digits"):
        TOY.name_or(None, "my toy")


def test_the_validation_templates_name_a_parameter_or_a_key():
    with pytest.raises(ValueError, match=r"^The 'n' parameter of f must be an int >= 1. Got 0 instead.$"):
        check_int(0, "n", "f", low=1)
    with pytest.raises(ValueError, match=r"^'a.n' must be an int >= 1. Got 0 instead.$"):
        check_int(0, "a.n", None, low=1)
    with pytest.raises(ValueError, match=r"^The 'x' parameter of f must be even. Got 3 instead.$"):
        check_that(False, 3, "x", "f", "even")
    assert check_that(True, 4, "x", "f", "even") == 4


def test_read_yaml(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("label: t  # a comment\n", encoding="utf-8")
    assert read_yaml(good, kind="Toy config", example="toy.yaml") == ({"label": "t"}, "label: t  # a comment\n")
    with pytest.raises(
        FileNotFoundError, match=r"^No toy config at '.*missing.yaml': give a YAML file such as x.yaml.$"
    ):
        read_yaml(tmp_path / "missing.yaml", kind="Toy config", example="x.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("label: [t\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^Toy config '.*bad.yaml': not valid YAML \(.* at line 2, column 1\).$"):
        read_yaml(bad, kind="Toy config", example="x.yaml")


def test_importing_the_parser_stays_light():
    code = "import sys, textcause.specs; print([m for m in ('torch', 'lightning') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_read_yaml_refuses_a_key_given_twice(tmp_path):
    # issue 43: a YAML key given twice silently kept the last value
    dup = tmp_path / "dup.yaml"
    dup.write_text("seeds: [0]\nlabel: t\nseeds: [1, 2]\n", encoding="utf-8")
    with pytest.raises(
        ValueError,
        match=r"^Toy config '.*dup.yaml': not valid YAML \(found duplicate key 'seeds' on line 3, first given on "
        r"line 1: give each key once\)\.$",
    ):
        read_yaml(dup, kind="Toy config", example="x.yaml")


def test_an_int_stays_an_int_after_a_float_first_union_was_parsed():
    """Once jsonargparse has parsed a field annotated ``Union[float, int, None]`` (a model's signature,
    through LightningCLI), it parses a spec's ``Union[int, float, None]`` float first in the same
    process: a written 1 came back 1.0, and a sweep's int_uniform range was refused. Found when the
    sweep tests ran after the CLI tests; reproduced here in a fresh process."""
    code = (
        "from typing import Union\n"
        "from jsonargparse import ArgumentParser\n"
        "def f(x: Union[float, int, None] = None): pass\n"
        "p = ArgumentParser(exit_on_error=False); p.add_function_arguments(f); p.parse_object({'x': 1})\n"
        "from textcause.sweep.spec import sweep_from_dict\n"
        "s = sweep_from_dict({'method': 'random', 'program': 'train.py', 'parameters': {'a.b': {'min': 1, 'max': 9}},\n"
        "    'command': ['${env}', '${interpreter}', '${program}', 'fit', '--config', 'configs/model/oracle.yaml',\n"
        "    '${args}']})\n"
        "(p,) = s.params; print(p.kind, type(p.low).__name__, type(p.high).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["int_uniform", "int", "int"]

"""Cache root, content keys and atomic writes (a failed write leaves the old file and no debris)."""

from __future__ import annotations

import os
import stat

import pytest

from textcause.io import atomic_path, atomic_write_json, atomic_write_text, content_key


def test_atomic_write_replaces_whole_files_with_the_umask_mode(tmp_path):
    dest = tmp_path / "sub" / "r.json"
    atomic_write_json(dest, {"a": 1})
    assert dest.read_text(encoding="utf-8").strip().startswith("{") and '"a": 1' in dest.read_text(encoding="utf-8")
    old = os.umask(0o027)
    try:
        atomic_write_text(dest, "new")
    finally:
        os.umask(old)
    assert dest.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(dest.stat().st_mode) == 0o640  # not mkstemp's 0600
    assert [p.name for p in dest.parent.iterdir()] == ["r.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp_file(tmp_path):
    dest = tmp_path / "r.txt"
    atomic_write_text(dest, "old")
    with pytest.raises(RuntimeError, match="killed"), atomic_path(dest) as tmp:
        tmp.write_text("half", encoding="utf-8")
        raise RuntimeError("killed")
    assert dest.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.txt"]


def test_content_key_is_stable_and_separates_parts():
    assert content_key("a", 1, {"y": 2, "x": 1}) == content_key("a", 1, {"x": 1, "y": 2})
    assert content_key("ab", "c") != content_key("a", "bc")  # lengths are part of the key
    assert content_key(b"a") == content_key("a") and content_key("a") != content_key(["a"])
    assert len(content_key()) == 64


def test_load_yaml_gives_safe_loads_values_and_errors():
    import yaml

    from textcause.io import load_yaml

    text = "a: [1, 2.5, null, true]\nb: {c: 'x', d: 2026-12-02}\ne: |\n  two\n  lines\n"
    assert load_yaml(text) == yaml.safe_load(text)
    for bad in ("kinds: [unclosed", "a:\n\t- tab", "a: 1\n b: 2"):
        with pytest.raises(yaml.YAMLError) as ours:
            load_yaml(bad)
        with pytest.raises(yaml.YAMLError) as theirs:
            yaml.safe_load(bad)
        assert str(ours.value) == str(theirs.value)  # PyYAML's message, with its line and caret
    with pytest.raises(yaml.constructor.ConstructorError):
        load_yaml("!!python/object:os.system x")  # a safe loader: no Python objects


def test_load_yaml_refuses_a_key_given_twice():
    # issue 43: safe_load silently kept the last of two values of one key
    import yaml

    from textcause.io import check_unique_keys, load_yaml

    for text, key, first, line in (
        ("seeds: [0]\nmodel: lr\nseeds: [1]\n", "seeds", 1, 3),
        ("data:\n  n_users: 10\n  n_users: 20\n", "n_users", 2, 3),
        ("a: {x: 1, x: 2}\n", "x", 1, 1),
    ):
        with pytest.raises(yaml.constructor.ConstructorError) as info:
            load_yaml(text)
        assert (
            str(info.value)
            == f"found duplicate key {key!r} on line {line}, first given on line {first}: give each key once"
        )
        with pytest.raises(yaml.constructor.ConstructorError):
            check_unique_keys(text)
    # keys merged in with << may be overridden; 1 and "1" are two keys; nested maps of one name are fine
    assert load_yaml("base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  x: 3\n")["c"] == {"x": 3, "y": 2}
    assert load_yaml("1: a\n'1': b\n") == {1: "a", "1": "b"}
    assert load_yaml("a: {n: 1}\nb: {n: 2}\n") == {"a": {"n": 1}, "b": {"n": 2}}
    check_unique_keys("kinds: [unclosed")  # not YAML: left to the loader it is checked for

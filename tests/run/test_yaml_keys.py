"""Issue 43: a YAML config that gives one key twice is refused, never read as its last value."""

from __future__ import annotations

import pytest


def test_a_config_file_with_a_key_given_twice_is_refused(tmp_path):
    from jsonargparse import ActionConfigFile, ArgumentParser

    from textcause.run.lightning_cli import refuse_duplicate_yaml_keys

    refuse_duplicate_yaml_keys()
    refuse_duplicate_yaml_keys()  # idempotent: one wrapper, not two
    parser = ArgumentParser(exit_on_error=False)
    parser.add_argument("--config", action=ActionConfigFile)
    parser.add_argument("--n", type=int, default=0)
    parser.add_argument("--x", type=float, default=0.0)
    good, dup = tmp_path / "good.yaml", tmp_path / "dup.yaml"
    good.write_text("n: 1\nx: 1e-3\n", encoding="utf-8")
    dup.write_text("n: 1\nx: 2.0\nn: 2\n", encoding="utf-8")
    cfg = parser.parse_args(["--config", str(good)])
    assert (cfg.n, cfg.x) == (1, 0.001)  # jsonargparse's own loader still reads the values
    with pytest.raises(Exception, match=r"found duplicate key 'n' on line 3, first given on line 1"):
        parser.parse_args(["--config", str(dup)])

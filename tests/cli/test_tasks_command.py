"""`textcause tasks`: a readable table of every task level, full sentences on request, clear errors."""

from __future__ import annotations

import pytest

from textcause.cli.main import main
from textcause.simulation import list_tasks
from textcause.simulation.tasks import get_spec


def test_the_table_has_one_row_per_level_with_its_truth(capsys):
    assert main(["tasks"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["task", "level"] and set(lines[1]) <= {"-", " "}
    body = lines[2 : 2 + len(list_tasks())]
    assert len(body) == 14
    placebo = next(line for line in body if line.startswith("Placebo Test 1"))
    assert placebo.split()[-2:] == ["+0.00", "-0.04"]  # true ATE 0, the unadjusted difference -0.04
    lc1 = body[0]
    spec = get_spec("linguistic_complexity", 1)
    assert lc1.startswith("Linguistic Complexity 1") and f"{spec.true_ate:+.2f}" in lc1
    assert any("prepends a random Sickness Post" in line for line in body)  # Order of Text 2's f2
    assert all(len(line) < 200 for line in lines)


def test_describe_and_a_task_filter(capsys):
    assert main(["tasks", "placebo", "--describe"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("placebo-1: Placebo Test") and "True ATE +0.00" in out and out.count("\n\n") == 0


def test_an_unknown_task_is_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["tasks", "nosuch"])
    assert exc.value.code == 2
    assert "unknown task(s) ['nosuch']" in capsys.readouterr().err


def test_usage_lines_name_the_command_the_user_typed(capsys, monkeypatch):
    import sys

    monkeypatch.setattr(sys, "argv", ["__main__.py"])
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    assert capsys.readouterr().out.startswith("usage: textcause evaluate ")
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert capsys.readouterr().out.startswith("usage: textcause train ")
    from textcause.cli.evaluate import build_parser

    assert build_parser().format_usage().startswith("usage: evaluate.py ")
    assert build_parser().parse_args(["run", "--n_boot", "5"]).n_boot == 5  # an old spelling still works
    assert "--n_boot" not in build_parser().format_help() and "--evaluation.n_boot" in build_parser().format_help()

"""One flag style across commands, old spellings deprecated, and --help as plain text.

The rule (textcause/cli/parsing.py): a flag that sets a run-config key is spelled as that key
(``--evaluation.n_boot``, ``--data.min_posts``); any other flag is kebab-case.
"""

from __future__ import annotations

import re

import pytest

from textcause.cli import main as cli_main
from textcause.cli.parsing import CommandParser, plain_text, rewrite_renamed

SPHINX = re.compile(r"``|:(func|class|mod|meth|attr|data|obj|exc):`")

#: Every `textcause` command and sub-action, with what --help needs after the command's name.
HELP = [
    ["tasks"],
    ["benchmark"],
    ["results"],
    ["results", "export"],
    ["results", "import"],
    ["sweep"],
    ["observe"],
    ["advise"],
    ["gender"],
    ["gender", "probe"],
    ["gender", "experiment"],
    ["gender", "finetune"],
    ["counterfactual"],
    ["counterfactual", "baseline"],
    ["counterfactual", "score"],
    ["semeval"],
    ["cfr"],
    ["evaluate"],
    ["predict"],
    ["compare"],
    ["report"],
    ["demo"],
    ["train"],
    ["train", "fit"],
    ["train", "test"],
]


def test_the_help_list_covers_every_command_of_the_usage():
    named = set(re.findall(r"^\s+textcause (\w+)", cli_main.USAGE, re.M))
    assert named - {"--version"} <= {h[0] for h in HELP}


@pytest.mark.parametrize("command", HELP, ids=[" ".join(h) for h in HELP])
def test_help_is_plain_text(command, capsys, monkeypatch):
    monkeypatch.setattr("sys.argv", ["textcause"])
    with pytest.raises(SystemExit) as exc:
        code = cli_main.main([*command, "--help"])
        raise SystemExit(code)
    assert exc.value.code in (0, None)
    out = capsys.readouterr().out
    assert out.startswith("usage: ") and len(out) > 100
    assert not SPHINX.search(out), SPHINX.search(out)


def test_the_top_level_help_is_plain_text(capsys):
    assert cli_main.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "textcause tasks" in out and not SPHINX.search(out)


def test_plain_text_renders_roles_and_literals():
    text = "See :func:`textcause.run.fit.evaluate_run`, :class:`~a.b.Settings` and ``--out DIR`` (`wandb sweep`)."
    assert plain_text(text) == "See textcause.run.fit.evaluate_run, Settings and --out DIR (wandb sweep)."
    assert plain_text("a ``x`` b ``y``") == "a x b y"  # two literals on a line stay two
    assert plain_text("no markup: don't `touch` it's") == "no markup: don't touch it's"


def _flags(parser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings if s.startswith("--")}


def _all_parsers():
    from textcause.cli import advise, benchmark, cfr, counterfactual, evaluate, gender, observe, predict, sweep

    top = [
        m.build_parser() for m in (advise, benchmark, cfr, counterfactual, evaluate, gender, observe, predict, sweep)
    ]
    out = []
    for p in top:
        out.append(p)
        for a in p._actions:
            out.extend(getattr(a, "choices", None).values() if isinstance(a.choices, dict) else [])
    return out


#: Run-config groups: a flag in one of them is dotted (the key); any other flag is kebab-case.
GROUPS = ("data", "model", "trainer", "evaluation")


def test_every_flag_follows_the_rule():
    bad = []
    for parser in _all_parsers():
        for flag in _flags(parser):
            name = flag[2:]
            group, dot, key = name.partition(".")
            ok = (
                re.fullmatch(r"[a-z_]+", key) and group in GROUPS
                if dot
                else re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name)
            )
            if not ok:
                bad.append(f"{parser.prog} {flag}")
    assert not bad


@pytest.mark.parametrize(
    ("old", "new", "value", "dest", "expected"),
    [
        ("--n-boot", "--evaluation.n_boot", "5", "n_boot", 5),
        ("--n_boot", "--evaluation.n_boot", "5", "n_boot", 5),
        ("--split", "--evaluation.split", "val", "split", "val"),
        ("--seed", "--evaluation.seed", "3", "seed", 3),
        ("--refit-reps", "--evaluation.refit_reps", "7", "refit_reps", 7),
        ("--refit-kind", "--evaluation.refit_kind", "percentile", "refit_kind", "percentile"),
    ],
)
def test_evaluate_old_spellings_still_work_with_one_line(old, new, value, dest, expected, capsys):
    from textcause.cli.evaluate import build_parser

    parser = build_parser()
    assert getattr(parser.parse_args(["run", new, value]), dest) == expected
    assert capsys.readouterr().err == ""
    assert getattr(parser.parse_args(["run", old, value]), dest) == expected
    err = capsys.readouterr().err
    assert err == f"evaluate.py: {old} is deprecated and goes in the next release; use {new}.\n"
    assert old not in parser.format_help()


def test_evaluate_estimators_keep_their_list(capsys):
    from textcause.cli.evaluate import build_parser

    args = build_parser().parse_args(["run", "--estimators", "ipw", "matching"])
    assert args.estimators == ["ipw", "matching"] and "--evaluation.estimators" in capsys.readouterr().err


def test_predict_old_spellings_still_work(capsys):
    from textcause.cli.predict import build_parser

    parser = build_parser()
    base = ["run", "--corpus", "c.csv", "--out", "p.csv"]
    new = parser.parse_args([*base, "--data.min_posts", "2", "--data.max_posts=9", "--data.batch_size", "4"])
    old = parser.parse_args([*base, "--min-posts", "2", "--max-posts=9", "--batch-size", "4"])
    assert (new.min_posts, new.max_posts, new.batch_size) == (old.min_posts, old.max_posts, old.batch_size) == (2, 9, 4)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "textcause predict: --min-posts is deprecated and goes in the next release; use --data.min_posts.",
        "textcause predict: --max-posts is deprecated and goes in the next release; use --data.max_posts.",
        "textcause predict: --batch-size is deprecated and goes in the next release; use --data.batch_size.",
    ]


def test_rewrite_leaves_values_after_a_double_dash_and_warns_once(capsys):
    renamed = {"--n-boot": "--evaluation.n_boot"}
    assert rewrite_renamed(["--n-boot", "1", "--n-boot", "2", "--", "--n-boot"], renamed, "p") == [
        "--evaluation.n_boot",
        "1",
        "--evaluation.n_boot",
        "2",
        "--",
        "--n-boot",
    ]
    assert capsys.readouterr().err.count("deprecated") == 1


def test_a_sub_parser_is_a_command_parser_too():
    parser = CommandParser(prog="x", description="``a``")
    sub = parser.add_subparsers().add_parser("s", description=":func:`b.c`")
    assert isinstance(sub, CommandParser) and "b.c" in sub.format_help() and "``" not in parser.format_help()

"""``textcause gender probe`` in-process on the tiny local masked LM: files written, user mistakes."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from cliargs import light_help

from textcause.cli.gender import gender_main
from textcause.cli.main import main


def w_file(tmp_path):
    f = tmp_path / "years.txt"
    f.write_text("1850\n1900\n1950\n2000\n", encoding="utf-8")
    return str(f)


def test_the_command_writes_the_table_and_both_figures(tiny_mlm, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(
        [
            "gender",
            "probe",
            "--model",
            tiny_mlm,
            "--w-file",
            w_file(tmp_path),
            "--out",
            str(out),
            "--n-boot",
            "50",
            "--batch-size",
            "16",
            "--no-progress",
        ]
    )
    assert code == 0
    stem = "gender_tiny-bert-mlm0_top5"
    names = {p.name for p in out.iterdir()}
    assert {
        f"{stem}_table2.md",
        f"{stem}_table2.csv",
        f"{stem}_fig2.png",
        f"{stem}_fig2.svg",
        f"{stem}_summary.json",
        "gender_tiny-bert-mlm0_scores.csv",
    } <= names
    assert not [n for n in names if n.endswith(".tmp")]
    md = (out / f"{stem}_table2.md").read_text(encoding="utf-8")
    assert "| date | years | index of W |" in md and "| date | years | value of W |" in md
    table = pd.read_csv(out / f"{stem}_table2.csv")
    assert list(table["x_kind"]) == ["index", "value"] and table["female_slope"].notna().all()
    scores = pd.read_csv(out / "gender_tiny-bert-mlm0_scores.csv")
    assert len(scores) == 4 * 36 and "male_softmax_renormalised" in scores
    assert json.loads((out / f"{stem}_summary.json").read_text())["dropped"] == []
    assert (out / f"{stem}_fig2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (out / f"{stem}_fig2.svg").read_text(encoding="utf-8")
    captured = capsys.readouterr()
    assert "| W category |" in captured.out and "wrote " in captured.err


def test_an_unknown_w_list_is_one_sentence_and_exit_code_2(tiny_mlm, tmp_path, capsys):
    code = gender_main(["probe", "--model", tiny_mlm, "--w", "planets", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("error: Unknown W list 'planets'") and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_a_missing_model_path_is_exit_code_2(tmp_path, capsys):
    code = gender_main(["probe", "--model", str(tmp_path / "no-model"), "--w", "years"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == f"error: The model path '{tmp_path / 'no-model'}' does not exist."


def test_a_model_without_a_trained_head_is_refused(tiny_encoder, tmp_path, capsys):
    code = gender_main(["probe", "--model", tiny_encoder, "--w-file", w_file(tmp_path), "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "masked-LM head is not trained" in err and len(err.splitlines()) == 1


def test_help_does_not_import_torch():
    out = light_help(["gender", "probe"], "torch", "transformers")
    assert "--w-file" in out and "countries, subreddits, years" in out


def test_a_warning_from_outside_the_package_is_shown_once(tmp_path, monkeypatch, capsys):
    import warnings

    import textcause.cli.gender as cli

    table = tmp_path / "t.md"
    table.write_text("| table |\n", encoding="utf-8")

    def probe(args):
        warnings.warn("a library's own warning", DeprecationWarning, stacklevel=1)  # filed under this test file
        return [table]

    monkeypatch.setattr(cli, "run_probe", probe)
    with pytest.warns(DeprecationWarning, match="a library's own warning") as shown:
        assert gender_main(["probe", "--model", "any", "--w", "years"]) == 0
    assert len(shown) == 1  # shown once, not recorded again while being shown (which never ended)


def test_an_untrained_head_is_warned_in_the_figure_title(tiny_encoder, tmp_path, capsys):
    from unittest import mock

    from textcause.reports import gender as figures

    titles = []

    def drawn(*args, **kwargs):
        fig = real(*args, **kwargs)
        titles.append(fig._suptitle.get_text())
        return fig

    real = figures.probe_figure
    out = tmp_path / "out"
    argv = ["probe", "--model", tiny_encoder, "--w-file", w_file(tmp_path), "--out", str(out), "--n-boot", "0"]
    with mock.patch.object(figures, "probe_figure", side_effect=drawn):
        assert gender_main([*argv, "--allow-untrained-head", "--no-progress"]) == 0
    assert titles[0].startswith("WARNING: untrained masked-LM head (") and "noise" in titles[0].replace("\n", " ")
    (summary,) = out.glob("*_summary.json")
    assert json.loads(summary.read_text())["untrained_weights"] > 0


def test_category_beside_only_builtin_lists_is_refused(tmp_path, capsys):
    # issue 43: --category bogus beside --w years was silently ignored
    code = gender_main(["probe", "--model", str(tmp_path), "--w", "years", "--category", "bogus"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("error: '--category' sets the template set of --w-file lists only")


def test_an_unknown_category_is_refused_before_the_model_loads(tmp_path, capsys):
    code = gender_main(
        ["probe", "--model", str(tmp_path / "no-model"), "--w-file", w_file(tmp_path), "--category", "bogus"]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert (
        err
        == "error: The probe spec has no templates for the W category 'bogus': use one of ['date', 'place', 'subreddit']."
    )

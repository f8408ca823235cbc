"""``textcause counterfactual`` run in-process on hand-made files."""

from __future__ import annotations

import json

import pandas as pd

from textcause.cli.main import main


def test_baseline_command_prints_scores_and_writes_files(tmp_path, toy_files, capsys):
    out = tmp_path / "svm"
    code = main(["counterfactual", "baseline", "--model", "svm", "--train", str(toy_files[0]),
                 "--test", str(toy_files[1]), "--out", str(out)])  # fmt: skip
    printed = capsys.readouterr()
    assert code == 0
    assert "precision" in printed.out and "recall" in printed.out and "F1" in printed.out and "accuracy" in printed.out
    assert "chosen on validation" in printed.out
    assert list(pd.read_csv(out / "subtask1.csv").columns) == ["sentenceID", "pred_label"]
    results = json.loads((out / "results.json").read_text())
    assert results["sizes"]["n_test"] == 120 and "fit_seconds" in results["timings"]


def test_score_command(tmp_path, toy_files, capsys):
    gold = pd.read_csv(toy_files[1])
    gold[["sentenceID", "gold_label"]].rename(columns={"gold_label": "pred_label"}).sample(
        frac=1, random_state=0
    ).to_csv(tmp_path / "subtask1.csv", index=False)
    code = main(
        [
            "counterfactual",
            "score",
            "--gold",
            str(toy_files[1]),
            "--pred",
            str(tmp_path / "subtask1.csv"),
            "--subtask",
            "1",
        ]
    )
    assert code == 0 and "f1 100.00" in capsys.readouterr().out


def test_score_command_malformed_zero_warns(tmp_path, gold2_path, capsys):
    gold = pd.read_csv(gold2_path)
    pred = gold[
        ["sentenceID", "antecedent_startid", "antecedent_endid", "consequent_startid", "consequent_endid"]
    ].astype(object)
    pred.loc[1, "antecedent_endid"] = "x"
    pred.to_csv(tmp_path / "subtask2.csv", index=False)
    args = [
        "counterfactual",
        "score",
        "--gold",
        str(gold2_path),
        "--pred",
        str(tmp_path / "subtask2.csv"),
        "--subtask",
        "2",
    ]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: 'subtask2.csv' row 2 (sentenceID 2)") and err.count("\n") == 1
    assert main([*args, "--malformed", "zero"]) == 0
    captured = capsys.readouterr()
    assert "warning: 'subtask2.csv' row 2" in captured.err and "exact_match 66.67" in captured.out


def test_user_mistakes_are_one_sentence(tmp_path, toy_files, capsys):
    code = main(["counterfactual", "baseline", "--model", "svm", "--train", str(tmp_path / "missing.csv")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: The subtask-1 file") and "Traceback" not in err
    code = main(["counterfactual", "baseline", "--model", "svm", "--train", str(toy_files[0]), "--test", str(toy_files[1]),
                 "--val-fraction", "0.9", "--out", str(tmp_path / "o")])  # fmt: skip
    assert code == 2 and "'val_fraction' parameter of BaselineSettings" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_help_lists_the_command(capsys):
    assert main(["--help"]) == 0
    assert "textcause counterfactual baseline --model svm|minilm_lr" in capsys.readouterr().out

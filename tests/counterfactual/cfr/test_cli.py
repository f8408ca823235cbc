"""``textcause cfr`` end to end on a tiny config (tiny random encoder): table, figure, store rows; bad input."""

from __future__ import annotations

import pytest
import yaml

from textcause.cli.main import main
from textcause.experiments.cfr import read_cfr


def write_config(tmp_path, tiny_encoder, **extra):
    config = {
        "name": "tiny",
        "data": "templates",
        "n_documents": 240,
        "bias": 0.5,
        "encoder": tiny_encoder,
        "max_tokens": 32,
        "n_boot": 20,
        "n_samples": 3,
        "threads": 1,
        **extra,
    }
    path = tmp_path / "cfr.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_cfr_runs_end_to_end(tmp_path, tiny_encoder, capsys):
    out = tmp_path / "out"
    config = write_config(tmp_path, tiny_encoder)
    assert main(["cfr", "--config", str(config), "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "| identity (no intervention) |" in printed and "CFR, deterministic (Lemberger et al.)" in printed
    for name in ("tiny_cfr.md", "tiny_cfr.csv", "tiny_cfr.png", "tiny_cfr.svg", "tiny_summary.json"):
        assert (out / name).is_file(), name
    rows = read_cfr(f"sqlite:///{out}/results.db")
    assert set(rows.run_id) == {"tiny:seed0"}
    assert {"identity", "erasure", "cfr", "cfr_stochastic", "leace_erasure", "leace_mean_cfr"} <= set(rows.method)
    assert "weighted abs gap" in printed and "weighted_abs_gap" in set(rows.metric)
    assert {"cfr", "probe", "tpr", "classifier"} == set(rows.section)
    assert rows.n_units.iloc[0] == 240 and rows.encode_seconds.notna().all()
    # a rerun (everything cached) replaces the run's rows instead of adding to them
    assert main(["cfr", "--config", str(config), "--out", str(out), "--no-progress"]) == 0
    again = read_cfr(f"sqlite:///{out}/results.db")
    assert len(again) == len(rows)
    assert again.value.tolist() == rows.value.tolist()


def test_pairs_csv_missing_a_column_is_one_clear_sentence(tmp_path, tiny_encoder, capsys):
    csv = tmp_path / "pairs.csv"
    csv.write_text("original,counterfactual,concept\nshe ran,he ran,female\n", encoding="utf-8")
    config = write_config(tmp_path, tiny_encoder, data="pairs", pairs_file=str(csv))
    assert main(["cfr", "--config", str(config), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: The pairs file") and "has no column(s) ['label']" in err[-1]
    assert "Traceback" not in "\n".join(err)


@pytest.mark.parametrize(
    "extra, match",
    [
        ({"colour": "red"}, "unknown key(s) ['colour']"),
        ({"data": "pairs"}, "'data: pairs' needs 'pairs_file'"),
        ({"methods": ["identity", "magic"]}, "'methods'"),
        ({"test_fraction": 1.5}, "'test_fraction'"),
    ],
)
def test_bad_config_is_one_sentence(tmp_path, tiny_encoder, capsys, extra, match):
    config = write_config(tmp_path, tiny_encoder, **extra)
    assert main(["cfr", "--config", str(config), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "error: CFR config" in err and match in err


def test_missing_config(tmp_path, capsys):
    assert main(["cfr", "--config", str(tmp_path / "none.yaml")]) == 2
    assert "No cfr config" in capsys.readouterr().err


def test_blas_threads_caps_the_pools_during_evaluation():
    from threadpoolctl import threadpool_info

    from textcause.experiments.cfr import blas_threads

    before = [p["num_threads"] for p in threadpool_info()]
    assert before  # numpy's BLAS is loaded
    with blas_threads(1):
        assert all(p["num_threads"] == 1 for p in threadpool_info())
    assert [p["num_threads"] for p in threadpool_info()] == before
    with blas_threads(None):
        assert [p["num_threads"] for p in threadpool_info()] == before


def test_the_docs_tables_are_the_runs_csv_numbers(tmp_path, tiny_encoder, capsys, monkeypatch):
    """benchmarks/cfr_tables.py (docs/cfr.md's tables) prints a run's own numbers, rounded, in place."""
    import csv
    import importlib.util
    import sys
    from pathlib import Path

    out = tmp_path / "out"
    assert main(["cfr", "--config", str(write_config(tmp_path, tiny_encoder)), "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    spec = importlib.util.spec_from_file_location(
        "cfr_tables", Path(__file__).resolve().parents[3] / "benchmarks" / "cfr_tables.py"
    )
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    with open(out / "tiny_cfr.csv", newline="", encoding="utf-8") as f:
        rows = {(r["section"], r["method"], r["metric"]): r for r in csv.DictReader(f)}
    monkeypatch.setattr(sys, "argv", ["cfr_tables.py", "tiny=" + str(out / "tiny_cfr.csv")])
    tables.main()
    printed = capsys.readouterr().out
    pip = rows[("cfr", "cfr", "pip")]
    assert f"{float(pip['value']):.3f} [{float(pip['lo']):.3f}, {float(pip['hi']):.3f}]" in printed
    gaps = [f"{float(rows[('tpr', 'cfr_augmented', k)]['value']):.3f}" for k in ("mean_abs_gap", "weighted_abs_gap")]
    assert f"{gaps[0]} / {gaps[1]}" in printed
    monkeypatch.setattr(sys, "argv", ["cfr_tables.py", "tiny=" + str(tmp_path / "missing.csv")])
    with pytest.raises(SystemExit):
        tables.main()
    assert "each run must be LABEL=CSV with an existing CSV" in capsys.readouterr().err

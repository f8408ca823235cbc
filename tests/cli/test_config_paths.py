"""Model configs live in configs/model/; their old place (configs/<name>.yaml) works for one release.

A grid cell's identity is its cell id and its config hash, and the hash covers a model config's
text, never its path: moving the files leaves every cell of the weld grid the cell it was (the
hashes below are those stored in runs/benchmark/weld/results.db before the move; SHERBERT's is the one
stored after its patience and learning-rate search changed, a change of its YAML and grid, not of the
move).
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from textcause import paths
from textcause.grid.spec import load_grid
from textcause.run.settings import RunSettings

ROOT = Path(__file__).resolve().parents[2]

#: Config hashes of weld cells as the results database stored them before configs/model/ existed
#: (the tuned LR's since its model YAMLs chose the primal L2 solver and a path patience of 3: a
#: change meant to make `--rerun-changed` fit those cells again).
STORED = {
    "weld/twitter/linguistic_complexity-1/oracle/s0": "065a4f2b474ccf41d21f4bc56bf6bd4a211a8e8bb281152a59736ac5603cdfbc",
    "weld/twitter/linguistic_complexity-1/lr_tuned_bigram_binary/s0": (
        "5aa5231b15475508f86241d2efb7dc25bd81acecfa2b2118fa109329505aead8"
    ),
    "weld/twitter/linguistic_complexity-1/nn_lda/s0": "d8980ea13f1ca62e334b4cb8403a59ebd67fb944464a4d1418c0e8d278c7dfa1",
    "weld/twitter/linguistic_complexity-1/sherbert_pooled/s0": (
        "e52c23e0753478bdb3488d73c14102ce01ce3858f53084e1bb0d0a3e3276ce56"
    ),
    # changed on 2026-12-07 on purpose: the grid now chooses OrderCountNet's input_norm per cell
    "weld/twitter/linguistic_complexity-1/order_count/s0": (
        "fde83ab0ed773dc3270d4bc736c3c5536480c077bc41a32b3faf7756c3017455"
    ),
}


def test_model_configs_are_in_their_own_folder():
    assert not list((ROOT / "configs").glob("*.yaml"))  # nothing left at the top
    names = paths.model_config_names()
    assert {"oracle", "unadjusted", "lr_tuned_bigram_binary", "sherbert_pooled", "joint_pooled"} <= set(names)
    assert (
        paths.model_config_path("lr_tuned_bigram_binary") == ROOT / "configs" / "model" / "lr_tuned_bigram_binary.yaml"
    )


def test_the_weld_grid_keeps_its_cell_ids_and_config_hashes():
    grid = load_grid(ROOT / "configs" / "benchmark" / "weld_twitter.yaml")
    cells = {c.cell_id: c for c in grid.cells}
    assert len(cells) == 840
    assert {k: cells[k].config_hash for k in STORED} == STORED
    assert all(c.model_path.parent == ROOT / "configs" / "model" for c in grid.cells)


def _grid(tmp_path: Path, model: str) -> Path:
    spec = f"name: g\ncorpora: [twitter]\ntasks: {{linguistic_complexity: [1]}}\nmodels: [{model}]\nseeds: [0]\n"
    (tmp_path / f"{len(model)}.yaml").write_text(spec, encoding="utf-8")
    return tmp_path / f"{len(model)}.yaml"


def test_an_old_path_in_a_grid_is_the_same_cell_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = load_grid(_grid(tmp_path, "lr_bigram_binary")).cells
    with pytest.warns(
        FutureWarning, match=r"configs/lr_bigram_binary.yaml has moved to configs/model/lr_bigram_binary.yaml"
    ):
        old = load_grid(_grid(tmp_path, "configs/lr_bigram_binary.yaml")).cells
    assert [(c.cell_id, c.config_hash) for c in old] == [(c.cell_id, c.config_hash) for c in new]
    assert old[0].model_path.is_file()


def test_an_old_path_resolves_from_any_folder_and_a_wrong_one_does_not(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no configs/ here: the installed (checkout's) configs are used
    with pytest.warns(FutureWarning, match="has moved to"):
        assert paths.model_config_path("configs/oracle.yaml") == ROOT / "configs" / "model" / "oracle.yaml"
    assert paths.moved_config("configs/no_such_model.yaml") is None
    assert paths.moved_config("elsewhere/oracle.yaml") is None
    assert paths.moved_config(ROOT / "configs" / "model" / "oracle.yaml") is None  # already the new place


def test_run_settings_take_an_old_path(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    with pytest.warns(FutureWarning, match="configs/model/unadjusted.yaml"):
        settings = RunSettings(configs=("configs/unadjusted.yaml",), run_dir=tmp_path)
    assert settings.configs == (Path("configs/model/unadjusted.yaml"),)
    with pytest.raises(FileNotFoundError, match="configs/model/oracle.yaml"):
        RunSettings(configs=("configs/no_such_model.yaml",), run_dir=tmp_path)


def test_train_py_takes_an_old_config_path_with_one_line_on_stderr():
    from textcause.cli.parsing import rewrite_config_args

    for args in (["fit", "--config", "configs/oracle.yaml"], ["fit", "--config=configs/oracle.yaml"]):
        out = rewrite_config_args(args, "train.py")
        assert out[-1].endswith("configs/model/oracle.yaml")
    code = subprocess.run(
        [sys.executable, "train.py", "fit", "--config", "configs/oracle.yaml", "--print_config"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert code.returncode == 0, code.stderr[-2000:]
    assert "train.py: configs/oracle.yaml has moved to configs/model/oracle.yaml" in code.stderr
    assert "OracleModel" in code.stdout

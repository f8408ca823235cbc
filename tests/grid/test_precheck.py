"""Issue 43: a grid whose cells cannot run is refused before the first fit, and nothing is created."""

from __future__ import annotations

import pytest
from tinygrid import grid_spec, write_grid_spec

from textcause.cli.benchmark import benchmark_main


def _grid(tmp_path, corpus, models=("unadjusted",), **overrides):
    spec = grid_spec(
        corpus, name="pre", models=models, seeds=[0, 1], threads=None, overrides={"trainer.max_epochs": 1, **overrides}
    )
    return write_grid_spec(tmp_path, spec)


def _refused(tmp_path, config, capsys, *extra):
    code = benchmark_main(["--config", str(config), "--out", str(tmp_path / "out"), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not (tmp_path / "out").exists()  # no database, no run folder
    return err[-1]


@pytest.mark.parametrize(
    "overrides, problem",
    [
        ({"data.n_users": -3}, r"its data options are invalid \(The 'n_users' parameter of DataSettings must be an "),
        (
            {"data.n_user": 50},
            r"the option 'data.n_user' is not an option of the data module \(did you mean data\.n_users\?\)",
        ),
        ({"data.batch_size": 0}, r"its data options are invalid \(The 'batch_size' parameter"),
        ({"trainr.max_epochs": 2}, r"the option 'trainr' is not a train.py option \(did you mean trainer\?\)"),
    ],
)
def test_bad_overrides_are_refused_before_anything_runs(tmp_path, tiny_corpus, capsys, overrides, problem):
    line = _refused(tmp_path, _grid(tmp_path, tiny_corpus, **overrides), capsys)
    assert line.startswith("error: Benchmark config '")
    assert " cannot run: " in line and line.endswith("; nothing was run.")
    import re

    assert re.search(problem, line), line
    assert "(1 more cell cannot run either)" in line  # two seeds, one problem


def test_an_unknown_model_and_a_missing_corpus_are_refused(tmp_path, tiny_corpus, capsys):
    line = _refused(tmp_path, _grid(tmp_path, tiny_corpus, models=("unadjusted", "nosuchmodel")), capsys)
    assert "/nosuchmodel/s0 cannot run: there is no model config 'nosuchmodel' (expected a YAML file at " in line
    line = _refused(tmp_path, _grid(tmp_path, str(tmp_path / "gone.jsonl.gz")), capsys)
    assert "cannot run: the corpus file '" in line and "gone.jsonl.gz' does not exist" in line
    broken = tmp_path / "broken.yaml"
    broken.write_text("model: {class_path: x}\nmodel: {class_path: y}\n", encoding="utf-8")
    line = _refused(tmp_path, _grid(tmp_path, tiny_corpus, models=(str(broken),)), capsys)
    assert "cannot be read (found duplicate key 'model' on line 2" in line


def test_the_dry_run_refuses_them_too(tmp_path, tiny_corpus, capsys):
    line = _refused(tmp_path, _grid(tmp_path, tiny_corpus, **{"data.n_users": -3}), capsys, "--dry-run")
    assert "its data options are invalid" in line

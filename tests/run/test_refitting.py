"""Refitting intervals in a grid cell (issue 15): asked for with ``evaluation: {refit_reps: N}``."""

from __future__ import annotations

import pytest
from tinygrid import tiny_cells

from textcause.estimators.refit import CI_REFIT
from textcause.grid.cell import run_config_cell


def cells(corpus, models, **evaluation):
    return tiny_cells(corpus, models, epochs=3, evaluation=evaluation)


def test_refit_reps_changes_only_the_cells_that_ask_for_it(tiny_corpus):
    (plain,) = cells(tiny_corpus, ["lr_unigram_binary"])
    (zero,) = cells(tiny_corpus, ["lr_unigram_binary"], refit_reps=0)
    (refit,) = cells(tiny_corpus, ["lr_unigram_binary"], refit_reps=4)
    assert plain.config_hash == zero.config_hash != refit.config_hash
    assert refit.run_settings("x").evaluation.refit_reps == 4
    with pytest.raises(ValueError, match="refit_reps"):
        cells(tiny_corpus, ["lr_unigram_binary"], refit_reps=1)


def test_an_lbfgs_cell_gets_a_refitting_interval_beside_the_test_sample_one(tiny_corpus, tmp_path):
    (cell,) = cells(tiny_corpus, ["lr_unigram_binary"], refit_reps=6)
    out = run_config_cell(cell, tmp_path / "a")
    assert out.status == "ok", out.error
    rows = {r["estimator"]: r for r in out.rows}
    assert rows["unadjusted"].get("refit_ci_low") is None  # nothing is fitted for it
    for name in ("ipw", "stratified", "matching"):
        r = rows[name]
        assert r["refit_ci_low"] < r["refit_ci_high"] and r["refit_reps"] == 6
        assert r["refit_ci_method"] == CI_REFIT["basic"]
        assert r["refit_covers_truth"] == (r["refit_ci_low"] <= r["true_ate"] <= r["refit_ci_high"])
        assert r["ci_low"] is not None  # the test-sample interval is still there, in its own columns
    again = run_config_cell(cell, tmp_path / "b")
    assert [r.get("refit_ci_low") for r in again.rows] == [r.get("refit_ci_low") for r in out.rows]


def test_a_tuned_lr_cell_takes_refit_reps_and_gets_its_refitting_interval(tiny_corpus, tmp_path):
    """The tuned LR refits its chosen penalty through scikit-learn: a grid asking for refitting intervals
    gives its cells ``refit_reps`` (a grid of it ran 40 cells with none before this was recognised)."""
    (plain,) = cells(tiny_corpus, ["lr_tuned_unigram_binary"])
    (cell,) = cells(tiny_corpus, ["lr_tuned_unigram_binary"], refit_reps=4)
    assert cell.refit_reps == 4 and cell.config_hash != plain.config_hash
    out = run_config_cell(cell, tmp_path / "a")
    assert out.status == "ok", out.error
    rows = {r["estimator"]: r for r in out.rows}
    for name in ("ipw", "stratified", "matching"):
        assert rows[name]["refit_ci_low"] < rows[name]["refit_ci_high"] and rows[name]["refit_reps"] == 4


@pytest.mark.parametrize(
    "class_path, refits",
    [
        ("textcause.models.TunedLogisticRegression", True),
        ("TunedLogisticRegression", True),  # a short name, as LightningCLI takes it
        ("textcause.models.JointModel", False),  # refittable is a property there: by instance, not planned
        ("textcause.models.NoSuchModel", False),
        ("mypackage.models.Tuned", False),  # not imported while planning a grid
    ],
)
def test_which_model_classes_a_grid_plans_refits_for(tmp_path, class_path, refits):
    from textcause.grid.entries import refits_cheaply

    path = tmp_path / "model.yaml"
    path.write_text(f"model:\n  class_path: {class_path}\n")
    assert refits_cheaply(path, {}) is refits


def test_only_refitting_models_take_refit_reps(tiny_corpus):
    """A network, the oracle or a joint model never gets a refitting interval, so its cell stays the cell it was."""
    for model in ("nn_unigram_binary", "oracle", "joint_lr_bigram_binary"):
        (plain,) = cells(tiny_corpus, [model])
        (asked,) = cells(tiny_corpus, [model], refit_reps=4)
        assert asked.refit_reps == 0 and asked.config_hash == plain.config_hash, model


def test_why_a_model_is_not_refit():
    from types import SimpleNamespace

    import numpy as np

    from textcause.models import MLP, JointLinear, JointModel, LogisticRegression, PropensityModel
    from textcause.run.refitting import recipe, refit_unavailable

    data = SimpleNamespace(
        features=np.zeros((10, 4)),
        task=SimpleNamespace(split={"train": np.arange(8)}),
        hparams=SimpleNamespace(batch_size=100),
    )
    lbfgs = PropensityModel(LogisticRegression(4), optimizer="lbfgs")
    assert refit_unavailable(lbfgs, data) is None
    assert "MLP (PropensityModel) is not refit" in refit_unavailable(PropensityModel(MLP(input_dim=4)), data)
    joint = JointModel(JointLinear(4), optimizer="lbfgs")
    assert not joint.refittable and "(JointModel) is not refit" in refit_unavailable(joint, data)
    small = SimpleNamespace(**{**vars(data), "hparams": SimpleNamespace(batch_size=4)})
    assert "mini-batches of 4 of 8 training users" in refit_unavailable(lbfgs, small)
    assert "evaluated on 2 processes" in refit_unavailable(lbfgs, data, world_size=2)
    assert "no epoch or step limit" in refit_unavailable(lbfgs, data, max_steps=None)
    from lightning.pytorch.callbacks import EarlyStopping

    stop = EarlyStopping("val_loss", patience=5)
    assert recipe(SimpleNamespace(max_epochs=8, max_steps=-1, callbacks=[stop])) == (8, 5)
    assert recipe(SimpleNamespace(max_epochs=8, max_steps=-1, callbacks=[])) == (8, None)
    assert recipe(SimpleNamespace(max_epochs=-1, max_steps=-1, callbacks=[])) == (None, None)
    assert recipe(SimpleNamespace(max_epochs=30, max_steps=5, callbacks=[])) == (5, None)

"""CausalMetricsCallback: logged values equal direct calls of the estimators and metrics, no run in
the sanity check, undefined quantities skipped, and a 2-process DDP run logs the 1-process numbers.
"""

from __future__ import annotations

import math
import os
from datetime import timedelta
from typing import Optional

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import lightning as L
import numpy as np
import pytest
import torch
from lightning.pytorch.strategies import DDPStrategy
from toydata import ToyData

from textcause.callbacks import CausalMetricsCallback
from textcause.estimators import aipw, ipw, matching, stratified, unadjusted
from textcause.metrics import (
    brier_score,
    expected_calibration_error,
    iptw_weight_mse,
    rank_agreement,
    spearman,
    treatment_accuracy,
)
from textcause.models import LogisticRegression, OracleModel, PropensityModel, UnadjustedModel

TRAINER = dict(
    accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False
)
TRUE_ATE = 0.3


def val_predictions(model: L.LightningModule, dm: ToyData) -> dict[str, np.ndarray]:
    out = L.Trainer(devices=1, **TRAINER).predict(model, dataloaders=dm.loader("val"))
    return {k: torch.cat([b[k] for b in out]).double().numpy() for k in out[0]}


def logged(trainer: L.Trainer, prefix: str = "val/") -> dict[str, float]:
    return {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith(prefix)}


def direct(pred: dict[str, np.ndarray], true_ate: Optional[float]) -> dict[str, float]:
    t, y, p, q = pred["t"], pred["y"], pred["propensity"], pred["p_true"]
    out = {
        "ate_ipw": ipw(t, y, p).ate,
        "ate_stratified": stratified(t, y, p, n_strata=10).ate,
        "ate_matching": matching(t, y, p, caliper=0.2).ate,
        "treatment_accuracy": treatment_accuracy(t, p),
        "ece": expected_calibration_error(t, p),
        "brier": brier_score(t, p),
        "iptw_weight_mse": iptw_weight_mse(t, p, q),
        "spearman": spearman(p, q),
        "rank_agreement": rank_agreement(p, q),
    }
    if true_ate is not None:
        out.update({f"bias_{e}": out[f"ate_{e}"] - true_ate for e in ("ipw", "stratified", "matching")})
    return out


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A logistic regression fitted for 3 epochs with the callback, and its validation predictions."""
    L.seed_everything(0)
    dm = ToyData()
    model = PropensityModel(LogisticRegression(dm.input_dim), lr=0.1)
    callback = CausalMetricsCallback()
    trainer = L.Trainer(
        max_epochs=3, devices=1, callbacks=[callback], default_root_dir=tmp_path_factory.mktemp("fit"), **TRAINER
    )
    trainer.fit(model, dm)
    return trainer, callback, val_predictions(model, dm)


def test_logged_values_equal_direct_calls(fitted):
    trainer, callback, pred = fitted
    expected = direct(pred, TRUE_ATE)  # the true ATE comes from trainer.datamodule.true_ate
    got = logged(trainer)
    assert set(got) == {f"val/{k}" for k in expected}
    for key, value in expected.items():
        assert got[f"val/{key}"] == pytest.approx(value, rel=1e-6, abs=1e-7), key  # logged as float32
        assert callback.last_metrics[f"val/{key}"] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    # the propensity model moves the estimate from the naive difference towards the truth
    naive = unadjusted(pred["t"], pred["y"]).ate
    assert abs(got["val/ate_ipw"] - TRUE_ATE) < abs(naive - TRUE_ATE)


def test_true_ate_argument_and_prefix(tmp_path):
    dm = ToyData()
    callback = CausalMetricsCallback(true_ate=0.5, estimators=("unadjusted", "ipw"), prefix="check")
    trainer = L.Trainer(max_epochs=1, devices=1, callbacks=[callback], default_root_dir=tmp_path, **TRAINER)
    trainer.fit(OracleModel(), dm)
    got = logged(trainer, "check/")
    pred = val_predictions(OracleModel(), dm)
    assert {"check/ate_unadjusted", "check/ate_ipw", "check/bias_ipw"} <= set(got)
    assert "check/ate_matching" not in got
    assert callback.last_metrics["check/bias_ipw"] == pytest.approx(
        ipw(pred["t"], pred["y"], pred["propensity"]).ate - 0.5
    )
    assert callback.last_metrics["check/ate_unadjusted"] == pytest.approx(unadjusted(pred["t"], pred["y"]).ate)


def test_no_bias_without_a_true_ate(tmp_path):
    dm = ToyData()
    trainer = L.Trainer(
        max_epochs=1, devices=1, callbacks=[CausalMetricsCallback()], default_root_dir=tmp_path, **TRAINER
    )
    trainer.fit(OracleModel(), train_dataloaders=dm.loader("train"), val_dataloaders=dm.loader("val"))
    got = logged(trainer)
    assert "val/ate_ipw" in got and not any(k.startswith("val/bias") for k in got)


def test_not_run_during_sanity_check(tmp_path, monkeypatch):
    calls = []
    original = CausalMetricsCallback.compute

    def spy(self, outputs, true_ate=None, **kwargs):
        calls.append((trainer.sanity_checking, outputs["index"].size))
        return original(self, outputs, true_ate, **kwargs)

    monkeypatch.setattr(CausalMetricsCallback, "compute", spy)
    dm = ToyData()
    trainer = L.Trainer(
        max_epochs=1,
        devices=1,
        num_sanity_val_steps=2,
        callbacks=[CausalMetricsCallback()],
        default_root_dir=tmp_path,
        **TRAINER,
    )
    trainer.fit(PropensityModel(LogisticRegression(dm.input_dim)), dm)
    assert calls == [(False, 101)]  # once, after the training epoch, on the whole validation split


def test_undefined_quantities_are_skipped_not_nan(tmp_path):
    dm = ToyData()
    dm.t[dm.split["val"]] = 1.0  # one treatment class in validation: no effect is defined there
    callback = CausalMetricsCallback(estimators=("ipw", "stratified", "matching", "aipw"))
    trainer = L.Trainer(max_epochs=2, devices=1, callbacks=[callback], default_root_dir=tmp_path, **TRAINER)
    with pytest.warns(UserWarning) as record:
        trainer.fit(PropensityModel(LogisticRegression(dm.input_dim)), dm)
    assert trainer.current_epoch == 2
    # evaluate.py refuses such data (one sentence); the callback, which evaluates them with the same
    # function, names every quantity it skipped and logs none of them.
    skipped = "skipped ate_ipw, ate_stratified, ate_matching, treatment_accuracy, ece, brier, iptw_weight_mse, spearman, rank_agreement: "
    messages = [str(w.message) for w in record]
    assert any(skipped + "The treatment 't' has only one class" in m for m in messages), messages
    assert any("AIPW needs outcome predictions" in m for m in messages)
    assert logged(trainer) == {}
    assert all(math.isfinite(v) for v in trainer.callback_metrics.values())


def test_matching_without_match_in_caliper_is_skipped(tmp_path):
    dm = ToyData()
    callback = CausalMetricsCallback(caliper=0.0)
    trainer = L.Trainer(max_epochs=1, devices=1, callbacks=[callback], default_root_dir=tmp_path, **TRAINER)
    with pytest.warns(UserWarning, match="skipped ate_matching: No unit of matching has a match within the caliper"):
        trainer.fit(PropensityModel(LogisticRegression(dm.input_dim)), dm)
    got = logged(trainer)
    assert "val/ate_ipw" in got and "val/ate_matching" not in got and "val/bias_matching" not in got


class OracleWithOutcomes(OracleModel):
    """The oracle propensity plus the true outcome model of ToyData."""

    def predict_outcomes(self, batch):
        x0 = batch["x"].to_dense()[:, 0]
        return 0.1 + 0.4 * x0, 0.1 + TRUE_ATE + 0.4 * x0


def test_aipw_with_an_outcome_model(tmp_path):
    dm = ToyData()
    callback = CausalMetricsCallback()
    trainer = L.Trainer(max_epochs=1, devices=1, callbacks=[callback], default_root_dir=tmp_path, **TRAINER)
    trainer.fit(OracleWithOutcomes(), dm)
    pred = val_predictions(OracleWithOutcomes(), dm)
    expected = aipw(pred["t"], pred["y"], pred["propensity"], pred["mu0"], pred["mu1"]).ate
    assert callback.last_metrics["val/ate_aipw"] == pytest.approx(expected, rel=1e-12)
    assert float(trainer.callback_metrics["val/bias_aipw"]) == pytest.approx(expected - TRUE_ATE, rel=1e-6)


def test_aipw_without_an_outcome_model_is_skipped(tmp_path):
    callback = CausalMetricsCallback(estimators=["ipw", "aipw"])
    trainer = L.Trainer(max_epochs=1, devices=1, callbacks=[callback], default_root_dir=tmp_path, **TRAINER)
    with pytest.warns(UserWarning, match=r"AIPW needs outcome predictions \(mu0, mu1\)"):
        trainer.fit(OracleModel(), ToyData())
    assert "val/ate_ipw" in callback.last_metrics and "val/ate_aipw" not in callback.last_metrics


def test_test_stage_is_logged_under_test(fitted):
    trainer, callback, pred = fitted
    model = trainer.lightning_module
    tester = L.Trainer(devices=1, callbacks=[callback], **TRAINER)
    tester.test(model, dataloaders=trainer.datamodule.loader("val"))
    got = logged(tester, "test/")
    assert got["test/ate_ipw"] == pytest.approx(ipw(pred["t"], pred["y"], pred["propensity"]).ate, rel=1e-6)
    assert "test_loss" in tester.callback_metrics


def test_model_without_collector_warns(tmp_path):
    class Plain(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(()))

        def validation_step(self, batch, batch_idx):
            return None

    trainer = L.Trainer(devices=1, callbacks=[CausalMetricsCallback()], default_root_dir=tmp_path, **TRAINER)
    with pytest.warns(UserWarning, match="Plain has no PredictionCollector for the val split"):
        trainer.validate(Plain(), dataloaders=ToyData().loader("val"))


def test_compute_uses_the_evaluation_function(monkeypatch):
    """The callback's numbers are evaluate_propensities' rows (n_boot=0), renamed, with its own settings."""
    from textcause.callbacks import causal_metrics
    from textcause.estimators.registry import DEFAULT_ESTIMATORS, ESTIMATOR_DEFAULTS
    from textcause.metrics.evaluation import evaluate_propensities

    dm = ToyData()
    outputs = {k: np.asarray(v, dtype=np.float64) for k, v in dm.truth("val").items()}
    outputs["propensity"] = np.clip(outputs["p_true"] + 0.05 * np.sin(np.arange(101)), 0.01, 0.99)
    default = CausalMetricsCallback()
    assert default.estimators == DEFAULT_ESTIMATORS
    assert (default.n_strata, default.caliper) == (
        ESTIMATOR_DEFAULTS["stratified"]["n_strata"],
        ESTIMATOR_DEFAULTS["matching"]["caliper"],
    )
    callback = CausalMetricsCallback(estimators=["stratified", "matching"], n_strata=4, caliper=None, n_bins=5)
    calls = []

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return evaluate_propensities(*args, **kwargs)

    monkeypatch.setattr(causal_metrics, "evaluate_propensities", spy)
    got = callback.compute(outputs, TRUE_ATE)
    assert len(calls) == 1 and calls[0]["n_boot"] == 0
    assert (calls[0]["n_strata"], calls[0]["caliper"], calls[0]["n_bins"]) == (4, None, 5)
    t, y, p = outputs["t"], outputs["y"], outputs["propensity"]
    rows = {
        r["estimator"]: r
        for r in evaluate_propensities(
            t,
            y,
            p,
            true_propensity=outputs["p_true"],
            true_ate=TRUE_ATE,
            estimators=["stratified", "matching"],
            n_boot=0,
            n_strata=4,
            caliper=None,
            n_bins=5,
        )
    }
    assert got["ate_stratified"] == rows["stratified"]["ate"] == stratified(t, y, p, n_strata=4).ate
    assert got["bias_matching"] == rows["matching"]["bias"]
    assert got["ece"] == expected_calibration_error(t, p, 5) != expected_calibration_error(t, p)
    assert "ate_unadjusted" not in got and "ate_ipw" not in got
    observational = dict(outputs, p_true=np.full(101, np.nan))  # no true propensities: no truth-based metrics
    assert not {"iptw_weight_mse", "spearman", "rank_agreement"} & set(callback.compute(observational))


def test_callback_errors():
    with pytest.raises(
        ValueError,
        match=r"'estimators' parameter of CausalMetricsCallback must be a non-empty list "
        r"of names among \['aipw', 'ipw', 'matching', 'stratified', 'tmle', 'unadjusted'\]",
    ):
        CausalMetricsCallback(estimators=["ipw", "doubly"])
    with pytest.raises(ValueError, match="'estimators' parameter"):
        CausalMetricsCallback(estimators="ipw")
    with pytest.raises(ValueError, match="'estimators' parameter"):
        CausalMetricsCallback(estimators=[])
    with pytest.raises(ValueError, match="'n_strata' parameter of CausalMetricsCallback must be an int >= 2. Got 1"):
        CausalMetricsCallback(n_strata=1)
    with pytest.raises(ValueError, match="'caliper' parameter of CausalMetricsCallback must be a float >= 0.0"):
        CausalMetricsCallback(caliper=-0.1)
    with pytest.raises(ValueError, match="'n_bins' parameter of CausalMetricsCallback must be an int >= 1"):
        CausalMetricsCallback(n_bins=0)
    with pytest.raises(ValueError, match="'true_ate' parameter of CausalMetricsCallback must be a float"):
        CausalMetricsCallback(true_ate=float("nan"))
    with pytest.raises(ValueError, match="'prefix' parameter of CausalMetricsCallback must be a non-empty str"):
        CausalMetricsCallback(prefix="")


# ---------------------------------------------------------------------- DDP
def ddp_trainer(devices: int, tmp_path, **kwargs) -> L.Trainer:
    strategy = DDPStrategy(start_method="fork", timeout=timedelta(seconds=60)) if devices > 1 else "auto"
    return L.Trainer(devices=devices, strategy=strategy, default_root_dir=tmp_path, **TRAINER, **kwargs)


def run_validate(model: L.LightningModule, dm: ToyData, devices: int, tmp_path) -> dict[str, float]:
    trainer = ddp_trainer(devices, tmp_path / str(devices), callbacks=[CausalMetricsCallback()])
    trainer.validate(model, dm)
    return logged(trainer)


def test_ddp_two_processes_log_exactly_the_one_process_numbers(tmp_path):
    dm = ToyData(n=300, n_val=101)  # 101 units: DistributedSampler pads rank 1 with a repeated unit
    one, two = (run_validate(OracleModel(), dm, devices, tmp_path) for devices in (1, 2))
    assert set(one) == set(two) and "val/ate_matching" in one
    assert two == one
    # Without de-duplication by index the padded unit would count twice and move the estimate:
    val = dm.split["val"]
    padded = np.concatenate([val, val[:1]])
    naive = ipw(dm.t[padded], dm.y[padded], dm.p[padded]).ate
    assert abs(naive - one["val/ate_ipw"]) > 1e-3


def test_ddp_trained_model_matches_one_process(tmp_path):
    dm = ToyData(n=300, n_val=101)
    L.seed_everything(0)
    model = PropensityModel(LogisticRegression(dm.input_dim), lr=0.1)
    L.Trainer(max_epochs=3, devices=1, default_root_dir=tmp_path, **TRAINER).fit(model, dm)
    one, two = (run_validate(model, dm, devices, tmp_path) for devices in (1, 2))
    assert set(one) == set(two) and "val/ate_matching" in one
    # A batch of other units can change a logit in its last float32 bit (summation order), hence
    # rel=1e-6; a wrongly counted unit would move these numbers by about 1e-2.
    for key in one:
        assert two[key] == pytest.approx(one[key], rel=1e-6, abs=1e-9), key


def test_ddp_unadjusted_share_from_padded_batches(tmp_path):
    dm = ToyData(n=300, n_val=101)  # 199 training units: padded to 200 across two ranks
    model = UnadjustedModel()
    trainer = ddp_trainer(2, tmp_path, max_epochs=1, callbacks=[CausalMetricsCallback()])
    trainer.fit(model, train_dataloaders=dm.loader("train"), val_dataloaders=dm.loader("val"))
    share = float(dm.t[dm.split["train"]].astype(np.float64).mean())
    assert float(model.treated_share) == pytest.approx(share, abs=1e-12)
    pred = val_predictions(model, dm)
    got = logged(trainer)
    assert got["val/ate_ipw"] == pytest.approx(unadjusted(pred["t"], pred["y"]).ate, rel=1e-6)

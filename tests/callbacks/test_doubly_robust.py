"""CausalMetricsCallback with outcome predictions: AIPW and TMLE rows with both interval kinds, each
labelled; a model without outcome predictions keeps today's rows; continuous outcomes; bad arguments."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import lightning as L
import numpy as np
import pytest
import torch
from toydata import ToyData

from textcause.callbacks import CausalMetricsCallback
from textcause.estimators import CI_INFLUENCE, aipw, bootstrap_ci, tmle
from textcause.metrics.evaluation import CI_METHOD
from textcause.models import OracleModel

TRAINER = dict(
    accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False
)
TRUE_ATE = 0.3


class KnownOutcomes(OracleModel):
    """The oracle propensity and ToyData's true outcome model: P(Y=1 | T, x) = 0.1 + 0.3 T + 0.4 x0."""

    def predict_outcomes(self, batch):
        x0 = batch["x"].to_dense()[:, 0]
        return 0.1 + 0.4 * x0, 0.1 + TRUE_ATE + 0.4 * x0


class ContinuousToy(ToyData):
    """ToyData with a continuous outcome Y = 1 + 2 T + 1.5 x0 + N(0, 0.5^2); says so as ``outcome_kind``."""

    outcome_kind = "continuous"

    def __init__(self) -> None:
        super().__init__()
        rng = np.random.default_rng(1)
        self.y = (1.0 + 2.0 * self.t + 1.5 * self.x[:, 0] + 0.5 * rng.standard_normal(len(self.t))).astype(np.float32)
        self.true_ate = 2.0


class KnownMeans(OracleModel):
    def predict_outcomes(self, batch):
        x0 = batch["x"].to_dense()[:, 0]
        return 1.0 + 1.5 * x0, 3.0 + 1.5 * x0


def validate(model: L.LightningModule, dm: L.LightningDataModule, callback: CausalMetricsCallback, tmp_path) -> None:
    L.Trainer(devices=1, callbacks=[callback], default_root_dir=tmp_path, **TRAINER).validate(model, datamodule=dm)


def predictions(model: L.LightningModule, dm: ToyData) -> dict[str, np.ndarray]:
    out = L.Trainer(devices=1, **TRAINER).predict(model, dataloaders=dm.loader("val"))
    return {k: torch.cat([b[k] for b in out]).double().numpy() for k in out[0]}


def test_outcome_predictions_give_aipw_and_tmle_rows_with_both_intervals(tmp_path):
    dm = ToyData()
    callback = CausalMetricsCallback(n_boot=50)
    validate(KnownOutcomes(), dm, callback, tmp_path)
    rows = {r["estimator"]: r for r in callback.last_rows["val"]}
    assert list(rows) == ["ipw", "stratified", "matching", "aipw", "tmle"]
    pred = predictions(KnownOutcomes(), dm)
    args = (pred["t"], pred["y"], pred["propensity"], pred["mu0"], pred["mu1"])
    for name, fn in (("aipw", aipw), ("tmle", tmle)):
        row, kwargs = rows[name], ({"outcome": "binary"} if name == "tmle" else {})
        point = fn(*args, **kwargs)
        boot = bootstrap_ci(name, *args, n_boot=50, seed=0, **kwargs)
        assert row["ate"] == pytest.approx(point.ate, rel=1e-12)
        # the bootstrap interval, labelled as every estimator's ...
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((boot.ci_low, boot.ci_high), rel=1e-12)
        assert row["ci_method"] == CI_METHOD
        # ... and the influence-function interval beside it, labelled as such
        assert (row["influence_ci_low"], row["influence_ci_high"]) == pytest.approx(
            (point.details["influence_ci_low"], point.details["influence_ci_high"]), rel=1e-12
        )
        assert row["influence_ci_method"] == CI_INFLUENCE
        assert row["influence_covers_truth"] == (row["influence_ci_low"] <= TRUE_ATE <= row["influence_ci_high"])
        logged = callback.last_metrics
        assert logged[f"val/influence_ci_low_{name}"] == row["influence_ci_low"]
        assert logged[f"val/ci_high_{name}"] == row["ci_high"]
        assert logged[f"val/bias_{name}"] == pytest.approx(point.ate - TRUE_ATE, rel=1e-12)
    assert rows["aipw"]["ate"] > 0 and rows["tmle"]["ate"] > 0  # a known positive effect: the sign is right
    assert all("influence_ci_low" not in rows[e] for e in ("ipw", "stratified", "matching"))


def test_a_model_without_outcome_predictions_keeps_todays_rows_and_metrics(tmp_path):
    callback = CausalMetricsCallback()
    validate(OracleModel(), ToyData(), callback, tmp_path)
    assert [r["estimator"] for r in callback.last_rows["val"]] == ["ipw", "stratified", "matching"]
    assert not any(
        k.startswith(("val/influence", "val/ci_")) or "aipw" in k or "tmle" in k for k in callback.last_metrics
    )


def test_tmle_asked_for_without_outcome_predictions_is_skipped_with_a_warning(tmp_path):
    callback = CausalMetricsCallback(estimators=["ipw", "aipw", "tmle"])
    with pytest.warns(
        UserWarning, match=r"AIPW and TMLE need outcome predictions \(mu0, mu1\) from the model: skipped"
    ):
        validate(OracleModel(), ToyData(), callback, tmp_path)
    assert [r["estimator"] for r in callback.last_rows["val"]] == ["ipw"]


def test_continuous_outcome_from_the_data_module(tmp_path):
    dm = ContinuousToy()
    callback = CausalMetricsCallback()
    validate(KnownMeans(), dm, callback, tmp_path)
    rows = {r["estimator"]: r for r in callback.last_rows["val"]}
    assert "error" not in rows["tmle"]
    pred = predictions(KnownMeans(), dm)
    args = (pred["t"], pred["y"], pred["propensity"], pred["mu0"], pred["mu1"])
    assert rows["tmle"]["ate"] == pytest.approx(tmle(*args, outcome="continuous").ate, rel=1e-12)
    assert rows["aipw"]["ate"] == pytest.approx(aipw(*args).ate, rel=1e-12)
    assert abs(rows["tmle"]["ate"] - 2.0) < 0.5 and abs(rows["aipw"]["ate"] - 2.0) < 0.5
    # told "binary", TMLE refuses the continuous outcome (skipped with the reason), AIPW does not care
    binary = CausalMetricsCallback(outcome="binary")
    with pytest.warns(UserWarning, match=r"skipped ate_tmle: The 'y' values of tmle must lie in \[0, 1\]"):
        validate(KnownMeans(), dm, binary, tmp_path)
    assert "val/ate_tmle" not in binary.last_metrics and "val/ate_aipw" in binary.last_metrics


def test_doubly_robust_callback_errors():
    with pytest.raises(ValueError, match="'n_boot' parameter of CausalMetricsCallback must be an int >= 0. Got -1"):
        CausalMetricsCallback(n_boot=-1)
    with pytest.raises(
        ValueError,
        match=r"'outcome' parameter of CausalMetricsCallback must be one of \['binary', 'continuous'\]. Got 'normal'",
    ):
        CausalMetricsCallback(outcome="normal")

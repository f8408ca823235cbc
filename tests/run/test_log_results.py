"""Evaluation results reach a CSV log without destroying the training log already in it."""

from __future__ import annotations

import pandas as pd
from lightning.pytorch.loggers import CSVLogger

from textcause.run.evaluation import append_csv_metrics, log_results

ROWS = [{"estimator": "ipw", "ate": 0.31, "ci_low": 0.2, "ci_high": 0.4, "bias": -0.09, "n_used": 100, "split": "test"}]


def training_log(folder):
    folder.mkdir(parents=True)
    pd.DataFrame({"epoch": [0, 1], "step": [9, 19], "val_loss": [0.69, 0.52]}).to_csv(
        folder / "metrics.csv", index=False
    )


def test_a_fresh_csv_logger_keeps_the_training_rows(tmp_path):
    # The process that launched a DDP fit (or evaluate.py) holds a CSVLogger that never wrote: opening
    # its writer deletes metrics.csv. log_results must append instead.
    training_log(tmp_path / "t" / "version_0")
    logger = CSVLogger(tmp_path, name="t", version=0)
    log_results([logger], ROWS, step=20)
    frame = pd.read_csv(tmp_path / "t" / "version_0" / "metrics.csv")
    assert frame["val_loss"].tolist()[:2] == [0.69, 0.52] and len(frame) == 3
    assert frame["eval/ipw/ate"].iloc[2] == 0.31 and frame["step"].iloc[2] == 20
    assert frame["eval/ipw/ate"].iloc[:2].isna().all()


def test_append_csv_metrics_unions_the_columns(tmp_path):
    path = tmp_path / "metrics.csv"
    append_csv_metrics(path, {"a": 1.0})
    append_csv_metrics(path, {"b": 2.0}, step=7)
    frame = pd.read_csv(path)
    assert list(frame.columns) == ["a", "b", "step"] and frame["step"].tolist() == [0, 7]
    assert frame["a"].iloc[0] == 1.0 and pd.isna(frame["a"].iloc[1]) and frame["b"].iloc[1] == 2.0

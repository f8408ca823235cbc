"""A report computes the seed summary once (issue 46: it was computed for the tables, again for the
CSV, each a third of a report's time on a grid), and the CSV is that same summary."""

from __future__ import annotations

import pandas as pd

import textcause.reports.report as report_module
from textcause.analysis.inference import seed_summary
from textcause.analysis.simulated import simulate_results


def test_write_report_summarises_the_seeds_once(tmp_path, monkeypatch):
    df = simulate_results(task_levels={"linguistic_complexity": 1, "placebo": 1}, models=("lr_lda",), n_seeds=3)
    calls = []

    def counted(data):
        calls.append(len(data))
        return seed_summary(data)

    monkeypatch.setattr(report_module, "seed_summary", counted)
    written = report_module.write_report(df, tmp_path, formats=("svg",))
    assert len(calls) == 1
    csv = pd.read_csv(written["summary"])
    expected = pd.read_csv(pd.io.common.StringIO(seed_summary(df).to_csv(index=False)))
    pd.testing.assert_frame_equal(csv, expected)

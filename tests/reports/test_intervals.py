"""The report's interval section (issue 15): each interval kind described, refitting beside test-sample."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from textcause.analysis.inference import seed_summary
from textcause.reports.intervals import INTERVAL_KINDS, intervals_section
from textcause.reports.markup import Table, to_markdown


def rows(n_seeds: int = 20) -> pd.DataFrame:
    """A placebo level (true ATE 0) and an effect level (0.4): the test-sample interval is narrow and
    off the truth in half the seeds, the refitting interval wide and always on it."""
    out = []
    for task, level, truth in (("placebo", 1, 0.0), ("linguistic_complexity", 2, 0.4)):
        for seed in range(n_seeds):
            ate = truth + (0.1 if seed % 2 else 0.0)
            out.append(
                {
                    "corpus": "twitter",
                    "task": task,
                    "level": level,
                    "model": "lr_bigram_binary",
                    "seed": seed,
                    "estimator": "ipw",
                    "ate": ate,
                    "ci_low": ate - 0.02,
                    "ci_high": ate + 0.02,
                    "refit_ci_low": ate - 0.2,
                    "refit_ci_high": ate + 0.2,
                    "true_ate": truth,
                    "bias": ate - truth,
                }
            )
    return pd.DataFrame(out)


def test_the_summary_has_both_intervals_rates():
    s = seed_summary(rows()).set_index("task")
    assert s.at["placebo", "false_discovery_rate"] == 0.5  # odd seeds: [0.08, 0.12] excludes 0
    assert s.at["placebo", "refit_false_discovery_rate"] == 0.0
    assert s.at["linguistic_complexity", "coverage"] == 0.5
    assert s.at["linguistic_complexity", "refit_coverage"] == 1.0
    assert np.isnan(s.at["linguistic_complexity", "refit_false_discovery_rate"])  # true ATE is not 0
    assert s.at["placebo", "n_refit_ci"] == 20
    assert s.at["placebo", "mean_refit_ci_width"] == pytest.approx(0.4)
    lo, hi = (
        s.at["linguistic_complexity", "refit_coverage_ci_low"],
        s.at["linguistic_complexity", "refit_coverage_ci_high"],
    )
    assert 0.8 < lo < 0.9 and hi == 1.0  # 20 of 20: Clopper-Pearson lower end 0.832


def test_the_section_sets_the_two_intervals_side_by_side():
    text = to_markdown(intervals_section(seed_summary(rows())))
    for kind in INTERVAL_KINDS:
        assert kind.split("**")[1] in text
    (table,) = [b for b in intervals_section(seed_summary(rows())) if isinstance(b, Table)]
    placebo = [r for r in table.rows if r[3] == "Placebo Test 1"][0]
    assert placebo[4] == "20" and placebo[7].startswith("0.50 [") and placebo[8].startswith("0.00 [0.00, 0.17]")


def test_without_refitting_intervals_the_section_says_how_to_get_them():
    plain = rows().drop(columns=["refit_ci_low", "refit_ci_high"])
    blocks = intervals_section(seed_summary(plain))
    assert not any(isinstance(b, Table) for b in blocks)
    assert "refit_reps" in to_markdown(blocks)

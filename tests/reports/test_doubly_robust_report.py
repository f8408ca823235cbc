"""The report's doubly robust section, drawn from a small synthetic results database: AIPW and TMLE
beside IPTW of the same model, coverage by interval kind, every number from the data."""

from __future__ import annotations

import re
import sqlite3

import pandas as pd
import pytest

from textcause.analysis.inference import seed_summary
from textcause.analysis.simulated import simulate_results
from textcause.reports.doubly_robust import doubly_robust_section
from textcause.reports.report import write_report

TASKS = {"linguistic_complexity": 2, "placebo": 1}
ALL = ("unadjusted", "ipw", "stratified", "matching", "aipw", "tmle")


@pytest.fixture(scope="module")
def results() -> pd.DataFrame:
    df = simulate_results(
        task_levels=TASKS, models=("lr_bigram_binary", "joint_lr_bigram_binary"), estimators=ALL, n_seeds=3, seed=4
    )
    # only the joint model has an outcome model: the propensity-only model has no doubly robust rows
    return df[~(df["model"].eq("lr_bigram_binary") & df["estimator"].isin(["aipw", "tmle"]))].reset_index(drop=True)


@pytest.fixture(scope="module")
def report(results, tmp_path_factory):
    root = tmp_path_factory.mktemp("dr")
    db = root / "results.db"
    with sqlite3.connect(db) as con:
        results.to_sql("results", con, index=False)
    write_report(db, root / "out", formats=("svg",))
    return (root / "out" / "report.md").read_text(encoding="utf-8")


def test_the_doubly_robust_table_is_drawn_from_the_database(report, results):
    assert "## Doubly robust vs propensity-only" in report
    header = (
        "| Model | Task | Level | Seeds | IPTW bias | AIPW bias | TMLE bias | IPTW coverage (bootstrap) | "
        "AIPW coverage (bootstrap) | AIPW coverage (IF) | TMLE coverage (bootstrap) | TMLE coverage (IF) | "
        "Smallest \\|bias\\| |"
    )
    assert header in report
    assert (
        "**IF** = the influence-function normal approximation" in report and "**bootstrap** = the percentile" in report
    )
    lines = [
        line
        for line in report.splitlines()
        if line.startswith("| LR 1,2-gram + outcome LRs | Linguistic Complexity | 2 |")
    ]
    assert len(lines) == 1
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    sub = results[(results["model"] == "joint_lr_bigram_binary") & (results["task"] == "linguistic_complexity")]
    sub = sub[sub["level"] == 2]
    for column, name in ((4, "ipw"), (5, "aipw"), (6, "tmle")):
        assert cells[column] == f"{sub.loc[sub['estimator'] == name, 'bias'].mean():+.3f}"
    tmle = sub[sub["estimator"] == "tmle"]
    inside = (tmle["influence_ci_low"] <= tmle["true_ate"]) & (tmle["true_ate"] <= tmle["influence_ci_high"])
    assert cells[11] == f"{inside.mean():.2f} (3)"
    assert cells[10] == f"{tmle['covers_truth'].mean():.2f} (3)"
    # the propensity-only model is not in the table; the tally counts the task levels
    assert not any(line.startswith("| LR 1,2-gram | ") for line in _section(report))
    assert re.search(
        r"LR 1,2-gram \+ outcome LRs \(reddit\): \|mean bias\| below IPTW's with AIPW at \d and TMLE at \d of 3 task levels\.",
        report,
    )


def _section(md: str) -> list[str]:
    start = md.index("## Doubly robust vs propensity-only")
    end = md.index("\n## ", start + 5)
    return md[start:end].splitlines()


def test_no_section_without_doubly_robust_rows(results):
    plain = results[~results["estimator"].isin(["aipw", "tmle"])]
    assert doubly_robust_section(seed_summary(plain), plain) == []


def test_seed_summary_influence_coverage_only_for_doubly_robust_estimators(results):
    summary = seed_summary(results)
    dr = summary["estimator"].isin(["aipw", "tmle"])
    assert summary.loc[dr, "influence_coverage"].notna().all() and (summary.loc[dr, "n_influence_ci"] == 3).all()
    assert summary.loc[~dr, "influence_coverage"].isna().all() and (summary.loc[~dr, "n_influence_ci"] == 0).all()


# ---------------------------------------------------------------------------------------- DML effect methods
DML = {"crossfit_aipw_lr_bigram_binary": "dml_aipw", "crossfit_tmle_lr_bigram_binary": "dml_tmle"}


def _dml_rows() -> pd.DataFrame:
    """Rows as textcause.methods.crossfit's effect methods give them: split 'all', their own interval in
    ci_low / ci_high, no influence columns, estimator dml_aipw / dml_tmle."""
    df = simulate_results(task_levels=TASKS, models=tuple(DML), estimators=("unadjusted", "aipw"), n_seeds=3, seed=9)
    own = df["estimator"] == "aipw"
    df.loc[own, "estimator"] = df.loc[own, "model"].map(DML)
    df.loc[own, "ci_method"] = "the method's own interval"
    df["split"] = "all"
    df["n_used"] = 1000
    for col in ("influence_ci_low", "influence_ci_high", "influence_covers_truth", "influence_ci_method"):
        df[col] = None
    return df


def test_the_dml_effect_methods_get_their_own_table(results, tmp_path):
    dml = _dml_rows()
    both = pd.concat([results, dml], ignore_index=True)
    blocks = doubly_robust_section(seed_summary(both), both)
    plain = doubly_robust_section(seed_summary(results), results)
    assert blocks[: len(plain)] == plain  # the models' part is unchanged
    db = tmp_path / "results.db"
    with sqlite3.connect(db) as con:
        both.to_sql("results", con, index=False)
    write_report(db, tmp_path / "out", formats=("svg",))
    section = "\n".join(_section((tmp_path / "out" / "report.md").read_text(encoding="utf-8")))
    assert "| Method | Estimator | Task | Level | Seeds | Users | Bias | Coverage (IF) |" in section
    assert "cross-fitted over all the task's users" in section and "(sample splitting)" in section
    assert "### reddit: cross-fitted effect methods (DML), mean bias over seeds and coverage" in section
    for model, label in DML.items():
        sub = dml[(dml["model"] == model) & (dml["estimator"] == label) & (dml["task"] == "linguistic_complexity")]
        sub = sub[sub["level"] == 2]
        line = [
            ln for ln in section.splitlines() if ln.startswith(f"| {model} | `{label}` | Linguistic Complexity | 2 |")
        ]
        assert len(line) == 1, label
        cells = [c.strip() for c in line[0].strip("|").split("|")]
        assert cells[4:] == ["3", "1000", f"{sub['bias'].mean():+.3f}", f"{sub['covers_truth'].mean():.2f} (3)"]
    # the models' table keeps only the models with aipw / tmle rows
    assert not any(ln.startswith(f"| {m} | Linguistic") for m in DML for ln in section.splitlines())


def test_dml_rows_alone_make_the_section():
    dml = _dml_rows()
    blocks = doubly_robust_section(seed_summary(dml), dml)
    text = "\n".join(str(b) for b in blocks)
    assert blocks and "Doubly robust vs propensity-only" in text and "cross-fitted effect methods (DML)" in text
    assert "For each model with an outcome model" not in text  # no model table without models' aipw / tmle rows

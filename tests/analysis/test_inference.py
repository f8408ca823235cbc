"""Inference across seeds: corrected resampled t-test, Holm, summaries, compare, Appendix A / G, loading."""

from __future__ import annotations

import math
import sqlite3
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from textcause.analysis.agreement import cross_corpus_agreement, narrower_than_ad
from textcause.analysis.frame import load_results, normalise
from textcause.analysis.inference import (
    compare,
    corrected_interval,
    corrected_resampled_ttest,
    holm,
    parse_method,
    seed_summary,
)
from textcause.analysis.simulated import simulate_results
from textcause.cli.compare import compare_main


def row(**kw) -> dict:
    """One result row with neutral defaults (true ATE 0.4, 100 test units, interval ate +- 0.05)."""
    base = {
        "corpus": "reddit",
        "task": "linguistic_complexity",
        "level": 1,
        "model": "m",
        "seed": 0,
        "estimator": "stratified",
        "ate": 0.4,
        "true_ate": 0.4,
        "n_used": 100,
        "n_dropped": 0,
        "treatment_accuracy": 0.8,
        "status": "ok",
    }
    base.update(kw)
    base.setdefault("ci_low", base["ate"] - 0.05)
    base.setdefault("ci_high", base["ate"] + 0.05)
    return base


def paired_frame(abs_a, abs_b, *, task="linguistic_complexity", level=1, sizes=None) -> list[dict]:
    """Rows of models a and b (stratified) with the given per-seed |bias| (true ATE 0.4, bias >= 0)."""
    rows = []
    for s, (ba, bb) in enumerate(zip(abs_a, abs_b)):
        extra = {} if sizes is None else {"n_train": sizes[0], "n_test": sizes[1]}
        rows.append(row(model="a", seed=s, task=task, level=level, ate=0.4 + ba, **extra))
        rows.append(row(model="b", seed=s, task=task, level=level, ate=0.4 + bb, **extra))
    return rows


# ---------------------------------------------------------------- corrected resampled t-test


def test_corrected_ttest_matches_hand_formula():
    d = np.array([0.10, -0.02, 0.05, 0.07, 0.03])
    res = corrected_resampled_ttest(d, test_train_ratio=1.25)
    j = d.size
    t_hand = d.mean() / math.sqrt((1 / j + 1.25) * d.var(ddof=1))
    assert res.t == pytest.approx(t_hand, rel=1e-12)
    assert res.df == j - 1
    assert res.p == pytest.approx(2 * stats.t.sf(abs(t_hand), j - 1), rel=1e-12)
    assert res.mean == pytest.approx(d.mean()) and res.sd == pytest.approx(d.std(ddof=1))
    assert res.testable and res.note == ""


def test_naive_p_is_scipy_paired_t_and_corrected_is_more_conservative():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.10, 0.03, 8), rng.normal(0.12, 0.03, 8)
    res = corrected_resampled_ttest(a - b, test_train_ratio=1.25)
    ref = stats.ttest_rel(a, b)
    assert res.t_naive == pytest.approx(ref.statistic, rel=1e-10)
    assert res.p_naive == pytest.approx(ref.pvalue, rel=1e-10)
    assert abs(res.t) < abs(res.t_naive) and res.p > res.p_naive
    # With no training-set overlap term the correction vanishes.
    zero = corrected_resampled_ttest(a - b, test_train_ratio=0.0)
    assert zero.t == pytest.approx(ref.statistic, rel=1e-10)


@pytest.mark.parametrize("d", [[0.3], []])
def test_one_seed_is_not_a_test(d):
    res = corrected_resampled_ttest(d, test_train_ratio=1.25)
    assert not res.testable and res.p == 1.0 and res.p_naive == 1.0 and res.t == 0.0
    assert "not enough seeds" in res.note
    assert not any(math.isnan(v) for v in (res.mean, res.sd, res.t, res.p, res.t_naive, res.p_naive))


def test_zero_variance_is_handled_without_nan():
    same = corrected_resampled_ttest([0.0, 0.0, 0.0], test_train_ratio=1.25)
    assert (same.p, same.t, same.testable) == (1.0, 0.0, False) and same.note == "no difference on any seed"
    shifted = corrected_resampled_ttest([-0.1, -0.1, -0.1], test_train_ratio=1.25)
    assert shifted.p == 0.0 and shifted.t == -math.inf and "zero variance" in shifted.note


def test_ttest_errors():
    with pytest.raises(ValueError, match="contain NaN"):
        corrected_resampled_ttest([0.1, float("nan")], test_train_ratio=1.0)
    with pytest.raises(
        ValueError, match="'test_train_ratio' parameter of corrected_resampled_ttest must be a float >= 0"
    ):
        corrected_resampled_ttest([0.1, 0.2], test_train_ratio=-1.0)


def test_corrected_interval_by_hand_and_one_seed():
    lo, hi = corrected_interval(0.1, 0.02, 5, 1.25)
    half = stats.t.ppf(0.975, 4) * math.sqrt((1 / 5 + 1.25) * 0.02**2)
    assert (lo, hi) == pytest.approx((0.1 - half, 0.1 + half))
    assert corrected_interval(0.1, float("nan"), 1, 1.25) == (0.1, 0.1)


# ---------------------------------------------------------------- Holm


def test_holm_matches_statsmodels():
    rng = np.random.default_rng(0)
    for m in (1, 2, 7, 20):
        p = rng.uniform(0, 0.2, m)
        p[: m // 3] = p[0]  # ties
        np.testing.assert_allclose(holm(p), multipletests(p, method="holm")[1], rtol=1e-12)
    assert holm([]).size == 0
    with pytest.raises(ValueError, match="must all lie in \\[0, 1\\]"):
        holm([0.1, 1.5])


# ---------------------------------------------------------------- seed summary


def test_seed_summary_by_hand():
    biases = [0.03, -0.02, 0.06]
    rows = [row(seed=s, ate=0.4 + b) for s, b in enumerate(biases)]
    rows[1]["ci_low"], rows[1]["ci_high"] = 0.30, 0.37  # excludes the truth 0.4
    rows.append(row(seed=3, ate=99.0, status="failed", error="boom"))  # excluded
    s = seed_summary(pd.DataFrame(rows)).iloc[0]
    b = np.array(biases)
    assert s["n_seeds"] == 3 and s["n_failed"] == 1
    assert s["mean_bias"] == pytest.approx(b.mean())
    assert s["sd_bias"] == pytest.approx(b.std(ddof=1))
    assert s["mean_abs_bias"] == pytest.approx(np.abs(b).mean())
    assert s["rmse"] == pytest.approx(math.sqrt((b**2).mean()))
    assert s["coverage"] == pytest.approx(1 / 3)  # [0.38, 0.48] covers 0.4; [0.30, 0.37], [0.41, 0.51] miss
    assert math.isnan(s["false_discovery_rate"])  # not a null task


def test_coverage_and_false_discovery_rate_on_placebo():
    intervals = [(-0.05, 0.05), (0.01, 0.09), (-0.2, -0.01), (-0.1, 0.0)]  # 2 of 4 exclude 0
    rows = [
        row(task="placebo", seed=s, ate=(lo + hi) / 2, true_ate=0.0, ci_low=lo, ci_high=hi)
        for s, (lo, hi) in enumerate(intervals)
    ]
    s = seed_summary(pd.DataFrame(rows)).iloc[0]
    assert s["false_discovery_rate"] == pytest.approx(0.5)
    assert s["coverage"] == pytest.approx(0.5)
    # each rate carries its exact binomial interval over the 4 seeds (2 of 4)
    expected = stats.binomtest(2, 4).proportion_ci(method="exact")
    for name in ("false_discovery", "coverage"):
        assert (s[f"{name}_ci_low"], s[f"{name}_ci_high"]) == pytest.approx((expected.low, expected.high))


# ---------------------------------------------------------------- compare


def test_compare_against_hand_ttest_and_holm():
    a1, b1 = [0.05, 0.02, 0.04, 0.01], [0.10, 0.09, 0.12, 0.08]
    a2, b2 = [0.20, 0.22, 0.18, 0.25], [0.21, 0.19, 0.22, 0.20]
    rows = paired_frame(a1, b1) + paired_frame(a2, b2, task="sample_size", level=3)
    table = compare(pd.DataFrame(rows), "a", "b")
    # Sizes absent: n_test = n_used + n_dropped = 100; n_train = 0.8 * 100 (* 0.25 for sample_size level 3).
    ratios = {"linguistic_complexity": 1 / 0.8, "sample_size": 1 / (0.8 * 0.25)}
    expect_p = []
    for (a, b), r in zip(((a1, b1), (a2, b2)), table.itertuples()):
        ref = corrected_resampled_ttest(np.subtract(a, b), test_train_ratio=ratios[r.task])
        assert r.test_train_ratio == pytest.approx(ratios[r.task])
        assert (r.n_seeds, r.mean_diff, r.t, r.p, r.p_naive) == pytest.approx((4, ref.mean, ref.t, ref.p, ref.p_naive))
        expect_p.append(ref.p)
    np.testing.assert_allclose(table["p_holm"], multipletests(expect_p, method="holm")[1])
    assert list(table["task"]) == ["linguistic_complexity", "sample_size"]
    assert table.loc[0, "better"] == "A"  # a clearly smaller |bias|
    assert table.loc[1, "better"] == "no significant difference"
    assert table.attrs["method_a"] == "a:stratified"


def test_compare_uses_given_sizes_and_excludes_failed_and_one_seed():
    rows = paired_frame([0.05, 0.02, 0.04], [0.10, 0.09, 0.12], sizes=(200, 100))
    rows.append(row(model="a", seed=9, ate=5.0, status="failed", error="oom"))
    rows.append(row(model="b", seed=9, ate=0.4))
    rows += paired_frame([0.1], [0.2], task="placebo")
    table = compare(pd.DataFrame(rows), "a:stratified", "b")
    first = table.iloc[0]
    ref = corrected_resampled_ttest(np.subtract([0.05, 0.02, 0.04], [0.10, 0.09, 0.12]), test_train_ratio=0.5)
    assert first["n_seeds"] == 3 and first["t"] == pytest.approx(ref.t)
    last = table.iloc[-1]
    assert (last["task"], last["n_seeds"], last["p"], last["p_holm"], last["better"]) == (
        "placebo",
        1,
        1.0,
        1.0,
        "not enough seeds",
    )
    numeric = table.select_dtypes("number")
    assert not numeric.isna().any().any()


def test_compare_errors():
    df = pd.DataFrame(paired_frame([0.1, 0.2], [0.2, 0.1]))
    with pytest.raises(ValueError, match="Unknown model 'zzz'"):
        compare(df, "zzz", "b")
    with pytest.raises(ValueError, match="has no results for estimator 'ipw'"):
        compare(df, "a:ipw", "b")
    with pytest.raises(ValueError, match="Compare two different methods"):
        compare(df, "a", "a:stratified")
    with pytest.raises(ValueError, match="'metric' parameter of compare must be one of"):
        compare(df, "a", "b", metric="f1")
    with pytest.raises(ValueError, match="No results for corpus 'twitter'"):
        compare(df, "a", "b", corpus="twitter")
    with pytest.raises(ValueError, match="'alpha' parameter of compare"):
        compare(df, "a", "b", alpha=1.5)
    other = pd.DataFrame([row(model="a", seed=0), row(model="b", seed=1)])
    with pytest.raises(ValueError, match="share no successful seed"):
        compare(other, "a", "b")
    with pytest.raises(ValueError, match="A method must be"):
        parse_method("", "stratified")


def test_compare_main_prints_table(tmp_path, capsys):
    db = tmp_path / "results.db"
    df = simulate_results(
        task_levels={"linguistic_complexity": 2, "placebo": 1}, models=("lr_bigram_binary", "lr_lda"), n_seeds=4
    )
    with sqlite3.connect(db) as con:
        df.to_sql("results", con, index=False)
    table = compare_main(["--db", str(db), "lr_bigram_binary", "lr_lda:ipw", "--estimator", "stratified"])
    out = capsys.readouterr().out
    assert "A = lr_bigram_binary:stratified   B = lr_lda:ipw   metric: abs_bias (lower is better)" in out
    assert "corrected resampled t-test (Nadeau & Bengio 2003)" in out and "Holm over the 3 testable task levels" in out
    for r in table.itertuples():
        assert f"{r.task:<22} {r.level:>3} {r.n_seeds:>5} {r.mean_a:8.4f} {r.mean_b:8.4f}" in out
    compare_main(
        [
            "--db",
            f"sqlite:///{db}",
            "lr_bigram_binary:stratified",
            "lr_lda:stratified",
            "--metric",
            "treatment_accuracy",
        ]
    )
    assert "treatment_accuracy (higher is better)" in capsys.readouterr().out


# ---------------------------------------------------------------- loading and normalising


def test_load_results_sources(tmp_path, monkeypatch):
    df = pd.DataFrame(paired_frame([0.1, 0.2], [0.2, 0.1]))
    db = tmp_path / "r.db"
    with sqlite3.connect(db) as con:
        df.to_sql("results", con, index=False)
    df.to_csv(tmp_path / "r.csv", index=False)
    for source in (df, db, str(db), f"sqlite:///{db}", tmp_path / "r.csv"):
        assert len(load_results(source)) == 4
    with pytest.raises(FileNotFoundError, match="No results database or file"):
        load_results(tmp_path / "missing.db")
    with pytest.raises(ValueError, match="Could not read table 'nope'.*no such table"):
        load_results(db, table="nope")
    with pytest.raises(ValueError, match="must be a DataFrame, a path or a database URL"):
        load_results(42)
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)
    with pytest.raises(ValueError, match="needs SQLAlchemy"):
        load_results("postgresql://user@localhost/db")


def test_normalise_derivations_and_errors():
    df = pd.DataFrame(
        [
            row(task="sample_size", level=2, n_used=90, n_dropped=10, covers_truth=0),
            row(seed=1, ate=float("nan"), error="no stratum with both groups"),
        ]
    ).drop(columns=["status"])
    out = normalise(df)
    assert out.loc[0, "n_test"] == 100 and out.loc[0, "n_train"] == pytest.approx(0.8 * 100 * 0.5)
    assert out.loc[0, "covers_truth"] == 0.0 and np.isnan(out.loc[0, "ci_narrower_than_ad"])
    assert out.loc[0, "bias"] == pytest.approx(0.0) and list(out["status"]) == ["ok", "failed"]
    assert list(out["usable"]) == [True, False]
    with pytest.raises(ValueError, match="lacks the columns \\['true_ate'\\]"):
        normalise(df.drop(columns=["true_ate"]))
    with pytest.raises(ValueError, match="The results table is empty"):
        normalise(df.iloc[:0])
    with pytest.raises(ValueError, match="'seed' column of the results table must hold integers"):
        normalise(df.assign(seed=[0, None]))


def test_simulated_results_are_deterministic():
    a, b = simulate_results(n_seeds=2, seed=4), simulate_results(n_seeds=2, seed=4)
    pd.testing.assert_frame_equal(a, b)
    assert not simulate_results(n_seeds=2, seed=5)["ate"].equals(a["ate"])


# ---------------------------------------------------------------- Appendix A and G


def test_narrower_than_ad_counts_ipw_rows_only():
    flags = [True, True, False, None]
    rows = [row(seed=s, estimator="ipw", ci_narrower_than_ad=f) for s, f in enumerate(flags)]
    rows.append(row(seed=6, estimator="ipw", ci_narrower_than_ad=True, status="failed"))
    # Another estimator's row with a flag (as older tables had) is not counted: the interval is IPW's.
    rows += [row(seed=s, estimator=e, ci_narrower_than_ad=True) for s in range(3) for e in ("stratified", "unadjusted")]
    table = narrower_than_ad(pd.DataFrame(rows)).set_index("estimator")
    assert list(table.index) == ["ipw", "all"]
    assert table.loc["ipw", "text"] == table.loc["all", "text"] == "2 of 3 cells"
    assert table.loc["all", "share"] == pytest.approx(2 / 3)


def test_a_table_with_the_old_bound_columns_reads_under_the_new_names(tmp_path):
    """A results.csv written before the rename (bound_low, bound_high, ci_tighter_than_bound on every row)."""
    old = pd.DataFrame(
        [
            row(estimator="unadjusted", bound_low=0.1, bound_high=0.7, ci_tighter_than_bound=False),
            row(estimator="ipw", ate=0.38, bound_low=0.11, bound_high=0.65, ci_tighter_than_bound=True),
            row(estimator="stratified", bound_low=0.11, bound_high=0.65, ci_tighter_than_bound=True),
        ]
    )
    path = tmp_path / "results.csv"
    old.to_csv(path, index=False)
    assert "bound_low" in path.read_text().splitlines()[0]
    data = load_results(path).set_index("estimator")
    assert not {"bound_low", "bound_high", "ci_tighter_than_bound"} & set(data.columns)
    assert (data.loc["ipw", "ad_low"], data.loc["ipw", "ad_high"], data.loc["ipw", "ci_narrower_than_ad"]) == (
        0.11,
        0.65,
        1.0,
    )
    assert data.loc[["unadjusted", "stratified"], ["ad_low", "ad_high", "ci_narrower_than_ad"]].isna().all().all()
    assert narrower_than_ad(path).set_index("estimator").loc["all", "text"] == "1 of 1 cells"
    # a table holding both names (half migrated): the new value wins, a missing one is taken from the old
    both = old.assign(ad_low=[None, 0.2, None]).drop(columns=["bound_high"])
    read = normalise(both).set_index("estimator")
    assert read.loc["ipw", "ad_low"] == 0.2 and np.isnan(read.loc["ipw", "ad_high"])
    assert normalise(old.assign(ad_low=[None, None, None])).set_index("estimator").loc["ipw", "ad_low"] == 0.11


def test_cross_corpus_agreement_by_hand():
    # Two seeds per corpus are averaged first; three (task, level) points for model m.
    vals_a = {1: 0.70, 2: 0.80, 3: 0.60}
    vals_b = {1: 0.72, 2: 0.77, 3: 0.66}
    rows = []
    for corpus, vals in (("reddit", vals_a), ("twitter", vals_b)):
        for level, v in vals.items():
            for s, noise in enumerate((-0.01, 0.01)):
                for est, ate in (("stratified", 0.4 + v / 10), ("ipw", 0.3 + v / 10)):
                    rows.append(
                        row(corpus=corpus, level=level, seed=s, estimator=est, ate=ate, treatment_accuracy=v + noise)
                    )
    table = cross_corpus_agreement(pd.DataFrame(rows))
    a, b = np.array(list(vals_a.values())), np.array(list(vals_b.values()))
    acc = table[(table["scope"] == "all") & (table["quantity"] == "Treatment accuracy")].iloc[0]
    assert acc["n"] == 3
    assert acc["mean_abs_diff"] == pytest.approx(np.abs(b - a).mean())
    assert acc["mean_ratio"] == pytest.approx((b / a).mean())
    assert np.isnan(acc["pearson_r"])  # 3 pairs: no r (textcause.analysis.agreement.MIN_PAIRS_FOR_R)
    strat = table[(table["scope"] == "all") & (table["quantity"] == "ATE (stratified)")].iloc[0]
    assert strat["mean_abs_diff"] == pytest.approx(np.abs(b - a).mean() / 10)
    assert set(table["scope"]) == {"all", "family", "task", "model"}
    with pytest.raises(ValueError, match="needs two corpora"):
        cross_corpus_agreement(pd.DataFrame(rows[:4]))
    with pytest.raises(ValueError, match="No results for corpus 'pan'"):
        cross_corpus_agreement(pd.DataFrame(rows), "reddit", "pan")
    with pytest.raises(ValueError, match="Compare two different corpora"):
        cross_corpus_agreement(pd.DataFrame(rows), "reddit", "reddit")


def test_store_shaped_rows_use_the_config_name_and_grid(tmp_path):
    # The grid's store keeps the config name in ``config`` and the network's class in ``model``; a
    # failed cell has one row per planned estimator, without a model class or numbers.
    ok = [row(model="LinearPropensity", config="lr_bigram_binary", grid="g1", seed=s) for s in range(2)]
    failed = [
        {
            **row(seed=2),
            "model": None,
            "config": "lr_bigram_binary",
            "grid": "g1",
            "ate": None,
            "ci_low": None,
            "ci_high": None,
            "true_ate": None,
            "status": "failed",
            "error": "ValueError: boom",
        }
    ]
    other = [row(model="X", config="oracle", grid="g2")]
    db = tmp_path / "store.db"
    with sqlite3.connect(db) as con:
        pd.DataFrame(ok + failed + other).to_sql("results", con, index=False)
    data = load_results(db, grid="g1")
    assert set(data["model"]) == {"lr_bigram_binary"} and set(data["model_class"].dropna()) == {"LinearPropensity"}
    assert list(data["usable"]) == [True, True, False]
    assert seed_summary(data).iloc[0][["n_seeds", "n_failed"]].tolist() == [2, 1]
    with pytest.raises(ValueError, match="No results for grid 'g3'; the table has grids \\['g1', 'g2'\\]"):
        load_results(db, grid="g3")
    pytest.importorskip("sqlalchemy")
    assert len(load_results(f"sqlite+pysqlite:///{db}")) == 4


def test_binomial_ci_is_clopper_pearson():
    from scipy.stats import beta

    from textcause.analysis.inference import binomial_ci

    low, high = binomial_ci(1, 5)
    # the exact interval's ends are beta quantiles (Clopper & Pearson 1934)
    assert low == pytest.approx(beta.ppf(0.025, 1, 5)) and high == pytest.approx(beta.ppf(0.975, 2, 4))
    assert binomial_ci(0, 5) == (0.0, pytest.approx(1 - 0.025 ** (1 / 5)))  # 0.522: "0 of 5" is weak evidence
    assert all(np.isnan(binomial_ci(0, 0)))
    with pytest.raises(ValueError, match="whole numbers 0 <= k <= n"):
        binomial_ci(6, 5)

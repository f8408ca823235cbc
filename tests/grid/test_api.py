"""textcause.evaluate and the benchmark's method cells, on a tiny corpus: the oracle reproduced exactly,
broken methods recorded per cell, effect methods, the results database, report and compare."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from tinygrid import grid_spec, write_grid_spec

import textcause
from textcause import estimators as est
from textcause import store
from textcause.cli.benchmark import benchmark_main
from textcause.grid.methods import COLUMNS
from textcause.grid.spec import grid_from_dict
from textcause.grid.worker import run_cell
from textcause.methods import ConfigPropensity, EffectResult, FunctionEffect
from textcause.methods.inputs import build_task
from textcause.metrics.schema import RESULT_COLUMNS

USER_MODULE = '''
import numpy as np
from textcause.methods import EffectResult

class Constant:
    """Predicts the share of treated training users."""
    name = "constant"

    def fit(self, X, t):
        print("fitting constant on", len(X), "users")
        self.share_ = float(np.mean(t))
        return self

    def predict_proba(self, X):
        return np.full(len(X), self.share_)

class Half:
    def fit(self, X, t):
        return self

    def predict_proba(self, X):
        return np.column_stack([np.full(len(X), 0.5), np.full(len(X), 0.5)])

def naive(X, t, y):
    d = float(y[t == 1].mean() - y[t == 0].mean())
    return EffectResult(d, d - 0.1, d + 0.1)
'''
# Columns that name the run rather than its numbers.
NAMING = ("run", "model", "representation")


@pytest.fixture
def user_module(write_module):
    return write_module(USER_MODULE)


def same(a, b) -> bool:
    """Equal values, NaN and None counting as equal."""
    return all((x == y) or (pd.isna(x) and pd.isna(y)) for x, y in zip(a, b)) and len(a) == len(b)


class TruePropensity:
    """Returns each user's true propensity, looked up by the user's posts (the method sees only text)."""

    def __init__(self, task):
        self.lookup = {tuple(u): p for u, p in zip(task.texts, task.propensity)}

    def fit(self, X, t):
        return self

    def predict_proba(self, X):
        return np.array([self.lookup[tuple(u)] for u in X])


# ---------------------------------------------------------------------------------------- the oracle
@pytest.mark.parametrize(("task", "level", "seed"), [("linguistic_complexity", 2, 1), ("placebo", 1, 3)])
def test_true_propensities_reproduce_the_oracle_row_exactly(tiny_corpus, tmp_path, task, level, seed):
    from textcause.data import CausalTextDataModule

    grid = grid_from_dict(
        {
            "corpora": {"tiny": tiny_corpus},
            "tasks": {task: [level]},
            "models": ["oracle"],
            "seeds": [seed],
            "overrides": {"trainer.max_epochs": 1},
            "evaluation": {"n_boot": 100},
        }
    )
    oracle = run_cell(grid.cells[0], tmp_path / "out")
    assert oracle.status == "ok"
    built = build_task(tiny_corpus, task, level, seed)
    reference = CausalTextDataModule(corpus=tiny_corpus, task=task, level=level, seed=seed, representation="none").task
    assert built.texts == reference.texts and (built.propensity == reference.propensity).all()
    assert all((built.split[s] == reference.split[s]).all() for s in ("train", "val", "test"))

    table = textcause.evaluate(
        TruePropensity(built), corpus=tiny_corpus, tasks={task: [level]}, seeds=[seed], n_boot=100, progress=False
    )
    ref = pd.DataFrame(oracle.rows).reindex(columns=list(COLUMNS))
    assert list(table["estimator"]) == ["unadjusted", "ipw", "stratified", "matching"] == list(ref["estimator"])
    for col in RESULT_COLUMNS:
        if col not in NAMING:
            assert same(table[col].tolist(), ref[col].tolist()), col
    assert (table["model"] == "TruePropensity").all() and (table["representation"] == "text").all()
    assert (table["iptw_weight_mse"] == 0).all() and table["ci_low"].notna().all()


# ---------------------------------------------------------------------------------------- broken methods
class Flaky:
    """Misbehaves in the first cell it runs in (``how``), then works."""

    calls: list[int] = []

    def __init__(self, how):
        self.how = how

    def fit(self, X, t):
        if self.how == "fit" and not Flaky.calls:
            Flaky.calls.append(1)
            raise ValueError("bad fit")
        return self

    def predict_proba(self, X):
        first = not Flaky.calls
        Flaky.calls.append(1)
        p = np.full(len(X), 0.5)
        if not first or self.how == "fit":
            return p
        if self.how == "raise":
            raise RuntimeError("boom")
        return {
            "length": p[1:],
            "nan": np.where(np.arange(len(p)) == 3, np.nan, p),
            "above_one": p + (np.arange(len(p)) == 0),
            "type": "oops",
        }[self.how]


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("length", "Flaky.predict_proba returned 119 values for 120 test users."),
        ("nan", "Flaky.predict_proba returned 1 NaN or infinite values (of 120)."),
        (
            "above_one",
            "Flaky.predict_proba returned values outside [0, 1] (from 0.5 to 1.5); it must return probabilities P(T=1).",
        ),
        ("type", "Flaky.predict_proba returned str; expected an array of 120 probabilities."),
        ("raise", "Flaky.predict_proba raised RuntimeError: boom"),
        ("fit", "Flaky.fit raised ValueError: bad fit"),
    ],
)
def test_a_broken_method_fails_its_cell_and_the_run_goes_on(tiny_corpus, capsys, how, message):
    Flaky.calls = []
    table = textcause.evaluate(Flaky(how), corpus=tiny_corpus, tasks={"placebo": [1]}, seeds=[0, 1], n_boot=10)
    failed, ok = table[table.seed == 0], table[table.seed == 1]
    assert (failed["status"] == "failed").all() and (failed["error"] == message).all() and failed["ate"].isna().all()
    assert list(failed["estimator"]) == ["unadjusted", "ipw", "stratified", "matching"]
    assert (ok["status"] == "ok").all() and ok["ate"].notna().all() and len(ok) == 4
    assert f"failed: evaluate/tiny/placebo-1/Flaky/s0: {message}" in capsys.readouterr().err


def test_a_propensity_method_fits_on_training_users_and_predicts_test_users(tiny_corpus):
    import scipy.sparse as sp

    from textcause.features import build_representation

    seen = []

    class Recorder:
        representation = "bigram_binary"

        def fit(self, X, t, validation=None):
            seen.append(("fit", X, t, validation))
            return self

        def predict_proba(self, X):
            seen.append(("predict", X))
            return np.full(X.shape[0], 0.5)

    textcause.evaluate(
        Recorder(), corpus=tiny_corpus, tasks={"linguistic_complexity": [1]}, seeds=[4], n_boot=0, progress=False
    )
    task = build_task(tiny_corpus, "linguistic_complexity", 1, 4)
    matrix = build_representation("bigram_binary", task.texts, task.split.train, min_users=10, seed=4).matrix
    (_, X, t, (X_val, t_val)), (_, X_test) = seen
    assert sp.isspmatrix_csr(X) and (matrix[task.split.train] != X).nnz == 0 and t.dtype == np.int64
    assert (t == task.treatment[task.split.train]).all() and (t_val == task.treatment[task.split.val]).all()
    assert (X_val != matrix[task.split.val]).nnz == 0 and (X_test != matrix[task.split.test]).nnz == 0


def test_probabilities_are_clipped(tiny_corpus):
    class Certain:
        def fit(self, X, t):
            return self

        def predict_proba(self, X):
            return np.where(np.arange(len(X)) % 2 == 0, 0.0, 1.0)

    table = textcause.evaluate(Certain(), corpus=tiny_corpus, tasks={"placebo": [1]}, n_boot=0, progress=False)
    assert (table["status"] == "ok").all() and np.isfinite(table["ate"]).all()  # IPW weights stay finite: 1e-6 clip
    assert table["ci_low"].isna().all()  # n_boot = 0: no interval


# ---------------------------------------------------------------------------------------- effect methods
def test_effect_method_rows(tiny_corpus):
    seen = {}

    def oracle_effect(X, t, y):
        seen.update(X=X, t=t, y=y)
        return (0.4, 0.3, 0.5)

    table = textcause.evaluate(
        FunctionEffect(oracle_effect, estimator="dr"),
        corpus=tiny_corpus,
        tasks={"linguistic_complexity": [1], "sample_size": [3]},
        seeds=[2],
        n_boot=50,
        progress=False,
    )
    assert list(table["estimator"]) == ["unadjusted", "dr"] * 2 and (table["split"] == "all").all()
    dr = table[table.estimator == "dr"].set_index("task")
    assert (dr["bias"] == dr["ate"] - dr["true_ate"]).all() and dr.at["linguistic_complexity", "bias"] == pytest.approx(
        0.0
    )
    assert (dr["covers_truth"] == True).all() and (dr["ci_method"] == "the method's own interval").all()  # noqa: E712
    assert dr["treatment_accuracy"].isna().all()  # no propensities, no propensity metrics
    task = build_task(tiny_corpus, "sample_size", 3, 2)
    users = np.unique(np.concatenate([task.split.train, task.split.val, task.split.test]))
    assert dr.at["sample_size", "n_used"] == len(users) < len(task)  # the dropped training users are not seen
    assert seen["X"] == [task.texts[i] for i in users] and seen["t"].dtype == np.int64 and seen["y"].dtype == np.float64
    assert (seen["t"] == task.treatment[users]).all()
    unadjusted = table[(table.estimator == "unadjusted") & (table.task == "sample_size")].iloc[0]
    ref = est.bootstrap_ci("unadjusted", task.treatment[users], task.outcome[users], n_boot=50, seed=2)
    assert (unadjusted["ate"], unadjusted["ci_low"], unadjusted["ci_high"]) == (ref.ate, ref.ci_low, ref.ci_high)


def test_effect_bootstrap_reruns_the_method(tiny_corpus):
    from textcause.estimators import bootstrap_indices

    def diff(X, t, y):
        return float(y[t == 1].mean() - y[t == 0].mean())

    table = textcause.evaluate(
        diff, corpus=tiny_corpus, tasks={"placebo": [1]}, seeds=[0], n_boot=20, effect_n_boot=30, progress=False
    )
    row = table[table.estimator == "effect"].iloc[0]
    task = build_task(tiny_corpus, "placebo", 1, 0)
    t, y = task.treatment.astype(np.int64), task.outcome.astype(np.float64)
    reps = [diff(None, t[r], y[r]) for chunk in bootstrap_indices(len(t), 30, 0) for r in chunk]
    assert (row["ci_low"], row["ci_high"]) == tuple(np.quantile(reps, [0.025, 0.975]))
    assert row["ci_method"].startswith("percentile bootstrap re-running the method (30 resamples")
    own = textcause.evaluate(
        lambda X, t, y: EffectResult(0.0, -1.0, 1.0),
        corpus=tiny_corpus,
        tasks={"placebo": [1]},
        n_boot=0,
        effect_n_boot=30,
        progress=False,
    )
    assert own.loc[own.estimator == "effect", "ci_low"].item() == -1.0  # the method's own interval wins


def test_a_broken_effect_method_fails_its_cell(tiny_corpus):
    table = textcause.evaluate(
        FunctionEffect(lambda X, t, y: float("nan"), name="nan_effect"),
        corpus=tiny_corpus,
        tasks={"placebo": [1]},
        n_boot=0,
        progress=False,
    )
    assert list(table["estimator"]) == ["unadjusted", "effect"] and (table["status"] == "failed").all()
    assert (table["error"] == "nan_effect.estimate returned nan as its ATE; expected a finite number.").all()


# ---------------------------------------------------------------------------------------- the database
def test_evaluate_resumes_from_the_database(tiny_corpus, tmp_path, user_module):
    from user_methods import Constant

    db = tmp_path / "results.db"
    kwargs = dict(corpus=tiny_corpus, tasks={"placebo": [1]}, seeds=[0, 1], n_boot=10, db=db, progress=False)
    first = textcause.evaluate(Constant(), **kwargs)
    engine = store.open_store(f"sqlite:///{db}")
    before = {k: (r.token, r.attempts) for k, r in store.ledger(engine, "evaluate").items()}
    assert len(first) == 8 and (first["status"] == "ok").all() and set(first["cell_id"]) == set(before)
    again = textcause.evaluate(Constant(), **kwargs)  # every cell is finished: nothing runs
    assert {k: (r.token, r.attempts) for k, r in store.ledger(engine, "evaluate").items()} == before
    assert same(again["ate"].tolist(), first["ate"].tolist()) and list(again.columns) == list(COLUMNS)
    changed = type("Constant", (Constant,), {"shift": 1})  # other code under the same name
    with pytest.raises(ValueError, match="2 finished cells of grid 'evaluate' .* were run with another configuration"):
        textcause.evaluate(changed(), **kwargs)

    Flaky.calls = []
    flaky = dict(kwargs, seeds=[0], name="flaky")
    assert (textcause.evaluate(Flaky("raise"), **flaky)["status"] == "failed").all()
    assert (textcause.evaluate(Flaky("raise"), **flaky)["status"] == "failed").all()  # failed cells are not rerun
    retried = textcause.evaluate(Flaky("raise"), **flaky, retry_failed=True)
    assert (retried["status"] == "ok").all() and retried["attempt"].eq(2).all()
    Flaky.calls = []
    assert (textcause.evaluate(Flaky("raise"), **dict(flaky, name="flaky2"))["status"] == "failed").all()
    fixed = textcause.evaluate(Flaky("length"), **dict(flaky, name="flaky2"))  # other parameters: a failed cell reruns
    assert (fixed["status"] == "ok").all() and fixed["attempt"].eq(2).all()


def test_config_propensity_runs_the_benchmark_cell(tiny_corpus, tmp_path):
    grid = grid_from_dict(grid_spec(tiny_corpus, name=None, models=["oracle"], threads=None))
    cell_rows = run_cell(grid.cells[0], tmp_path / "out").rows
    table = textcause.evaluate(
        ConfigPropensity("oracle", overrides={"trainer.max_epochs": 1}),
        corpus=tiny_corpus,
        tasks={"linguistic_complexity": [1]},
        n_boot=20,
        progress=False,
    )
    ref = pd.DataFrame(cell_rows).reindex(columns=list(COLUMNS))
    for col in RESULT_COLUMNS:
        if col != "run":
            assert same(table[col].tolist(), ref[col].tolist()), col
    assert (table["model"] == "oracle").all() and (table["model_class"] == "OracleModel").all()
    assert table["config_hash"].iloc[0] == grid.cells[0].config_hash


def test_benchmark_method_cells_report_and_compare(tiny_corpus, tmp_path, user_module, capsys):
    from textcause.analysis.inference import compare
    from textcause.cli.compare import compare_main
    from textcause.reports.report import write_report

    spec = grid_spec(
        tiny_corpus,
        tasks={"placebo": [1]},
        models=["oracle", "user_methods:Constant"],
        methods={"naive_dr": "user_methods:naive"},
        seeds=[0, 1],
    )
    config = write_grid_spec(tmp_path, spec)
    argv = ["--config", str(config), "--out", str(tmp_path / "out"), "--method", f"{user_module}:Half"]
    assert benchmark_main(argv + ["--dry-run"]) == 0
    listed = capsys.readouterr().out
    assert "tiny/tiny/placebo-1/naive_dr/s1\ttodo" in listed and "tiny/tiny/placebo-1/Half/s0\ttodo" in listed
    assert benchmark_main(argv) == 0
    db = tmp_path / "out" / "results.db"
    df = store.read_results(f"sqlite:///{db}", "tiny")
    assert set(df["status"]) == {"ok"} and set(df["model"]) == {"oracle", "constant", "naive_dr", "Half"}
    effect = df[df.model == "naive_dr"]
    own = effect[effect.estimator == "effect"]
    assert (
        list(effect["estimator"]) == ["unadjusted", "effect"] * 2
        and (own["ci_high"] - own["ci_low"]).round(9).eq(0.2).all()
    )
    logs = (tmp_path / "out" / "runs" / "tiny" / "tiny" / "placebo-1" / "constant" / "s0" / "cell.log").read_text()
    assert "fitting constant on 96 users" in logs  # the method's output goes to its cell's log

    extra = textcause.evaluate(
        FunctionEffect(lambda X, t, y: (0.05, -0.5, 0.6), name="wide"),
        corpus=tiny_corpus,
        tasks={"placebo": [1]},
        seeds=[0, 1],
        n_boot=20,
        db=db,
        name="tiny",
        progress=False,
    )
    assert set(extra["cell_id"]) == {"tiny/tiny/placebo-1/wide/s0", "tiny/tiny/placebo-1/wide/s1"}

    report = write_report(str(db), tmp_path / "report", formats=["png"])
    text = report["markdown"].read_text(encoding="utf-8")

    def lines(section: str, *words: str) -> list[str]:
        body = text.split(f"## {section}")[1].split("\n## ")[0]
        return [ln for ln in body.splitlines() if all(f"| {w} |" in ln for w in words)]

    assert lines("Placebo test", "naive_dr", "effect") and lines("Placebo test", "wide", "effect")
    # 2 of 2 cells covered: the share with its exact binomial interval [0.025 ** (1 / 2), 1] and the count
    assert any("1.00 [0.16, 1.00] (2)" in ln for ln in lines("Coverage of the true ATE", "wide"))
    summary = pd.read_csv(report["summary"])
    wide = summary[(summary.model == "wide") & (summary.estimator == "effect")].iloc[0]
    assert wide["false_discovery_rate"] == 0.0 and wide["coverage"] == 1.0 and wide["n_seeds"] == 2

    table = compare(str(db), "naive_dr:effect", "oracle:stratified")
    assert len(table) == 1 and table["n_seeds"].iloc[0] == 2
    compare_main(["--db", str(db), "wide:effect", "constant"])
    assert "A = wide:effect   B = constant:stratified" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------- arguments
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"tasks": ["nope"]},
            r"^textcause.evaluate: 'tasks' must be one of \['linguistic_complexity', .*\]. Got 'nope' instead",
        ),
        ({"tasks": {"placebo": [3]}}, r"^textcause.evaluate: 'tasks.placebo' must be one of \[1\]. Got 3 instead"),
        ({"seeds": []}, r"^textcause.evaluate: 'seeds' must be a list of distinct ints >= 0 or an int >= 1. Got \[\]"),
        (
            {"estimators": ["doubly_robust"]},
            r"^textcause.evaluate: 'evaluation.estimators' must be a non-empty list of distinct "
            r"values among \['ipw', 'stratified', 'matching', 'aipw', 'tmle'\]. Got \['doubly_robust'\] instead",
        ),
        ({"n_boot": -1}, r"^textcause.evaluate: 'evaluation.n_boot' must be an int >= 0. Got -1 instead"),
        ({"effect_n_boot": -2}, r"^textcause.evaluate: 'evaluation.effect_n_boot' must be an int >= 0. Got -2 instead"),
        ({"name": "a b"}, "The 'name' parameter of evaluate must be made of letters"),
        ({"n_users": 0}, "n_users"),
        ({"corpus": 3}, "The 'corpus' parameter of evaluate must be a corpus name or path"),
    ],
)
def test_evaluate_argument_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        textcause.evaluate(lambda X, t, y: 0.0, **kwargs)


def test_importing_textcause_stays_light():
    code = (
        "import sys, textcause; textcause.as_method; textcause.PropensityMethod; "
        "heavy = [m for m in ('torch', 'lightning', 'pandas', 'sklearn') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

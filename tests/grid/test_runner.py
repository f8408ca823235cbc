"""``textcause benchmark``: the grid, real cells, resume after a kill, two workers, failures as data."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import sqlalchemy as sa
from tinygrid import grid_spec, write_grid_spec

from textcause import store
from textcause.cli.benchmark import benchmark_main
from textcause.estimators.registry import PROPENSITY_ESTIMATORS as ESTIMATORS
from textcause.grid.spec import grid_from_dict, load_grid
from textcause.grid.worker import holder_alive, open_study, worker_loop
from textcause.paths import config_dir

ROOT = Path(__file__).resolve().parents[2]
N_EST = 4  # unadjusted + ipw, stratified, matching


def write_grid(tmp_path, corpus, *, name="tiny", models=("oracle", "unadjusted"), levels=(1, 2), **extra):
    spec = grid_spec(corpus, name=name, tasks={"linguistic_complexity": list(levels)}, models=models, **extra)
    return write_grid_spec(tmp_path, spec)


def db(tmp_path):
    return store.open_store(store.default_url(tmp_path / "out"))


def run(config, tmp_path, *extra):
    return benchmark_main(["--config", str(config), "--out", str(tmp_path / "out"), *extra])


def n_trials(tmp_path):
    with db(tmp_path).begin() as conn:
        return conn.execute(sa.text("SELECT count(*) FROM trials")).scalar()


# ---------------------------------------------------------------------------------------- the grid
def test_cells_are_the_product_of_the_dimensions():
    grid = grid_from_dict(
        {
            "name": "g",
            "corpora": {"a": "x.jsonl.gz", "b": "y.jsonl.gz"},
            "tasks": {"linguistic_complexity": [1, 2], "placebo": "all"},
            "models": ["oracle", "unadjusted"],
            "seeds": 2,
        }
    )
    assert len(grid.cells) == 2 * 3 * 2 * 2
    assert len({c.cell_id for c in grid.cells}) == len(grid.cells)
    assert grid.cells[0].cell_id == "g/a/linguistic_complexity-1/oracle/s0"
    space = grid.search_space
    assert space == {
        "corpus": ["a", "b"],
        "task": ["linguistic_complexity-1", "linguistic_complexity-2", "placebo-1"],
        "model": ["oracle", "unadjusted"],
        "seed": [0, 1],
    }
    for cell in grid.cells:  # every Optuna grid point names exactly its cell
        assert grid.cell_for(cell.params) is cell
    assert grid_from_dict({"corpora": ["twitter"], "models": ["oracle"]}).cells[0].corpus == "twitter"


def test_all_tasks_are_the_fourteen_levels():
    grid = grid_from_dict({"corpora": ["twitter"], "models": ["oracle"], "tasks": "all"})
    assert len(grid.cells) == 14
    assert ("order_of_text", 2) in {(c.task, c.level) for c in grid.cells}


def test_config_hash_follows_the_configuration_not_the_coordinates():
    base = {"corpora": ["twitter"], "models": ["oracle", "unadjusted"], "tasks": ["placebo"], "seeds": [0, 1]}
    g = grid_from_dict(base)
    hashes = {(c.model, c.seed): c.config_hash for c in g.cells}
    assert hashes[("oracle", 0)] == hashes[("oracle", 1)] != hashes[("unadjusted", 0)]
    tuned = grid_from_dict({**base, "model_overrides": {"oracle": {"trainer.max_epochs": 2}}})
    moved = {(c.model, c.seed): c.config_hash for c in tuned.cells}
    assert moved[("oracle", 0)] != hashes[("oracle", 0)] and moved[("unadjusted", 0)] == hashes[("unadjusted", 0)]
    assert grid_from_dict({**base, "evaluation": {"n_boot": 5}}).cells[0].config_hash != hashes[("oracle", 0)]
    assert grid_from_dict({**base, "overrides": {"data.n_users": 9}}).grid_hash != g.grid_hash


def test_run_settings_put_the_cell_after_the_overrides():
    from pathlib import Path

    from textcause.run.fit import run_config

    cell = grid_from_dict(
        {
            "corpora": {"c": "/data/c.jsonl.gz"},
            "models": ["lr_bigram_binary"],
            "tasks": {"placebo": [1]},
            "seeds": [3],
            "overrides": {"data.n_users": 300, "--trainer.max_epochs": 2, "data.insertion": "append", "data.task": "x"},
        }
    ).cells[0]
    settings = cell.run_settings("/out/run")
    assert settings.configs == (config_dir() / "model" / "lr_bigram_binary.yaml",)
    assert settings.run_dir == Path("/out/run") and settings.quiet
    assert settings.evaluation.seed == 3 and settings.evaluation.n_boot == 1000 and settings.evaluation.split == "test"
    config = run_config(settings)
    assert config["data"]["n_users"] == 300 and config["trainer"]["max_epochs"] == 2
    assert config["data"]["corpus"] == "/data/c.jsonl.gz" and config["seed_everything"] == 3
    assert config["data"]["task"] == "placebo"  # the cell's own coordinates come after the grid's overrides
    assert config["model"]["init_args"]["optimizer"] == "lbfgs"  # from the model config file
    assert config["trainer"]["logger"]["init_args"] == {"save_dir": "/out/run", "name": "fit", "version": 0}


def test_the_shipped_grids():
    weld = load_grid(ROOT / "configs" / "benchmark" / "weld.yaml")
    models = {c.model for c in weld.cells}
    representations = ("unigram_binary", "bigram_binary", "bigram_counts", "lda")
    paper = {f"lr_tuned_{r}" for r in representations} | {f"nn_{r}" for r in representations}
    assert models == {"oracle", "unadjusted", "sherbert_pooled", "order_count"} | paper
    assert all(c.model_path.is_file() for c in weld.cells)
    assert {c.corpus for c in weld.cells} == {"blogs", "twitter"}
    assert sorted({c.seed for c in weld.cells}) == [0, 1, 2, 3, 4]
    assert len(weld.cells) == 2 * 14 * 12 * 5
    smoke = load_grid(ROOT / "configs" / "benchmark" / "smoke.yaml")
    assert {c.corpus for c in smoke.cells} == {"twitter"} and {c.seed for c in smoke.cells} == {0}
    assert len({(c.task, c.level) for c in smoke.cells}) == 14
    assert dict(smoke.cells[0].overrides)["data.n_users"] == 300
    assert all(c.model_path.is_file() for c in smoke.cells)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"corpora": ["t"], "models": ["m"], "color": 1}, r"unknown key\(s\) \['color'\]; expected some of \['tasks'"),
        ({"models": ["m"]}, "the key 'corpora' is required"),
        ({"corpora": None, "models": ["m"]}, "the key 'corpora' is required"),
        (
            {"corpora": ["t"], "models": []},
            r"'models' must be a non-empty list of model config names. Got \[\] instead",
        ),
        ({"corpora": ["t"], "models": [3]}, "'models' must be a non-empty list of model config names. Got"),
        ({"corpora": ["t"], "models": ["m", "m"]}, "model names must be distinct"),
        (
            {"corpora": ["t"], "models": ["m"], "tasks": ["nope"]},
            r"'tasks' must be one of \['linguistic_complexity', .*\]. Got 'nope' instead",
        ),
        (
            {"corpora": ["t"], "models": ["m"], "tasks": {"placebo": [2]}},
            r"'tasks.placebo' must be one of \[1\]. Got 2 instead",
        ),
        (
            {"corpora": ["t"], "models": ["m"], "tasks": {"placebo": ["1"]}},
            r"'tasks.placebo' must be one of \[1\]. Got '1' instead",
        ),
        ({"corpora": ["t"], "models": ["m"], "tasks": 3}, r"'tasks' must be 'all', a list of task names or a mapping"),
        ({"corpora": ["t"], "models": ["m"], "tasks": []}, r"'tasks' must be 'all', a list of task names or a mapping"),
        ({"corpora": ["t"], "models": ["m"], "seeds": [0, 0]}, "'seeds' must be a list of distinct ints"),
        ({"corpora": ["t"], "models": ["m"], "seeds": 0}, "'seeds' must be a list of distinct ints"),
        (
            {"corpora": ["t"], "models": ["m"], "seeds": "3"},
            r"'seeds' must be a list of distinct ints >= 0 or an int >= 1. Got '3' instead",
        ),
        ({"corpora": [], "models": ["m"]}, "'corpora' must be a non-empty list"),
        (
            {"corpora": ["a/t.jsonl", "b/t.jsonl"], "models": ["m"]},
            "'corpora' must be a non-empty list .* with distinct names",
        ),
        ({"corpora": {"a": 1}, "models": ["m"]}, "'corpora' must be a non-empty list of corpus names or paths"),
        ({"corpora": ["t"], "models": ["m"], "name": "a b"}, "'name' must be made of letters"),
        ({"corpora": ["t"], "models": ["m"], "name": 5}, "'name' must be made of letters"),
        ({"corpora": ["t"], "models": ["m"], "overrides": ["x"]}, r"'overrides' must be a mapping of train.py options"),
        (
            {"corpora": ["t"], "models": ["m"], "overrides": {1: 2}},
            r"'overrides' must be a mapping of train.py options",
        ),
        (
            {"corpora": ["t"], "models": ["m"], "model_overrides": {"z": {}}},
            "'model_overrides' must be a mapping from model names of 'models'",
        ),
        (
            {"corpora": ["t"], "models": ["m"], "model_overrides": {"m": [1]}},
            "'model_overrides' must be a mapping from model names",
        ),
        (
            {"corpora": ["t"], "models": ["m"], "evaluation": {"n_boot": -1}},
            r"'evaluation.n_boot' must be an int >= 0. Got -1 instead",
        ),
        (
            {"corpora": ["t"], "models": ["m"], "evaluation": {"n_boot": "5"}},
            r"'evaluation.n_boot' must be an int >= 0. Got '5' instead",
        ),
        (
            {"corpora": ["t"], "models": ["m"], "evaluation": {"n_boot": True}},
            r"'evaluation.n_boot' must be an int >= 0. Got True instead",
        ),
        (
            {"corpora": ["t"], "models": ["m"], "evaluation": {"estimators": ["doubly_robust"]}},
            r"'evaluation.estimators' must be a non-empty list of distinct values among \['ipw', 'stratified', 'matching', 'aipw', 'tmle'\]",
        ),
        (
            {"corpora": ["t"], "models": ["m"], "evaluation": {"estimators": ["ipw", "ipw"]}},
            "'evaluation.estimators' must be a non-empty list of distinct",
        ),
        (
            {"corpora": ["t"], "models": ["m"], "evaluation": {"split": "dev"}},
            r"'evaluation.split' must be one of \['train', 'val', 'test'\]. Got 'dev' instead",
        ),
        (
            {"corpora": ["t"], "models": ["m"], "evaluation": {"nboot": 5}},
            r"unknown key\(s\) \['nboot'\] in 'evaluation'; expected some of \['n_boot'",
        ),
        (
            {"corpora": ["t"], "models": ["m"], "evaluation": 3},
            r"'evaluation' must be a mapping with some of the keys \['n_boot'",
        ),
        ({"corpora": ["t"], "models": ["m"], "threads": 0}, "'threads' must be an int >= 1. Got 0 instead"),
        (["corpora"], "expected a mapping with some of the keys .*. Got list instead"),
    ],
)
def test_grid_errors(spec, message):
    with pytest.raises(ValueError, match=r"^Benchmark config 'x.yaml': " + message):
        grid_from_dict(spec, source="x.yaml")


def test_grid_nulls_mean_defaults_and_values_are_not_coerced():
    base = {"corpora": ["t"], "models": ["oracle"], "tasks": ["placebo"]}
    plain = grid_from_dict(base)
    nulls = grid_from_dict(
        {
            **base,
            "evaluation": None,
            "overrides": None,
            "model_overrides": {"oracle": None},
            "seeds": None,
            "name": None,
            "threads": None,
        },
        default_name="grid",
    )
    assert [c.config_hash for c in nulls.cells] == [c.config_hash for c in plain.cells] and nulls.name == "grid"
    kept = grid_from_dict({**base, "overrides": {"data.insertion": "null", "--data.n_users": "300"}}).cells[0]
    assert kept.overrides == (("data.insertion", "null"), ("data.n_users", "300"))  # strings stay strings
    with pytest.raises(ValueError, match=r"^Benchmark config 'my grid.yaml': 'name' must be made of letters"):
        grid_from_dict(base, source="my grid.yaml", default_name="my grid")


def test_grid_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="No benchmark config at"):
        load_grid(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("corpora: [unclosed", encoding="utf-8")
    with pytest.raises(
        ValueError,
        match=r"^Benchmark config '.*bad.yaml': not valid YAML \(expected ',' or '\]'.* at line 1, column 19\)\.$",
    ):
        load_grid(bad)


# ---------------------------------------------------------------------------------------- liveness
class FakeStorage:
    def __init__(self, states):
        self.states = states

    def get_trial(self, trial_id):
        if trial_id not in self.states:
            raise KeyError(trial_id)
        return SimpleNamespace(state=self.states[trial_id])


def test_holder_alive():
    from optuna.trial import TrialState

    storage = FakeStorage({1: TrialState.RUNNING, 2: TrialState.FAIL})
    here, elsewhere = socket.gethostname(), "another-machine"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    row = lambda host, pid, trial: SimpleNamespace(host=host, pid=pid, trial_id=trial)  # noqa: E731
    assert holder_alive(row(elsewhere, 1, 1), storage)
    assert not holder_alive(row(elsewhere, 1, 2), storage)  # Optuna failed its trial: heartbeat stopped
    assert not holder_alive(row(elsewhere, 1, 99), storage)
    assert not holder_alive(row(here, dead.pid, 1), storage)  # its process is gone
    assert not holder_alive(row(here, os.getpid(), 1), storage)  # this process holds no claim while it plans
    assert holder_alive(row(here, os.getppid(), 1), storage)


# ---------------------------------------------------------------------------------------- real runs
def test_a_grid_runs_records_every_estimator_and_resumes(tmp_path, tiny_corpus, capsys):
    # a config that exists and parses but whose model cannot be built fails at fit time (issue 43: a
    # model config that does not exist is refused before anything runs, tests/grid/test_precheck.py)
    broken = tmp_path / "nosuchmodel.yaml"
    broken.write_text("model:\n  class_path: textcause.models.NoSuchModel\n", encoding="utf-8")
    config = write_grid(tmp_path, tiny_corpus, models=("oracle", "unadjusted", str(broken)))
    assert run(config, tmp_path) == 1  # issue 43: failed cells make the exit code non-zero
    err = capsys.readouterr().err
    assert "error: 2 cells failed (their rows carry the error); --retry-failed runs them again." in err
    df = store.read_results(db(tmp_path), "tiny")
    assert len(df) == 6 * N_EST and not df.duplicated(["cell_id", "estimator"]).any()
    assert (df.groupby("cell_id").size() == N_EST).all()
    ok, failed = df[df.status == "ok"], df[df.status == "failed"]
    assert len(ok) == 4 * N_EST and set(failed["model"]) == {"nosuchmodel"} and len(failed) == 2 * N_EST
    assert (
        failed["error"].str.startswith("ValueError: The run's options were rejected").all()
        and failed["ate"].isna().all()
    )
    oracle = ok[ok.model == "oracle"]
    assert (oracle["iptw_weight_mse"].abs() < 1e-12).all() and (oracle["spearman"] > 0.999).all()
    unadj = ok[ok.model == "unadjusted"]  # a constant propensity: IPW and stratification give the naive difference
    for _, cell in unadj.groupby("cell_id"):
        est = cell.set_index("estimator")["ate"]
        assert est["ipw"] == pytest.approx(est["unadjusted"]) and est["stratified"] == pytest.approx(est["unadjusted"])
    assert set(ok["level"]) == {1, 2} and (ok["true_ate"] == 0.4).all()
    assert (ok["train_seconds"] > 0).all() and ok["code_version"].str.len().gt(0).all()
    assert ok["model_class"].notna().all() and set(ok["grid"]) == {"tiny"}
    assert "failed: tiny/tiny/linguistic_complexity-1/nosuchmodel/s0: " in err
    for run_dir, cell_id in zip(ok["run"], ok["cell_id"]):  # each cell's own training run and evaluation
        assert Path(run_dir).is_relative_to(tmp_path / "out" / "runs" / cell_id)
        assert (Path(run_dir) / "results.json").is_file() and (Path(run_dir) / "config.yaml").is_file()

    before, trials = store.ledger(db(tmp_path), "tiny"), n_trials(tmp_path)
    assert run(config, tmp_path) == 1  # nothing to do: nothing runs, nothing changes (the failed cells stay failed)
    after = store.ledger(db(tmp_path), "tiny")
    assert {k: (r.token, r.started_at) for k, r in after.items()} == {
        k: (r.token, r.started_at) for k, r in before.items()
    }
    assert n_trials(tmp_path) == trials

    assert run(config, tmp_path, "--retry-failed") == 1  # only the failed cells run again, once (and fail)
    retried = store.ledger(db(tmp_path), "tiny")
    for cell_id, row in retried.items():
        assert row.attempts == (2 if "nosuchmodel" in cell_id else 1)
        assert (row.token == before[cell_id].token) == ("nosuchmodel" not in cell_id)
    assert len(store.read_results(db(tmp_path), "tiny")) == 6 * N_EST


def test_a_cell_optuna_hands_out_twice_runs_once(tmp_path, tiny_corpus):
    grid = load_grid(write_grid(tmp_path, tiny_corpus, models=("unadjusted",)))
    url = store.default_url(tmp_path / "out")
    study = open_study(grid, url, create=True)
    for _ in range(3):  # the same grid point queued three times, as a race between workers would
        study.enqueue_trial(grid.cells[0].params)
    stats = worker_loop(grid, url, tmp_path / "out", since=store.utcnow())
    assert sorted(stats.ran) == sorted(c.cell_id for c in grid.cells) and stats.refused >= 2
    assert all(r.attempts == 1 for r in store.ledger(db(tmp_path), "tiny").values())
    assert len(store.read_results(db(tmp_path), "tiny")) == 2 * N_EST


def test_dead_workers_cells_are_taken_over_however_often_they_died(tmp_path, tiny_corpus):
    grid = load_grid(write_grid(tmp_path, tiny_corpus, models=("unadjusted",)))
    url = store.default_url(tmp_path / "out")
    engine = db(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    first, second = (c.cell_id for c in grid.cells)
    me = store.Claimant(socket.gethostname(), dead.pid)
    store.try_claim(engine, first, "tiny", grid.cells[0].config_hash, me, previous=None)
    store.try_claim(engine, second, "tiny", grid.cells[1].config_hash, me, previous=None)
    with engine.begin() as conn:  # the second cell's workers already died three times
        conn.execute(sa.update(store.cells).where(store.cells.c.cell_id == second).values(attempts=3))
    open_study(grid, url, create=True)
    stats = worker_loop(grid, url, tmp_path / "out", since=store.utcnow())
    rows = store.ledger(engine, "tiny")
    assert sorted(stats.ran) == sorted([first, second])  # kills are not the cell's fault: never given up
    assert (rows[first].status, rows[first].attempts, rows[first].pid) == ("ok", 2, os.getpid())
    assert (rows[second].status, rows[second].attempts, rows[second].error) == ("ok", 4, None)


def test_command_errors(tmp_path, tiny_corpus, capsys):
    assert benchmark_main(["--config", str(tmp_path / "nope.yaml")]) == 2
    assert "No benchmark config at" in capsys.readouterr().err
    config = write_grid(tmp_path, tiny_corpus, models=("unadjusted",), levels=(1,))
    assert run(config, tmp_path, "--workers", "0") == 2
    assert "The 'workers' parameter of run_benchmark must be an int >= 1. Got 0 instead." in capsys.readouterr().err
    assert run(config, tmp_path) == 0
    changed = write_grid(tmp_path, tiny_corpus, models=("unadjusted",), levels=(1,), evaluation={"n_boot": 5})
    assert run(changed, tmp_path) == 2
    assert "1 finished cells of grid 'tiny'" in capsys.readouterr().err


def test_rerun_changed_runs_only_the_cells_whose_configuration_changed(tmp_path, tiny_corpus, capsys):
    """A changed model YAML reruns that model's cells (old rows gone), and leaves the others untouched."""
    model = tmp_path / "unadjusted_copy.yaml"
    model.write_text((config_dir() / "model" / "unadjusted.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    config = write_grid(tmp_path, tiny_corpus, models=("oracle", str(model)), levels=(1,))
    assert run(config, tmp_path) == 0
    engine = db(tmp_path)
    before = store.ledger(engine, "tiny")
    old_rows = store.read_results(engine, "tiny")
    model.write_text(model.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    grid = load_grid(config)
    (edited,) = [c for c in grid.cells if c.model == "unadjusted_copy"]
    (kept,) = [c for c in grid.cells if c.model == "oracle"]
    capsys.readouterr()

    assert run(config, tmp_path, "--dry-run") == 0  # the dry run names it and changes nothing
    out = capsys.readouterr().out
    assert f"{edited.cell_id}\tchanged" in out and f"{kept.cell_id}\tok" in out
    assert "(1 done, 1 changed since they ran)" in out
    assert run(config, tmp_path) == 2  # without the flag: refused, nothing deleted
    assert "or run those cells again with --rerun-changed" in capsys.readouterr().err
    assert store.ledger(engine, "tiny")[edited.cell_id].token == before[edited.cell_id].token

    assert run(config, tmp_path, "--rerun-changed") == 0
    assert "1 finished cells whose configuration changed (unadjusted_copy) are run again" in capsys.readouterr().err
    after = store.ledger(engine, "tiny")
    assert after[edited.cell_id].config_hash == edited.config_hash != before[edited.cell_id].config_hash
    assert after[edited.cell_id].token != before[edited.cell_id].token
    assert (after[kept.cell_id].token, after[kept.cell_id].started_at) == (
        before[kept.cell_id].token,
        before[kept.cell_id].started_at,
    )
    rows = store.read_results(engine, "tiny")
    assert len(rows) == len(old_rows) and not rows.duplicated(["cell_id", "estimator"]).any()
    assert (rows[rows.cell_id == edited.cell_id]["config_hash"] == edited.config_hash).all()
    assert run(config, tmp_path) == 0  # and the grid is whole again: a plain rerun has nothing to do


def test_dry_run_lists_cells_and_creates_nothing(tmp_path, tiny_corpus, capsys):
    config = write_grid(tmp_path, tiny_corpus)
    assert run(config, tmp_path, "--dry-run") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [
        "tiny/tiny/linguistic_complexity-1/oracle/s0\ttodo",
        "tiny/tiny/linguistic_complexity-1/unadjusted/s0\ttodo",
    ]
    assert out[-1].startswith("tiny: 4 cells (0 done)")
    assert not (tmp_path / "out").exists()


def test_dry_run_refuses_a_grid_naming_a_missing_model_config(tmp_path, tiny_corpus, capsys):
    config = write_grid(tmp_path, tiny_corpus, models=("oracle", "nosuchmodel"))
    assert run(config, tmp_path, "--dry-run") == 2
    captured = capsys.readouterr()
    assert "tiny/tiny/linguistic_complexity-1/nosuchmodel/s0\tcannot run: no model config" in captured.out
    assert "error: the grid names model configs that do not exist: 'nosuchmodel' (expected " in captured.err
    assert not (tmp_path / "out").exists()


def _command(config, tmp_path, *extra):
    return [
        sys.executable,
        "-m",
        "textcause.cli.benchmark",
        "--config",
        str(config),
        "--out",
        str(tmp_path / "out"),
        *extra,
    ]


def _ok_cells(tmp_path):
    if not (tmp_path / "out" / "results.db").exists():
        return {}
    return {k: r for k, r in store.ledger(db(tmp_path), "tiny").items() if r.status == "ok"}


@pytest.mark.slow  # two Python processes that import Lightning: about 15 s
def test_a_killed_run_resumes_with_no_duplicate_and_no_missing_row(tmp_path, tiny_corpus):
    config = write_grid(tmp_path, tiny_corpus, levels=(1, 2, 3, 4))  # 8 cells
    proc = subprocess.Popen(_command(config, tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    watch = sa.create_engine(store.default_url(tmp_path / "out"))  # reads only: no table creation, no lock
    ok = 0
    while ok < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)  # a cell of this grid takes tens of milliseconds
        with contextlib.suppress(sa.exc.OperationalError):  # no database or no tables yet
            ok = sum(r.status == "ok" for r in store.ledger(watch, "tiny").values())
    proc.send_signal(signal.SIGKILL)
    watch.dispose()
    proc.wait()
    finished = _ok_cells(tmp_path)
    assert 2 <= len(finished) < 8, "the run must be killed mid-way"
    assert run(config, tmp_path) == 0
    df = store.read_results(db(tmp_path), "tiny")
    assert len(df) == 8 * N_EST and not df.duplicated(["cell_id", "estimator"]).any()
    assert (
        set(df["status"]) == {"ok"}
        and (df.groupby("cell_id")["estimator"].apply(set) == set(("unadjusted",) + ESTIMATORS)).all()
    )
    rows = store.ledger(db(tmp_path), "tiny")
    for cell_id, before in finished.items():  # finished cells were not run again
        assert (rows[cell_id].token, rows[cell_id].started_at, rows[cell_id].attempts) == (
            before.token,
            before.started_at,
            1,
        )
    assert sum(r.attempts for r in rows.values()) <= 9  # at most the one cell running at the kill ran twice


@pytest.mark.slow  # two worker processes (forked, or subprocesses that import Lightning): about 5 s each
@pytest.mark.parametrize("start", ["forkserver", "subprocess"])
def test_two_workers_on_one_database_run_each_cell_once(tmp_path, tiny_corpus, start):
    config = write_grid(tmp_path, tiny_corpus, levels=(1, 2, 3, 4))
    assert run(config, tmp_path, "--workers", "2", "--worker-start", start) == 0
    rows = store.ledger(db(tmp_path), "tiny")
    assert len(rows) == 8 and all(r.status == "ok" and r.attempts == 1 for r in rows.values())
    logs = "".join(p.read_text() for p in (tmp_path / "out" / "logs").glob("worker-*.log"))
    ran = [int(line.split("ran ")[1].split()[0]) for line in logs.splitlines() if ": ran " in line]
    assert len(ran) == 2 and sum(ran) == 8  # the workers' own counts: eight cell runs in all
    with db(tmp_path).begin() as conn:
        done = (
            conn.execute(
                sa.text(
                    "SELECT a.value_json FROM trials t JOIN trial_user_attributes a ON a.trial_id = t.trial_id "
                    "WHERE t.state = 'COMPLETE' AND a.key = 'cell_id'"
                )
            )
            .scalars()
            .all()
        )
    assert sorted(done) == sorted(f'"{cid}"' for cid in rows)
    assert len(store.read_results(db(tmp_path), "tiny")) == 8 * N_EST


@pytest.mark.slow  # the real Twitter corpus and MiniLM encoder (cold cache): a few minutes on 2 cores
def test_the_smoke_grid(tmp_path):
    started = time.perf_counter()
    code = benchmark_main(
        [
            "--config",
            str(ROOT / "configs" / "benchmark" / "smoke.yaml"),
            "--out",
            str(tmp_path / "out"),
            "--workers",
            "2",
        ]
    )
    seconds = time.perf_counter() - started
    assert code == 0
    engine = store.open_store(store.default_url(tmp_path / "out"))
    df = store.read_results(engine, "smoke")
    grid = load_grid(ROOT / "configs" / "benchmark" / "smoke.yaml")
    assert len(df) == len(grid.cells) * N_EST and not df.duplicated(["cell_id", "estimator"]).any()
    assert set(df["status"]) == {"ok"}, df.loc[df.status != "ok", ["cell_id", "error"]].drop_duplicates().to_string()
    assert (df.loc[df.model == "oracle", "spearman"] > 0.999).all()
    print(f"smoke grid: {len(grid.cells)} cells in {seconds:.0f} s")


def test_a_sigterm_during_a_cell_leaves_it_for_the_resume(tmp_path, tiny_corpus, monkeypatch):
    """Lightning turns SIGTERM into SIGTERMException (a SystemExit): the worker stops without
    recording the cell as failed, and a rerun runs it (not 'rejected options', not skipped)."""
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    # the unadjusted cell below would skip the Trainer (textcause.run.fit.untrained_config); this
    # test is about the Trainer's SIGTERM handling, so send it through the Trainer
    monkeypatch.setenv("TEXTCAUSE_FULL_PATH", "1")

    import textcause.run.lightning_cli
    from textcause.grid.worker import run_cell

    grid = load_grid(write_grid(tmp_path, tiny_corpus, models=("unadjusted",), levels=(1,)))
    real = textcause.run.lightning_cli.make_cli

    def stopped(*args, **kwargs):
        raise SIGTERMException()

    monkeypatch.setattr(textcause.run.lightning_cli, "make_cli", stopped)
    with pytest.raises(SIGTERMException):
        run_cell(grid.cells[0], tmp_path / "out")
    url = store.default_url(tmp_path / "out")
    open_study(grid, url, create=True)
    with pytest.raises(SIGTERMException):
        worker_loop(grid, url, tmp_path / "out", since=store.utcnow())
    row = store.ledger(db(tmp_path), "tiny")[grid.cells[0].cell_id]
    assert row.status == "running" and store.read_results(db(tmp_path), "tiny").empty  # nothing recorded
    monkeypatch.setattr(textcause.run.lightning_cli, "make_cli", real)
    stats = worker_loop(grid, url, tmp_path / "out", since=store.utcnow())  # this process's own dead claim
    assert stats.ran == [grid.cells[0].cell_id]
    assert store.ledger(db(tmp_path), "tiny")[grid.cells[0].cell_id].status == "ok"
    assert len(store.read_results(db(tmp_path), "tiny")) == N_EST


def test_worker_start_errors(tmp_path, tiny_corpus, capsys):
    config = write_grid(tmp_path, tiny_corpus)
    from textcause.grid.runner import run_benchmark

    with pytest.raises(
        ValueError,
        match=r"The 'worker_start' parameter of run_benchmark must be one of \['auto', 'forkserver', 'subprocess'\]\. Got 'thread' instead\.",
    ):
        run_benchmark(config, out=tmp_path / "out", workers=2, worker_start="thread")
    with pytest.raises(SystemExit, match="2"):
        run(config, tmp_path, "--workers", "2", "--worker-start", "thread")
    assert "invalid choice: 'thread'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # a fork server that imports Lightning (once a test session) and two grid runs
def test_forked_workers_read_the_environment_and_folder_of_their_start(tmp_path, tiny_corpus, monkeypatch):
    """The fork server is older than this test's environment: a worker forked from it must read
    the corpus that ``$TEXTCAUSE_DATA`` names now (else it would read the real Twitter corpus) and
    find the grid by a path relative to the runner's folder; its rows equal a worker in this process."""
    from textcause.grid.runner import _fork_server
    from textcause.paths import CORPORA

    assert _fork_server("forkserver") is not None  # running before the environment below changes
    data = tmp_path / "data"
    data.mkdir()
    os.link(tiny_corpus, data / CORPORA["twitter"])
    monkeypatch.setenv("TEXTCAUSE_DATA", str(data))
    monkeypatch.chdir(tmp_path)
    write_grid(tmp_path, "twitter")
    rows = {}
    for workers in (1, 2):
        code = benchmark_main(["--config", "tiny.yaml", "--out", f"out{workers}", "--workers", str(workers)])
        assert code == 0
        df = store.read_results(store.open_store(store.default_url(tmp_path / f"out{workers}")), "tiny")
        rows[workers] = df.sort_values(["cell_id", "estimator"])[
            ["cell_id", "estimator", "ate", "ci_low", "ci_high", "n_used", "true_ate"]
        ]
    assert len(rows[2]) == 4 * N_EST
    assert rows[2].reset_index(drop=True).equals(rows[1].reset_index(drop=True))


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")  # a zombie has ended
    except FileNotFoundError:
        return True


def _two_workers_with_a_cell(tmp_path, tiny_corpus, **popen):
    """A runner process on 2 forked workers (12 cells), once both workers have claimed a cell: (process, pids)."""
    config = write_grid(tmp_path, tiny_corpus, levels=(1, 2, 3, 4), models=("oracle", "unadjusted", "lr_bigram_binary"))
    proc = subprocess.Popen(_command(config, tmp_path, "--workers", "2"), stdout=subprocess.DEVNULL, **popen)
    deadline, pids = time.monotonic() + 120, set()
    while len(pids) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        if (tmp_path / "out" / "results.db").exists():
            with contextlib.suppress(sa.exc.OperationalError):  # the tables are being created
                pids = {r.pid for r in store.ledger(db(tmp_path), "tiny").values() if r.pid}
    assert len(pids) == 2 and proc.poll() is None, "both workers must have claimed a cell before the kill"
    return proc, pids


@pytest.mark.slow  # a runner process with two forked workers, killed mid-run: about 15 s
@pytest.mark.skipif(sys.platform != "linux", reason="the fork server and PR_SET_PDEATHSIG are Linux's")
def test_a_killed_runner_takes_its_forked_workers_with_it(tmp_path, tiny_corpus):
    proc, pids = _two_workers_with_a_cell(tmp_path, tiny_corpus, stderr=subprocess.DEVNULL)
    assert all(not _gone(pid) for pid in pids)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 30
    while not all(_gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert all(_gone(pid) for pid in pids), "a worker outlived the killed runner"


def test_a_dead_workers_exit_is_said_in_words():
    from textcause.grid.runner import worker_ended

    assert worker_ended(0, -9, "out/logs/worker-0.log") == (
        "worker 0 was killed by SIGKILL (when nothing else sent it, the kernel's out-of-memory killer: "
        "see `dmesg`); see out/logs/worker-0.log"
    )
    assert worker_ended(1, -15, "w.log") == "worker 1 was killed by SIGTERM; see w.log"
    assert worker_ended(1, 3, "w.log") == "worker 1 exited with code 3; see w.log"


@pytest.mark.slow  # a runner process with two forked workers, one killed mid-run: about 15 s
@pytest.mark.skipif(sys.platform != "linux", reason="the fork server is Linux's")
def test_a_killed_worker_is_said_at_once_and_the_other_finishes_the_grid(tmp_path, tiny_corpus):
    proc, pids = _two_workers_with_a_cell(tmp_path, tiny_corpus, stderr=subprocess.PIPE, text=True)
    os.kill(min(pids), signal.SIGKILL)  # as the out-of-memory killer does
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1
    said = [line for line in err.splitlines() if line.startswith("error: worker ")]
    assert len(said) == 1 and "was killed by SIGKILL" in said[0] and "out-of-memory killer" in said[0], err[-2000:]
    assert said[0].endswith("the other workers go on."), said
    rows = store.ledger(db(tmp_path), "tiny")  # the other worker took over the dead one's cell
    assert len(rows) == 12 and all(r.status == "ok" for r in rows.values())


def _forked_sleeper(seconds: float):
    import multiprocessing

    from textcause.grid.runner import _Forked

    proc = _Forked.__new__(_Forked)  # a forked process with the runner's view of a worker, running time.sleep
    proc.process = multiprocessing.get_context("fork").Process(target=time.sleep, args=(seconds,))
    proc.process.start()
    return proc


def test_the_runner_sees_a_forked_worker_exit_at_once():
    from textcause.grid.runner import _wait_for_exit

    short, long = _forked_sleeper(0.3), _forked_sleeper(30)
    try:
        t0 = time.perf_counter()
        _wait_for_exit([short, long], 10.0)  # returns when the first one ends, not after the timeout
        waited = time.perf_counter() - t0
        assert 0.25 < waited < 3 and short.poll() == 0 and long.poll() is None
        t0 = time.perf_counter()
        _wait_for_exit([short, long], 0.2)  # only the running one counts: back after the timeout
        assert 0.15 < time.perf_counter() - t0 < 3 and long.poll() is None
    finally:
        long.process.kill()
        long.process.join()


def test_the_runner_polls_subprocess_workers():
    from textcause.grid.runner import _wait_for_exit

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    try:
        t0 = time.perf_counter()
        _wait_for_exit([proc], 10.0)
        assert time.perf_counter() - t0 < 5 and proc.poll() == 0
    finally:
        proc.kill()
        proc.wait()


def test_stopping_workers_terminates_them_and_kills_one_that_ignores_sigterm():
    from textcause.grid.runner import _stop_workers

    ready = "import signal, sys, time; {}; print('ready', flush=True); time.sleep(60)"
    polite = subprocess.Popen([sys.executable, "-c", ready.format("pass")], stdout=subprocess.PIPE, text=True)
    stubborn = subprocess.Popen(
        [sys.executable, "-c", ready.format("signal.signal(signal.SIGTERM, signal.SIG_IGN)")],
        stdout=subprocess.PIPE,
        text=True,
    )
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        assert polite.stdout.readline() == stubborn.stdout.readline() == "ready\n" and done.wait(30) == 0
        start = time.monotonic()
        _stop_workers([polite, stubborn, done], grace=1.0)
        assert time.monotonic() - start < 10
        assert (polite.returncode, stubborn.returncode, done.returncode) == (-signal.SIGTERM, -signal.SIGKILL, 0)
    finally:
        for p in (polite, stubborn):
            if p.poll() is None:
                p.kill()


def test_a_second_signal_does_not_cut_the_cleanup_short():
    from textcause.grid.runner import _signals_held

    received = []
    previous = signal.signal(signal.SIGTERM, lambda *a: received.append("after"))
    try:
        with _signals_held():
            os.kill(os.getpid(), signal.SIGTERM)  # ignored: the workers' stop and the archive's write go on
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
        assert received == []
        os.kill(os.getpid(), signal.SIGTERM)  # the handler is back
        time.sleep(0.1)
        assert received == ["after"]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_only_children_started_by_the_run_are_stopped_with_its_workers():
    import multiprocessing

    from textcause.grid.runner import _children, _other_children, _stop_workers

    context = multiprocessing.get_context("fork")
    mine = context.Process(target=time.sleep, args=(60,))  # the caller's own child, before the run
    mine.start()
    try:
        before = _children()
        late = context.Process(target=time.sleep, args=(60,))  # a worker started as the stop came
        late.start()
        others = _other_children([], before)
        assert [c.process for c in others] == [late]
        _stop_workers(others, grace=5.0)
        assert late.exitcode == -signal.SIGTERM and mine.is_alive()
    finally:
        for p in (mine, late):
            if p.is_alive():
                p.kill()
            p.join(5)

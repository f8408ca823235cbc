"""Hyperparameter sweeps: the wandb-format YAML, Optuna offline, trial folders, resuming, pruning,
the oracle label, the summary, the W&B agent's argument strings, and two workers on PostgreSQL."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from textcause.cli.sweep import sweep_main
from textcause.sweep.spec import OBJECTIVES, load_sweep, sweep_from_dict

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "configs" / "sweeps").glob("*.yaml"))
LR = str(ROOT / "configs" / "model" / "lr_unigram_binary.yaml")


def command(corpus: str, *extra: str) -> list[str]:
    return [
        "${env}",
        "${interpreter}",
        "${program}",
        "fit",
        "--config",
        LR,
        f"--data.corpus={corpus}",
        *extra,
        "${args}",
    ]


def write_sweep(folder: Path, name: str, corpus: str, *extra: str, **spec) -> Path:
    spec = {"name": name, "program": "train.py", "command": command(corpus, *extra), **spec}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = sweep_main(list(argv))
    return code, out.getvalue(), err.getvalue()


def study_of(path: Path, out: Path):
    from textcause.sweep.runner import default_storage, open_study

    return open_study(load_sweep(path), default_storage(out), create=False)


def states(study) -> list[str]:
    return [t.state.name for t in study.get_trials()]


# ---------------------------------------------------------------------------------------- the YAML
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_sweeps_pass_wandbs_own_validation_and_ours(path):
    sweeps = pytest.importorskip("sweeps", reason="wandb's sweep engine: pip install --no-deps sweeps")
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert sweeps.schema_violations_from_proposed_config(spec) == []
    sweep = load_sweep(path)
    assert sweep.name == path.stem and sweep.configs and all(Path(c).is_file() for c in sweep.configs)
    assert all("." in p.name for p in sweep.params)  # flat dotted train.py options


def test_the_smoke_sweep_searches_sherbert_lr_and_hidden_size_on_a_smoke_task():
    sweep = load_sweep(ROOT / "configs" / "sweeps" / "sherbert_smoke.yaml")
    assert {p.name for p in sweep.params} == {"model.init_args.lr", "model.init_args.net.init_args.hidden_size"}
    assert sweep.grid_size >= 8 and Path(sweep.configs[0]).name == "sherbert_pooled.yaml"
    assert dict(sweep.overrides)["data.n_users"] == 300 and dict(sweep.overrides)["data.max_posts"] == 10
    assert sweep.objective.name == "val_loss" and not sweep.objective.oracle


def _spec(**changes):
    base = {
        "method": "random",
        "parameters": {"model.init_args.lr": {"min": 0.001, "max": 0.1}},
        "program": "train.py",
        "command": ["${env}", "${interpreter}", "${program}", "fit", "--config", LR, "${args}"],
    }
    return {**base, **changes}


BAD = [
    (_spec(method="gird"), r"'method' must be one of \['grid', 'random', 'bayes'\]. Got 'gird'"),
    (_spec(colour=1), r"unknown key\(s\) \['colour'\]"),
    (_spec(scheduler={"engine": "optuna"}), "'scheduler' is a W&B server feature"),
    (_spec(method="grid"), "a grid sweep needs 'values'"),
    (_spec(parameters={"model.init_args.lr": {"distribution": "normal", "mu": 0, "sigma": 1}}), "no Optuna equivalent"),
    (
        _spec(parameters={"model.init_args.lr": {"distribution": "log_uniform_values", "min": 0.0, "max": 1.0}}),
        "log_uniform_values needs 'min' > 0",
    ),
    (_spec(parameters={"model.init_args.lr": {"min": "1e-4", "max": 0.1}}), r"'min' must be a number \(write 1.0e-4"),
    (_spec(parameters={"model.init_args.lr": {"min": 0.1, "max": 0.01}}), "'min' must be smaller than 'max'"),
    (_spec(parameters={"model.init_args.lr": {"values": []}}), "'values' must be a non-empty list"),
    (_spec(parameters={"model.init_args.lr": {"values": [0.1], "probabilities": [1.0]}}), "'probabilities'"),
    (_spec(parameters={"model": {"parameters": {"lr": {"values": [1]}}}}), "nested 'parameters'"),
    (_spec(parameters={"config": {"values": ["a.yaml"]}}), "a config file cannot be swept"),
    (_spec(parameters={"x.y": {"value": 1}}), "at least one option"),
    (_spec(metric={"name": "val_acc"}), r"'metric.name' must be one of \['val_loss'"),
    (_spec(metric={"name": "val/treatment_accuracy", "goal": "minimize"}), "'metric.goal' must be 'maximize'"),
    (_spec(early_terminate={"type": "hyperband", "max_iter": 9, "s": 2}), "'early_terminate.s' has no Optuna"),
    (_spec(early_terminate={"type": "hyperband", "min_iter": 1, "eta": 2.5}), "'early_terminate.eta' must be an int"),
    (
        _spec(metric={"name": "val/bias_ipw"}, early_terminate={"type": "hyperband", "min_iter": 1}),
        "cannot prune on 'val/bias_ipw'",
    ),
    ({k: v for k, v in _spec().items() if k != "command"}, "the key 'command' is required"),
    (_spec(command=["python", "train.py", "--config", LR, "${args}"]), "'command' must be the train.py fit"),
    (_spec(command=["python", "other.py", "fit", "--config", LR, "${args}"]), "must run train.py fit"),
    (_spec(command=["python", "train.py", "fit", "--config", LR]), r"once with \$\{args\}"),
    (_spec(command=["python", "train.py", "fit", "--config", "nope.yaml", "${args}"]), "'nope.yaml', which does not"),
    (_spec(command=["python", "train.py", "fit", "${args}"]), "must name a model config with --config"),
    (_spec(command=["python", "train.py", "fit", "--config", LR, "x=1", "${args}"]), "'x=1' after fit"),
    (_spec(program=None), "the key 'program' is required"),
    (_spec(run_cap=0), "'run_cap' must be an int >= 1"),
]


@pytest.mark.parametrize(("spec", "message"), BAD)
def test_a_bad_sweep_is_refused_in_one_sentence_naming_the_file_and_key(spec, message):
    with pytest.raises(ValueError, match=message) as info:
        sweep_from_dict(spec, source="bad.yaml")
    text = str(info.value)
    assert text.startswith("Sweep config 'bad.yaml'") and "\n" not in text


def test_wandb_refuses_what_it_cannot_run_too_and_we_refuse_what_optuna_cannot():
    sweeps = pytest.importorskip("sweeps")
    assert sweeps.schema_violations_from_proposed_config(_spec(method="gird"))  # both refuse
    normal = _spec(parameters={"model.init_args.lr": {"distribution": "normal", "mu": 0, "sigma": 1}})
    assert sweeps.schema_violations_from_proposed_config(normal) == []  # W&B can; offline says why not
    with pytest.raises(ValueError, match="no Optuna equivalent"):
        sweep_from_dict(normal, source="normal.yaml")


def test_missing_trial_count_and_values_from_the_command():
    sweep = sweep_from_dict(
        _spec(
            command=["${program}", "fit", "--config", LR, "--data.level", "3", "--model.init_args.lr=1e-05", "${args}"]
        ),
        source="s.yaml",
    )
    assert dict(sweep.overrides) == {"data.level": 3, "model.init_args.lr": 1e-05}
    with pytest.raises(ValueError, match="give --trials N or the key 'run_cap'"):
        sweep.n_trials(None)
    assert sweep.n_trials(7) == 7
    grid = sweep_from_dict(_spec(method="grid", parameters={"a.b": {"values": [1, 2]}, "c.d": {"values": [3, 4, 5]}}))
    assert grid.n_trials(None) == 6 and grid.n_trials(4) == 4 and grid.n_trials(99) == 6


# ---------------------------------------------------------------------------------------- Optuna
def test_methods_map_to_optunas_samplers_and_hyperband_to_its_pruner():
    import optuna

    from textcause.sweep.runner import make_pruner, make_sampler

    def sweep(method, **more):
        values = {"values": [1, 2]} if method == "grid" else {"min": 1, "max": 9}
        return sweep_from_dict(_spec(method=method, parameters={"a.b": values}, **more))

    assert isinstance(make_sampler(sweep("grid")), optuna.samplers.GridSampler)
    assert isinstance(make_sampler(sweep("random")), optuna.samplers.RandomSampler)
    assert isinstance(make_sampler(sweep("bayes")), optuna.samplers.TPESampler)
    assert isinstance(make_pruner(sweep("random")), optuna.pruners.NopPruner)
    pruner = make_pruner(sweep("random", early_terminate={"type": "hyperband", "min_iter": 2, "max_iter": 18}))
    assert isinstance(pruner, optuna.pruners.HyperbandPruner)
    assert (pruner._min_resource, pruner._max_resource, pruner._reduction_factor) == (2, 18, 3)


@pytest.mark.parametrize("method", ["random", "bayes"])
def test_trial_k_draws_the_same_values_in_any_run_so_a_resumed_sweep_never_repeats(method):
    import optuna

    from textcause.sweep.runner import make_sampler, suggest

    sweep = sweep_from_dict(
        _spec(method=method, parameters={"a.b": {"distribution": "log_uniform_values", "min": 0.001, "max": 1.0}})
    )

    def draws(seed, n):
        study = optuna.create_study(sampler=make_sampler(sweep, seed))
        out = []
        for _ in range(n):
            trial = study.ask()
            out.append(suggest(trial, sweep.params[0]))
            study.tell(trial, 1.0)
        return out

    first, again = draws(0, 4), draws(0, 4)
    assert first == again and len(set(first)) == 4  # a new process (a resumed sweep) does not repeat trial 0
    assert draws(1, 4) != first


# ---------------------------------------------------------------------------------------- real sweeps
@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    from conftest import write_history_jsonl

    root = tmp_path_factory.mktemp("sweeps")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TEXTCAUSE_CACHE", str(root / "cache"))
        mp.setenv("WANDB_MODE", "offline")
        yield SimpleNamespace(root=root, corpus=write_history_jsonl(root / "tiny.jsonl.gz"))


@pytest.fixture(scope="module")
def grid_run(workspace):
    parameters = {"model.init_args.weight_decay": {"values": [0.001, 0.1]}, "trainer.max_epochs": {"values": [1, 2]}}
    path = write_sweep(workspace.root, "grid", workspace.corpus, method="grid", parameters=parameters)
    out = workspace.root / "grid-out"
    code, stdout, _ = run_cli("--config", str(path), "--out", str(out))
    return SimpleNamespace(path=path, out=out, code=code, stdout=stdout)


def test_a_grid_sweep_runs_every_point_exactly_once(grid_run):
    assert grid_run.code == 0, grid_run.stdout
    study = study_of(grid_run.path, grid_run.out)
    trials = study.get_trials()
    assert states(study) == ["COMPLETE"] * 4
    points = sorted((t.params["model.init_args.weight_decay"], t.params["trainer.max_epochs"]) for t in trials)
    assert points == sorted(itertools.product([0.001, 0.1], [1, 2]))
    assert all(t.value == pytest.approx(t.user_attrs["val_loss"]) for t in trials)  # the best val_loss of the run
    lines = [ln for ln in grid_run.stdout.splitlines() if ln.startswith("trial ")]
    assert len(lines) == 4 and all("best: trial" in ln for ln in lines) and lines[-1].endswith("4/4 done")


def test_each_trial_is_a_run_folder_with_a_csv_log_and_its_own_offline_wandb_run(grid_run):
    ids = set()
    for t in study_of(grid_run.path, grid_run.out).get_trials():
        folder = grid_run.out / "trials" / str(t.number)
        assert Path(t.user_attrs["run_dir"]) == folder.resolve()
        assert (folder / "fit" / "version_0" / "metrics.csv").is_file() and (folder / "results.csv").is_file()
        runs = list((folder / "wandb").glob("offline-run-*"))
        assert len(runs) == 1 and list(runs[0].glob("run-*.wandb")), "one offline wandb run per trial"
        ids.add(runs[0].name.rsplit("-", 1)[-1])
        logged = b"".join(f.read_bytes() for f in runs[0].rglob("*") if f.is_file())
        assert not any(word in logged for word in (b"coffee", b"weekend", b"dinner")), "post text was logged"
        rows = json.loads((folder / "fit" / "version_0" / "results.json").read_text())["rows"]
        assert {r["split"] for r in rows} == {"val"}  # selection never sees the test split
    assert len(ids) == 4  # four distinct wandb runs: each was finished before the next began


def test_rerunning_a_finished_sweep_runs_nothing_and_summary_prints_the_best(grid_run):
    before = [(t.number, t.value) for t in study_of(grid_run.path, grid_run.out).get_trials()]
    code, stdout, _ = run_cli("--config", str(grid_run.path), "--out", str(grid_run.out))
    assert code == 0 and "ran 0 trials" in stdout
    assert [(t.number, t.value) for t in study_of(grid_run.path, grid_run.out).get_trials()] == before
    code, stdout, _ = run_cli("--config", str(grid_run.path), "--out", str(grid_run.out), "--summary")
    study = study_of(grid_run.path, grid_run.out)
    best = study.best_trial
    assert code == 0 and f"best: trial {best.number}  val_loss = {best.value:.6g}" in stdout
    assert f"--model.init_args.weight_decay={best.params['model.init_args.weight_decay']}" in stdout
    assert f"--trainer.max_epochs={best.params['trainer.max_epochs']}" in stdout and "--config " in stdout
    assert "4 complete, 0 pruned, 0 failed" in stdout and "ORACLE" not in stdout


def test_a_random_sweep_runs_n_trials_and_resumes_with_only_the_missing_ones(workspace):
    parameters = {"model.init_args.weight_decay": {"distribution": "log_uniform_values", "min": 0.001, "max": 1.0}}
    path = write_sweep(
        workspace.root, "random", workspace.corpus, "--trainer.max_epochs=1", method="random", parameters=parameters
    )
    out = workspace.root / "random-out"
    assert run_cli("--config", str(path), "--out", str(out), "--trials", "2")[0] == 0
    first = [(t.number, t.params, t.value) for t in study_of(path, out).get_trials()]
    code, stdout, _ = run_cli("--config", str(path), "--out", str(out), "--trials", "3")
    assert code == 0 and "ran 1 trials" in stdout
    trials = study_of(path, out).get_trials()
    assert states(study_of(path, out)) == ["COMPLETE"] * 3
    assert [(t.number, t.params, t.value) for t in trials[:2]] == first  # untouched
    values = [t.params["model.init_args.weight_decay"] for t in trials]
    assert len(set(values)) == 3  # the added trial drew new values, not trial 0's again


def test_hyperband_prunes_and_a_pruned_trial_is_recorded_as_pruned(workspace):
    parameters = {"model.init_args.weight_decay": {"values": [0.0001, 0.01, 0.3, 3.0]}}
    path = write_sweep(
        workspace.root,
        "hyperband",
        workspace.corpus,
        "--trainer.max_epochs=3",
        # a converged full-batch L-BFGS fit ends after its first epoch; min_epochs keeps the trial
        # running to the pruner's rung at epoch 1 (its later epochs only repeat the converged numbers)
        "--trainer.min_epochs=3",
        method="grid",
        parameters=parameters,
        early_terminate={"type": "hyperband", "min_iter": 1, "max_iter": 1},
    )
    out = workspace.root / "hb-out"
    code, stdout, _ = run_cli("--config", str(path), "--out", str(out))
    assert code == 0, stdout
    study = study_of(path, out)
    pruned = [t for t in study.get_trials() if t.state.name == "PRUNED"]
    assert pruned and len(study.get_trials()) == 4 and "pruned at epoch 1" in stdout
    for t in pruned:  # stopped at the first rung: a CSV log, an offline run, no evaluation
        folder = Path(t.user_attrs["run_dir"])
        assert max(t.intermediate_values) == 1 and (folder / "fit" / "version_0" / "metrics.csv").is_file()
        assert list((folder / "wandb").glob("offline-run-*")) and not (folder / "results.csv").exists()
    assert study.best_trial.state.name == "COMPLETE"


def test_selecting_on_the_true_bias_is_labelled_an_oracle_choice(workspace):
    assert OBJECTIVES["val/bias_ipw"].oracle and OBJECTIVES["val/spearman"].oracle
    assert not OBJECTIVES["val_loss"].oracle and not OBJECTIVES["val/treatment_accuracy"].oracle
    path = write_sweep(
        workspace.root,
        "oracle",
        workspace.corpus,
        "--trainer.max_epochs=1",
        method="grid",
        metric={"name": "val/bias_ipw", "goal": "minimize"},
        parameters={"model.init_args.weight_decay": {"values": [0.01, 1.0]}},
    )
    out = workspace.root / "oracle-out"
    code, stdout, _ = run_cli("--config", str(path), "--out", str(out))
    assert code == 0, stdout
    assert "|val/bias_ipw| (oracle)" in stdout and "ORACLE objective" in stdout
    study = study_of(path, out)
    assert study.user_attrs["oracle"] is True
    for t in study.get_trials():  # the |bias| of IPW on the validation split, at the kept checkpoint
        rows = json.loads((Path(t.user_attrs["run_dir"]) / "fit" / "version_0" / "results.json").read_text())["rows"]
        assert t.value == pytest.approx(abs(next(r["bias"] for r in rows if r["estimator"] == "ipw")))


def test_the_wandb_agents_argument_strings_parse_in_the_train_py_cli(tiny_corpus, tiny_encoder, tmp_path):
    """The agent's own ${args} builder (wandb's code), substituted into the shipped command as the agent does."""
    utils = pytest.importorskip("wandb.sdk.launch.sweeps.utils")
    from textcause.run.lightning_cli import make_cli

    spec = yaml.safe_load((ROOT / "configs" / "sweeps" / "sherbert_smoke.yaml").read_text())
    for lr in (0.0031, 1e-05):
        args = {"model.init_args.lr": {"value": lr}, "model.init_args.net.init_args.hidden_size": {"value": 256}}
        sweep_vars = utils.create_sweep_command_args({"args": args})
        assert f"--model.init_args.lr={lr}" in sweep_vars["args"]
        sweep_vars.update(interpreter=["python"], program=[spec["program"]], env=["/usr/bin/env"])
        argv = []
        for c in spec["command"]:  # wandb/wandb_agent.py: Agent._command_run
            argv += sweep_vars.get(c[2:-1]) or [] if c.startswith("${") and c.endswith("}") else [c]
        assert argv[:4] == ["/usr/bin/env", "python", "train.py", "fit"]
        options = argv[4:]
        options[options.index("--config") + 1] = str(ROOT / "configs" / "model" / "sherbert_pooled.yaml")
        local = [
            f"--data.corpus={tiny_corpus}",
            f"--data.encoder={tiny_encoder}",
            "--data.n_users=60",
            f"--trainer.default_root_dir={tmp_path}",
            "--trainer.logger=false",
        ]
        cli = make_cli(options[:-2] + local + options[-2:], run=False)  # the agent's values come last
        assert cli.model.hparams.lr == pytest.approx(lr)
        assert cli.model.net.hidden_size == 256 and cli.model.net.project.out_features == 256
        assert cli.datamodule.hparams.max_posts == 10  # the command's own option


# ---------------------------------------------------------------------------------------- the command
def test_help_does_not_import_torch_or_lightning():
    code = (
        "import sys, contextlib, io\nfrom textcause.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n        main(['sweep', '--help'])\n    except SystemExit:\n        pass\n"
        "assert '--storage' in out.getvalue()\n"
        "print([m for m in ('torch', 'lightning') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--config", "no/such.yaml"], "error: No sweep config at 'no/such.yaml'"),
        (["--config", str(SHIPPED[0]), "--storage", "not a url"], "is not a database URL"),
        (
            ["--config", str(ROOT / "configs" / "sweeps" / "nn_hyperband.yaml"), "--summary", "--out", "{tmp}"],
            "No sweep database",
        ),
    ],
)
def test_a_users_mistake_is_one_error_line_and_exit_2(argv, message, tmp_path):
    code, _, err = run_cli(*[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code == 2 and err.startswith("error: ") and message in err and err.count("\n") == 1


def test_trials_must_be_a_positive_int(capsys):
    with pytest.raises(SystemExit) as info:
        sweep_main(["--config", "x.yaml", "--trials", "0"])
    assert info.value.code == 2 and "must be an int >= 1" in capsys.readouterr().err


def test_a_refused_option_stops_the_sweep_with_one_sentence(workspace):
    path = write_sweep(
        workspace.root,
        "refused",
        workspace.corpus,
        method="grid",
        parameters={"model.init_args.no_such_option": {"values": [1, 2]}},
    )
    code, _, err = run_cli("--config", str(path), "--out", str(workspace.root / "refused-out"))
    assert code == 2 and "The run's options were rejected" in err and err.count("\n") == 1


def test_run_settings_loggers_need_a_run_folder():
    from textcause.run.fit import RunSettings

    with pytest.raises(ValueError, match="'loggers' parameter of RunSettings needs a 'run_dir'"):
        RunSettings(configs=(LR,), loggers=({"class_path": "x"},))


# ---------------------------------------------------------------------------------------- PostgreSQL
@pytest.mark.slow  # three worker processes that import Lightning, one killed: about a minute
def test_two_workers_on_postgres_run_each_trial_once_and_retry_a_killed_workers_trial(workspace):
    pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'textcause[postgres]')")
    import optuna
    import pgserver

    try:
        server_cm = pgserver.running_server()
        server = server_cm.__enter__()
    except pgserver.Unavailable as err:
        pytest.skip(f"PostgreSQL cannot run here: {err}")
    try:
        url = server.create_database("sweep")
        parameters = {"model.init_args.weight_decay": {"distribution": "log_uniform_values", "min": 0.001, "max": 1.0}}
        path = write_sweep(
            workspace.root,
            "pg",
            workspace.corpus,
            "--trainer.max_epochs=2",
            method="random",
            parameters=parameters,
            run_cap=5,
        )
        env = {**os.environ, "TEXTCAUSE_CACHE": str(workspace.root / "cache"), "WANDB_MODE": "offline"}

        def worker(name):
            argv = [
                sys.executable,
                "-m",
                "textcause.cli.sweep",
                "--config",
                str(path),
                "--storage",
                url,
                "--out",
                str(workspace.root / f"pg-{name}"),
                "--heartbeat",
                "1",
            ]
            return subprocess.Popen(
                argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )

        victim, survivor = worker("a"), worker("b")
        sweep = load_sweep(path)
        killed = None
        deadline = time.monotonic() + 180
        while killed is None and time.monotonic() < deadline:  # SIGKILL a mid-trial once a trial is its
            with contextlib.suppress(KeyError):
                study = optuna.load_study(study_name=sweep.study_name, storage=url)
                for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
                    if t.user_attrs.get("pid") == victim.pid:
                        victim.send_signal(signal.SIGKILL)
                        killed = t
            time.sleep(0.05)
        victim.communicate(timeout=30)
        assert killed is not None, "the first worker never started a trial"
        helper = worker("c")
        logs = []
        for p in (survivor, helper):
            try:
                logs.append(p.communicate(timeout=300)[0])
            except subprocess.TimeoutExpired:
                p.kill()
                logs.append(p.communicate()[0])
            assert p.returncode == 0, logs[-1][-3000:]
        trials = optuna.load_study(study_name=sweep.study_name, storage=url).get_trials()
        complete = [t for t in trials if t.state.name == "COMPLETE"]
        assert len(complete) == 5  # every trial once, none lost
        retry = [t for t in complete if t.system_attrs.get("failed_trial") == killed.number]
        assert len(retry) == 1 and retry[0].params == killed.params  # the killed trial ran again, same values
        assert next(t for t in trials if t.number == killed.number).state.name == "FAIL"
        chains = [t.system_attrs.get("failed_trial", t.number) for t in complete]
        assert len(set(chains)) == 5 and len({t.params["model.init_args.weight_decay"] for t in complete}) == 5
        for t in complete:  # each ran in one of the two live workers' folders, with its own offline run
            folder = Path(t.user_attrs["run_dir"])
            assert folder.parent.parent.name in ("pg-b", "pg-c") and list((folder / "wandb").glob("offline-run-*"))
        assert any("(retry of trial" in log for log in logs)
        print(f"killed trial {killed.number}, retried as trial {retry[0].number}; {len(trials)} trials in all")
    finally:
        server_cm.__exit__(None, None, None)

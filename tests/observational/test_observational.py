"""Observational studies (textcause observe): config checks, the task against hand-computed values,
a real run of two models on a tiny corpus, resume, failures, the figure's layout."""

from __future__ import annotations

import csv
import gzip
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from cliargs import light_help

from textcause.cli import observe as obs_cli
from textcause.corpus.splits import split_users
from textcause.corpus.types import Corpus, History
from textcause.experiments import observational as obs_run
from textcause.observational import build_observational_task, load_spec, load_task, outcomes, spec_from_dict

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
WORDS = [
    "morning",
    "train",
    "rain",
    "music",
    "game",
    "city",
    "park",
    "dog",
    "movie",
    "book",
    "friend",
    "lunch",
    "night",
    "beach",
    "phone",
    "news",
]


def base_spec(**changes):
    spec = {
        "name": "toy",
        "corpus": "unused.jsonl",
        "treatment": {"field": "gender", "treated": "female", "control": "male"},
        "history": {"text_fraction": 0.5},
        "outcome": {"property": "url_share"},
        "min_per_arm": 2,
        "models": ["unadjusted"],
    }
    spec.update(changes)
    return spec


# ------------------------------------------------------------------------------------ config errors
@pytest.mark.parametrize(
    "changes, match",
    [
        ({"colour": "red"}, r"unknown key\(s\) \['colour'\]; expected some of \['corpus', 'treatment'"),
        (
            {"treatment": {"field": "gender", "treated": "female", "control": "male", "arm": 1}},
            r"unknown key\(s\) \['arm'\] in 'treatment'; expected some of \['field', 'treated', 'control'\]",
        ),
        ({"treatment": {"field": "gender", "treated": "female"}}, r"the key 'treatment.control' is required"),
        (
            {"treatment": "gender"},
            r"'treatment' must be a mapping with some of the keys \['field', 'treated', 'control'\]",
        ),
        (
            {"treatment": {"field": "", "treated": "female", "control": "male"}},
            r"'treatment.field' must be the name of a meta field",
        ),
        (
            {"treatment": {"field": "gender", "treated": [], "control": "male"}},
            r"'treatment.treated' must be a value or a non-empty list",
        ),
        (
            {"treatment": {"field": "gender", "treated": {"a": 1}, "control": "male"}},
            r"'treatment.treated' must be a value or a non-empty list",
        ),
        (
            {"treatment": {"field": "gender", "treated": "female", "control": "female"}},
            r"a value cannot be both treated and control: \['female'\]",
        ),
        (
            {"history": {"text_posts": 5, "text_fraction": 0.5}},
            r"give 'history.text_posts' or 'history.text_fraction', not both",
        ),
        (
            {"history": {"text_fraction": 1.5}},
            r"'history.text_fraction' must be a float > 0.0 and < 1.0. Got 1.5 instead",
        ),
        ({"history": {"text_posts": 0}}, r"'history.text_posts' must be an int >= 1. Got 0 instead"),
        ({"history": {"min_later_posts": "5"}}, r"'history.min_later_posts' must be an int >= 1. Got '5' instead"),
        (
            {"outcome": {"property": "likes"}},
            r"'outcome.property' must be one of \[.*'url_share'\]. Got 'likes' instead",
        ),
        (
            {"outcome": {"property": "term_share"}},
            r"'outcome.terms' must be a non-empty list of words for term_share. Got None",
        ),
        ({"outcome": {"property": "term_share", "terms": [" "]}}, r"'outcome.terms' must be a non-empty list of words"),
        (
            {"outcome": {"property": "url_share", "terms": ["x"]}},
            r"'outcome.terms' is only used by term_share, not by 'url_share'",
        ),
        (
            {"outcome": {"property": "url_share", "threshold": "mean"}},
            r"'outcome.threshold' must be 'median', a number or null. Got 'mean'",
        ),
        ({"models": ["oracle"]}, r"the model 'oracle' reads the true propensity"),
        ({"models": ["no_such_model"]}, r"no model config 'no_such_model'"),
        ({"models": []}, r"'models' must be a non-empty list of model config names. Got \[\] instead"),
        ({"models": ["unadjusted", "unadjusted"]}, r"model names must be distinct"),
        (
            {"model_overrides": {"lr_lda": {"trainer.max_epochs": 1}}},
            r"'model_overrides' must be a mapping from model names of 'models'",
        ),
        (
            {"tune": {"lr_lda": {"model.init_args.lr": [0.01]}}},
            r"'tune' must be a mapping from model names of 'models' to search spaces",
        ),
        (
            {"tune": {"unadjusted": {"model.init_args.lr": []}}},
            r"'tune' must be a mapping from model names of 'models' to search spaces",
        ),
        ({"overrides": {"": 1}}, r"'overrides' must be a mapping of train.py options"),
        ({"filter": {"kind": []}}, r"'filter' must be a mapping \{meta field: value or non-empty list of values\}"),
        (
            {"evaluation": {"split": "dev"}},
            r"'evaluation.split' must be one of \['train', 'val', 'test'\]. Got 'dev' instead",
        ),
        (
            {"evaluation": {"estimators": ["doubly_robust"]}},
            r"'evaluation.estimators' must be a non-empty list of distinct values among",
        ),
        ({"min_per_arm": 1}, r"'min_per_arm' must be an int >= 2. Got 1 instead"),
        ({"n_users": 2}, r"'n_users' must be an int >= 3. Got 2 instead"),
        ({"seed": -1}, r"'seed' must be an int >= 0"),
        ({"corpus": ""}, r"'corpus' must be a short corpus name or a path"),
        ({"description": 3}, r"'description' must be a string. Got 3 instead"),
        ({"name": "a b"}, r"'name' must be made of letters, digits"),
    ],
)
def test_bad_config_is_one_clear_sentence(changes, match):
    with pytest.raises(ValueError, match=r"^Observational config 'toy.yaml': " + match):
        spec_from_dict(base_spec(**changes), source="toy.yaml")


def test_nulls_mean_defaults_and_content_is_the_raw_config():
    spec = spec_from_dict(
        base_spec(
            history=None,
            evaluation=None,
            description=None,
            n_users=None,
            outcome={"property": "url_share", "threshold": None},
            overrides={"a.b": "null"},
        )
    )
    assert spec.text_fraction == 0.5 and spec.n_boot == 1000 and spec.description == "" and spec.n_users is None
    assert spec.threshold is None and spec.overrides == (("a.b", "null"),)  # strings stay strings
    assert json.loads(spec.content)["history"] is None  # the content key is of the YAML as written
    assert spec_from_dict(base_spec(outcome={"property": "url_share", "threshold": 2})).threshold == 2


def test_missing_key_and_missing_file(tmp_path):
    spec = base_spec()
    del spec["outcome"]
    with pytest.raises(ValueError, match=r"Observational config 'toy.yaml': the key 'outcome' is required"):
        spec_from_dict(spec, source="toy.yaml")
    with pytest.raises(FileNotFoundError, match="No observational config"):
        load_spec(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(
        ValueError, match=r"^Observational config '.*bad.yaml': not valid YAML \(.* at line 2, column 1\)\.$"
    ):
        load_spec(bad)


def history(uid, gender, posts, kind="human"):
    return History(uid, tuple(posts), None, {"gender": gender, "kind": kind})


def small_corpus():
    url = "see http://x.co/a"
    return Corpus(
        (
            history("a", "female", ["t1", "t2", "t3", url, "plain", url]),  # later url share 2/3
            history("b", "male", ["t1", "t2", "t3", "plain", "plain", url]),  # 1/3
            history("c", "female", ["t1", "t2", "t3", "t4", url, url, url, "x"]),  # text 4, later 3/4
            history("d", "male", ["t1", "t2", "plain", "plain"]),  # 0/2
            history("e", "nonbinary", ["t1", "t2", url, url]),  # not an arm: dropped
            history("f", "female", ["t1", url]),  # 1 text post: dropped (min 2)
            history("g", "male", ["t1", "t2", url, url], kind="bot"),  # filtered out
        ),
        "mem",
    )


def test_task_matches_hand_computed_values():
    spec = spec_from_dict(base_spec(filter={"kind": "human"}, history={"text_fraction": 0.5, "min_text_posts": 2}))
    task = build_observational_task(small_corpus(), spec, seed=3)
    assert task.user_ids == ["a", "b", "c", "d"]
    assert task.texts == [["t1", "t2", "t3"], ["t1", "t2", "t3"], ["t1", "t2", "t3", "t4"], ["t1", "t2"]]
    np.testing.assert_array_equal(task.treatment, [1, 0, 1, 0])
    np.testing.assert_allclose(task.outcome_value, [2 / 3, 1 / 3, 3 / 4, 0.0])
    median = np.median([2 / 3, 1 / 3, 3 / 4, 0.0])  # 0.5
    np.testing.assert_array_equal(task.outcome, [1, 0, 1, 0])
    assert task.info["threshold"] == pytest.approx(median)
    assert (task.info["n_corpus"], task.info["n_filtered"], task.info["n_with_treatment"], task.info["n_eligible"]) == (
        7,
        6,
        5,
        4,
    )
    assert task.true_ate is None and np.isnan(task.propensity).all()
    expected = split_users(4, seed=3)
    for name in ("train", "val", "test"):
        np.testing.assert_array_equal(task.split[name], expected[name])


def test_text_posts_fixed_threshold_and_continuous_outcome():
    spec = spec_from_dict(
        base_spec(
            history={"text_posts": 2, "min_later_posts": 2},
            outcome={"property": "term_share", "terms": ["PLAIN"], "threshold": None},
        )
    )
    task = build_observational_task(small_corpus(), spec)
    assert task.user_ids == ["a", "b", "c", "d", "g"]  # e is in no arm; f has no later post; no filter
    assert task.texts[2] == ["t1", "t2"]
    np.testing.assert_allclose(task.outcome, [1 / 4, 2 / 4, 0 / 6, 2 / 2, 0 / 2])  # Y is the share itself
    spec = spec_from_dict(base_spec(outcome={"property": "mean_words", "threshold": 1.5}))
    task = build_observational_task(small_corpus(), spec)
    np.testing.assert_allclose(
        task.outcome_value[:2], [(2 + 1 + 2) / 3, (1 + 1 + 2) / 3]
    )  # "see http://x.co/a": 2 words
    np.testing.assert_array_equal(task.outcome[:2], [1, 0])  # Y = value > 1.5


@pytest.mark.parametrize(
    "changes, match",
    [
        (
            {"filter": {"knd": "human"}},
            r"no user of the corpus has the meta field 'knd' \(filter\); its fields are \['gender', 'kind'\]",
        ),
        (
            {"treatment": {"field": "sex", "treated": "f", "control": "m"}},
            r"no user of the corpus has the meta field 'sex' \(treatment\)",
        ),
        (
            {"treatment": {"field": "gender", "treated": "femal", "control": "male"}},
            r"the value\(s\) \['femal'\] of meta field 'gender' .* occur in no user",
        ),
        ({"min_per_arm": 3}, r"2 treated and 2 control users remain .* fewer than min_per_arm = 3"),
        ({"outcome": {"property": "hashtag_share"}}, r"the outcome is the same \(0\) for every user"),
    ],
)
def test_task_errors_name_the_problem(changes, match):
    spec = spec_from_dict(
        base_spec(**{"filter": {"kind": "human"}, "history": {"min_text_posts": 2}, **changes}), source="toy.yaml"
    )
    with pytest.raises(ValueError, match=r"Observational config 'toy.yaml': " + match):
        build_observational_task(small_corpus(), spec)


def test_outcome_properties():
    posts = ["RT @ann: look https://t.co/x #news", "mail me at bob@site.com", "www.example.org & #1 fan", "Work WORKS"]
    assert outcomes.url_share(posts) == 0.5
    assert outcomes.mention_share(posts) == 0.25  # an e-mail address is no mention
    assert outcomes.hashtag_share(posts) == 0.5
    assert outcomes.term_share(posts, ["work"]) == 0.25  # whole words only
    assert outcomes.mean_words(posts) == pytest.approx((5 + 4 + 4 + 2) / 4)
    with pytest.raises(ValueError, match="non-empty list of posts"):
        outcomes.mean_words([])


# ------------------------------------------------------------------------------------ a real run
def write_corpus(path: Path, n: int = 160, seed: int = 0) -> Path:
    """Women write 'coffee' in their early posts more often; link sharing depends on gender and on 'tea'."""
    rng = np.random.default_rng(seed)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for u in range(n + 10):
            female = u % 2 == 0
            tea = rng.random() < 0.5
            posts = []
            for k in range(8):
                words = list(rng.choice(WORDS, size=5))
                if k < 4 and rng.random() < (0.8 if female else 0.1):
                    words.append("coffee")
                if k < 4 and tea and rng.random() < 0.7:
                    words.append("tea")
                if k >= 4 and rng.random() < 0.2 + 0.3 * female + 0.3 * tea:
                    words.append("http://x.co/" + str(k))
                posts.append({"text": " ".join(words), "time": None})
            meta = {"gender": "female" if female else "male", "kind": "human" if u < n else "bot"}
            fh.write(json.dumps({"user_id": f"u{u}", "posts": posts, "meta": meta}) + "\n")
    return path


def independent_t_y(corpus: Path):
    """T and Y of the tiny study from the raw file, without textcause."""
    t, v = [], []
    with gzip.open(corpus, "rt", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec["meta"]["kind"] != "human":
                continue
            later = [p["text"] for p in rec["posts"][4:]]
            t.append(rec["meta"]["gender"] == "female")
            v.append(np.mean(["http://" in p for p in later]))
    v = np.array(v)
    return np.array(t, dtype=float), (v > np.median(v)).astype(float)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("observe")
    corpus = write_corpus(root / "toy.jsonl.gz")
    broken = root / "broken.yaml"
    broken.write_text("model:\n  class_path: textcause.models.NoSuchModel\n")
    spec = base_spec(
        corpus=str(corpus),
        filter={"kind": "human"},
        models=["unadjusted", "lr_unigram_binary", str(broken)],
        overrides={"data.min_users": 2, "trainer.max_epochs": 3},
        evaluation={"n_boot": 200},
        seed=1,
    )
    config = root / "toy.yaml"
    config.write_text(yaml.safe_dump(spec))
    lines: list[str] = []
    with pytest.MonkeyPatch.context() as mp:  # module scope: keep the feature cache out of ~/.cache
        mp.setenv("TEXTCAUSE_CACHE", str(root / "cache"))
        result = obs_cli.observe(config, root / "out", echo=lines.append)
    return {"root": root, "corpus": corpus, "config": config, "out": root / "out", "result": result, "lines": lines}


def test_run_rows_match_an_independent_difference_in_means(study):
    t, y = independent_t_y(study["corpus"])
    test = split_users(len(t), seed=1).test
    tt, yy = t[test], y[test]
    diff = yy[tt == 1].mean() - yy[tt == 0].mean()
    rows = study["result"]["rows"]
    unadjusted = [r for r in rows if r["model"] == "unadjusted"]
    assert [r["estimator"] for r in unadjusted] == ["unadjusted", "ipw", "stratified", "matching"]
    share = t[split_users(len(t), seed=1).train].mean()  # the unadjusted propensity
    for r in unadjusted:  # a constant propensity: every estimator is the difference in means
        assert r["ate"] == pytest.approx(diff, abs=1e-9)
        assert r["treatment_accuracy"] == pytest.approx(np.mean((share > 0.5) == (tt == 1)), abs=1e-12)
    lr = {r["estimator"]: r for r in rows if r["model"] == "lr_unigram_binary"}
    assert lr["unadjusted"]["ate"] == pytest.approx(diff, abs=1e-9)
    assert lr["ipw"]["treatment_accuracy"] > 0.65  # "coffee" gives most women away (chance: about 0.5)
    assert lr["ipw"]["accuracy_ci_low"] <= lr["ipw"]["treatment_accuracy"] <= lr["ipw"]["accuracy_ci_high"]
    for r in lr.values():
        assert r["ci_low"] <= r["ate"] <= r["ci_high"]
        assert r["excludes_zero"] == (r["ci_low"] > 0 or r["ci_high"] < 0)
        assert r["n_used"] + r["n_dropped"] == len(test)  # matching drops units with no match in the caliper


def test_no_truth_means_no_truth_metrics(study):
    record = json.loads((study["out"] / "models" / "lr_unigram_binary.json").read_text())
    assert record["status"] == "ok" and record["n_eval"] == 80
    for r in record["rows"]:
        assert r["bias"] is None
        for key in ("covers_truth", "iptw_weight_mse", "spearman", "ad_low", "ci_narrower_than_ad"):
            assert key not in r
    with open(study["out"] / "results.csv") as fh:
        header = next(csv.reader(fh))
    assert "bias" not in header and "ate" in header and "treatment_accuracy" in header


def test_a_failed_model_is_recorded_and_the_run_goes_on(study):
    record = json.loads((study["out"] / "models" / "broken.json").read_text())
    assert record["status"] == "failed" and "options were rejected" in record["error"]
    assert any("broken" in ln and "FAILED" in ln for ln in study["lines"])
    assert [ln.split("]")[0] for ln in study["lines"][1:]] == ["[1/3", "[2/3", "[3/3"]
    md = (study["out"] / "results.md").read_text()
    assert "| broken | failed:" in md and "| LR 1-gram |" in md


def test_two_workers_give_the_same_records(study, tmp_path, monkeypatch):
    """The models shared among two processes (each fitting in its own): the same rows, the failure
    recorded, one progress line a model; the processes work in the caller's directory and
    environment (a relative output folder, its cache root), not the fork server's."""
    from multiprocessing import forkserver

    forkserver.ensure_running()  # the server starts here, so its directory and environment are not those below
    monkeypatch.setenv("TEXTCAUSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    pools: list[int] = []
    real_pool = obs_run._model_pool
    monkeypatch.setattr(obs_run, "_model_pool", lambda n: pools.append(n) or real_pool(n))
    lines: list[str] = []
    obs_run.run_study(study["config"], "par", echo=lines.append, workers=2)
    assert pools == [2]  # the models went to a pool of two processes
    # each process wrote its run under the caller's directory, not the fork server's
    assert (tmp_path / "par" / "runs" / "lr_unigram_binary").is_dir()
    assert any((tmp_path / "cache" / "features").iterdir())  # and cached its features under the caller's root
    for model in ("unadjusted", "lr_unigram_binary", "broken"):
        one = json.loads((study["out"] / "models" / f"{model}.json").read_text())
        two = json.loads((tmp_path / "par" / "models" / f"{model}.json").read_text())
        assert two["status"] == one["status"] and two["key"] == one["key"]
        for a, b in zip(one.get("rows") or [], two.get("rows") or [], strict=True):
            assert (b["estimator"], b["ate"], b["ci_low"], b["ci_high"]) == (
                a["estimator"],
                a["ate"],
                a["ci_low"],
                a["ci_high"],
            )
    assert sorted(ln.split("]")[0] for ln in lines[1:]) == ["[1/3", "[2/3", "[3/3"]
    with pytest.raises(ValueError, match=r"The 'workers' parameter of run_study must be an int >= 1"):
        obs_run.run_study(study["config"], "par", workers=0)


def test_progress_lines_show_elapsed_and_eta(study):
    """Each fitted model's line has the time elapsed and, while models remain, the ETA (mm:ss)."""
    lines = study["lines"][1:]
    assert len(lines) == 3
    for line in lines[:2]:
        assert re.search(r"\(elapsed \d\d:\d\d, ETA \d\d:\d\d\)$", line), line
    assert re.search(r"\(elapsed \d\d:\d\d\)$", lines[2]) and "ETA" not in lines[2]  # nothing left to fit


def test_eta_counts_only_the_models_still_to_fit(tmp_path, monkeypatch):
    """Two of four models finished earlier: the ETA is the mean fit time times the models left to fit."""
    names = ["unadjusted", "lr_unigram_binary", "lr_bigram_binary", "lr_lda"]
    config = tmp_path / "toy.yaml"
    config.write_text(yaml.safe_dump(base_spec(corpus=str(write_corpus(tmp_path / "toy.jsonl.gz")), models=names)))
    spec = load_spec(config)
    for model, path in spec.models[1::2]:  # lr_unigram_binary and lr_lda finished (failed) earlier
        key = obs_run.model_key(spec, model, path)
        (tmp_path / "out" / "models").mkdir(parents=True, exist_ok=True)
        rec = {"model": model, "status": "failed", "error": "old", "key": key, "seconds": 1.0}
        (tmp_path / "out" / "models" / f"{model}.json").write_text(json.dumps(rec))
    clock = iter(range(0, 1000, 10))  # each reading of the study's clock is 10 s after the last

    class Clock:
        perf_counter = staticmethod(lambda: next(clock))
        strftime = staticmethod(lambda fmt: "now")

    monkeypatch.setattr(obs_run, "time", Clock)
    fake = lambda spec, model, *a: {"model": model, "status": "failed", "error": "x"}  # noqa: E731
    monkeypatch.setattr(obs_run, "run_model", fake)
    lines: list[str] = []
    obs_run.run_study(config, tmp_path / "out", echo=lines.append)
    assert lines[1].startswith("[1/4] unadjusted: done") and lines[1].endswith("(elapsed 00:30, ETA 00:10)")
    assert "finished earlier" in lines[2] and lines[2].endswith("(elapsed 00:40)")
    assert lines[3].startswith("[3/4] lr_bigram_binary: done") and lines[3].endswith("(elapsed 01:10)")
    assert "finished earlier" in lines[4] and "ETA" not in lines[4]
    assert obs_run._eta([4.0, 8.0], 3) == 18.0 and obs_run._eta([], 3) is None and obs_run._eta([5.0], 0) is None


def test_rerun_skips_finished_models_and_reruns_changed_ones(study, monkeypatch):
    out = study["root"] / "resume"
    shutil.copytree(study["out"], out)
    monkeypatch.setattr(obs_run, "run_model", lambda *a, **k: pytest.fail("a finished model was run again"))
    stamps = {p.name: p.stat().st_mtime_ns for p in (out / "models").glob("*.json")}
    lines: list[str] = []
    result = obs_cli.observe(study["config"], out, echo=lines.append)
    assert sum("finished earlier" in ln for ln in lines) == 3
    assert stamps == {p.name: p.stat().st_mtime_ns for p in (out / "models").glob("*.json")}
    assert result["rows"] == study["result"]["rows"]
    # --retry-failed reruns the failed model only; a changed study config reruns every model
    ran = []
    fake = lambda spec, model, *a: ran.append(model) or {"model": model, "status": "failed", "error": "x"}  # noqa: E731
    monkeypatch.setattr(obs_run, "run_model", fake)
    obs_cli.observe(study["config"], out, echo=lines.append, retry_failed=True)
    assert ran == ["broken"]
    commented = study["root"] / "commented.yaml"  # a comment is no change
    commented.write_text("# the toy study\n" + study["config"].read_text())
    obs_cli.observe(commented, out, echo=lines.append)
    assert ran == ["broken"]
    changed = study["root"] / "changed.yaml"
    changed.write_text(study["config"].read_text() + "description: changed\n")
    obs_cli.observe(changed, out, echo=lines.append)
    assert ran == ["broken", "unadjusted", "lr_unigram_binary", "broken"]


def test_figure_files_and_layout(study):
    from textcause.reports.study_figure import study_figure

    files = [Path(f) for f in study["result"]["files"]]
    pngs = [f for f in files if f.suffix in (".png", ".svg")]
    assert sorted(f.name for f in pngs) == ["fig2_toy.png", "fig2_toy.svg"]
    assert all(f.stat().st_size > 1000 for f in pngs)
    assert (study["out"] / "fig2_toy.png").read_bytes()[:4] == b"\x89PNG"
    rows = study["result"]["rows"]
    fig = study_figure(rows, estimators=["ipw", "stratified", "matching"], title="toy", chance=0.5)
    axes = fig.axes
    assert len(axes) == 4
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ["Unadjusted", "LR 1-gram", "broken"]
    assert (
        axes[0].get_title(loc="left") == "(a) Treatment accuracy" and axes[1].get_title(loc="left") == "(b) ATE, IPTW"
    )
    unadjusted = next(r["ate"] for r in rows if r["model"] == "unadjusted" and r["estimator"] == "ipw")
    for ax in axes[1:]:
        verticals = {round(float(line.get_xdata()[0]), 9) for line in ax.get_lines() if len(set(line.get_xdata())) == 1}
        assert {0.0, round(unadjusted, 9)} <= verticals  # the zero line and the unadjusted reference
    assert any(t.get_text() == "failed" for t in axes[1].texts)  # the broken model's row
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "zero effect" in legend and any("unadjusted" in t for t in legend)


def test_datamodule_serves_the_observational_task(study, monkeypatch):
    from textcause.data import CausalTextDataModule

    monkeypatch.setenv("TEXTCAUSE_CACHE", str(study["root"] / "cache"))
    data = CausalTextDataModule(observational=str(study["config"]), seed=1, representation="none")
    task = load_task(study["config"], seed=1)
    np.testing.assert_array_equal(data.task.treatment, task.treatment)
    assert data.true_ate is None
    batch = next(iter(data.test_dataloader()))
    assert np.isnan(batch["p_true"].numpy()).all()
    np.testing.assert_array_equal(batch["index"].numpy(), task.split.test[: len(batch["index"])])


def test_cli_errors_and_light_help(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(base_spec(colour="red")))
    assert obs_cli.observe_main(["--config", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: Observational config") and "unknown key(s) ['colour']" in err and "\n" not in err
    assert "--retry-failed" in light_help(["observe"], "lightning", "torch")


def test_shipped_configs_parse():
    twitter = load_spec(CONFIGS / "observational" / "twitter_gender.yaml")
    blogs = load_spec(CONFIGS / "observational" / "blogs_gender.yaml")
    assert twitter.filter == (("kind", ("human",)),) and twitter.text_posts == 50
    assert "sherbert_pooled" in twitter.model_names and "sherbert_pooled" not in blogs.model_names
    assert "oracle" not in twitter.model_names + blogs.model_names
    assert blogs.text_fraction == 0.5 and blogs.outcome == "mean_words"


def test_evaluate_py_on_an_observational_run(study, monkeypatch, capsys):
    """evaluate.py RUN_DIR works on a study's training run: no truth, so no truth-based columns."""
    from textcause.cli.evaluate import main as evaluate_main

    monkeypatch.setenv("TEXTCAUSE_CACHE", str(study["root"] / "cache"))
    run_dir = study["out"] / "runs" / "lr_unigram_binary" / "fit" / "version_0"
    result = evaluate_main([str(run_dir), "--evaluation.n_boot", "50", "--out", str(study["root"] / "eval")])
    assert "no true ATE (observational)" in capsys.readouterr().out
    rows = {r["estimator"]: r for r in result["rows"]}
    assert rows["unadjusted"]["bias"] is None and "spearman" not in rows["ipw"]
    record = json.loads((study["out"] / "models" / "lr_unigram_binary.json").read_text())
    expected = {r["estimator"]: r["ate"] for r in record["rows"]}
    assert rows["ipw"]["ate"] == pytest.approx(expected["ipw"], abs=1e-9)  # the same checkpoint, the same users


def test_refit_reps_gives_refitting_intervals_and_rows_keep_the_tuned_choice(study, monkeypatch):
    """The study's ``evaluation.refit_reps`` reaches the evaluation (refitting intervals for the models
    that refit), and a tuned model's rows keep its ``tuned`` column (the advise loop reads both)."""
    spec = base_spec(
        corpus=str(study["corpus"]),
        filter={"kind": "human"},
        models=["unadjusted", "lr_tuned_unigram_binary", "nn_unigram_binary"],
        overrides={"data.min_users": 2, "trainer.max_epochs": 2},
        evaluation={"n_boot": 50, "refit_reps": 8},
        seed=1,
    )
    config = study["root"] / "refit.yaml"
    config.write_text(yaml.safe_dump(spec))
    monkeypatch.setenv("TEXTCAUSE_CACHE", str(study["root"] / "cache"))
    out = study["root"] / "refit-out"
    obs_run.run_study(config, out, echo=lambda line: None)
    records = {m: json.loads((out / "models" / f"{m}.json").read_text()) for m in spec["models"]}
    assert all(r["status"] == "ok" and r["refit_reps"] == 8 for r in records.values()), records
    tuned = {r["estimator"]: r for r in records["lr_tuned_unigram_binary"]["rows"]}
    chosen = json.loads(tuned["ipw"]["tuned"])  # what it chose on validation, as the run's meta had it
    assert chosen["penalty"] in ("l1", "l2", "elasticnet") and chosen["C"] > 0
    for name in ("ipw", "stratified", "matching"):
        assert tuned[name]["refit_ci_low"] <= tuned[name]["refit_ci_high"] and tuned[name]["refit_reps"] == 8
    net = {r["estimator"]: r for r in records["nn_unigram_binary"]["rows"]}
    assert net["ipw"].get("refit_ci_low") is None and "tuned" not in net["ipw"]  # Adam: refits no interval
    assert "refit_reps" not in obs_run.load_spec(study["config"]).content  # the default keeps earlier keys
    with pytest.raises(ValueError, match=r"'evaluation.refit_reps' must be 0 \(no refitting interval\) or an int >= 2"):
        spec_from_dict(base_spec(evaluation={"refit_reps": 1}), source="toy.yaml")


def test_tune_searches_a_model_on_validation_and_records_the_choice(study, monkeypatch):
    """A study's ``tune`` fits every point of a model's space, keeps the lowest validation loss (as a
    grid's tune does) and says what it chose in the rows' ``tuned``; another space reruns the model."""
    space = {"model.init_args.lr": [0.0001, 0.01]}
    spec = base_spec(
        corpus=str(study["corpus"]),
        filter={"kind": "human"},
        models=["unadjusted", "nn_unigram_binary"],
        overrides={"data.min_users": 2, "trainer.max_epochs": 2},
        tune={"nn_unigram_binary": space},
        evaluation={"n_boot": 20},
        seed=1,
    )
    parsed = spec_from_dict(spec, source="toy.yaml")
    assert parsed.tune == {"nn_unigram_binary": (("model.init_args.lr", (0.0001, 0.01)),)}
    config = study["root"] / "tuned.yaml"
    config.write_text(yaml.safe_dump(spec))
    monkeypatch.setenv("TEXTCAUSE_CACHE", str(study["root"] / "cache"))
    out = study["root"] / "tuned-out"
    obs_run.run_study(config, out, echo=lambda line: None)
    record = json.loads((out / "models" / "nn_unigram_binary.json").read_text())
    assert record["status"] == "ok" and record["candidates"] == 2, record
    chosen = json.loads(record["rows"][0]["tuned"])
    assert chosen["model.init_args.lr"] in (0.0001, 0.01)
    scores = json.loads((out / "runs" / "nn_unigram_binary" / "tune" / "candidates.json").read_text())
    losses = {c["params"]["model.init_args.lr"]: c["score"] for c in scores["candidates"]}
    assert scores["chosen"] == chosen and chosen["model.init_args.lr"] == min(losses, key=losses.get)
    untuned = json.loads((out / "models" / "unadjusted.json").read_text())
    assert "candidates" not in untuned and "tuned" not in untuned["rows"][0]
    key = obs_run.model_key(parsed, "nn_unigram_binary", parsed.models[1][1])
    other = spec_from_dict({**spec, "tune": {"nn_unigram_binary": {"model.init_args.lr": [0.001]}}}, source="toy.yaml")
    assert obs_run.model_key(other, "nn_unigram_binary", other.models[1][1]) != key  # another space: fitted again

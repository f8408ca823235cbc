"""Bad input is one sentence before any work: treatment classes and arms, missing outcomes, E-values, budgets."""

from __future__ import annotations

import pytest
import yaml
from advise.advise_corpus import advise_dict, write_study_corpus

from textcause.advise.calibrate import grid_spec
from textcause.advise.inputs import (
    REFERENCE_WORDS,
    REFIT_REPS,
    cell_seconds,
    check_budget,
    default_workers,
    plan_minutes,
    prepare,
    search_factor,
)
from textcause.advise.spec import advise_from_dict


def _prepare(tmp_path, corpus, **extra):
    spec = advise_from_dict(advise_dict(corpus, **extra), source="toy.yaml")
    return spec, prepare(spec, tmp_path / "out")


def test_a_good_study_is_prepared_with_its_users_and_a_binary_outcome(tmp_path):
    corpus = write_study_corpus(tmp_path / "c.jsonl.gz")
    spec, prepared = _prepare(tmp_path, corpus)
    assert prepared.info["n_users"] == 240 and prepared.binary
    assert prepared.info["n_treated"] + prepared.info["n_control"] == 240
    assert prepared.info["mean_y"] == pytest.approx(0.5, abs=0.01)  # above the median: half
    assert prepared.users.is_file() and prepared.study.is_file()
    study = yaml.safe_load(prepared.study.read_text(encoding="utf-8"))
    assert study["evaluation"]["refit_reps"] == REFIT_REPS  # the real estimates get refitting intervals


def test_a_treatment_with_one_class_is_refused(tmp_path):
    corpus = write_study_corpus(tmp_path / "c.jsonl.gz", treated_share=1.0)
    with pytest.raises(
        ValueError, match=r"^Advise config 'toy.yaml': the treatment has one class only \(240 treated, 0 control"
    ):
        _prepare(tmp_path, corpus)


def test_too_few_users_in_an_arm_is_refused(tmp_path):
    corpus = write_study_corpus(tmp_path / "c.jsonl.gz", treated_share=0.05)
    with pytest.raises(ValueError, match=r"fewer than min_per_arm = 20 in an arm"):
        _prepare(tmp_path, corpus)


def test_an_outcome_missing_for_some_users_is_refused(tmp_path):
    corpus = write_study_corpus(tmp_path / "c.jsonl.gz", missing_y=3)
    with pytest.raises(ValueError, match=r"the outcome column 'score' is missing for 3 of 240 users \(e.g. 'u0'\)"):
        _prepare(tmp_path, corpus)


def test_an_e_value_for_a_continuous_outcome_is_refused(tmp_path):
    corpus = write_study_corpus(tmp_path / "c.jsonl.gz")
    extra = {"outcome": {"column": "score", "threshold": None}, "e_value": True}
    with pytest.raises(ValueError, match=r"an E-value is defined for a binary outcome, and this outcome is continuous"):
        _prepare(tmp_path, corpus, **extra)


def test_a_budget_too_small_for_the_seeds_is_refused(tmp_path):
    corpus = write_study_corpus(tmp_path / "c.jsonl.gz")
    spec, prepared = _prepare(tmp_path, corpus, budget_minutes=0.5)
    # 4 levels x 3 seeds x 1 model, each cell a fixed start-up plus the LR rate for 240 users, by their words
    words = prepared.info["mean_words"]
    assert words > prepared.info["mean_posts"]  # words, not posts
    per_cell = cell_seconds("lr", 240, words)
    assert per_cell == pytest.approx(3.0 + 6.0 * 0.24 * words / REFERENCE_WORDS)
    # the same users with posts five times as long cost five times as much to fit
    assert cell_seconds("lr", 8000, 5 * words) - 3.0 == pytest.approx(5 * (cell_seconds("lr", 8000, words) - 3.0))
    with pytest.raises(ValueError, match=r"the budget of 0.5 minutes is too small for 3 seeds: 12 calibration cells"):
        check_budget(spec, prepared.info)


def test_calibration_workers_divide_the_estimated_wall_time_and_default_to_the_usable_cpus(tmp_path):
    corpus = write_study_corpus(tmp_path / "c.jsonl.gz")
    spec, prepared = _prepare(tmp_path, corpus, budget_minutes=0.5)
    one, two = plan_minutes(spec, prepared.info, 1), plan_minutes(spec, prepared.info, 2)
    assert two["cells"] == one["cells"] == 12 and two["estimate"] == one["estimate"]
    assert two["calibration"] == pytest.approx(one["calibration"] / 2)  # 12 cells, 6 each
    # 12 cells on 5 workers: the busiest runs 3 of them, not 12 / 5
    assert plan_minutes(spec, prepared.info, 5)["calibration"] == pytest.approx(one["calibration"] * 3 / 12)
    assert plan_minutes(spec, prepared.info, 50)["calibration"] == pytest.approx(one["calibration"] / 12)
    # the budget is wall time: what one worker cannot do in 0.5 minutes, two can
    with pytest.raises(ValueError, match=r"12 calibration cells on 1 worker\(s\) and the estimate take about"):
        check_budget(spec, prepared.info, 1)
    assert one["calibration"] + one["estimate"] > 0.5 > two["calibration"] + two["estimate"]
    assert check_budget(spec, prepared.info, 2)["workers"] == 2
    # one per usable CPU, at most one per 2 GiB of available memory and one per cell
    assert default_workers(84, cpus=2, available_gib=20.0) == 2
    assert default_workers(84, cpus=16, available_gib=7.9) == 3
    assert default_workers(84, cpus=4, available_gib=1.0) == 1
    assert default_workers(3, cpus=8, available_gib=None) == 3
    assert 1 <= default_workers(84) <= 84


def test_fewer_seeds_than_the_verdict_needs_are_refused(tmp_path):
    corpus = write_study_corpus(tmp_path / "c.jsonl.gz")
    spec, prepared = _prepare(tmp_path, corpus, seeds=2)
    with pytest.raises(ValueError, match=r"'seeds' is 2, fewer than the 3 per task level the verdict needs"):
        check_budget(spec, prepared.info)


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"study": "x.yaml"}, r"give 'study' \(an observational study config\) or 'corpus'"),
        ({"candidates": ["oracle"]}, r"the candidate 'oracle' reads the true propensity"),
        ({"treatment": {"column": "group", "treated": "a"}}, r"give both 'treatment.treated' and 'treatment.control'"),
        ({"seeds": 0}, r"'seeds' must be an int >= 1"),
        ({"tune": {"nn_lda": {"model.init_args.lr": [0.01]}}}, r"'tune' names models that are not candidates"),
        ({"tune": {"lr_unigram_binary": {"model.init_args.lr": 0.01}}}, r"'tune' must be a mapping from model names"),
    ],
)
def test_config_mistakes_are_one_sentence(tmp_path, extra, message):
    with pytest.raises(ValueError, match=message):
        advise_from_dict(advise_dict("c.jsonl.gz", **extra), source="toy.yaml")


def test_the_command_says_a_bad_input_in_one_line_and_exits_2(tmp_path, capsys):
    from textcause.cli.main import main

    corpus = write_study_corpus(tmp_path / "c.jsonl.gz", missing_y=5)
    argv = ["advise", "--corpus", corpus, "--treatment", "score", "--outcome", "score", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "error: Advise config '<command line>': the treatment column 'score' is missing for 5 of 240 users "
        "(e.g. 'u0'): fill it or drop those users before advising."
    )


def test_a_search_reaches_the_calibration_grid_the_real_fit_and_the_budget(tmp_path):
    """``tune`` is searched in every calibration cell and in the real fit alike, and the budget counts its fits."""
    corpus = write_study_corpus(tmp_path / "c.jsonl.gz")
    space = {"model.init_args.lr": [0.001, 0.01], "model.init_args.l1": [0.0, 0.01]}
    tuned, prepared = _prepare(tmp_path, corpus, candidates=["nn_unigram_binary"], tune={"nn_unigram_binary": space})
    assert grid_spec(tuned, prepared)["tune"] == {"nn_unigram_binary": space}
    study = yaml.safe_load(prepared.study.read_text(encoding="utf-8"))
    assert study["tune"] == {"nn_unigram_binary": space}
    plain, plain_prepared = _prepare(tmp_path / "plain", corpus, candidates=["nn_unigram_binary"])
    assert "tune" not in grid_spec(plain, plain_prepared)
    assert "tune" not in yaml.safe_load(plain_prepared.study.read_text(encoding="utf-8"))  # earlier studies unchanged
    # an n-gram network's optimiser points share one fit (3 fits at most, as measured); any other search
    # (SHERBERT's learning rate: bf16 and dropout, fitted point by point; another option) a fit a point
    lr = (("model.init_args.lr", (0.001, 0.003)),)
    assert search_factor(tuned.tune["nn_unigram_binary"], "nn") == 3.0
    assert search_factor(lr, "nn") == 2.0 and search_factor(lr, "embeddings") == 2.0
    assert search_factor(tuned.tune["nn_unigram_binary"], "embeddings") == 4.0
    assert search_factor((("model.init_args.net.init_args.input_norm", (False, True)),), "embeddings") == 2.0
    assert search_factor((), "nn") == 1.0
    ratio = plan_minutes(tuned, prepared.info)["calibration"] / plan_minutes(plain, plain_prepared.info)["calibration"]
    assert ratio == pytest.approx(3.0)

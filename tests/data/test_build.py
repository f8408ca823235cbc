"""The one build of task + features (textcause.data.build) and the settings that decide it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from textcause.data import CausalTextDataModule
from textcause.data import build as build_module
from textcause.data.build import DataSettings, build_data, build_task, clear_built


def settings(corpus: str, **kw) -> DataSettings:
    return DataSettings(corpus=corpus, task="linguistic_complexity", level=2, seed=3, min_users=2, **kw)


def test_the_data_module_serves_the_build(tiny_corpus):
    dm = CausalTextDataModule(corpus=tiny_corpus, task="linguistic_complexity", level=2, seed=3, min_users=2)
    built = build_data(settings(tiny_corpus))
    assert dm.settings == settings(tiny_corpus)
    assert dm.built is built  # the memo: the same objects, not a rebuild
    assert dm.task is built.task and dm.features is built.features and dm.input_dim == built.input_dim


def test_the_data_module_defaults_are_the_settings_defaults():
    dm = CausalTextDataModule()
    assert dm.settings == DataSettings()


def test_prepare_data_assigns_no_state(tiny_corpus):
    dm = CausalTextDataModule(corpus=tiny_corpus, min_users=2)
    before = dict(vars(dm))
    dm.prepare_data()
    assert dict(vars(dm)).keys() == before.keys() and dm._built is None


def test_a_build_is_a_pure_function_of_the_settings(tiny_corpus):
    a = build_data(settings(tiny_corpus))
    clear_built()
    b = build_data(settings(tiny_corpus))
    assert a is not b
    assert np.array_equal(a.task.treatment, b.task.treatment) and np.array_equal(a.task.outcome, b.task.outcome)
    assert (a.features != b.features).nnz == 0
    other = build_data(dataclasses.replace(settings(tiny_corpus), seed=4))
    assert not np.array_equal(other.task.treatment, a.task.treatment)


def test_the_task_does_not_depend_on_the_representation(tiny_corpus):
    tasks = [build_task(settings(tiny_corpus, representation=r)) for r in ("none", "bigram_binary", "lda")]
    for task in tasks[1:]:
        assert np.array_equal(task.treatment, tasks[0].treatment) and task.texts == tasks[0].texts


def test_the_corpus_is_read_once_per_process(tiny_corpus, monkeypatch):
    from textcause.corpus import memo

    calls = []
    real = memo.load_histories
    monkeypatch.setattr(memo, "load_histories", lambda *a, **k: calls.append(a) or real(*a, **k))
    memo._read.cache_clear()
    clear_built()
    for seed in (0, 1, 2):
        build_task(dataclasses.replace(settings(tiny_corpus), seed=seed))
    assert len(calls) == 1


def test_none_gives_a_zero_width_matrix(tiny_corpus):
    built = build_data(settings(tiny_corpus, representation="none"))
    assert built.features.shape == (len(built.task), 0) and built.input_dim == 0
    assert built.info == {"kind": "none", "vocabulary_size": 0, "fit_seconds": 0.0}


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (
            {"representation": "trigram"},
            r"The 'representation' parameter of DataSettings must be one of \['none', 'unigram_binary'",
        ),
        ({"scale": "zscore"}, r"The 'scale' parameter of DataSettings must be one of \[None, 'maxabs', 'log1p'\]"),
        ({"min_users": 0}, "The 'min_users' parameter of DataSettings must be an int >= 1"),
        ({"max_tokens": 0}, "The 'max_tokens' parameter of DataSettings must be an int >= 1"),
    ],
)
def test_bad_settings_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        DataSettings(**kw)


def test_an_observational_study_refuses_the_simulation_settings(tmp_path):
    """The study decides the corpus and its users: a corpus or task given beside it was silently ignored."""
    with pytest.raises(
        ValueError,
        match=r"The 'observational' study decides the corpus and its users: the data "
        r"settings \['corpus', 'n_users'\] do not apply",
    ):
        DataSettings(observational=str(tmp_path / "study.yaml"), corpus="blogs", n_users=30)
    with pytest.raises(ValueError, match="do not apply"):
        CausalTextDataModule(observational=str(tmp_path / "study.yaml"), task="placebo", level=1)
    assert DataSettings(observational=str(tmp_path / "study.yaml"), representation="lda", seed=2).seed == 2


def test_the_key_follows_the_study_file_content(tmp_path):
    study = tmp_path / "study.yaml"
    study.write_text("name: a\n")
    first = DataSettings(observational=str(study)).key()
    study.write_text("name: b\n")
    assert DataSettings(observational=str(study)).key() != first
    assert DataSettings().key() == DataSettings().key() != DataSettings(seed=1).key()


def test_the_memo_is_bounded(tiny_corpus):
    clear_built()
    for seed in range(build_module._MEMO_SIZE + 2):
        build_data(dataclasses.replace(settings(tiny_corpus, representation="none"), seed=seed))
    assert len(build_module._BUILT) == build_module._MEMO_SIZE

"""The robustness variants as data settings (issue 15, point 4): human-only users, a held-out bank, keys kept."""

from __future__ import annotations

import collections
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from textcause.data import CausalTextDataModule
from textcause.data.build import DataSettings, build_task
from textcause.methods.inputs import data_settings
from textcause.paths import data_root

# DataSettings().key() and one other setting's key, computed by the code before the variants existed:
# the new settings at their defaults must leave every existing key as it was.
PINNED_KEYS = {
    (): "5c399ff1b9e2a3feee4834dad07f307ab07862b6d9428c7226627d7bd704155f",
    (("corpus", "blogs"), ("n_users", 300), ("insertion", "replace")): (
        "3885fc8b56f9e70b5580c5dd8643ee3e3744e101c3ffe5fe68cc7a4937534f5f"
    ),
}


@pytest.fixture
def meta_corpus(tmp_path) -> str:
    """80 users of 12 posts: odd users 'human', even users 'bot' (PAN 2019's meta.kind), one without meta."""
    path = tmp_path / "meta.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for u in range(80):
            posts = [{"text": f"user {u} writes post {j}", "time": None} for j in range(12)]
            meta = {} if u == 0 else {"kind": "human" if u % 2 else "bot", "age": u}
            fh.write(json.dumps({"user_id": f"u{u}", "posts": posts, "meta": meta}) + "\n")
    return str(path)


def settings(corpus: str, **kw) -> DataSettings:
    return DataSettings(corpus=corpus, task="linguistic_complexity", level=2, seed=1, **kw)


@pytest.mark.parametrize("extra", list(PINNED_KEYS))
def test_the_new_defaults_keep_every_existing_key(extra):
    assert DataSettings(**dict(extra)).key() == PINNED_KEYS[extra]
    assert DataSettings(**dict(extra), meta_filter=None, held_out_bank=0.0).key() == PINNED_KEYS[extra]
    assert DataSettings(**dict(extra), held_out_bank=0.5).key() != PINNED_KEYS[extra]
    assert DataSettings(**dict(extra), meta_filter={"kind": "human"}).key() != PINNED_KEYS[extra]


def test_the_meta_filter_keeps_only_matching_users(meta_corpus):
    t = build_task(settings(meta_corpus, meta_filter={"kind": "human"}))
    assert len(t) == 40 and all(int(u[1:]) % 2 == 1 for u in t.user_ids)
    assert t.info["meta_filter"] == {"kind": "human"} and t.info["n_users_before_meta_filter"] == 80
    both = build_task(settings(meta_corpus, meta_filter={"kind": ["human", "bot"]}))
    assert len(both) == 79  # the user without meta never matches
    young = build_task(settings(meta_corpus, meta_filter={"kind": "bot", "age": list(range(50))}))
    assert sorted(int(u[1:]) for u in young.user_ids) == list(range(2, 50, 2))


def test_the_meta_filter_comes_before_the_draw_and_the_user_sample(meta_corpus):
    a = build_task(settings(meta_corpus, meta_filter={"kind": "human"}, n_users=30))
    b = build_task(settings(meta_corpus, meta_filter={"kind": "human"}, n_users=30))
    assert len(a) == 30 and a.user_ids == b.user_ids and all(int(u[1:]) % 2 for u in a.user_ids)
    assert a.texts == b.texts and np.array_equal(a.treatment, b.treatment)
    other_seed = build_task(DataSettings(corpus=meta_corpus, seed=2, meta_filter={"kind": "human"}, n_users=30))
    assert other_seed.user_ids == a.user_ids  # the sample does not depend on the task's seed
    plain = build_task(settings(meta_corpus))
    assert "meta_filter" not in plain.info and len(plain) == 80


@pytest.mark.parametrize(
    "meta_filter,message",
    [
        (
            {"gender": "female"},
            r"has the meta key 'gender' asked for by meta_filter; the meta keys present are \['age', 'kind'\]",
        ),
        ({"kind": "humn"}, r"matches meta_filter \{'kind': 'humn'\}; the values present are 'kind': 'bot', 'human'"),
    ],
)
def test_a_meta_filter_that_matches_nobody_names_what_is_there(meta_corpus, meta_filter, message):
    with pytest.raises(ValueError, match=message):
        build_task(settings(meta_corpus, meta_filter=meta_filter))


def test_too_few_matching_users_for_n_users_is_a_clear_error(meta_corpus):
    with pytest.raises(ValueError, match="Only 40 users of .* match meta_filter .* fewer than n_users=50"):
        build_task(settings(meta_corpus, meta_filter={"kind": "human"}, n_users=50))


@pytest.mark.parametrize(
    "kw,message",
    [
        ({"meta_filter": {}}, "The 'meta_filter' parameter of DataSettings must be a non-empty mapping"),
        ({"meta_filter": {"kind": []}}, "The 'meta_filter' parameter of DataSettings must be a non-empty mapping"),
        (
            {"meta_filter": {"kind": {"a": 1}}},
            "The 'meta_filter' parameter of DataSettings must be a non-empty mapping",
        ),
        ({"held_out_bank": 1.0}, "The 'held_out_bank' parameter of DataSettings must be a float >= 0.0 and < 1.0"),
        ({"held_out_bank": -0.1}, "The 'held_out_bank' parameter of DataSettings must be a float >= 0.0 and < 1.0"),
    ],
)
def test_bad_robustness_settings_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        DataSettings(**kw)


def test_an_observational_study_refuses_the_robustness_settings():
    with pytest.raises(ValueError, match=r"\['held_out_bank'\] do not apply"):
        DataSettings(observational="study.yaml", held_out_bank=0.5)


def test_the_held_out_bank_reaches_the_task(meta_corpus):
    t = build_task(settings(meta_corpus, held_out_bank=0.5))
    test = set(t.split.test.tolist())
    ins = lambda users: {t.texts[i][j] for i in users for j in t.info["inserted_at"][i]}  # noqa: E731
    assert not ins(test) & ins(set(range(len(t))) - test)
    assert t.info["held_out_bank"] == 0.5


def test_the_data_module_and_the_methods_see_the_same_settings(meta_corpus):
    dm = CausalTextDataModule(corpus=meta_corpus, meta_filter={"kind": "human"}, held_out_bank=0.5)
    assert dm.settings == DataSettings(corpus=meta_corpus, meta_filter={"kind": "human"}, held_out_bank=0.5)
    overrides = [("data.meta_filter", {"kind": "human"}), ("data.held_out_bank", 0.5), ("trainer.max_epochs", 1)]
    assert data_settings(overrides) == {"meta_filter": {"kind": "human"}, "held_out_bank": 0.5}


TWITTER = Path(data_root()) / "pan19-twitter-histories.jsonl.gz"


@pytest.mark.slow
@pytest.mark.skipif(not TWITTER.is_file(), reason="the shared PAN 2019 Twitter corpus is not here")
def test_the_variants_on_the_real_twitter_corpus():
    for task, level in (("signal_intensity", 1), ("signal_intensity", 2), ("order_of_text", 2), ("placebo", 1)):
        t = build_task(DataSettings(task=task, level=level, insertion="replace"))
        for arm in (0, 1):  # 60 posts in, 60 out, for treated and untreated users alike
            assert collections.Counter(len(t.texts[i]) for i in np.flatnonzero(t.treatment == arm)) == {
                60: int((t.treatment == arm).sum())
            }
    human = build_task(DataSettings(meta_filter={"kind": "human"}))
    assert len(human) == 2060 and human.info["n_users_before_meta_filter"] == 4120
    held = build_task(DataSettings(task="linguistic_complexity", level=4, held_out_bank=0.5))
    test = set(held.split.test.tolist())
    ins = lambda users: {held.texts[i][j] for i in users for j in held.info["inserted_at"][i]}  # noqa: E731
    assert not ins(test) & ins(set(range(len(held))) - test)

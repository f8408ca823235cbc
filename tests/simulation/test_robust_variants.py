"""The robustness variants of the tasks (issue 15, point 4): length kept, held-out post bank, defaults unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from textcause.corpus.types import Corpus, History
from textcause.io import content_key
from textcause.simulation import PostBank, PostKind, list_tasks, load_bank, make_task, split_bank
from textcause.simulation.generate import _stream

BANK = load_bank()


def toy(n: int = 60, posts: int = 60) -> Corpus:
    """``n`` users of exactly ``posts`` real posts each (Twitter's shape), half of them 'bots'."""
    rng = np.random.default_rng(7)
    return Corpus(
        tuple(
            History(
                f"u{i}",
                tuple(f"u{i} p{j} w{int(rng.integers(100))}" for j in range(posts)),
                meta={"kind": "human" if i % 2 else "bot"},
            )
            for i in range(n)
        ),
        "toy",
    )


def digest(t) -> str:
    arrays = (t.latent_class, t.treatment, t.outcome, t.y0, t.y1, t.propensity, t.n_inserted)
    splits = (t.split.train, t.split.val, t.split.test)
    return content_key(t.texts, [a.tolist() for a in arrays + splits], t.true_ate, t.sample_ate, dict(t.info))


def inserted(t, users) -> set[str]:
    return {t.texts[i][j] for i in users for j in t.info["inserted_at"][i]}


# Digests of tasks drawn by the code before the variants existed (git HEAD of the change): texts,
# every array, the split, the truth and the info. The defaults of the new settings must reproduce them.
PINNED = {
    ("linguistic_complexity", 1, None): "d7e3743f43206b56bdb7b89582fd42280c73e612880b45dddfe4ef70b8ea171a",
    ("linguistic_complexity", 4, None): "45c827a483ce2dae971fdb54e2c3ca8c6eeee8ebf3c447431bd3ec9169f54760",
    ("signal_intensity", 1, "replace"): "5a964f789ca780160d0584be067f83f024f2d7832fd92613e1eaeeae6b6a723a",
    ("order_of_text", 2, None): "ddba8a9ef88c25b201b1075d1decf825bb77db7afee1f4f039089fc104d38a77",
    ("sample_size", 3, "prepend"): "8fd6728a02699607651f1a4f93615f1a11c05c56adb133c924faf31857e83611",
}


@pytest.mark.parametrize("task,level,insertion", list(PINNED))
def test_the_defaults_draw_todays_tasks_bit_for_bit(task, level, insertion):
    kw = {} if insertion is None else {"insertion": insertion}
    before = make_task(toy(), task, level, seed=5, **kw)
    assert digest(before) == PINNED[(task, level, insertion)]
    assert digest(make_task(toy(), task, level, seed=5, held_out_bank=0.0, **kw)) == digest(before)
    assert "held_out_bank" not in before.info and "bank_posts" not in before.info


@pytest.mark.parametrize("task,level", list_tasks())
def test_replace_keeps_every_history_length(task, level):
    corpus = toy()
    t = make_task(corpus, task, level, insertion="replace", seed=1)
    assert [len(x) for x in t.texts] == [60] * len(corpus)  # 60 in, 60 out: treated and untreated, both classes
    assert set(np.unique(t.treatment)) == {0, 1}
    for h, texts, at in zip(corpus, t.texts, t.info["inserted_at"]):
        untouched = [i for i in range(60) if i not in set(at)]
        assert [texts[i] for i in untouched] == [h.posts[i] for i in untouched]
    # the append default, for contrast: class-1 users get longer histories (the cue the variant removes)
    appended = make_task(corpus, task, level, seed=1)
    assert [len(x) for x in appended.texts] == [60 + int(n) for n in appended.n_inserted]


def test_the_variants_keep_the_task_truth():
    corpus = toy()
    for task, level in (("signal_intensity", 2), ("placebo", 1), ("order_of_text", 2)):
        base = make_task(corpus, task, level, seed=2)
        for kw in ({"insertion": "replace"}, {"held_out_bank": 0.5}):
            t = make_task(corpus, task, level, seed=2, **kw)
            assert t.true_ate == base.true_ate and t.sample_ate == base.sample_ate
            for a, b in ((t.treatment, base.treatment), (t.latent_class, base.latent_class), (t.y1, base.y1)):
                np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(t.split.test, base.split.test)


def test_split_bank_divides_every_kind_into_disjoint_parts():
    train, test = split_bank(BANK, 0.5, np.random.default_rng(0))
    assert train.name.endswith("[train]") and test.name.endswith("[held-out]")
    for kind in BANK.kinds:
        a, b = set(train.posts(kind)), set(test.posts(kind))
        assert not a & b and a | b == set(BANK.posts(kind))
        assert len(b) == round(0.5 * len(BANK.posts(kind)))
    small_train, small_test = split_bank(BANK, 0.01, np.random.default_rng(0))  # at least one held out per kind
    assert all(len(small_test.posts(k)) == 1 for k in BANK.kinds)
    again = split_bank(BANK, 0.5, np.random.default_rng(0))
    assert again[1].to_dict()["kinds"] == test.to_dict()["kinds"]


def test_split_bank_errors():
    with pytest.raises(ValueError, match="The 'held_out' parameter of split_bank must be a float > 0.0 and < 1.0"):
        split_bank(BANK, 1.0, np.random.default_rng(0))
    lonely = PostBank("lonely", {"sickness": PostKind(posts=("only one",))})
    with pytest.raises(ValueError, match="has 1 distinct post\\(s\\) of kind 'sickness'"):
        split_bank(lonely, 0.5, np.random.default_rng(0))


@pytest.mark.parametrize(
    "task,level", [("linguistic_complexity", 1), ("linguistic_complexity", 4), ("signal_intensity", 1)]
)
def test_a_held_out_bank_gives_test_users_only_unseen_posts(task, level):
    t = make_task(toy(200), task, level, seed=3, held_out_bank=0.5)
    test = set(t.split.test.tolist())
    seen = inserted(t, [i for i in range(len(t)) if i not in test])  # training and validation users
    unseen = inserted(t, sorted(test))
    assert seen and unseen and not seen & unseen
    parts = t.info["bank_posts"]
    assert unseen <= {p for posts in parts["test"].values() for p in posts}
    assert seen <= {p for posts in parts["train"].values() for p in posts}
    assert t.info["held_out_bank"] == 0.5
    if level == 1 and task == "linguistic_complexity":  # the fixed post: one per part
        assert t.info["fixed_posts"]["f1"] != t.info["fixed_posts_test"]["f1"]


def test_a_held_out_bank_is_drawn_with_the_task_seed():
    corpus = toy()
    a = make_task(corpus, "linguistic_complexity", 4, seed=4, held_out_bank=0.5)
    b = make_task(corpus, "linguistic_complexity", 4, seed=4, held_out_bank=0.5)
    c = make_task(corpus, "linguistic_complexity", 4, seed=5, held_out_bank=0.5)
    assert digest(a) == digest(b)
    assert a.info["bank_posts"] != c.info["bank_posts"]
    expected = split_bank(BANK, 0.5, _stream(4, 7))[1]
    assert a.info["bank_posts"]["test"] == {k: list(v.posts) for k, v in expected.kinds.items()}


def test_a_bad_held_out_share_is_refused():
    with pytest.raises(ValueError, match="The 'held_out_bank' parameter of make_task must be a float >= 0.0 and < 1.0"):
        make_task(toy(), "linguistic_complexity", 2, held_out_bank=1.0)

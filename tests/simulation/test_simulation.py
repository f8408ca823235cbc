"""Tests of textcause.simulation: banks, edits, the generative process, every task and level."""

from __future__ import annotations

import gzip
import json
import math
from itertools import product

import numpy as np
import pytest

from textcause.corpus.types import Corpus, History
from textcause.simulation import (
    NORMAL_SD,
    PLACEBO_OUTCOME,
    STANDARD_OUTCOME,
    TASKS,
    Insert,
    TaskSpec,
    WordRules,
    assign_classes,
    describe_task,
    draw_potential_outcomes,
    draw_treatment,
    insert_posts,
    list_tasks,
    load_bank,
    make_rewrite_task,
    make_task,
    observed_outcome,
    population_ate,
    population_unadjusted,
    register_task,
    save_bank,
)
from textcause.simulation.generate import _stream

BANK = load_bank()
KIND_OF = {p: k for k in BANK.kinds for p in BANK.posts(k)}

# (task, level) -> (class-1 kinds, class-1 count, class-2 count, class-2 position)
EXPECTED = {
    ("linguistic_complexity", 1): ({"sickness"}, 1, 0, None),
    ("linguistic_complexity", 2): ({"sickness"}, 1, 0, None),
    ("linguistic_complexity", 3): ({"sickness", "isolation"}, 1, 0, None),
    ("linguistic_complexity", 4): ({"sickness", "isolation", "death"}, 1, 0, None),
    ("signal_intensity", 1): ({"sickness"}, 10, 0, None),
    ("signal_intensity", 2): ({"sickness"}, 3, 1, "end"),
    ("selection_strength", 1): ({"sickness"}, 1, 0, None),
    ("selection_strength", 2): ({"sickness"}, 1, 0, None),
    ("sample_size", 1): ({"sickness"}, 1, 0, None),
    ("sample_size", 2): ({"sickness"}, 1, 0, None),
    ("sample_size", 3): ({"sickness"}, 1, 0, None),
    ("placebo", 1): ({"sickness"}, 1, 0, None),
    ("order_of_text", 1): ({"sickness"}, 1, 0, None),
    ("order_of_text", 2): ({"sickness"}, 1, 1, "start"),
}


def fake_corpus(n: int, lo: int = 3, hi: int = 7, seed: int = 0) -> Corpus:
    """Short fake posts, never equal to a synthetic post; lengths lo..hi."""
    lengths = np.random.default_rng(seed).integers(lo, hi + 1, size=n)
    return Corpus(
        tuple(History(f"u{i}", tuple(f"user {i} says thing {j}" for j in range(k))) for i, k in enumerate(lengths)),
        source="fake",
    )


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return fake_corpus(400)


# --------------------------------------------------------------------------- banks
def test_default_bank_is_appendix_c():
    assert {k: len(BANK.posts(k)) for k in BANK.kinds} == {"sickness": 54, "isolation": 10, "death": 120}
    posts = BANK.all_posts()
    assert len(posts) == len(set(posts)) == 184
    for text in (
        "The doctor told me I have AIDS",
        "How do I tell my parents I have leukemia?",
        "I got diagnosed with parkinson's last week.",
        "My wife just left me.",
        "I just got a message from my brother that said he can't talk to me anymore. He was my last contact in my family.",
        "I just found out my Mom died",
        "I am in shock. My best friend is gone.",
    ):
        assert text in posts
    assert not any(ch in p for p in posts for ch in "`‘’{}")
    assert load_bank("default").to_dict() == BANK.to_dict()


def test_bank_sample_is_uniform_over_template_word_pairs():
    rng = np.random.default_rng(0)
    draws = [BANK.sample("sickness", rng) for _ in range(10_800)]
    counts = np.array([draws.count(p) for p in BANK.posts("sickness")])
    assert counts.sum() == 10_800 and counts.min() > 130 and counts.max() < 270  # expected 200 each
    assert (counts.min(), counts.max(), counts[:4].tolist()) == (169, 229, [222, 181, 193, 209])  # seed 0, pinned
    assert {BANK.sample("isolation", rng) for _ in range(300)} == set(BANK.posts("isolation"))


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_bank_round_trip(tmp_path, suffix):
    path = save_bank(BANK, tmp_path / f"bank{suffix}")
    again = load_bank(path)
    assert again.to_dict() == BANK.to_dict() and again.all_posts() == BANK.all_posts()


def test_custom_bank_is_used(tmp_path, corpus):
    (tmp_path / "food.yaml").write_text(
        "name: food\nkinds:\n  sickness:\n    templates: ['I ate {x}', 'Love {x}!']\n    words: [pizza, kale]\n"
    )
    bank = load_bank(tmp_path / "food.yaml")
    assert bank.name == "food" and bank.posts("sickness") == ["I ate pizza", "I ate kale", "Love pizza!", "Love kale!"]
    task = make_task(corpus, "linguistic_complexity", 2, bank=bank)
    inserted = {t[-1] for t, c in zip(task.texts, task.latent_class) if c == 1}
    assert inserted <= set(bank.posts("sickness")) and len(inserted) == 4
    assert task.info["bank"] == "food"
    with pytest.raises(ValueError, match="post bank 'food' has no kind 'isolation'"):
        make_task(corpus, "linguistic_complexity", 3, bank=tmp_path / "food.yaml")


@pytest.mark.parametrize(
    "text, match",
    [
        ("kinds: {}", "non-empty 'kinds'"),
        ("kinds: {a: {templates: ['no slot'], words: [w]}}", "every template needs the slot"),
        ("kinds: {a: {templates: ['{x}'], words: [w], posts: [p]}}", "not both"),
        ("kinds: {a: {templates: ['{x}']}}", "non-empty 'templates' and 'words'"),
        ("kinds: {a: {posts: 'one string'}}", "expected a list of strings"),
        ("kinds: {a: {post: [p]}}", "unknown keys"),
        ("kinds: [unclosed", "Could not parse"),
    ],
)
def test_bad_bank_files(tmp_path, text, match):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        load_bank(path)


def test_missing_bank_file(tmp_path):
    with pytest.raises(ValueError, match="Post bank file not found"):
        load_bank(tmp_path / "nope.yaml")


# --------------------------------------------------------------------------- the generative process
def test_classes_exactly_balanced():
    for n in (20, 21, 1001):
        c = assign_classes(n, np.random.default_rng(3))
        assert (c == 1).sum() == n // 2 and (c == 2).sum() == n - n // 2
    c = assign_classes(1000, np.random.default_rng(3))
    assert not np.array_equal(c, np.sort(c))  # shuffled, not blocks


def _joint_unadjusted(p_t: tuple[float, float], table) -> float:
    """E[Y|T=1] - E[Y|T=0] by enumerating (class, T) cells, independent of the package's helper."""
    num = {0: 0.0, 1: 0.0}
    den = {0: 0.0, 1: 0.0}
    for c, t in product((0, 1), (0, 1)):
        w = 0.5 * (p_t[c] if t else 1 - p_t[c])
        num[t] += w * table[c][t]
        den[t] += w
    return num[1] / den[1] - num[0] / den[0]


# The pinned draws of seeds 0, 1, 2 (a determinism check beside the known-truth bands): per class,
# (treated units, sum of Y(0), sum of Y(1), sum of Y(0) * Y(1)); then the sample ATE and the unadjusted difference.
@pytest.mark.parametrize(
    "p_t, table, ate, pinned",
    [
        (
            (0.9, 0.1),
            STANDARD_OUTCOME,
            0.4,
            ({1: (90058, 9961, 89995, 8987), 2: (9970, 89954, 90015, 81005)}, 0.400475, 0.08022881228993894),
        ),
        (
            (0.95, 0.1),
            STANDARD_OUTCOME,
            0.4,
            ({1: (95116, 9961, 89995, 8987), 2: (9970, 89954, 90015, 81005)}, 0.400475, 0.041887984307773074),
        ),
        (
            (0.95, 0.1),
            PLACEBO_OUTCOME,
            0.0,
            ({1: (95116, 5001, 95027, 4773), 2: (9970, 94950, 5036, 4787)}, 0.00056, -0.03846843241748421),
        ),
    ],
)
def test_draws_match_the_tables_on_a_large_sample(p_t, table, ate, pinned):
    counts, sample_ate, sample_naive = pinned
    n = 200_000
    c = assign_classes(n, np.random.default_rng(0))
    t, prop = draw_treatment(c, p_t, np.random.default_rng(1))
    y0, y1 = draw_potential_outcomes(c, table, np.random.default_rng(2))
    y = observed_outcome(t, y0, y1)
    for k in (1, 2):
        m = c == k
        assert np.all(prop[m] == p_t[k - 1])
        assert abs(t[m].mean() - p_t[k - 1]) < 0.005
        assert abs(y0[m].mean() - table[k - 1][0]) < 0.005 and abs(y1[m].mean() - table[k - 1][1]) < 0.005
        for tt in (0, 1):
            assert abs(y[m & (t == tt)].mean() - table[k - 1][tt]) < 0.02
        # Y(0) and Y(1) are drawn with independent uniforms.
        assert abs(np.mean(y0[m] * y1[m]) - table[k - 1][0] * table[k - 1][1]) < 0.005
        assert (int(t[m].sum()), int(y0[m].sum()), int(y1[m].sum()), int((y0[m] * y1[m]).sum())) == counts[k]
    assert abs(np.mean(y1 - y0) - ate) < 0.01
    assert np.mean(y1 - y0) == pytest.approx(sample_ate, rel=1e-9)
    assert population_ate(table) == pytest.approx(ate, abs=1e-12)
    naive = y[t == 1].mean() - y[t == 0].mean()
    assert abs(naive - _joint_unadjusted(p_t, table)) < 0.01
    assert naive == pytest.approx(sample_naive, rel=1e-9)
    assert population_unadjusted(p_t, table) == pytest.approx(_joint_unadjusted(p_t, table), abs=1e-12)


def test_unadjusted_standard_value_is_0_08():
    # 0.5*0.9 treated from class 1, 0.5*0.1 from class 2: E[Y|T=1] = 0.9; E[Y|T=0] = (0.05*0.1 + 0.45*0.9)/0.5 = 0.82.
    assert _joint_unadjusted((0.9, 0.1), STANDARD_OUTCOME) == pytest.approx(0.08, abs=1e-12)


def test_normal_outcomes():
    n = 200_000
    c = assign_classes(n, np.random.default_rng(0))
    y0, y1 = draw_potential_outcomes(c, STANDARD_OUTCOME, np.random.default_rng(2), outcome="normal")
    for k, (m0, m1) in zip((1, 2), STANDARD_OUTCOME):
        m = c == k
        assert abs(y0[m].mean() - m0) < 0.01 and abs(y1[m].mean() - m1) < 0.01
        assert abs(y0[m].var() - 0.3) < 0.01 and abs(y1[m].var() - 0.3) < 0.01
    assert abs(np.mean(y1 - y0) - 0.4) < 0.01
    # pinned draws of seeds 0 and 2: the class means of Y(0), Y(1) and the sample ATE
    means = [(y0[c == k].mean(), y1[c == k].mean()) for k in (1, 2)]
    assert means == [
        pytest.approx((0.09896034639180569, 0.9041561374976654), rel=1e-9),
        pytest.approx((0.8989388206549344, 0.9023016251219684), rel=1e-9),
    ]
    assert np.mean(y1 - y0) == pytest.approx(0.404279297786447, rel=1e-9)
    assert pytest.approx(math.sqrt(0.3)) == NORMAL_SD


def test_true_ate_comes_from_the_table():
    table = ((0.2, 0.7), (0.5, 0.6))
    assert population_ate(table) == pytest.approx(0.3)
    assert population_ate(table, class1_share=0.25) == pytest.approx(0.25 * 0.5 + 0.75 * 0.1)


# --------------------------------------------------------------------------- every task and level
def test_registry_lists_every_task_level():
    assert list_tasks() == list(EXPECTED)
    text = describe_task("selection_strength", 2)
    assert "0.95 (class 1)" in text and "True ATE +0.40" in text
    assert "True ATE +0.00" in describe_task("placebo", 1)
    assert "prepends a random Sickness Post" in describe_task("order_of_text", 2)
    assert "replaces a random real post with" in describe_task("sample_size", 3, insertion="replace")
    with pytest.raises(ValueError, match="The 'insertion' parameter of describe_task must be one of"):
        describe_task("placebo", 1, insertion="middle")


def _split_inserted(texts, at):
    real = [p for i, p in enumerate(texts) if i not in set(at)]
    return real, [texts[i] for i in at]


@pytest.mark.parametrize("task, level", list(EXPECTED))
def test_task_inserts_the_right_posts(corpus, task, level):
    kinds1, n1, n2, where2 = EXPECTED[(task, level)]
    t = make_task(corpus, task, level, seed=5)
    assert t.task == task and t.level == level and len(t) == len(corpus) and t.user_ids == corpus.user_ids
    assert (t.latent_class == 1).sum() == (t.latent_class == 2).sum() == 200
    seen1 = set()
    for h, texts, c, k, at in zip(corpus, t.texts, t.latent_class, t.n_inserted, t.info["inserted_at"]):
        n = len(h)
        real, new = _split_inserted(texts, at)
        assert real == list(h.posts)  # no real post altered, order kept
        assert len(texts) == n + k and k == (n1 if c == 1 else n2)
        if c == 1:
            assert at == tuple(range(n, n + n1))  # appended at the end
            seen1.update(KIND_OF[p] for p in new)
        elif where2 == "start":
            assert at == (0,) and KIND_OF[texts[0]] == "sickness"
        elif where2 == "end":
            assert at == (n,) and KIND_OF[texts[-1]] == "sickness"
    assert seen1 == kinds1  # every allowed kind appears, and nothing else
    p1 = 0.95 if (task, level) in {("selection_strength", 2), ("placebo", 1)} else 0.9
    assert np.all(t.propensity == np.where(t.latent_class == 1, p1, 0.1))
    assert t.true_ate == pytest.approx(0.0 if task == "placebo" else 0.4, abs=1e-12)
    assert t.sample_ate == pytest.approx(np.mean(t.y1 - t.y0))
    assert np.array_equal(t.outcome, np.where(t.treatment == 1, t.y1, t.y0))
    assert t.info["insertion"] == "append" and t.info["bank"] == BANK.name


def test_linguistic_complexity_1_uses_one_post_for_everyone(corpus):
    fixed = set()
    for seed in range(6):
        t = make_task(corpus, "linguistic_complexity", 1, seed=seed)
        last = {texts[-1] for texts, c in zip(t.texts, t.latent_class) if c == 1}
        assert last == set(t.info["fixed_posts"]["f1"])
        fixed |= last
    assert len(fixed) > 1  # drawn from the seed, not hard-coded
    assert len(fixed) == 5  # seeds 0-5, pinned: one repeat
    t2 = make_task(corpus, "linguistic_complexity", 2, seed=0)
    distinct = len({texts[-1] for texts, c in zip(t2.texts, t2.latent_class) if c == 1})
    assert distinct > 30
    assert distinct == 53  # seed 0, pinned: 53 of the 54 Sickness Posts


def test_linguistic_complexity_kind_shares(corpus):
    t = make_task(corpus, "linguistic_complexity", 4, seed=1)
    kinds = [KIND_OF[x[-1]] for x, c in zip(t.texts, t.latent_class) if c == 1]
    for k in ("sickness", "isolation", "death"):
        assert 0.2 < kinds.count(k) / len(kinds) < 0.47  # 1/3 each, 200 users
    assert {k: kinds.count(k) for k in ("sickness", "isolation", "death")} == {
        "sickness": 74,
        "isolation": 67,
        "death": 59,
    }  # seed 1, pinned


def test_sample_size_subsamples_only_the_training_split():
    big = Corpus(tuple(History(f"u{i}", ("x",)) for i in range(8000)))
    sizes, trains = [], []
    for level in (1, 2, 3):
        t = make_task(big, "sample_size", level, seed=2)
        sizes.append(t.split.sizes())
        trains.append(set(t.split.train.tolist()))
        assert t.info["n_train_full"] == 3200
    assert sizes == [(3200, 800, 4000), (1600, 800, 4000), (800, 800, 4000)]
    assert trains[2] < trains[1] < trains[0]  # nested subsamples
    full = make_task(big, "selection_strength", 1, seed=2).split
    assert set(full.train.tolist()) == trains[0]
    assert np.array_equal(full.test, t.split.test) and np.array_equal(full.val, t.split.val)
    assert sorted(np.concatenate([full.train, full.val, full.test]).tolist()) == list(range(8000))


def test_pipeline_probabilities_on_many_users():
    big = Corpus(tuple(History(f"u{i}", ("x",)) for i in range(20_000)))
    t = make_task(big, "selection_strength", 2, seed=0)
    c, tr = t.latent_class, t.treatment
    assert abs(tr[c == 1].mean() - 0.95) < 0.01 and abs(tr[c == 2].mean() - 0.1) < 0.01
    assert abs(t.sample_ate - 0.4) < 0.02
    # seed 0, pinned: treated units per class of 10,000, and the sample ATE
    assert (int(tr[c == 1].sum()), int(tr[c == 2].sum())) == (9494, 999)
    assert t.sample_ate == pytest.approx(0.4043, rel=1e-9)


@pytest.mark.parametrize("insertion", ["prepend", "replace"])
def test_insertion_strategies(corpus, insertion):
    t = make_task(corpus, "signal_intensity", 2, insertion=insertion, seed=3)
    assert t.info["insertion"] == insertion
    for h, texts, c, at in zip(corpus, t.texts, t.latent_class, t.info["inserted_at"]):
        k = 3 if c == 1 else 1
        real, new = _split_inserted(texts, at)
        assert all(KIND_OF[p] == "sickness" for p in new) and len(new) == k
        if insertion == "prepend":
            assert at == tuple(range(k)) and real == list(h.posts)
        else:
            assert len(texts) == len(h)  # replace keeps the history's length
            kept = [p for i, p in enumerate(h.posts) if i not in set(at)]
            assert real == kept


def test_order_of_text_2_puts_f2_first_whatever_the_strategy(corpus):
    t = make_task(corpus, "order_of_text", 2, seed=0)
    for h, texts, c, at in zip(corpus, t.texts, t.latent_class, t.info["inserted_at"]):
        if c == 2:
            assert at == (0,) and texts[1:] == list(h.posts)
    # under replace f2's post overwrites the first real post: first place, and the length is kept
    t = make_task(corpus, "order_of_text", 2, insertion="replace", seed=0)
    assert "f2 replaces the first real post with a random Sickness Post" in t.info["description"]
    for h, texts, c, at in zip(corpus, t.texts, t.latent_class, t.info["inserted_at"]):
        assert len(texts) == len(h)
        if c == 2:
            assert at == (0,) and texts[1:] == list(h.posts[1:]) and KIND_OF[texts[0]] == "sickness"


def test_insert_posts_keeping_the_length():
    rng = np.random.default_rng(0)
    assert insert_posts(["a", "b", "c"], ["X"], "prepend", rng, keep_length=True) == (["X", "b", "c"], (0,))
    assert insert_posts(["a", "b", "c"], ["X", "Y"], "append", rng, keep_length=True) == (["a", "X", "Y"], (1, 2))
    with pytest.raises(ValueError, match="needs histories of at least 2 posts"):
        insert_posts(["a"], ["X", "Y"], "prepend", rng, keep_length=True)


def test_insert_posts_directly():
    rng = np.random.default_rng(0)
    assert insert_posts(["a", "b"], ["X", "Y"], "append", rng) == (["a", "b", "X", "Y"], (2, 3))
    assert insert_posts(["a", "b"], ["X"], "prepend", rng) == (["X", "a", "b"], (0,))
    out, at = insert_posts(["a", "b", "c"], ["X", "Y"], "replace", rng)
    assert len(out) == 3 and [out[i] for i in at] == ["X", "Y"] and list(at) == sorted(at)
    with pytest.raises(ValueError, match="needs histories of at least 2 posts"):
        insert_posts(["a"], ["X", "Y"], "replace", rng)
    with pytest.raises(ValueError, match="The 'insertion' parameter of insert_posts must be one of"):
        insert_posts(["a"], ["X"], "middle", rng)


def test_replace_on_short_histories_is_a_clear_error(corpus):
    with pytest.raises(ValueError, match="needs histories of at least 10 posts"):
        make_task(corpus, "signal_intensity", 1, insertion="replace")


def test_normal_outcome_task(corpus):
    t = make_task(corpus, "linguistic_complexity", 2, outcome="normal")
    assert t.true_ate == pytest.approx(0.4) and t.info["outcome_sd"] == pytest.approx(math.sqrt(0.3))
    assert t.info["outcome_means"] == [[0.1, 0.9], [0.9, 0.9]]
    assert len(np.unique(t.outcome)) == len(t)  # continuous
    assert make_task(corpus, "placebo", 1, outcome="normal").true_ate == pytest.approx(0.0, abs=1e-12)


# --------------------------------------------------------------------------- determinism
def test_same_seed_same_task_and_different_seed_differs(corpus):
    before = corpus.texts
    a = make_task(corpus, "linguistic_complexity", 4, seed=11)
    b = make_task(corpus, "linguistic_complexity", 4, seed=11)
    c = make_task(corpus, "linguistic_complexity", 4, seed=12)
    assert a.texts == b.texts
    for name in ("latent_class", "treatment", "outcome", "y0", "y1", "propensity", "n_inserted"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    for name in ("train", "val", "test"):
        assert np.array_equal(a.split[name], b.split[name])
    assert a.sample_ate == b.sample_ate
    assert a.texts != c.texts and not np.array_equal(a.latent_class, c.latent_class)
    assert not np.array_equal(a.split.train, c.split.train)
    assert corpus.texts == before  # the corpus is not modified
    # Common random numbers: the same seed gives every task the same classes and split.
    d = make_task(corpus, "signal_intensity", 1, seed=11)
    assert np.array_equal(a.latent_class, d.latent_class) and np.array_equal(a.split.test, d.split.test)


# --------------------------------------------------------------------------- rewriting tasks
def test_word_rules_are_whole_word_and_follow_case():
    rules = WordRules({"happy": "sad"})
    assert rules.apply("I am happy, not unhappy or happyish. Happy days! HAPPY") == (
        "I am sad, not unhappy or happyish. Sad days! SAD"
    )
    swap = WordRules({"happy": "sad", "sad": "happy"})
    assert swap.apply("happy then sad") == "sad then happy"
    exact = WordRules({"happy": "sad"}, case_sensitive=True)
    assert exact.apply("happy Happy") == "sad Happy"
    assert WordRules({"new york": "paris"}).apply("New York, new yorker") == "Paris, new yorker"


def test_make_rewrite_task():
    base = Corpus(tuple(History(f"u{i}", ("so happy today", "sad news", "ok")) for i in range(100)))
    t = make_rewrite_task(base, {"happy": "sad"}, {"sad": "happy"}, seed=1)
    for texts, c in zip(t.texts, t.latent_class):
        want = ["so sad today", "sad news", "ok"] if c == 1 else ["so happy today", "happy news", "ok"]
        assert texts == want
    assert t.task == "rewrite" and t.true_ate == pytest.approx(0.4) and not t.n_inserted.any()
    u = make_rewrite_task(
        base, lambda posts: [p.upper() for p in posts], None, treat_probs=(0.8, 0.3),
        outcome_probs={1: (0.2, 0.7), 2: (0.5, 0.6)}, name="shout",
    )  # fmt: skip
    assert u.task == "shout" and u.true_ate == pytest.approx(0.3)
    assert np.all(u.propensity == np.where(u.latent_class == 1, 0.8, 0.3))
    assert all((x[0] == "SO HAPPY TODAY") == (c == 1) for x, c in zip(u.texts, u.latent_class))
    assert base[0].posts == ("so happy today", "sad news", "ok")


def test_rewrite_runs_before_insertion(corpus):
    t = make_task(corpus, "linguistic_complexity", 2, rewrite={"f1": {"cancer": "flu", "says": "writes"}})
    for h, texts, c in zip(corpus, t.texts, t.latent_class):
        if c == 1:
            assert texts[0] == h.posts[0].replace("says", "writes") and texts[-1] in KIND_OF
        else:
            assert texts == list(h.posts)
    assert "cancer" in t.info["rewrite"]["f1"] and t.info["rewrite"]["f2"] == "identity"


def test_rewrite_errors(corpus):
    with pytest.raises(ValueError, match="must return a list of strings"):
        make_rewrite_task(corpus, lambda posts: "oops", None)
    with pytest.raises(ValueError, match="The 'f1' parameter of make_rewrite_task must be a callable"):
        make_rewrite_task(corpus, 3, None)
    with pytest.raises(ValueError, match="must map a non-empty string"):
        WordRules({"": "x"})
    with pytest.raises(ValueError, match="takes the keys 'f1' and 'f2'"):
        make_task(corpus, "placebo", 1, rewrite={"happy": "sad"})
    with pytest.raises(ValueError, match="must be a pair"):
        make_task(corpus, "placebo", 1, rewrite="happy")
    with pytest.raises(ValueError, match="The 'treat_probs' parameter of TaskSpec must be a float"):
        make_rewrite_task(corpus, None, None, treat_probs=(1.0, 0.1))
    with pytest.raises(ValueError, match="needs exactly the keys 1 and 2"):
        make_rewrite_task(corpus, None, None, outcome_probs={1: (0.1, 0.9)})
    with pytest.raises(ValueError, match="The 'outcome_probs' parameter of make_rewrite_task must be a float >= 0.0"):
        make_rewrite_task(corpus, None, None, outcome_probs=((0.1, 1.5), (0.9, 0.9)))


# --------------------------------------------------------------------------- user tasks
def test_register_task(corpus):
    def build(level: int) -> TaskSpec:
        return TaskSpec(
            f1=Insert(("death",), count=level), f2=Insert(("isolation",)), outcome_probs=((0.3, 0.6), (0.5, 0.5))
        )

    try:
        register_task("grief", (1, 2), build)
        assert ("grief", 2) in list_tasks()
        t = make_task(corpus, "grief", 2)
        assert t.true_ate == pytest.approx(0.15)
        assert set(t.n_inserted[t.latent_class == 1]) == {2} and set(t.n_inserted[t.latent_class == 2]) == {1}
        with pytest.raises(ValueError, match="already registered"):
            register_task("grief", (1,), build)
    finally:
        TASKS.pop("grief", None)
    with pytest.raises(ValueError, match="must be a snake_case name"):
        register_task("Bad-Name", (1,), build)
    with pytest.raises(ValueError, match="distinct ints >= 1"):
        register_task("x_task", (0,), build)
    with pytest.raises(ValueError, match="must return a TaskSpec for level 1"):
        register_task("x_task", (1,), lambda level: None)
    assert "x_task" not in TASKS


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        (("nope", 1), {}, r"Unknown task 'nope'. Choose one of \['linguistic_complexity'"),
        (("placebo", 2), {}, r"The task 'placebo' has levels \[1\]. Got level 2"),
        (("linguistic_complexity", 5), {}, r"has levels \[1, 2, 3, 4\]"),
        (("placebo", 1), {"insertion": "middle"}, "The 'insertion' parameter of make_task must be one of"),
        (("placebo", 1), {"outcome": "poisson"}, "The 'outcome' parameter of make_task must be one of"),
        (("placebo", 1), {"seed": -1}, "The 'seed' parameter of make_task must be an int >= 0"),
        (("placebo", 1), {"split_fractions": (0.5, 0.5, 0.5)}, "must sum to 1"),
    ],
)
def test_make_task_errors(corpus, args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_task(corpus, *args, **kwargs)


def test_corpus_errors(corpus):
    with pytest.raises(ValueError, match="The corpus has 19 users; a semi-synthetic task needs at least 20"):
        make_task(corpus.subset(range(19)), "placebo", 1)
    with pytest.raises(ValueError, match="must be a textcause Corpus"):
        make_task([["a post"]] * 50, "placebo", 1)


def test_stream_is_a_seeded_generator():
    assert _stream(0, 1).random() == _stream(0, 1).random() != _stream(0, 2).random()


# --------------------------------------------------------------------------- a real corpus
@pytest.mark.slow
def test_every_task_on_real_twitter_histories():
    from textcause.paths import data_root

    path = data_root() / "pan19-twitter-histories.jsonl.gz"
    if not path.is_file():
        pytest.skip(f"{path} is not available")
    users = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            users.append(History(row["user_id"], tuple(p["text"] for p in row["posts"])))
            if len(users) == 300:
                break
    real = Corpus(tuple(users), source=str(path))
    for task, level in list_tasks():
        for insertion in ("append", "replace"):
            t = make_task(real, task, level, seed=0, insertion=insertion)
            n_train = 120 if task != "sample_size" else (120, 60, 30)[level - 1]
            assert t.split.sizes() == (n_train, 30, 150)
            for h, texts, at in zip(real, t.texts, t.info["inserted_at"]):
                kept, new = _split_inserted(texts, at)
                assert all(p in KIND_OF for p in new)
                if at and len(texts) == len(h):  # replaced: the other real posts are untouched
                    assert kept == [p for i, p in enumerate(h.posts) if i not in set(at)]
                else:  # appended or prepended (or nothing): every real post is there, in order
                    assert len(texts) == len(h) + len(at) and kept == list(h.posts)

"""Pairs with true counterfactuals: templates, blog posts swapped by rule, a user's CSV."""

from __future__ import annotations

import numpy as np
import pytest

from textcause.corpus.types import Corpus, History
from textcause.counterfactual.cfr.pairs import (
    blog_pairs,
    cut_words,
    label_name,
    make_pairs,
    read_pairs_csv,
    template_pairs,
)
from textcause.counterfactual.cfr.swap import load_swap_map


def test_template_pairs_differ_only_in_the_person():
    pairs = template_pairs(300, np.random.default_rng(0))
    assert len(pairs) == 300
    assert pairs.concept_values == ("female", "male")
    assert set(pairs.classes) == {"anger", "fear", "joy", "sadness"}
    assert len(set(pairs.original)) == 300  # sampled without replacement
    for a, b in zip(pairs.original[:50], pairs.counterfactual[:50]):
        assert a != b and a.split()[-1] == b.split()[-1]  # the same emotion word ends both
    assert "{" not in "".join(pairs.original + pairs.counterfactual)
    assert pairs.info["n_fills"] == 7 * 20 * 30


def test_template_bias_selects_the_side_not_the_label():
    full = template_pairs(2000, np.random.default_rng(0), bias=1.0)
    plain = template_pairs(2000, np.random.default_rng(0))
    # labels are the emotion word's class either way; only who is the original changes
    assert (full.label == plain.label).all()
    female = full.concept == "female"
    assert set(full.label[full.label == "joy"]) and female[full.label == "joy"].all()
    assert not female[full.label == "anger"].any()
    assert 0.35 < female[full.label == "fear"].mean() < 0.65
    same = template_pairs(100, np.random.default_rng(3))
    again = template_pairs(100, np.random.default_rng(3))
    assert same.original == again.original and (same.concept == again.concept).all()


def blog_corpus() -> Corpus:
    posts = [
        ("a", "female", 15, ["nothing here at all", "my husband and I went out with her mom"]),
        ("b", "male", 25, ["she called me and I called her back today"]),
        ("c", "male", 35, ["no words", "also none"]),  # no gendered word: left out
        ("d", "other", 24, ["she said hi"]),  # concept outside the values: left out
        ("e", "female", None, ["he said hi"]),  # no label: left out
        ("f", "female", 40, ["my wife and my wife"]),
    ]
    return Corpus(tuple(History(u, tuple(p), meta={"gender": g, "age": a}) for u, g, a, p in posts), "toy")


def test_blog_pairs_swap_and_leave_out():
    pairs = blog_pairs(blog_corpus(), load_swap_map(), np.random.default_rng(0), n_documents=None)
    assert len(pairs) == 3
    assert list(pairs.group) == ["a", "b", "f"]
    assert list(pairs.label) == ["<20", "20-29", ">=30"]
    assert pairs.classes == ["<20", "20-29", ">=30"]  # bins in order, not sorted as strings
    assert pairs.counterfactual[0] == "my wife and I went out with his dad"
    assert pairs.counterfactual[1] == "he called me and I called him back today"
    assert pairs.info["left_out"] == {"authors": 6, "no_concept": 1, "no_label": 1, "no_post": 1, "tie": 0}


def test_blog_pairs_concept_from_the_words():
    posts = [
        ("a", "male", 15, ["she and her mom"]),
        ("b", "female", 25, ["he and his dad"]),
        ("c", "male", 25, ["she and he"]),
    ]
    corpus = Corpus(tuple(History(u, tuple(p), meta={"gender": g, "age": a}) for u, g, a, p in posts), "toy")
    pairs = blog_pairs(corpus, load_swap_map(), np.random.default_rng(0), n_documents=None, concept_source="words")
    # the side most of the words are on, whatever the author's gender; a tie is left out
    assert list(pairs.group) == ["a", "b"] and list(pairs.concept) == ["female", "male"]
    assert pairs.info["left_out"]["tie"] == 1


def test_blog_pairs_cut_keeps_the_first_words():
    assert cut_words("a  b\nc d", 3) == "a b c"
    pairs = blog_pairs(blog_corpus(), load_swap_map(), np.random.default_rng(0), n_documents=None, max_words=2)
    assert all(len(t.split()) <= 2 for t in pairs.original)


def test_no_usable_author_is_one_sentence():
    corpus = Corpus((History("x", ("plain text",), meta={"gender": "male", "age": 20}),), "toy")
    with pytest.raises(ValueError, match="No author of the corpus has a post"):
        blog_pairs(corpus, load_swap_map(), np.random.default_rng(0), n_documents=None)


@pytest.mark.parametrize(
    "value, bins, expected",
    [
        (15, [20, 30], "<20"),
        (25, [20, 30], "20-29"),
        (33, [20, 30], ">=30"),
        ("Arts", None, "Arts"),
        (None, None, None),
        ("x", [1], None),
    ],
)
def test_label_name(value, bins, expected):
    assert label_name(value, bins) == expected


def write_csv(path, header, rows):
    path.write_text("\n".join([",".join(header)] + [",".join(r) for r in rows]) + "\n", encoding="utf-8")
    return path


def test_read_pairs_csv(tmp_path):
    path = write_csv(
        tmp_path / "p.csv",
        ["original", "counterfactual", "concept", "label"],
        [["she ran", "he ran", "female", "sport"], ["he read", "she read", "male", "books"]],
    )
    pairs = read_pairs_csv(path)
    assert pairs.concept_values == ("female", "male") and pairs.classes == ["books", "sport"]
    assert list(pairs.z) == [0, 1]
    assert "she ran" not in repr(pairs)  # never print texts


def test_pairs_csv_missing_a_column_is_one_sentence(tmp_path):
    path = write_csv(tmp_path / "p.csv", ["original", "counterfactual", "concept"], [["a", "b", "female"]])
    with pytest.raises(ValueError, match=r"has no column\(s\) \['label'\]: it needs the columns"):
        read_pairs_csv(path)


def test_pairs_csv_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="No pairs file"):
        read_pairs_csv(tmp_path / "none.csv")
    three = write_csv(
        tmp_path / "three.csv",
        ["original", "counterfactual", "concept", "label"],
        [["a", "b", "f", "x"], ["a", "b", "m", "y"], ["a", "b", "n", "y"]],
    )
    with pytest.raises(ValueError, match="exactly 2 values"):
        read_pairs_csv(three)
    with pytest.raises(ValueError, match="outside 'concept_values'"):
        read_pairs_csv(three, concept_values=["f", "m"])


def test_make_pairs_checks():
    with pytest.raises(ValueError, match="empty text at row 1"):
        make_pairs(["a", " "], ["b", "c"], ["f", "m"], ["x", "y"])
    with pytest.raises(ValueError, match="at least 2 classes"):
        make_pairs(["a", "b"], ["b", "c"], ["f", "m"], ["x", "x"])
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        make_pairs(["a", "b"], ["b"], ["f", "m"], ["x", "y"])


def test_template_label_bias_replaces_labels_by_the_favoured_class():
    pairs = template_pairs(2000, np.random.default_rng(0), bias=1.0, bias_mode="label")
    female = pairs.concept == "female"
    assert set(pairs.label[female]) == {"joy"} and set(pairs.label[~female]) == {"anger"}
    assert 0.4 < female.mean() < 0.6  # the side is not selected
    with pytest.raises(ValueError, match="'bias_mode' parameter"):
        template_pairs(10, np.random.default_rng(0), bias_mode="both")

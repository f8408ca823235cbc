"""Tests of textcause.features: tokenizer, n-gram / LDA representations, cache, torch batches."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction.text import CountVectorizer

from textcause.corpus.types import History
from textcause.features import NgramFeaturizer, build_representation, ngrams, representation, tokenize
from textcause.features.tokenize import encode

# ------------------------------------------------------------------------------------- helpers


def random_texts(n_users: int, seed: int = 0) -> list[list[str]]:
    """Tiny random histories over a small vocabulary (some users and posts empty)."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(25)] + ["don't", "it's", "end.", "well-known"]
    return [
        [" ".join(rng.choice(words, int(rng.integers(0, 9)))) for _ in range(int(rng.integers(0, 6)))]
        for _ in range(n_users)
    ]


def reference_grams(posts: list[str], max_n: int) -> list[str]:
    """Independent per-user analyzer: grams built post by post from the tokenizer."""
    out: list[str] = []
    for post in posts:
        toks = tokenize(post)
        out += toks
        if max_n == 2:
            out += [f"{a} {b}" for a, b in zip(toks, toks[1:])]
    return out


def dense(m) -> np.ndarray:
    return m.toarray() if sp.issparse(m) else np.asarray(m)


def column(featurizer: NgramFeaturizer, term: str) -> int:
    return list(featurizer.get_feature_names_out()).index(term)


# ------------------------------------------------------------------------------------ tokenizer


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Hello, World!", ["hello", ",", "world", "!"]),
        ("I don't know", ["i", "do", "n't", "know"]),
        ("I can't; it's John's", ["i", "ca", "n't", ";", "it", "'s", "john", "'s"]),
        ("I'm sure they'll've gone", ["i", "'m", "sure", "they", "'ll", "'ve", "gone"]),
        ("Don\u2019t", ["do", "n't"]),  # curly apostrophe folded
        ("see https://x.org/a?b=1, then www.foo.org.", ["see", "https://x.org/a?b=1", ",", "then", "www.foo.org", "."]),
        ("@Bob loves #NLP", ["@bob", "loves", "#nlp"]),
        ("pi is 3.14, 1,000 at 10:30", ["pi", "is", "3.14", ",", "1,000", "at", "10:30"]),
        ("a well-known fact... really?!", ["a", "well-known", "fact", "...", "really", "?", "!"]),
        ("'quoted'", ["'", "quoted", "'"]),
        ("", []),
    ],
)
def test_tokenize_examples(text, expected):
    assert tokenize(text) == expected


def test_tokens_never_contain_whitespace():
    toks = tokenize("A  b\tc\nd https://x.y/z  e-f  'g' don't")
    assert toks and all(not any(ch.isspace() for ch in t) for t in toks)


def test_encode_ids_and_post_boundaries():
    enc = encode([["a b c", "c d"], [], ["", "a x"]])
    assert enc.tokens == ["a", "b", "c", "d", "x"]
    np.testing.assert_array_equal(enc.ids, [0, 1, 2, 2, 3, 0, 4])
    np.testing.assert_array_equal(enc.token_users(), [0, 0, 0, 0, 0, 2, 2])
    np.testing.assert_array_equal(enc.same_post_pairs(), [True, True, False, True, False, True])
    fixed = encode([["a zz b"]], {"a": 0, "b": 1})
    np.testing.assert_array_equal(fixed.ids, [0, -1, 1])


# ------------------------------------------------------------------------------ representations


@pytest.mark.parametrize("kind", ["unigram_binary", "bigram_binary", "bigram_counts"])
def test_ngram_kinds_match_sklearn_count_vectorizer(kind):
    # Independent reference: CountVectorizer with users as documents, so min_df counts users.
    texts = random_texts(80)
    max_n, binary = ngrams.KINDS[kind]
    f = NgramFeaturizer(kind, min_users=4)
    x_train = f.fit_transform(texts[:50])
    x_all = f.transform(texts)
    ref = CountVectorizer(analyzer=lambda u: reference_grams(u, max_n), min_df=4, binary=binary, dtype=np.float32)
    ref.fit(texts[:50])
    assert list(f.get_feature_names_out()) == list(ref.get_feature_names_out())
    assert f.vocabulary_size == len(ref.vocabulary_)
    for mine, theirs in [(x_train, ref.transform(texts[:50])), (x_all, ref.transform(texts))]:
        assert sp.isspmatrix_csr(mine) and mine.dtype == np.float32 and mine.has_canonical_format
        np.testing.assert_array_equal(mine.toarray(), theirs.toarray())
    assert x_all.shape == (80, f.vocabulary_size)
    assert x_all.nnz < 0.9 * np.prod(x_all.shape) or kind == "unigram_binary"


def test_build_representation_equals_fit_on_train_then_transform_all():
    texts = random_texts(70, seed=1)
    train = np.arange(0, 70, 2)
    for kind in ["unigram_binary", "bigram_counts"]:
        rep = build_representation(kind, texts, train, min_users=3, cache=False)
        f = NgramFeaturizer(kind, min_users=3).fit([texts[i] for i in train])
        np.testing.assert_array_equal(rep.matrix.toarray(), f.transform(texts).toarray())
        assert rep.terms == tuple(f.get_feature_names_out())
        assert rep.vocabulary_size == f.vocabulary_size == rep.n_features
        assert rep.kind == kind and not rep.from_cache and rep.fit_seconds >= 0


def test_threshold_counts_users_not_occurrences():
    texts = [["spam " * 50], ["shared once"], ["shared again"], ["nothing"]]
    f = NgramFeaturizer("unigram_binary", min_users=2).fit(texts)
    names = list(f.get_feature_names_out())
    assert "shared" in names and "spam" not in names
    assert f.vocabulary_size == 1


def test_vocabulary_is_fitted_on_training_users_only():
    train = [["alpha beta"], ["alpha gamma"]]
    test = [["alpha testonly"], ["testonly testonly"]]
    f = NgramFeaturizer("bigram_binary", min_users=1).fit(train)
    assert "testonly" not in f.get_feature_names_out()
    rep = build_representation("bigram_binary", train + test, [0, 1], min_users=1, cache=False)
    assert "testonly" not in rep.terms and "alpha testonly" not in rep.terms
    x = f.transform(test)
    np.testing.assert_array_equal(x.toarray()[:, column(f, "alpha")], [1, 0])
    assert x.toarray()[1].sum() == 0


def test_bigrams_never_cross_posts():
    # "b c" and "d e" would be bigrams if posts were concatenated; every user has them that way.
    texts = [["a b", "c d", "e"]] * 3
    f = NgramFeaturizer("bigram_counts", min_users=1).fit(texts)
    assert set(f.get_feature_names_out()) == {"a", "b", "c", "d", "e", "a b", "c d"}
    # and a known bigram split over two posts (or two users) is not counted
    x = f.transform([["x a", "b y"], ["a"], ["b"], ["a b", "a", "b"]]).toarray()
    np.testing.assert_array_equal(x[:, column(f, "a b")], [0, 0, 0, 1])
    # nor user boundaries
    g = NgramFeaturizer("bigram_counts", min_users=1).fit([["x"], ["y"]])
    assert set(g.get_feature_names_out()) == {"x", "y"}


def test_counts_are_real_counts_not_binary():
    texts = [["the cat", "the cat sat", "I saw the cat"], ["a dog"], ["the dog"]]
    counts = NgramFeaturizer("bigram_counts", min_users=1).fit(texts)
    binary = NgramFeaturizer("bigram_binary", min_users=1).fit(texts)
    xc, xb = counts.transform(texts).toarray(), binary.transform(texts).toarray()
    assert xc[0, column(counts, "cat")] == 3 and xb[0, column(binary, "cat")] == 1
    assert xc[0, column(counts, "the cat")] == 3 and xb[0, column(binary, "the cat")] == 1
    assert xc[2, column(counts, "the dog")] == 1
    assert set(np.unique(xb)) == {0.0, 1.0}


def test_unigram_binary_has_no_bigrams():
    f = NgramFeaturizer("unigram_binary", min_users=1).fit([["a b a"], ["b c"]])
    assert list(f.get_feature_names_out()) == ["a", "b", "c"]
    np.testing.assert_array_equal(f.transform([["a b a"], ["b c"]]).toarray(), [[1, 1, 0], [0, 1, 1]])


def test_max_features_keeps_the_most_widely_used_grams():
    texts = [["common rare1"], ["common rare2"], ["common mid"], ["mid"]]
    f = NgramFeaturizer("unigram_binary", min_users=1, max_features=2).fit(texts)
    assert list(f.get_feature_names_out()) == ["common", "mid"]


def test_lda_topic_proportions_are_dense_normalised_and_seeded():
    texts = random_texts(60, seed=2)
    rep = build_representation("lda", texts, np.arange(40), min_users=2, seed=3, cache=False, lda_max_iter=5)
    x = rep.matrix
    assert isinstance(x, np.ndarray) and x.dtype == np.float32 and x.shape == (60, 20)
    np.testing.assert_allclose(x.sum(axis=1), 1.0, rtol=1e-5)
    again = build_representation("lda", texts, np.arange(40), min_users=2, seed=3, cache=False, lda_max_iter=5)
    np.testing.assert_array_equal(x, again.matrix)
    other = build_representation("lda", texts, np.arange(40), min_users=2, seed=4, cache=False, lda_max_iter=5)
    assert not np.allclose(x, other.matrix)
    f = NgramFeaturizer("lda", min_users=2, lda_topics=5, lda_max_iter=5).fit(texts[:40])
    assert f.transform(texts).shape == (60, 5) and f.get_feature_names_out()[0] == "topic_0"
    assert f.vocabulary_size == NgramFeaturizer("bigram_counts", min_users=2).fit(texts[:40]).vocabulary_size


def test_chunked_and_unpacked_code_paths_give_the_same_matrix(monkeypatch):
    texts = random_texts(40, seed=3)
    expected = build_representation("bigram_counts", texts, np.arange(30), min_users=2, cache=False)
    monkeypatch.setattr(ngrams, "CHUNK_TOKENS", 7)  # many small chunks of users
    monkeypatch.setattr(ngrams, "_INT64_LIMIT", 0)  # the lexsort fallback for huge code spaces
    got = build_representation("bigram_counts", texts, np.arange(30), min_users=2, cache=False)
    assert got.terms == expected.terms
    assert got.matrix.has_canonical_format
    np.testing.assert_array_equal(got.matrix.toarray(), expected.matrix.toarray())


def test_users_without_posts_get_empty_rows():
    texts = [["a b"], [], ["a b"], [""]]
    rep = build_representation("bigram_binary", texts, [0, 1, 2, 3], min_users=2, cache=False)
    np.testing.assert_array_equal(rep.matrix.toarray(), [[1, 1, 1], [0, 0, 0], [1, 1, 1], [0, 0, 0]])


# -------------------------------------------------------------------------------------- errors


def test_unknown_kind_lists_the_valid_kinds():
    with pytest.raises(ValueError, match="Unknown text representation 'trigram'. Valid kinds are: unigram_binary, "):
        NgramFeaturizer("trigram")
    with pytest.raises(ValueError, match="Valid kinds are: .*lda"):
        build_representation("bert", [["a"]], [0], cache=False)


def test_empty_training_set():
    with pytest.raises(ValueError, match="The training set is empty"):
        NgramFeaturizer().fit([])
    with pytest.raises(ValueError, match="The training set is empty"):
        build_representation("bigram_binary", [["a"], ["b"]], [], cache=False)


def test_empty_vocabulary_says_to_lower_min_users():
    msg = r"No 1- or 2-gram is used by at least 10 of the 3 training users; lower 'min_users'"
    with pytest.raises(ValueError, match=msg):
        NgramFeaturizer("bigram_binary").fit([["a b"], ["a c"], ["d"]])
    with pytest.raises(ValueError, match="No 1-gram is used by at least 2 of the 2 training users"):
        NgramFeaturizer("unigram_binary", min_users=2).fit([["a"], ["b"]])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"min_users": 0}, "The 'min_users' parameter of NgramFeaturizer must be an int >= 1. Got 0 instead."),
        ({"min_users": 2.5}, "'min_users' parameter of NgramFeaturizer must be an int"),
        ({"max_features": 0}, "The 'max_features' parameter of NgramFeaturizer must be an int >= 1"),
        ({"lda_topics": 0}, "The 'lda_topics' parameter"),
        ({"seed": -1}, "The 'seed' parameter"),
    ],
)
def test_parameter_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NgramFeaturizer(**kwargs)


def test_text_shape_errors():
    with pytest.raises(ValueError, match="User 1 is a str; wrap a single post in a list"):
        NgramFeaturizer(min_users=1).fit([["a"], "b c"])
    with pytest.raises(ValueError, match="Post 0 of user 0 is a int"):
        NgramFeaturizer(min_users=1).fit([[3]])
    with pytest.raises(ValueError, match="Expected 'texts' to be a list of users"):
        build_representation("bigram_binary", "abc", [0], cache=False)
    with pytest.raises(ValueError, match=r"\(pass corpus.texts\). User 0 is a History"):
        build_representation("bigram_binary", [History("u0", ("a post",))], [0], cache=False)


def test_transform_of_no_users():
    f = NgramFeaturizer("bigram_counts", min_users=1).fit([["a b"]])
    assert f.transform([]).shape == (0, 3)
    g = NgramFeaturizer("lda", min_users=1, lda_topics=3, lda_max_iter=2).fit([["a b"], ["b c"]])
    assert g.transform([]).shape == (0, 3)


def test_train_idx_errors():
    texts = [["a"], ["a"], ["a"]]
    with pytest.raises(ValueError, match=r"The 'train_idx' values must lie in \[0, 2\]. Got values from 0 to 3."):
        build_representation("unigram_binary", texts, [0, 3], min_users=1, cache=False)
    with pytest.raises(ValueError, match="duplicate user indices"):
        build_representation("unigram_binary", texts, [0, 0], min_users=1, cache=False)
    with pytest.raises(ValueError, match="one entry per user"):
        build_representation("unigram_binary", texts, [True, False], min_users=1, cache=False)
    with pytest.raises(ValueError, match="1-D array of user indices"):
        build_representation("unigram_binary", texts, [0.5], min_users=1, cache=False)
    rep = build_representation("unigram_binary", texts, [True, True, False], min_users=2, cache=False)
    assert rep.vocabulary_size == 1


def test_transform_before_fit():
    with pytest.raises(NotFittedError, match="not fitted yet"):
        NgramFeaturizer().transform([["a"]])


# --------------------------------------------------------------------------------------- cache


def test_cache_miss_then_hit_skips_fitting(tmp_path):
    texts = random_texts(30, seed=4)
    first = build_representation("bigram_counts", texts, np.arange(20), min_users=2, cache_dir=tmp_path)
    assert not first.from_cache
    assert {p.suffix for p in tmp_path.iterdir()} == {".npz", ".json"}
    with mock.patch.object(NgramFeaturizer, "_fit_transform_encoded", side_effect=AssertionError("fitted")):
        second = build_representation("bigram_counts", texts, np.arange(20), min_users=2, cache_dir=tmp_path)
    assert second.from_cache and second.key == first.key and second.terms == first.terms
    assert sp.isspmatrix_csr(second.matrix) and second.matrix.dtype == np.float32
    np.testing.assert_array_equal(second.matrix.toarray(), first.matrix.toarray())
    # LDA (dense) round-trips too
    lda = build_representation("lda", texts, np.arange(20), min_users=2, cache_dir=tmp_path, lda_max_iter=2)
    lda_hit = build_representation("lda", texts, np.arange(20), min_users=2, cache_dir=tmp_path, lda_max_iter=2)
    assert lda_hit.from_cache and np.array_equal(lda.matrix, lda_hit.matrix)


def test_cache_key_depends_on_texts_train_users_and_parameters(tmp_path):
    texts = random_texts(30, seed=5)
    base = build_representation("bigram_binary", texts, np.arange(20), min_users=2, cache_dir=tmp_path)
    changed = [list(u) for u in texts]
    changed[25] = changed[25] + ["a new post"]  # a test user's text still changes the key
    keys = {
        base.key,
        build_representation("bigram_binary", changed, np.arange(20), min_users=2, cache_dir=tmp_path).key,
        build_representation("bigram_binary", texts, np.arange(19), min_users=2, cache_dir=tmp_path).key,
        build_representation("bigram_binary", texts, np.arange(20), min_users=3, cache_dir=tmp_path).key,
        build_representation("bigram_counts", texts, np.arange(20), min_users=2, cache_dir=tmp_path).key,
    }
    assert len(keys) == 5
    # the n-gram kinds ignore the seed, so it does not split their cache
    reseeded = build_representation("bigram_binary", texts, np.arange(20), min_users=2, seed=9, cache_dir=tmp_path)
    assert reseeded.from_cache
    # user boundaries are part of the content hash
    assert representation.texts_digest([["a", "b"]]) != representation.texts_digest([["a"], ["b"]])


def test_cache_disabled_writes_nothing(tmp_path):
    texts = random_texts(20)
    build_representation("unigram_binary", texts, np.arange(20), min_users=2, cache=False, cache_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("damage", ["truncate_npz", "garbage_json", "missing_json", "wrong_shape"])
def test_corrupt_cache_entry_is_a_miss_and_is_rewritten(tmp_path, damage):
    texts = random_texts(30, seed=6)
    first = build_representation("bigram_binary", texts, np.arange(20), min_users=2, cache_dir=tmp_path)
    npz, meta = tmp_path / f"{first.key}.npz", tmp_path / f"{first.key}.json"
    if damage == "truncate_npz":
        npz.write_bytes(npz.read_bytes()[:50])
    elif damage == "garbage_json":
        meta.write_text("{not json")
    elif damage == "missing_json":
        meta.unlink()
    else:
        with open(npz, "wb") as fh:
            sp.save_npz(fh, sp.csr_matrix(np.ones((2, 2), np.float32)))
    if damage == "missing_json":  # a partial entry is a silent miss
        again = build_representation("bigram_binary", texts, np.arange(20), min_users=2, cache_dir=tmp_path)
    else:
        with pytest.warns(RuntimeWarning, match="damaged feature cache entry"):
            again = build_representation("bigram_binary", texts, np.arange(20), min_users=2, cache_dir=tmp_path)
    assert not again.from_cache
    np.testing.assert_array_equal(again.matrix.toarray(), first.matrix.toarray())
    hit = build_representation("bigram_binary", texts, np.arange(20), min_users=2, cache_dir=tmp_path)
    assert hit.from_cache  # rewritten and readable again


def test_crash_mid_write_leaves_no_file_at_the_final_path(tmp_path):
    texts = random_texts(30, seed=7)

    def half_write(fh, *args, **kwargs):
        fh.write(b"PK\x03\x04 half a zip")
        raise OSError("No space left on device")

    with (
        mock.patch.object(representation, "_write_npz", side_effect=half_write),
        pytest.warns(RuntimeWarning, match="Could not write the feature cache"),
    ):
        rep = build_representation("bigram_binary", texts, np.arange(20), min_users=2, cache_dir=tmp_path)
    assert rep.matrix.shape[0] == 30  # the result is still returned
    assert list(tmp_path.iterdir()) == []  # no final file, no temporary file left behind

    def interrupted(fh, *args, **kwargs):
        fh.write(b"PK partial")
        raise KeyboardInterrupt

    with mock.patch.object(representation, "_write_npz", side_effect=interrupted), pytest.raises(KeyboardInterrupt):
        build_representation("bigram_binary", texts, np.arange(20), min_users=2, cache_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []
    assert not build_representation("bigram_binary", texts, np.arange(20), min_users=2, cache_dir=tmp_path).from_cache


def test_default_cache_dir_is_under_cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTCAUSE_CACHE", str(tmp_path))
    rep = build_representation("unigram_binary", [["a"], ["a"]], [0, 1], min_users=2)
    assert (tmp_path / "features" / f"{rep.key}.npz").exists()
    assert (tmp_path / "features" / f"{rep.key}.json").exists()


# --------------------------------------------------------------------------------------- torch


def test_torch_sparse_batches_match_dense_computation():
    torch = pytest.importorskip("torch")
    from textcause.features import collate_sparse_rows, to_torch_sparse

    x = sp.random(12, 9, density=0.3, format="csr", dtype=np.float32, random_state=0)
    w = torch.randn(9, 4, dtype=torch.float32)
    for layout in ["coo", "csr"]:
        t = to_torch_sparse(x, layout=layout)
        assert t.dtype == torch.float32 and t.shape == (12, 9)
        np.testing.assert_allclose(t.to_dense().numpy(), x.toarray())
    idx = [5, 0, 11, 5]
    batch = collate_sparse_rows(x, idx)
    assert batch.is_sparse and batch.shape == (4, 9)
    expected = torch.from_numpy(x.toarray()[idx]) @ w
    torch.testing.assert_close(torch.sparse.mm(batch, w), expected)
    torch.testing.assert_close(collate_sparse_rows(x, torch.tensor(idx), layout="csr") @ w, expected)
    # gradients of a linear layer agree with the dense computation
    lin = torch.nn.Linear(9, 1)
    lin(batch).sum().backward()
    grad_sparse = lin.weight.grad.clone()
    lin.weight.grad = None
    lin(torch.from_numpy(x.toarray()[idx])).sum().backward()
    torch.testing.assert_close(grad_sparse, lin.weight.grad)
    # dense input (LDA) gives a dense batch
    d = collate_sparse_rows(np.arange(6, dtype=np.float64).reshape(3, 2), [2])
    assert not d.is_sparse and d.dtype == torch.float32 and d.tolist() == [[4.0, 5.0]]


def test_torch_sparse_errors_and_no_mutation():
    pytest.importorskip("torch")
    from textcause.features.torch_sparse import collate_sparse_rows, to_torch_sparse

    with pytest.raises(ValueError, match="The 'layout' parameter of to_torch_sparse must be one of"):
        to_torch_sparse(sp.csr_matrix(np.eye(2, dtype=np.float32)), layout="bsr")
    with pytest.raises(ValueError, match="Expected a SciPy sparse matrix. Got ndarray instead."):
        to_torch_sparse(np.eye(2))
    with pytest.raises(ValueError, match=r"Row indices must lie in \[0, 1\]. Got values from 0 to 2."):
        collate_sparse_rows(sp.csr_matrix(np.eye(2, dtype=np.float32)), [0, 2])
    # duplicates in a non-canonical input are summed in the tensor, but the input is not changed
    m = sp.csr_matrix((np.array([1.0, 2.0], np.float32), np.array([1, 1]), np.array([0, 2])), shape=(1, 2))
    t = to_torch_sparse(m)
    assert t.to_dense().tolist() == [[0.0, 3.0]] and m.nnz == 2


# ------------------------------------------------------------------------------------ real data

TWITTER = Path(__file__).resolve().parents[3] / "shared" / "data" / "pan19-twitter-histories.jsonl.gz"


@pytest.mark.slow
@pytest.mark.skipif(not TWITTER.exists(), reason="the PAN 2019 Twitter corpus is not beside the project")
def test_real_twitter_vocabulary_sizes_are_sane():
    with gzip.open(TWITTER, "rt", encoding="utf-8") as fh:
        texts = [[p["text"] for p in json.loads(line)["posts"]] for line in itertools.islice(fh, 300)]
    train = np.arange(0, 300, 2)
    sizes = {}
    for kind in ["unigram_binary", "bigram_binary", "bigram_counts"]:
        rep = build_representation(kind, texts, train, cache=False)
        sizes[kind] = rep.vocabulary_size
        assert rep.matrix.shape == (300, rep.vocabulary_size)
        assert 0.001 < rep.matrix.nnz / np.prod(rep.matrix.shape) < 0.5
    # 150 training users at min_users=10: thousands of words, more grams once bigrams are added
    assert 1_000 < sizes["unigram_binary"] < 20_000
    assert sizes["unigram_binary"] < sizes["bigram_binary"] == sizes["bigram_counts"] < 5 * sizes["unigram_binary"]
    assert sizes == {"unigram_binary": 1739, "bigram_binary": 3125, "bigram_counts": 3125}  # pinned
    counts = build_representation("bigram_counts", texts, train, cache=False).matrix
    assert counts.max() > 1  # real counts
    assert (counts.nnz, int(counts.sum()), int(counts.max())) == (152_085, 495_559, 1125)  # pinned

"""textcause.methods: protocols, adapters, output checks, inputs per representation, grid entries."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from textcause.data.build import DataSettings
from textcause.estimators import Estimate
from textcause.grid.method_cell import MethodError, check_effect, check_probabilities
from textcause.grid.spec import grid_from_dict
from textcause.methods import (
    ConfigPropensity,
    EffectMethod,
    EffectResult,
    FunctionEffect,
    PropensityMethod,
    SklearnPropensity,
    as_method,
)
from textcause.methods.adapters import describe_method, load_object
from textcause.methods.inputs import TaskInputs, build_task, data_settings
from textcause.methods.protocols import method_name
from textcause.paths import config_dir

METHOD_MODULE = '''
import numpy as np

class Constant:
    """A propensity method that predicts the training share of treated users."""
    name = "constant"

    def __init__(self, shift=0.0):
        self.shift = shift

    def fit(self, X, t):
        self.share_ = float(np.mean(t)) + self.shift
        return self

    def predict_proba(self, X):
        return np.full(len(X), self.share_)

def naive(X, t, y):
    return float(y[t == 1].mean() - y[t == 0].mean())

from textcause.methods import ConfigPropensity
ORACLE = ConfigPropensity("oracle", name="oracle2", overrides={"trainer.max_epochs": 1})
'''


@pytest.fixture
def method_module(write_module):
    """A module ``user_methods`` on sys.path (and its file path) holding Constant and naive."""
    return write_module(METHOD_MODULE)


class Prop:
    def fit(self, X, t):
        return self

    def predict_proba(self, X):
        return np.full(len(X), 0.5)


class Effect:
    name = "my-effect"

    def estimate(self, X, t, y):
        return 0.0


# ---------------------------------------------------------------------------------------- protocols
def test_protocols_are_structural():
    assert isinstance(Prop(), PropensityMethod) and not isinstance(Prop(), EffectMethod)
    assert isinstance(Effect(), EffectMethod) and not isinstance(Effect(), PropensityMethod)
    from sklearn.linear_model import LogisticRegression

    assert isinstance(LogisticRegression(), PropensityMethod)
    assert method_name(Prop()) == "Prop" and method_name(Effect()) == "my-effect" and method_name(Prop) == "Prop"


def test_names_representations_and_labels_are_checked():
    bad_name = Prop()
    bad_name.name = "my method"
    with pytest.raises(ValueError, match="The name of a method must be made of letters.*'my method'"):
        as_method(bad_name)
    bad_rep = Prop()
    bad_rep.representation = "trigrams"
    with pytest.raises(ValueError, match="'representation' parameter of method 'Prop' must be one of .*Got 'trigrams'"):
        as_method(bad_rep)
    bad_opts = Prop()
    bad_opts.representation_options = {"colour": 1}
    with pytest.raises(ValueError, match="'representation_options' of method 'Prop' must be a dict"):
        as_method(bad_opts)
    with pytest.raises(ValueError, match="'estimator' label of effect method 'f' must .* differ from"):
        FunctionEffect(lambda X, t, y: 0.0, name="f", estimator="ipw")


# ---------------------------------------------------------------------------------------- as_method
def test_as_method_accepts_every_form(method_module):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    prop, eff = Prop(), Effect()
    assert as_method(prop) is prop and as_method(eff) is eff
    assert isinstance(as_method(Prop), Prop)
    wrapped = as_method(make_pipeline(TfidfVectorizer(), LogisticRegression()))
    assert isinstance(wrapped, SklearnPropensity) and wrapped.name == "sklearn_LogisticRegression"

    def my_effect(X, t, y):
        return 1.0

    assert isinstance(as_method(my_effect), FunctionEffect) and as_method(my_effect).name == "my_effect"
    assert as_method(lambda X, t, y: 1.0).name == "lambda"
    assert as_method("user_methods:Constant").name == "constant"
    assert as_method(f"{method_module}:Constant").name == "constant"
    assert as_method("user_methods:naive").estimate(None, np.array([1, 0]), np.array([3.0, 1.0])) == 2.0
    config = as_method("oracle")
    assert isinstance(config, ConfigPropensity) and config.config == (config_dir() / "model" / "oracle.yaml").resolve()
    assert as_method(str(config_dir() / "model" / "lr_bigram_binary.yaml")).name == "lr_bigram_binary"
    assert as_method(config) is config


class NeedsArgs:
    def __init__(self, c):
        self.c = c

    def fit(self, X, t):
        return self

    def predict_proba(self, X):
        return X


@pytest.mark.parametrize(
    ("obj", "error", "message"),
    [
        (3, ValueError, "A method must have fit and predict_proba .* Got int instead"),
        (NeedsArgs, ValueError, r"Cannot create the method NeedsArgs\(\) without arguments"),
        (
            "no_such_module_xyz:Thing",
            ValueError,
            "Cannot import the method 'no_such_module_xyz:Thing': ModuleNotFoundError",
        ),
        ("user_methods:Missing", ValueError, "Cannot import the method 'user_methods:Missing': AttributeError"),
        ("missing_file.py:Thing", ValueError, "Cannot import the method 'missing_file.py:Thing': FileNotFoundError"),
        ("not_a_config", ValueError, "is neither a 'package.module:Name' method nor a model config"),
        ("nowhere/model.yaml", FileNotFoundError, "No model config at 'nowhere/model.yaml'"),
    ],
)
def test_as_method_errors(method_module, obj, error, message):
    with pytest.raises(error, match=message):
        as_method(obj)


def test_load_object_needs_a_colon():
    with pytest.raises(ValueError, match="A method spec must look like 'package.module:Name'. Got 'x' instead."):
        load_object("x")


# ---------------------------------------------------------------------------------------- adapters
def _docs_task(n=200, seed=0):
    rng = np.random.default_rng(seed)
    t = (rng.random(n) < 0.5).astype(np.int64)
    users = [["the cat sat", "on a mat"] + (["i love coffee"] if ti else ["tea is fine"]) for ti in t]
    return users, t


def test_sklearn_propensity_round_trip():
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    users, t = _docs_task()
    pipe = make_pipeline(CountVectorizer(), LogisticRegression())
    method = SklearnPropensity(pipe, name="counts_lr")
    p = method.fit(users[:150], t[:150]).predict_proba(users[150:])
    assert p.shape == (50,) and ((p > 0.5) == (t[150:] == 1)).all()  # the treatment word separates the classes
    assert method.estimator is pipe and not hasattr(pipe, "classes_")  # the given estimator is cloned, not fitted
    seen = []
    SklearnPropensity(pipe, join=lambda posts: seen.append(posts) or " ".join(posts)).fit(users[:20], t[:20])
    assert seen[0] == users[0]
    X = sp.random(30, 5, density=0.5, format="csr", random_state=0)
    rep = SklearnPropensity(LogisticRegression(), representation="bigram_binary").fit(X, np.arange(30) % 2)
    assert rep.predict_proba(X).shape == (30,)


def test_sklearn_propensity_errors():
    from sklearn.dummy import DummyClassifier
    from sklearn.svm import LinearSVC

    with pytest.raises(ValueError, match="must have fit and predict_proba .* Got LinearSVC instead"):
        SklearnPropensity(LinearSVC())
    with pytest.raises(ValueError, match="The 'join' parameter of SklearnPropensity must be a str or a callable"):
        SklearnPropensity(DummyClassifier(), join=3)
    with pytest.raises(ValueError, match="not fitted yet"):
        SklearnPropensity(DummyClassifier()).predict_proba([["a"]])
    one_class = SklearnPropensity(DummyClassifier(), representation="lda").fit(np.zeros((4, 2)), np.zeros(4, dtype=int))
    with pytest.raises(ValueError, match=r"single treatment class \(\[0\]\)"):
        one_class.predict_proba(np.zeros((2, 2)))


def test_function_effect_and_config_propensity():
    fe = FunctionEffect(lambda X, t, y: (1.0, 0.5, 1.5), name="fx", representation="lda", estimator="dr")
    assert fe.estimate(None, None, None) == (1.0, 0.5, 1.5) and fe.representation == "lda" and fe.estimator == "dr"
    with pytest.raises(ValueError, match="The 'fn' parameter of FunctionEffect must be callable. Got int instead."):
        FunctionEffect(3)
    cp = ConfigPropensity("lr_bigram_binary", name="lr", overrides={"--trainer.max_epochs": 2})
    assert cp.name == "lr" and cp.overrides == {"trainer.max_epochs": 2}
    with pytest.raises(ValueError, match="The 'overrides' of ConfigPropensity must map train.py options"):
        ConfigPropensity("oracle", overrides=[1])
    with pytest.raises(FileNotFoundError, match="No model config at .*nope.yaml"):
        ConfigPropensity("nope")


def test_fingerprints_follow_code_and_parameters(method_module):
    from user_methods import Constant

    a, b, c = (describe_method(as_method(m)) for m in (Constant(), Constant(), Constant(shift=0.1)))
    assert a.fingerprint == b.fingerprint != c.fingerprint
    assert a.kind == "propensity" and a.name == "constant" and a.source_file == method_module
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    def pipe(C, max_features):
        return describe_method(
            as_method(make_pipeline(TfidfVectorizer(max_features=max_features), LogisticRegression(C=C)))
        )

    assert pipe(1.0, 5).fingerprint == pipe(1.0, 5).fingerprint
    assert len({pipe(1.0, 5).fingerprint, pipe(2.0, 5).fingerprint, pipe(1.0, 6).fingerprint}) == 3
    effect = describe_method(as_method(FunctionEffect(lambda X, t, y: 0.0, estimator="dr")))
    assert effect.kind == "effect" and effect.estimator == "dr"
    assert describe_method(as_method("oracle")).kind == "config"


# ---------------------------------------------------------------------------------------- output checks
@pytest.mark.parametrize(
    "out", [np.full(4, 0.25), [0.25] * 4, np.column_stack([np.full(4, 0.75), np.full(4, 0.25)]), np.full((4, 1), 0.25)]
)
def test_probabilities_accepted_shapes(out):
    assert check_probabilities("M", out, 4).tolist() == [0.25] * 4


@pytest.mark.parametrize(
    ("out", "message"),
    [
        (None, r"^M.predict_proba returned NoneType; expected an array of 4 probabilities.$"),
        ("abc", r"^M.predict_proba returned str"),
        ([["a", "b"]] * 4, r"^M.predict_proba returned a list that is not an array of numbers"),
        (np.zeros((4, 3)), r"^M.predict_proba returned an array of shape \(4, 3\); expected \(4,\) or \(4, 2\).$"),
        (np.full(3, 0.5), r"^M.predict_proba returned 3 values for 4 test users.$"),
        (np.array([0.5, np.nan, 0.5, np.inf]), r"^M.predict_proba returned 2 NaN or infinite values \(of 4\).$"),
        (np.array([0.5, 1.2, -0.1, 0.5]), r"^M.predict_proba returned values outside \[0, 1\] \(from -0.1 to 1.2\)"),
    ],
)
def test_probability_errors(out, message):
    with pytest.raises(MethodError, match=message):
        check_probabilities("M", out, 4)


@pytest.mark.parametrize(
    ("out", "expected"),
    [
        (0.3, (0.3, None, None)),
        (np.float32(0.5), (0.5, None, None)),
        (np.array(0.5), (0.5, None, None)),
        ((0.3, 0.1, 0.5), (0.3, 0.1, 0.5)),
        ([0.3, 0.1, 0.5], (0.3, 0.1, 0.5)),
        (EffectResult(0.3), (0.3, None, None)),
        (EffectResult(0.3, 0.2, 0.4), (0.3, 0.2, 0.4)),
        (Estimate(ate=0.3, method="x", n_used=3, ci_low=0.0, ci_high=1.0), (0.3, 0.0, 1.0)),
    ],
)
def test_effect_outputs(out, expected):
    got = check_effect("E", out)
    assert got[0] == pytest.approx(expected[0]) and got[1:] == pytest.approx(expected[1:])


@pytest.mark.parametrize(
    ("out", "message"),
    [
        (None, r"^E.estimate returned NoneType as its ATE; expected a number.$"),
        (True, "returned bool as its ATE"),
        (float("nan"), r"^E.estimate returned nan as its ATE; expected a finite number.$"),
        ((0.1, 0.2), r"^E.estimate returned 2 values; expected an ATE or \(ate, ci_low, ci_high\).$"),
        (EffectResult(0.1, 0.0, None), "returned half an interval"),
        ((0.1, 0.5, 0.0), r"returned the interval \[0.5, 0\], whose low end exceeds its high end"),
        ((0.1, "a", 0.3), "returned str as its ci_low"),
    ],
)
def test_effect_errors(out, message):
    with pytest.raises(MethodError, match=message):
        check_effect("E", out)


# ---------------------------------------------------------------------------------------- inputs
def test_data_settings_take_the_data_overrides():
    s = data_settings(
        [("data.n_users", 50), ("--data.max_posts", 5), ("trainer.max_epochs", 2), ("data.batch_size", 3)]
    )
    assert s == {"n_users": 50, "max_posts": 5}
    with pytest.raises(ValueError, match="Methods are evaluated on semi-synthetic tasks only"):
        data_settings([("data.observational", "configs/observational/x.yaml")])


def test_inputs_have_the_documented_types(tiny_corpus, tiny_encoder):
    from textcause.features import build_representation
    from textcause.features.embeddings import PostEmbeddingCache

    settings = DataSettings(corpus=tiny_corpus, task="linguistic_complexity", level=1, seed=0, representation="none")
    task = build_task(tiny_corpus, "linguistic_complexity", 1, 0)
    idx = task.split.test[:7]
    raw = TaskInputs(settings, None).take(idx)
    assert isinstance(raw, list) and len(raw) == 7 and all(isinstance(p, str) for u in raw for p in u)
    assert raw == [task.texts[i] for i in idx] and raw[0] is not task.texts[idx[0]]  # a copy the method may mutate
    bigrams = TaskInputs(settings, "bigram_binary").take(idx)
    ref = build_representation("bigram_binary", task.texts, task.split.train, min_users=10, seed=0).matrix
    assert sp.isspmatrix_csr(bigrams) and bigrams.dtype == np.float32 and (bigrams != ref[idx]).nnz == 0
    counts = TaskInputs(settings, "bigram_counts", options={"min_users": 3}).take(idx)
    assert counts.shape[1] > bigrams.shape[1] and counts.max() > 1
    lda = TaskInputs(settings, "lda").take(idx)
    assert isinstance(lda, np.ndarray) and lda.shape == (7, 20) and lda.dtype == np.float32
    emb = TaskInputs(settings, "post_embeddings", options={"encoder": tiny_encoder}, needed=idx).take(idx)
    cache = PostEmbeddingCache(tiny_encoder)
    assert isinstance(emb, list) and len(emb) == 7
    for i, arr in zip(idx, emb):
        assert arr.dtype == np.float32 and arr.shape == (len(task.texts[i]), 32)
        np.testing.assert_array_equal(arr, cache.embed(task.texts[i]))
    tokens = TaskInputs(settings, "post_tokens", options={"encoder": tiny_encoder, "token_cap": 4}, needed=idx).take(
        idx
    )
    assert isinstance(tokens, list) and len(tokens) == 7
    for i, posts in zip(idx, tokens):
        assert len(posts) == len(task.texts[i])
        assert all(a.dtype == np.float32 and a.ndim == 2 and 1 <= a.shape[0] <= 4 and a.shape[1] == 32 for a in posts)


# ---------------------------------------------------------------------------------------- grid entries
def test_grid_method_entries(method_module):
    base = {"name": "g", "corpora": ["twitter"], "tasks": {"placebo": [1]}, "seeds": [0, 1]}
    plain = grid_from_dict({**base, "models": ["oracle"]})
    grid = grid_from_dict(
        {
            **base,
            "models": ["oracle", "user_methods:Constant"],
            "methods": {"nv": "user_methods:naive"},
            "evaluation": {"effect_n_boot": 5},
        },
        methods=["user_methods:ORACLE"],
    )
    by_model = {c.model: c for c in grid.cells if c.seed == 0}
    assert set(by_model) == {"oracle", "constant", "nv", "oracle2"}
    assert by_model["oracle"].method is None and by_model["oracle"].config_hash == plain.cells[0].config_hash
    assert by_model["constant"].method == "user_methods:Constant"
    assert (
        by_model["constant"].estimators == ("ipw", "stratified", "matching")
        and by_model["constant"].model_path == method_module
    )
    assert by_model["nv"].estimators == ("effect",) and by_model["nv"].result_estimators == ("unadjusted", "effect")
    assert by_model["nv"].effect_n_boot == 5
    config = by_model["oracle2"]  # a ConfigPropensity spec is a model config cell with its own overrides
    assert config.method is None and config.model_path == (config_dir() / "model" / "oracle.yaml").resolve()
    assert dict(config.overrides) == {"trainer.max_epochs": 1}
    assert grid.search_space["model"] == ["oracle", "constant", "nv", "oracle2"]
    extra = grid_from_dict({**base, "methods": ["user_methods:naive"]}, methods=[f"{method_module}:Constant"])
    assert {c.model for c in extra.cells} == {"naive", "constant"}
    tuned = grid_from_dict({**base, "models": ["user_methods:Constant"], "overrides": {"data.n_users": 9}})
    assert tuned.cells[0].config_hash != by_model["constant"].config_hash


@pytest.mark.parametrize(
    ("spec", "methods", "message"),
    [
        ({"models": ["nope_mod_xyz:M"]}, [], "Benchmark config 'x.yaml': method 'nope_mod_xyz:M': Cannot import"),
        ({"methods": ["not-a-spec"]}, [], "'methods' must be a non-empty list of 'package.module:Name' specs"),
        ({"methods": {"a b": "user_methods:naive"}}, [], "'methods' must be a non-empty list"),
        ({}, [], "the key 'models' is required"),
        ({"models": ["user_methods:Constant"]}, ["user_methods:Constant"], "model names must be distinct"),
        (
            {"models": ["oracle"], "evaluation": {"effect_n_boot": -1}},
            [],
            "'evaluation.effect_n_boot' must be an int >= 0",
        ),
        (
            {"models": ["oracle"]},
            ["user_methods:nothing"],
            "Benchmark config '--method': method 'user_methods:nothing'",
        ),
    ],
)
def test_grid_method_errors(method_module, spec, methods, message):
    with pytest.raises(ValueError, match=message):
        grid_from_dict({"corpora": ["t"], **spec}, source="x.yaml", methods=methods)

"""The paper's n-gram text representations (section 6.1, appendices D and E.3).

:class:`NgramFeaturizer` builds one of :data:`KINDS`: ``unigram_binary`` and ``bigram_binary``
(1.0 if the user ever used the gram), ``bigram_counts`` (the real number of times, summed over the
user's posts) and ``lda`` (scikit-learn's ``LatentDirichletAllocation`` on the training users'
1,2-gram counts; each user's topic proportions). Posts are tokenised with
:func:`textcause.features.tokenize.tokenize` and bigrams never join two posts. The vocabulary keeps
the grams used by at least ``min_users`` TRAINING users (optionally the ``max_features`` most widely
used), in alphabetical order as ``CountVectorizer`` does. Everything stays sparse (CSR, float32)
except LDA's output. Fitting a whole corpus with a disk cache is
:func:`textcause.features.representation.build_representation`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from textcause.features.kinds import NGRAM_KINDS
from textcause.features.tokenize import TOKENIZER_VERSION, Encoded, encode
from textcause.progress import progress_bar
from textcause.validation import check_int

__all__ = [
    "CHUNK_TOKENS",
    "KINDS",
    "NgramFeaturizer",
    "check_kind",
    "check_texts",
    "encode_users",
]

#: The n-gram representations (:data:`textcause.features.kinds.NGRAM_KINDS`), with (largest n, binary).
KINDS: dict[str, tuple[int, bool]] = dict(zip(NGRAM_KINDS, [(1, True), (2, True), (2, False), (2, False)]))

#: Bump when :meth:`NgramFeaturizer.state_dict`'s layout changes (a saved featurizer of another version is refused).
_STATE_VERSION = 1
# Keys user * span + code are packed into one int64 when they fit, else sorted with lexsort.
_INT64_LIMIT = 2**62
#: Users are counted in runs of about this many tokens, to bound peak memory.
CHUNK_TOKENS = 4_000_000


def check_kind(kind: Any) -> str:
    """Return ``kind`` if it names a representation, else raise a ValueError listing them."""
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"Unknown text representation {kind!r}. Valid kinds are: {', '.join(KINDS)}.")
    return kind


def check_texts(texts: Any, name: str = "texts") -> list[Sequence[str]]:
    """Return ``texts`` as a list of users after checking each is a sequence of post strings."""
    shape = f"Expected '{name}' to be a list of users, each a list of post strings"
    if isinstance(texts, (str, bytes)) or not hasattr(texts, "__len__"):
        raise ValueError(f"{shape}. Got {type(texts).__name__} instead.")
    users: list[Sequence[str]] = list(texts)
    for i, posts in enumerate(users):
        if isinstance(posts, (str, bytes)):
            raise ValueError(f"{shape}. User {i} is a {type(posts).__name__}; wrap a single post in a list.")
        if not (hasattr(posts, "__len__") and hasattr(posts, "__iter__")):
            hint = " (pass corpus.texts)" if hasattr(posts, "posts") else ""
            raise ValueError(f"{shape}{hint}. User {i} is a {type(posts).__name__}.")
        for j, post in enumerate(posts):
            if not isinstance(post, str):
                raise ValueError(f"{shape}. Post {j} of user {i} is a {type(post).__name__}.")
    return users


def encode_users(
    texts: Sequence[Sequence[str]], index: dict[str, int] | None = None, *, progress: bool | None = None
) -> Encoded:
    """:func:`textcause.features.tokenize.encode` with a progress bar over the users."""
    bar = progress_bar(texts, total=len(texts), desc=f"tokenising {len(texts):,} users", unit="user", progress=progress)
    try:
        return encode(bar, index)
    finally:
        bar.close()


def _fit_lda(counts: sp.csr_matrix, *, topics: int, max_iter: int, seed: int, progress: bool | None = None) -> Any:
    """scikit-learn's batch ``LatentDirichletAllocation`` fitted on ``counts``, with a bar over its passes.

    The bar counts the estimator's EM steps (its ``_em_step``, wrapped on this instance for the fit
    only): the fitted object is a plain ``LatentDirichletAllocation``, and were scikit-learn to
    rename the step, the bar would only stand still.
    """
    from sklearn.decomposition import LatentDirichletAllocation

    lda = LatentDirichletAllocation(n_components=topics, max_iter=max_iter, learning_method="batch", random_state=seed)
    bar = progress_bar(total=max_iter, desc=f"fitting LDA ({topics} topics)", unit="pass", progress=progress)
    em_step = getattr(lda, "_em_step", None)
    if not bar.disable and callable(em_step):

        def counted(*args: Any, **kwargs: Any) -> Any:
            out = em_step(*args, **kwargs)
            bar.update()
            return out

        lda._em_step = counted
    try:
        return lda.fit(counts)
    finally:
        lda.__dict__.pop("_em_step", None)
        bar.close()


@dataclass(frozen=True)
class _Vocabulary:
    """A fitted vocabulary as lookup arrays over its own tokens (columns = ``terms`` order)."""

    terms: tuple[str, ...]
    tokens: tuple[str, ...]
    unigram_cols: np.ndarray  # column of each token's unigram (-1 if none), plus a -1 sentinel
    bigram_codes: np.ndarray  # sorted codes a * n_tokens + b of the bigrams
    bigram_cols: np.ndarray  # their columns

    @classmethod
    def from_terms(cls, terms: Sequence[str]) -> _Vocabulary:
        terms = tuple(sorted(terms))
        tokens = tuple(sorted({tok for term in terms for tok in term.split(" ")}))
        tid = {tok: i for i, tok in enumerate(tokens)}
        n_tok = len(tokens)
        unigram_cols = np.full(n_tok + 1, -1, dtype=np.int64)
        codes, cols = [], []
        for col, term in enumerate(terms):
            parts = term.split(" ")
            if len(parts) == 1:
                unigram_cols[tid[parts[0]]] = col
            else:
                codes.append(tid[parts[0]] * n_tok + tid[parts[1]])
                cols.append(col)
        codes_arr = np.asarray(codes, dtype=np.int64)
        order = np.argsort(codes_arr, kind="stable")
        return cls(terms, tokens, unigram_cols, codes_arr[order], np.asarray(cols, dtype=np.int64)[order])


def _distinct_pairs(users: np.ndarray, codes: np.ndarray, span: int) -> np.ndarray:
    """The codes of the distinct (user, code) pairs (codes in [0, span)): one entry per user having it."""
    if codes.size == 0:
        return codes.astype(np.int64)
    if (int(users.max()) + 1) * span < _INT64_LIMIT:  # pack each pair into one int64 and hash
        import pandas as pd  # here, not at the top: a run whose features come from the cache never needs it

        distinct: np.ndarray = pd.unique(users.astype(np.int64) * span + codes) % span
        return distinct
    order = np.lexsort((codes, users))  # too large to pack: sort the pairs instead
    u, c = users[order], codes[order]
    first = np.ones(c.shape[0], dtype=bool)
    first[1:] = (u[1:] != u[:-1]) | (c[1:] != c[:-1])
    return c[first]


def _fit_vocabulary(
    enc: Encoded, train_users: np.ndarray, *, max_n: int, min_users: int, max_features: int | None
) -> tuple[str, ...]:
    """The grams (1..max_n) used by at least ``min_users`` of ``train_users``, sorted.

    With ``max_features``, only the most widely used (most users, ties broken alphabetically).
    Users are processed in chunks of about ``CHUNK_TOKENS`` tokens to bound memory.
    """
    in_train = np.zeros(enc.n_users, dtype=bool)
    in_train[train_users] = True
    n_tok = max(len(enc.tokens), 1)
    uni_df = np.zeros(n_tok, dtype=np.int64)
    for u0, chunk in enc.user_chunks(CHUNK_TOKENS):
        users = chunk.token_users()
        sel = in_train[u0 + users] & (chunk.ids >= 0)
        uni_df += np.bincount(_distinct_pairs(users[sel], chunk.ids[sel].astype(np.int64), n_tok), minlength=n_tok)
    frequent = np.flatnonzero(uni_df >= min_users)
    terms = [enc.tokens[i] for i in frequent]
    dfs = [uni_df[frequent]]
    if max_n >= 2 and frequent.size:
        # A bigram's user count is at most its rarer word's, so only frequent words can pair up.
        n_freq = int(frequent.size)
        compact = np.full(n_tok + 1, -1, dtype=np.int64)  # last entry: sentinel for id -1
        compact[frequent] = np.arange(n_freq)
        per_user = []
        for u0, chunk in enc.user_chunks(CHUNK_TOKENS):
            users = chunk.token_users()
            c = compact[chunk.ids]
            a, b = c[:-1], c[1:]
            pair = chunk.same_post_pairs() & in_train[u0 + users[:-1]] & (a >= 0) & (b >= 0)
            per_user.append(_distinct_pairs(users[:-1][pair], a[pair] * n_freq + b[pair], n_freq * n_freq))
        import pandas as pd

        codes, uniques = pd.factorize(np.concatenate(per_user) if per_user else np.zeros(0, np.int64))
        bi_df = np.bincount(codes, minlength=uniques.size)
        keep = bi_df >= min_users
        bi_codes = np.asarray(uniques)[keep]
        words = [enc.tokens[i] for i in frequent]
        terms += [f"{words[x]} {words[y]}" for x, y in zip((bi_codes // n_freq).tolist(), (bi_codes % n_freq).tolist())]
        dfs.append(bi_df[keep])
    if max_features is not None and len(terms) > max_features:
        df = np.concatenate(dfs)
        ranked = sorted(range(len(terms)), key=lambda i: (-int(df[i]), terms[i]))
        terms = [terms[i] for i in ranked[:max_features]]
    return tuple(sorted(terms))


def _count_matrix(enc: Encoded, vocab: _Vocabulary, *, binary: bool) -> sp.csr_matrix:
    """The n_users x n_terms CSR float32 matrix of gram counts (or 0/1 if ``binary``)."""
    n_terms = len(vocab.terms)
    index = {tok: i for i, tok in enumerate(vocab.tokens)}
    to_vocab = np.fromiter((index.get(t, -1) for t in enc.tokens), dtype=np.int64, count=len(enc.tokens))
    to_vocab = np.append(to_vocab, -1)  # id -1 hits this sentinel
    n_tok = len(vocab.tokens)
    blocks = []
    for _, chunk in enc.user_chunks(CHUNK_TOKENS):
        vt = to_vocab[chunk.ids]
        users = chunk.token_users()
        ucol = vocab.unigram_cols[vt]
        hit = ucol >= 0
        rows, cols = [users[hit]], [ucol[hit]]
        if vocab.bigram_codes.size and vt.size > 1:
            a, b = vt[:-1], vt[1:]
            pair = chunk.same_post_pairs() & (a >= 0) & (b >= 0)
            codes = a[pair] * n_tok + b[pair]
            pos = np.minimum(np.searchsorted(vocab.bigram_codes, codes), vocab.bigram_codes.size - 1)
            found = vocab.bigram_codes[pos] == codes
            rows.append(users[:-1][pair][found])
            cols.append(vocab.bigram_cols[pos[found]])
        row, col = np.concatenate(rows), np.concatenate(cols)
        block = sp.csr_matrix((np.ones(row.size, np.float32), (row, col)), shape=(chunk.n_users, n_terms))
        block.sum_duplicates()  # counts; also sorts the column indices
        if binary:
            block.data[:] = 1.0
        blocks.append(block)
    if not blocks:
        # scipy-stubs accept an empty matrix of a given shape only as float64
        return sp.csr_matrix((enc.n_users, n_terms), dtype=np.float32)  # type: ignore[arg-type]
    stacked: sp.csr_matrix = sp.vstack(blocks, format="csr", dtype=np.float32)
    return stacked


class NgramFeaturizer:
    """One of the paper's four text representations of user histories.

    Args:
        kind: ``"unigram_binary"``, ``"bigram_binary"``, ``"bigram_counts"`` or ``"lda"``.
        min_users: keep grams used by at least this many training users (the paper's 10).
        max_features: keep at most this many grams (the most widely used), or None for all.
        lda_topics: number of LDA topics (the paper's 20); used by ``"lda"`` only.
        lda_max_iter: LDA's passes over the training users (scikit-learn's default 10).
        seed: LDA's random state; n-gram kinds are deterministic without it.
        progress: show progress bars for tokenising and LDA's passes (None: only on a terminal);
            it does not change the output.

    ``transform`` returns a CSR float32 matrix, or for ``"lda"`` a dense float32 n x topics array.
    """

    def __init__(
        self,
        kind: str = "bigram_binary",
        min_users: int = 10,
        max_features: int | None = None,
        lda_topics: int = 20,
        lda_max_iter: int = 10,
        seed: int = 0,
        progress: bool | None = None,
    ) -> None:
        owner = type(self).__name__
        self.kind = check_kind(kind)
        self.min_users = check_int(min_users, "min_users", owner, low=1)
        self.max_features = None if max_features is None else check_int(max_features, "max_features", owner, low=1)
        self.lda_topics = check_int(lda_topics, "lda_topics", owner, low=1)
        self.lda_max_iter = check_int(lda_max_iter, "lda_max_iter", owner, low=1)
        self.seed = check_int(seed, "seed", owner, low=0)
        self.progress = progress
        self._vocab: _Vocabulary | None = None
        self.lda_: Any = None  # for "lda": the fitted scikit-learn LatentDirichletAllocation (untyped)

    def params(self) -> dict[str, Any]:
        """The parameters that determine the output (for cache keys)."""
        out: dict[str, Any] = {"kind": self.kind, "min_users": self.min_users, "max_features": self.max_features}
        if self.kind == "lda":
            out.update(lda_topics=self.lda_topics, lda_max_iter=self.lda_max_iter, seed=self.seed)
        return out

    def state_dict(self) -> dict[str, Any]:
        """The fitted featurizer as plain values (no pickled code): its parameters, its n-grams in column
        order and, for ``"lda"``, the topic-word parameters (``lda_components``, topics x grams)
        and the priors; :meth:`from_state_dict` rebuilds a featurizer whose ``transform`` gives the same rows.
        """
        vocab = self._fitted()
        state = {**self.state_params(), "terms": list(vocab.terms)}
        if self.kind == "lda":
            lda = self.lda_
            state.update(
                lda_components=np.array(lda.components_, copy=True),  # its own dtype: transform keeps it
                lda_doc_topic_prior=float(lda.doc_topic_prior_),
                lda_topic_word_prior=float(lda.topic_word_prior_),
                lda_max_doc_update_iter=int(lda.max_doc_update_iter),
                lda_mean_change_tol=float(lda.mean_change_tol),
            )
        return state

    def state_params(self) -> dict[str, Any]:
        """The part of :meth:`state_dict` that fitting does not decide (version, tokenizer, parameters)."""
        return {
            "version": _STATE_VERSION,
            "tokenizer": TOKENIZER_VERSION,
            "kind": self.kind,
            "min_users": self.min_users,
            "max_features": self.max_features,
            "lda_topics": self.lda_topics,
            "lda_max_iter": self.lda_max_iter,
            "seed": self.seed,
        }

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any]) -> NgramFeaturizer:
        """The fitted featurizer that :meth:`state_dict` describes (arrays may be numpy or torch).

        Raises:
            ValueError: a state of another version or tokenizer, or one missing its n-grams or topics.
        """
        if not isinstance(state, Mapping) or state.get("version") != _STATE_VERSION or "terms" not in state:
            raise ValueError(
                f"The saved n-gram featurizer is not of this version ({_STATE_VERSION}): retrain the model with this version."
            )
        if state.get("tokenizer") != TOKENIZER_VERSION:
            raise ValueError(
                f"The saved n-gram featurizer used the tokenizer {state.get('tokenizer')!r}, not this version's "
                f"{TOKENIZER_VERSION!r}: retrain the model with this version."
            )
        out = cls(
            kind=state["kind"],
            min_users=state["min_users"],
            max_features=state["max_features"],
            lda_topics=state["lda_topics"],
            lda_max_iter=state["lda_max_iter"],
            seed=state["seed"],
        )
        out._vocab = _Vocabulary.from_terms([str(t) for t in state["terms"]])
        if out.kind == "lda":
            from sklearn.decomposition import LatentDirichletAllocation
            from sklearn.decomposition._online_lda_fast import _dirichlet_expectation_2d

            components = np.array(_as_numpy(state["lda_components"]), copy=True)
            if components.shape != (out.lda_topics, len(out._vocab.terms)):
                raise ValueError(
                    f"The saved LDA topics have shape {components.shape}, not ({out.lda_topics}, "
                    f"{len(out._vocab.terms)}) (topics x n-grams): the saved featurizer is damaged."
                )
            lda = LatentDirichletAllocation(
                n_components=out.lda_topics,
                max_iter=out.lda_max_iter,
                learning_method="batch",
                random_state=out.seed,
                max_doc_update_iter=int(state["lda_max_doc_update_iter"]),
                mean_change_tol=float(state["lda_mean_change_tol"]),
            )
            lda.components_ = components
            lda.exp_dirichlet_component_ = np.exp(_dirichlet_expectation_2d(components))
            lda.doc_topic_prior_ = float(state["lda_doc_topic_prior"])
            lda.topic_word_prior_ = float(state["lda_topic_word_prior"])
            lda.n_features_in_ = components.shape[1]
            lda.n_batch_iter_ = lda.n_iter_ = out.lda_max_iter
            out.lda_ = lda
        return out

    def fit(self, train_texts: Sequence[Sequence[str]]) -> NgramFeaturizer:
        """Fit the vocabulary (and LDA) on the training users' histories."""
        self.fit_transform(train_texts)
        return self

    def fit_transform(self, train_texts: Sequence[Sequence[str]]) -> sp.csr_matrix | np.ndarray:
        """Fit on ``train_texts`` and return their representation."""
        texts = check_texts(train_texts, "train_texts")
        return self._fit_transform_encoded(encode_users(texts, progress=self.progress), np.arange(len(texts)))

    def transform(self, texts: Sequence[Sequence[str]]) -> sp.csr_matrix | np.ndarray:
        """The representation of ``texts`` (one row per user, in order) with the fitted vocabulary."""
        vocab = self._fitted()
        texts = check_texts(texts)
        enc = encode_users(texts, {tok: i for i, tok in enumerate(vocab.tokens)}, progress=self.progress)
        return self._finish(_count_matrix(enc, vocab, binary=KINDS[self.kind][1]))

    @property
    def vocabulary_size(self) -> int:
        """The number of n-grams kept (for ``"lda"``: the n-grams the topics are fitted on)."""
        return len(self._fitted().terms)

    def get_feature_names_out(self) -> np.ndarray:
        """The column names: the n-grams, or ``topic_0 ...`` for ``"lda"``."""
        vocab = self._fitted()
        if self.kind == "lda":
            return np.asarray([f"topic_{k}" for k in range(self.lda_topics)], dtype=object)
        return np.asarray(vocab.terms, dtype=object)

    def _fitted(self) -> _Vocabulary:
        if self._vocab is None:
            from sklearn.exceptions import NotFittedError  # scikit-learn's own class, imported only when raised

            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. Call 'fit' first.")
        return self._vocab

    def _fit_transform_encoded(self, enc: Encoded, train_users: np.ndarray) -> sp.csr_matrix | np.ndarray:
        """Fit on the users ``train_users`` of ``enc``; return the representation of ALL its users."""
        self._vocab, self.lda_ = None, None  # a failed refit leaves no stale state behind
        if len(train_users) == 0:
            raise ValueError("The training set is empty: at least one training user is needed to fit a vocabulary.")
        max_n, binary = KINDS[self.kind]
        terms = _fit_vocabulary(enc, train_users, max_n=max_n, min_users=self.min_users, max_features=self.max_features)
        if not terms:
            grams = "1-gram" if max_n == 1 else "1- or 2-gram"
            raise ValueError(
                f"No {grams} is used by at least {self.min_users} of the {len(train_users)} training users; "
                "lower 'min_users' or add training users."
            )
        self._vocab = _Vocabulary.from_terms(terms)
        counts = _count_matrix(enc, self._vocab, binary=binary)
        if self.kind == "lda":
            self.lda_ = _fit_lda(
                counts[train_users],
                topics=self.lda_topics,
                max_iter=self.lda_max_iter,
                seed=self.seed,
                progress=self.progress,
            )
        return self._finish(counts)

    def _finish(self, counts: sp.csr_matrix) -> sp.csr_matrix | np.ndarray:
        if self.kind != "lda":
            return counts
        if counts.shape[0] == 0:
            return np.zeros((0, self.lda_topics), dtype=np.float32)
        topics: np.ndarray = self.lda_.transform(counts).astype(np.float32)
        return topics


def _as_numpy(value: Any) -> np.ndarray:
    """A numpy array of a numpy array, a torch tensor (as saved in a checkpoint) or a nested list."""
    if hasattr(value, "detach"):  # a torch tensor, without importing torch here
        value = value.detach().cpu().numpy()
    return np.asarray(value)

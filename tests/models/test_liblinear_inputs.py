"""liblinear gets the batch's own arrays, and the same coefficients as scikit-learn's public fit (issue 46).

:func:`~textcause.models.exact_lr.as_scipy` makes a batch's float64 CSR matrix once, with the int32
indices of the batch's SciPy view; :func:`~textcause.models.exact_lr.fit_liblinear` hands such a
matrix to scikit-learn's liblinear without validation copies. The reference is the path before:
values to float64, SciPy's own index conversion, ``LogisticRegression(solver="liblinear").fit``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.linear_model import LogisticRegression as SkLR
from sklearn.preprocessing import MaxAbsScaler

from textcause.features.torch_sparse import to_torch_sparse
from textcause.models import exact_lr
from textcause.models.components.linear import sparse_batch
from textcause.models.exact_lr import as_scipy, exact_fit, fit_liblinear
from textcause.models.tuned_lr import _scaled, fit_path


def _data(seed: int = 0, n: int = 120, d: int = 200):
    rng = np.random.default_rng(seed)
    x = sp.random(n, d, density=0.08, format="csr", random_state=seed, dtype=np.float64)
    x.data = np.round(rng.random(x.nnz) * 4 + 0.25, 2).astype(np.float32).astype(np.float64)  # float32-exact values
    t = (rng.random(n) < 1 / (1 + np.exp(-(x @ rng.normal(0, 1, d))))).astype(np.int64)
    return x, t


def _old_as_scipy(x: torch.Tensor) -> sp.csr_matrix:
    """The conversion before issue 46's change: float64 values, SciPy's own int64 -> int32 indices."""
    return sp.csr_matrix(
        (x.values().double().numpy(), x.col_indices().numpy(), x.crow_indices().numpy()), shape=tuple(x.shape)
    )


def test_a_batch_matrix_is_made_once_and_shares_the_batch_views_indices():
    x, _ = _data()
    batch = to_torch_sparse(x, layout="csr")  # float32 values, int64 indices, as FeatureCollate makes them
    m = as_scipy(batch)
    assert m.dtype == np.float64 and m.indices.dtype == np.int32 and m.indptr.dtype == np.int32
    assert (m != _old_as_scipy(batch)).nnz == 0
    assert as_scipy(batch) is m  # kept on the batch: no second conversion
    view = sparse_batch(batch).scipy()  # the float32 view of the forward's SciPy kernels
    assert np.shares_memory(m.indices, view.indices) and np.shares_memory(m.indptr, view.indptr)
    assert np.shares_memory(view.data, batch.values().numpy())
    # a batch with int32 indices: the matrix's indices are the tensor's own memory
    b32 = torch.sparse_csr_tensor(batch.crow_indices().int(), batch.col_indices().int(), batch.values().double())
    m32 = as_scipy(b32)
    assert np.shares_memory(m32.indices, b32.col_indices().numpy())
    assert np.shares_memory(m32.indptr, b32.crow_indices().numpy())
    assert np.shares_memory(m32.data, b32.values().numpy())
    # COO and dense inputs give the same matrix
    assert (as_scipy(batch.to_sparse_coo()) != m).nnz == 0
    dense = torch.from_numpy(x.toarray())
    assert np.shares_memory(as_scipy(dense), dense.numpy()) and np.array_equal(as_scipy(dense), x.toarray())


def test_liblinear_gets_the_matrix_it_is_given(monkeypatch):
    x, t = _data()
    m = as_scipy(to_torch_sparse(x, layout="csr"))
    seen = []
    private = exact_lr._private_fit()

    def spy(X, *args, **kwargs):
        seen.append(X)
        return private(X, *args, **kwargs)

    monkeypatch.setattr(exact_lr, "_private_fit", lambda: spy)
    fit_liblinear(m, t, 1.0, dual=True)
    (got,) = seen
    assert got is m and np.shares_memory(got.data, m.data) and np.shares_memory(got.indices, m.indices)


@pytest.mark.parametrize(
    ("penalty", "dual", "bias"), [("l2", True, True), ("l2", False, True), ("l2", True, False), ("l1", False, True)]
)
@pytest.mark.parametrize("dense", [False, True])
def test_fit_liblinear_is_scikit_learns_fit_to_the_bit(penalty, dual, bias, dense):
    x, t = _data(seed=1)
    x = x.toarray() if dense else x
    coef, intercept, iterations = fit_liblinear(x, t, 0.7, penalty=penalty, dual=dual, bias=bias, seed=3)
    sk = SkLR(
        C=0.7, l1_ratio=float(penalty == "l1"), solver="liblinear", dual=dual, fit_intercept=bias, random_state=3
    ).fit(x, t)
    assert np.abs(coef).max() > 0.05
    assert np.array_equal(coef, sk.coef_.ravel()) and intercept == (float(sk.intercept_[0]) if bias else 0.0)
    assert iterations == int(sk.n_iter_.max())


def test_the_exact_fit_and_its_propensities_are_those_of_the_path_before(monkeypatch):
    x, t = _data(seed=2)
    batch = to_torch_sparse(x, layout="csr")
    old = SkLR(C=1 / (0.02 * x.shape[0]), solver="liblinear", dual=True, random_state=0).fit(_old_as_scipy(batch), t)
    coef, intercept = exact_fit(as_scipy(batch), t, 0.02, bias=True, seed=0)
    assert np.array_equal(coef, old.coef_.ravel()) and intercept == float(old.intercept_[0])
    assert np.array_equal(as_scipy(batch) @ coef, _old_as_scipy(batch) @ old.coef_.ravel())
    # a scikit-learn without the private function: the public estimator, the same numbers
    monkeypatch.setattr(exact_lr, "_private_fit", lambda: None)
    again = exact_fit(as_scipy(batch), t, 0.02, bias=True, seed=0)
    assert np.array_equal(again[0], coef) and again[1] == intercept


def test_other_inputs_take_the_public_path_with_the_same_result():
    x, t = _data(seed=4)
    want = fit_liblinear(x, t, 0.5, dual=True)
    for other in (x.astype(np.float32), sp.csr_matrix(x, dtype=np.float64).tocoo(), np.asfortranarray(x.toarray())):
        got = fit_liblinear(other, t, 0.5, dual=True)
        assert np.array_equal(got[0], want[0]) and got[1] == want[1]


@pytest.mark.parametrize(
    ("value", "message"),
    [(np.nan, "contain NaN or infinity"), (np.inf, "contain NaN or infinity"), (1e31, "must be at most 1e\\+30")],
)
def test_features_liblinear_cannot_take_are_one_sentence(value, message):
    x, t = _data()
    x.data[3] = value
    with pytest.raises(ValueError, match=message):
        fit_liblinear(x, t, 1.0, dual=True)
    with pytest.raises(ValueError, match="inconsistent numbers of samples: \\[120, 119\\]"):
        fit_liblinear(x, t[1:], 1.0, dual=True)


def test_the_tuned_search_scales_and_fits_as_scikit_learn_to_the_bit():
    x, t = _data(seed=5, n=200)
    x = x.multiply(np.arange(1, x.shape[1] + 1)).tocsr()
    scaler = MaxAbsScaler().fit(x[:150])
    scaled = _scaled(x, scaler.scale_)
    assert (scaled != scaler.transform(x)).nnz == 0 and np.array_equal(scaled.data, scaler.transform(x).data)
    assert np.shares_memory(scaled.indices, x.indices)
    tr, va = slice(0, 150), slice(150, 200)
    for solver in ("primal", "dual"):
        _, _, chosen = fit_path(
            scaled[tr], t[tr], scaled[va], t[va], penalties=["l1", "l2"], cs=[0.1, 1.0], seed=0, l2_solver=solver
        )
        for penalty, ratio, c, loss, iterations in chosen["candidates"]:
            dual = penalty == "l2" and solver == "dual"
            m = SkLR(C=c, l1_ratio=ratio, solver="liblinear", dual=dual, max_iter=1000, random_state=0)
            m.fit(scaled[tr], t[tr])
            logits = scaled[va] @ m.coef_.ravel() + m.intercept_[0]
            assert loss == float(np.mean(np.logaddexp(0.0, logits) - t[va] * logits))
            assert iterations == int(m.n_iter_.max())

"""The sparse linear product: the same numbers as torch's own sparse.mm, gradients included, whichever
kernel (SciPy's with one thread, torch's otherwise) computes it."""

import gc
import weakref

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch import nn

from textcause.features.torch_sparse import to_torch_sparse
from textcause.models.components import linear
from textcause.models.components.linear import (
    LogisticRegression,
    linear_forward,
    scipy_agrees,
    sparse_batch,
    sparse_matmul,
)
from textcause.models.components.mlp import MLP


@pytest.fixture(params=[1, 2], ids=["one-thread", "two-threads"])
def threads(request):
    """Run with one torch intra-op thread (SciPy's kernels) and with two (torch's)."""
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


def _batch(layout: str, *, counts: bool = False, seed: int = 0) -> tuple[sp.csr_matrix, torch.Tensor]:
    rng = np.random.default_rng(seed)
    m = sp.random(37, 211, density=0.08, format="csr", random_state=seed, dtype=np.float32)
    m.data = rng.integers(1, 5, m.nnz).astype(np.float32) if counts else np.ones(m.nnz, np.float32)
    return m, to_torch_sparse(m, layout)


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("out", [1, 10])
@pytest.mark.parametrize("counts", [False, True])
def test_sparse_matmul_matches_torch_sparse_mm(layout, out, counts, threads):
    """Bit-identical on binary features (the default n-gram representation); equal to float
    rounding on counts, where torch's COO kernel adds the products in another order."""
    m, x = _batch(layout, counts=counts)
    w_ref = torch.randn(out, m.shape[1], generator=torch.Generator().manual_seed(1), requires_grad=True)
    w_new = w_ref.detach().clone().requires_grad_(True)
    ref = torch.sparse.mm(to_torch_sparse(m, "coo"), w_ref.t())
    new = sparse_matmul(x, w_new)
    grad = torch.randn_like(ref)
    ref.backward(grad)
    new.backward(grad)
    if counts:
        torch.testing.assert_close(new.detach(), ref.detach(), rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(w_new.grad, w_ref.grad, rtol=1e-6, atol=1e-6)
    else:
        assert torch.equal(new.detach(), ref.detach())
        assert torch.equal(w_new.grad, w_ref.grad)
    # and both are the dense product (so neither is wrong in the same way)
    dense = torch.from_numpy(m.toarray())
    np.testing.assert_allclose(new.detach().numpy(), (dense @ w_ref.detach().t()).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w_new.grad.numpy(), (grad.t() @ dense).numpy(), rtol=1e-5, atol=1e-5)


def test_the_transpose_is_built_only_for_torchs_gradient_kernel_and_once_per_batch(threads):
    m, _ = _batch("coo", counts=True)
    m.data = m.data / 3.0  # sums whose value depends on the order of the additions
    for out, layout in ((1, "coo"), (10, "csr")):
        x = to_torch_sparse(m, layout)
        w = torch.randn(out, m.shape[1], requires_grad=True)
        grad = torch.randn(m.shape[0], out)
        sparse_matmul(x, w).backward(grad)
        batch = sparse_batch(x)
        # SciPy computes the first gradient of a batch without a transpose, and every one for out=1,
        # where its kernel adds in torch's order on this machine
        scipy = threads == 1 and scipy_agrees("gradient", out)
        if scipy:
            assert batch.transposed is None and batch.view is not None
        else:
            assert batch.transposed is not None and batch.transposed.shape == (m.shape[1], m.shape[0])
        first = w.grad.clone()
        w.grad = None
        sparse_matmul(x, w).backward(grad)  # the same batch again (full-batch L-BFGS)
        assert sparse_batch(x) is batch and batch.gradients == 2
        assert (batch.transposed is None) == (scipy and out == 1)
        assert torch.equal(w.grad, first)
        assert getattr(batch.csr, "_textcause_sparse_batch", None) is None  # the cache holds no cycle back to x
        assert batch.csr is not x


@pytest.mark.parametrize("product", ["forward", "gradient"])
@pytest.mark.parametrize("out", [1, 3, 10])
def test_scipys_kernel_is_used_only_where_it_adds_in_torchs_order(product, out, monkeypatch):
    """The probe's verdict holds on another matrix (where it says equal, the products are equal to the
    bit), and a verdict of unequal sends one-thread products to torch's kernels."""
    m, _ = _batch("csr", counts=True, seed=3)
    m.data = m.data / 7.0
    x = to_torch_sparse(m, "csr")
    k = m.shape[1] if product == "forward" else m.shape[0]
    dense = torch.randn(k, out, generator=torch.Generator().manual_seed(out))
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        if product == "forward":
            ours, theirs = linear._scipy_product(m, dense), linear._product(x, dense)
        else:
            ours, theirs = linear._scipy_product(m.T, dense), linear._product(linear._transpose(x), dense)
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)  # unequal only in the order of additions
        if scipy_agrees(product, out):
            assert torch.equal(ours, theirs)
        for key in (("forward", 1), ("gradient", out)):
            monkeypatch.setitem(linear._AGREES, key, False)
        w = torch.randn(out, m.shape[1], requires_grad=True)
        sparse_matmul(x, w).backward(torch.ones(m.shape[0], out))
        batch = sparse_batch(x)
        assert batch.view is None  # nothing asked SciPy for a product
        assert batch.transposed is not None  # torch's gradient kernel, with the transpose
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("scipy", [False, True], ids=["torch-kernels", "scipy-kernels"])
@pytest.mark.parametrize("out", [1, 10])
def test_a_batch_and_its_cache_are_freed_as_soon_as_nothing_refers_to_the_batch(
    layout, scipy, out, threads, monkeypatch
):
    """No reference cycle, seen or unseen by the garbage collector: x.values() is an autograd view whose
    base is x, so a cache on x holding it would keep every batch of a run alive (about 1 GB a grid cell)."""
    for key in (("forward", 1), ("gradient", out)):
        monkeypatch.setitem(linear._AGREES, key, scipy)  # either kernel, whatever this machine's probe says
    m, _ = _batch(layout, counts=True)
    w = torch.randn(out, m.shape[1], requires_grad=True)
    enabled = gc.isenabled()
    gc.disable()
    try:
        x = to_torch_sparse(m, layout)
        for _ in range(2):  # a first and a later gradient
            sparse_matmul(x, w).sum().backward()
        with torch.no_grad():
            sparse_matmul(x, w)
        batch = sparse_batch(x)
        batch.scipy(), batch.transpose()  # every part of the cache made
        freed = weakref.ref(x), weakref.ref(batch), weakref.ref(batch.csr)
        del x, batch
        assert all(ref() is None for ref in freed)  # by reference counting alone, the collector off
    finally:
        if enabled:
            gc.enable()


@pytest.mark.parametrize("out", [1, 10])
def test_a_verdict_of_equal_sends_one_thread_products_to_scipy(out, monkeypatch):
    """Where the probe finds SciPy's kernels equal (an AMD EPYC), they compute a one-thread batch's first
    gradient without a transpose, and both products of a one-output layer."""
    for key in (("forward", 1), ("gradient", out)):
        monkeypatch.setitem(linear._AGREES, key, True)
    m, x = _batch("csr", counts=True)
    w = torch.randn(out, m.shape[1], requires_grad=True)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        y = sparse_matmul(x, w)
        y.backward(torch.ones_like(y))
    finally:
        torch.set_num_threads(before)
    batch = sparse_batch(x)
    assert batch.view is not None and batch.transposed is None
    dense = torch.from_numpy(m.toarray())
    torch.testing.assert_close(y.detach(), dense @ w.detach().t(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(w.grad, torch.ones(m.shape[0], out).t() @ dense, rtol=1e-5, atol=1e-5)


def test_the_transpose_of_a_batch_with_a_scipy_view_is_made_from_the_view_and_is_the_same(monkeypatch):
    """Where SciPy computes the forward product but not the gradient (the verdicts differ), the transpose
    for torch's gradient kernel is made from the batch's SciPy view: the same tensor, the same gradient."""
    monkeypatch.setitem(linear._AGREES, ("forward", 1), True)
    monkeypatch.setitem(linear._AGREES, ("gradient", 1), False)
    m, _ = _batch("coo", counts=True)
    m.data = m.data / 3.0
    grads = []
    for n_threads in (1, 2):
        x = to_torch_sparse(m, "csr")
        w = torch.ones(1, m.shape[1], requires_grad=True)
        before = torch.get_num_threads()
        torch.set_num_threads(n_threads)
        try:
            sparse_matmul(x, w).backward(torch.linspace(-1.0, 1.0, m.shape[0]).unsqueeze(1))
        finally:
            torch.set_num_threads(before)
        grads.append(w.grad)
        batch = sparse_batch(x)
        assert batch.transposed is not None
        assert (batch.view is not None) == (n_threads == 1)
        plain = linear._transpose(batch.csr)  # made from the batch itself
        for part in ("crow_indices", "col_indices", "values"):
            assert torch.equal(getattr(batch.transposed, part)(), getattr(plain, part)())
    assert torch.equal(grads[0], grads[1])


@pytest.mark.parametrize("out", [1, 10])
def test_the_probe_runs_in_float32_under_bf16_autocast(out, monkeypatch):
    """The probe may first run inside a bf16-mixed training step: it must neither fail (torch's sparse
    kernels have no bf16) nor record a verdict from bf16 products."""
    monkeypatch.setattr(linear, "_AGREES", {})
    m, _ = _batch("csr", counts=True)
    w = torch.randn(out, m.shape[1], requires_grad=True)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = sparse_matmul(to_torch_sparse(m, "csr"), w)
            y.sum().backward()
        verdicts = dict(linear._AGREES)
        monkeypatch.setattr(linear, "_AGREES", {})
        assert verdicts == {key: scipy_agrees(*key) for key in verdicts} and ("gradient", out) in verdicts
        g = w.grad.clone()
        w.grad = None
        ref = sparse_matmul(to_torch_sparse(m, "csr"), w)
        ref.sum().backward()
    finally:
        torch.set_num_threads(before)
    assert y.dtype == torch.float32 and torch.equal(y.detach(), ref.detach()) and torch.equal(g, w.grad)


def test_a_graph_of_the_gradient_takes_torchs_differentiable_product(threads):
    m, x = _batch("csr", counts=True)
    w = torch.randn(3, m.shape[1], requires_grad=True)
    grad = torch.randn(m.shape[0], 3, requires_grad=True)
    (gw,) = torch.autograd.grad(sparse_matmul(x, w), w, grad, create_graph=True)
    (gg,) = torch.autograd.grad((gw * gw).sum(), grad)
    dense = torch.from_numpy(m.toarray())
    torch.testing.assert_close(gg, 2 * dense @ gw.detach().t(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("counts", [False, True])
def test_scipys_and_torchs_kernels_give_the_same_bits(counts):
    """Both products of every layer width, on the batch's first gradient (SciPy with one thread) and later
    ones (the transpose), against torch's CSR product with two threads."""
    m, _ = _batch("csr", counts=counts)
    m.data = m.data / 3.0 if counts else m.data  # values that are not small integers
    results = {}
    before = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            for out in (1, 3, 10):
                w = torch.randn(out, m.shape[1], generator=torch.Generator().manual_seed(out), requires_grad=True)
                grad = torch.randn(m.shape[0], out, generator=torch.Generator().manual_seed(100 + out))
                x = to_torch_sparse(m, "csr")
                for k in range(2):
                    y = sparse_matmul(x, w)
                    y.backward(grad)
                    results[n, out, k] = (y.detach(), w.grad.clone())
                    w.grad = None
                with torch.no_grad():
                    results[n, out, "eval"] = (sparse_matmul(to_torch_sparse(m, "csr"), w), results[n, out, 0][1])
    finally:
        torch.set_num_threads(before)
    for key, (y, g) in results.items():
        ref_y, ref_g = results[(2,) + key[1:2] + (0,)]
        assert torch.equal(y, ref_y) and torch.equal(g, ref_g), key
    assert not torch.equal(results[2, 3, 0][0][:, 0], results[2, 1, 0][0][:, 0])  # the weights differ by width


def test_models_take_sparse_and_dense_batches_alike():
    m, x = _batch("coo", counts=True)
    dense = torch.from_numpy(m.toarray())
    torch.manual_seed(0)
    for net in (LogisticRegression(input_dim=m.shape[1]), MLP(input_dim=m.shape[1], hidden_size=4)):
        np.testing.assert_allclose(net(x).detach().numpy(), net(dense).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_batch_of_the_wrong_width_is_refused():
    _, x = _batch("csr")
    with pytest.raises(ValueError, match=r"Expected features of shape \(batch, 5\)"):
        linear_forward(nn.Linear(5, 1), x)


def _train(net: MLP, batches: list, steps: int = 12) -> None:
    opt = torch.optim.Adam(net.parameters(), lr=0.05, weight_decay=0.01)
    for i in range(steps):
        x, y = batches[i % len(batches)]
        opt.zero_grad(set_to_none=True)
        nn.functional.binary_cross_entropy_with_logits(net(x), y).backward()
        opt.step()


@pytest.mark.parametrize("kind", ["coo", "csr", "dense"])
def test_the_column_major_mlp_trains_to_the_same_weights_bit_for_bit(kind, threads):
    batches = []
    for seed in range(3):
        m, x = _batch("coo" if kind == "dense" else kind, counts=True, seed=seed)
        x = torch.from_numpy(m.toarray()) if kind == "dense" else x
        batches.append((x, torch.from_numpy(np.random.default_rng(seed).integers(0, 2, m.shape[0]).astype(np.float32))))
    torch.manual_seed(0)
    row = MLP(input_dim=211, hidden_size=10)
    col = MLP(input_dim=211, hidden_size=10)
    col.load_state_dict(row.state_dict())
    weight = col.hidden.weight
    col.use_sparse_layout()
    assert col.hidden.weight is weight  # the same parameter object: optimizers and wrappers keep it
    assert col.hidden.weight.t().is_contiguous() and not col.hidden.weight.is_contiguous()
    assert torch.equal(col.hidden.weight, row.hidden.weight)
    _train(row, batches)
    _train(col, batches)
    assert row.hidden.weight.is_contiguous()
    assert col.hidden.weight.t().is_contiguous()  # its gradients and Adam's moments followed the layout
    for a, b in zip(row.parameters(), col.parameters()):
        assert torch.equal(a, b)
    fresh = MLP(input_dim=211, hidden_size=10)
    fresh.load_state_dict(col.state_dict())  # a checkpoint of either layout loads into the other
    x = batches[0][0]
    assert torch.equal(fresh(x), col(x))


def test_the_propensity_model_relays_the_mlp_for_adam_and_not_for_lbfgs():
    from textcause.models import PropensityModel

    adam = PropensityModel(net=MLP(input_dim=211, hidden_size=10), optimizer="adam")
    adam.setup("fit")
    assert adam.net.hidden.weight.t().is_contiguous() and not adam.net.hidden.weight.is_contiguous()
    lbfgs = PropensityModel(net=MLP(input_dim=211, hidden_size=10), optimizer="lbfgs")
    lbfgs.setup("fit")  # L-BFGS flattens gradients with view(): they must stay row-major
    assert lbfgs.net.hidden.weight.is_contiguous()
    predict = PropensityModel(net=MLP(input_dim=211, hidden_size=10), optimizer="adam")
    predict.setup("predict")
    assert predict.net.hidden.weight.is_contiguous()

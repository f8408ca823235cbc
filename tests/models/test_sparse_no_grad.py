"""A sparse batch seen without gradient (validation, prediction) never builds its transpose (issue 18)."""

import numpy as np
import scipy.sparse as sp
import torch

from textcause.features.torch_sparse import to_torch_sparse
from textcause.models.components.linear import LogisticRegression, sparse_batch, sparse_matmul


def test_no_grad_products_skip_the_transpose_and_give_the_same_numbers():
    m = sp.random(29, 97, density=0.1, format="csr", random_state=0, dtype=np.float32)
    m.data[:] = 1.0
    w = torch.randn(1, 97, generator=torch.Generator().manual_seed(0), requires_grad=True)
    for layout in ("coo", "csr"):
        x = to_torch_sparse(m, layout)
        before = torch.get_num_threads()
        torch.set_num_threads(1)  # SciPy's product without gradient, against torch's with it below
        try:
            with torch.no_grad():
                evaluated = sparse_matmul(x, w)
        finally:
            torch.set_num_threads(before)
        batch = sparse_batch(x)
        assert batch.transposed is None and batch.gradients == 0
        before = torch.get_num_threads()
        torch.set_num_threads(2)  # torch's gradient kernel, which needs the transpose
        try:
            trained = sparse_matmul(x, w)  # the gradient path builds the transpose once, keeping the CSR
        finally:
            torch.set_num_threads(before)
        assert sparse_batch(x) is batch and batch.transposed.shape == (97, 29)
        assert torch.equal(evaluated, trained.detach())
        trained.sum().backward()
        np.testing.assert_allclose(w.grad.numpy(), np.asarray(m.sum(0)), rtol=1e-6)
        w.grad = None


def test_an_inference_forward_of_logistic_regression_equals_the_training_forward():
    m = sp.random(11, 40, density=0.2, format="csr", random_state=1, dtype=np.float32)
    net = LogisticRegression(40)
    x = to_torch_sparse(m, "coo")
    with torch.inference_mode():
        a = net(x)
    assert torch.equal(a, net(to_torch_sparse(m, "coo")).detach())

"""FastDropout: the same distribution as nn.Dropout, reproducible under a seed, torch's own off the fast path."""

from __future__ import annotations

import pytest
import torch
from scipy import stats

from textcause.models.components.dropout import MIN_ELEMENTS, FastDropout, fast_dropout_mask


def test_drop_rate_is_p_and_output_is_unbiased():
    torch.manual_seed(0)
    x = torch.ones(64, 60, 100)
    drop = FastDropout(0.1).train()
    y = drop(x)
    dropped = int((y == 0).sum())
    n = x.numel()
    # the drop count is Binomial(n, 0.1): a two-sided exact test at 1e-3 would fail a wrong rate
    assert stats.binomtest(dropped, n, 0.1).pvalue > 1e-3
    kept = y[y != 0]
    _, p_used = fast_dropout_mask((1,), 0.1)
    assert torch.allclose(kept, torch.full_like(kept, 1 / (1 - p_used)))
    assert abs(p_used - 0.1) < 1e-5
    assert abs(float(y.mean()) - 1.0) < 0.01  # E[y] = x


def test_mask_elements_are_independent_across_positions():
    torch.manual_seed(1)
    keep, _ = fast_dropout_mask((200_000,), 0.5)
    k = keep.numpy().astype(int)
    # neighbours (also the 4 values cut from one 64-bit draw) are uncorrelated
    for lag in (1, 2, 3, 4):
        r = float(((k[:-lag] - 0.5) * (k[lag:] - 0.5)).mean() / 0.25)
        assert abs(r) < 0.01, lag


def test_reproducible_under_a_seed_and_different_across_calls():
    drop = FastDropout(0.3).train()
    x = torch.ones(40, 50, 40)
    torch.manual_seed(5)
    a, b = drop(x), drop(x)
    torch.manual_seed(5)
    c = drop(x)
    assert torch.equal(a, c)
    assert not torch.equal(a, b)


def test_gradient_is_the_mask_times_the_scale():
    torch.manual_seed(2)
    x = torch.randn(32, 60, 50, requires_grad=True)
    y = FastDropout(0.2).train()(x)
    y.sum().backward()
    keep = y != 0
    _, p_used = fast_dropout_mask((1,), 0.2)
    assert torch.allclose(x.grad, keep.float() / (1 - p_used))


def test_bf16_stays_bf16_and_eval_is_identity():
    x = torch.randn(32, 60, 100).bfloat16()
    drop = FastDropout(0.1)
    assert drop.train()(x).dtype == torch.bfloat16
    assert drop.eval()(x) is x
    assert FastDropout(0.0).train()(x) is x


def test_small_tensors_use_torch_dropout():
    x = torch.ones(MIN_ELEMENTS - 1)
    torch.manual_seed(3)
    a = FastDropout(0.5).train()(x)
    torch.manual_seed(3)
    b = torch.nn.functional.dropout(x, 0.5, training=True)
    assert torch.equal(a, b)


def test_bad_p_is_a_clear_error():
    with pytest.raises(ValueError, match="The 'p' parameter of FastDropout"):
        FastDropout(1.0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64])
def test_a_mask_of_the_tensors_dtype_is_the_boolean_mask_and_gives_the_same_bits(dtype):
    torch.manual_seed(4)
    keep, p_used = fast_dropout_mask((32, 60, 50), 0.1)
    torch.manual_seed(4)
    typed, p_typed = fast_dropout_mask((32, 60, 50), 0.1, dtype=dtype)
    assert typed.dtype == dtype and typed.shape == keep.shape and p_typed == p_used
    assert torch.equal(typed, keep.to(dtype))
    # FastDropout's output and gradient: bit for bit those of the boolean formulation (it used
    # x * bool_mask before), negative zeros and all
    x = (torch.randn(32, 60, 50) * 3).to(dtype).requires_grad_()
    torch.manual_seed(4)
    y = FastDropout(0.1).train()(x)
    g = torch.randn_like(y)
    y.backward(g)
    ref_x = x.detach().clone().requires_grad_()
    ref = (ref_x * keep).mul_(1.0 / (1.0 - p_used))
    ref.backward(g)
    assert torch.equal(y.detach().view(-1).view(torch.uint8), ref.detach().view(-1).view(torch.uint8))
    assert torch.equal(x.grad.view(-1).view(torch.uint8), ref_x.grad.view(-1).view(torch.uint8))


def test_a_mask_of_another_dtype_is_a_clear_error():
    with pytest.raises(ValueError, match="must be torch.bool or a floating dtype"):
        fast_dropout_mask((4,), 0.1, dtype=torch.int64)

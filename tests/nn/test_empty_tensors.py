"""Tensors with a dimension of size 0 through nn's operators, as through PyTorch's: means and
variances of no elements are NaN, products and layers with an empty batch give empty results
(and empty or zero gradients), reductions that have no identity raise PyTorch's errors."""
import warnings

import numpy as np
import pytest
import torch

import nn


def _functional(m):
    return torch.nn.functional if m is torch else nn.functional


CASES = [
    ("mean_all", (0,), lambda m, x: x.mean()),
    ("mean_dim0", (0, 3), lambda m, x: x.mean(0)),
    ("mean_dim1", (0, 3), lambda m, x: x.mean(1)),
    ("mean_dims", (2, 0, 3), lambda m, x: x.mean((0, 1))),
    ("var_dim0", (0, 3), lambda m, x: x.var(0)),
    ("std_all", (0, 3), lambda m, x: x.std()),
    ("var_one_element", (1, 3), lambda m, x: x.var(0)),
    ("sum_dim0", (0, 3), lambda m, x: x.sum(0)),
    ("softmax", (0, 3), lambda m, x: x.softmax(1)),
    ("log_softmax_empty_dim", (3, 0), lambda m, x: x.log_softmax(1)),
    ("logsumexp", (0, 3), lambda m, x: x.logsumexp(0)),
    ("matmul_rows", (0, 3), lambda m, x: x @ m.ones(3, 2)),
    ("matmul_columns", (2, 3), lambda m, x: x @ m.ones(3, 0)),
    ("matmul_inner", (2, 0), lambda m, x: x @ m.ones(0, 4)),
    ("bmm_batch", (0, 2, 3), lambda m, x: m.bmm(x, m.ones(0, 3, 2))),
    ("matmul_broadcast_batch", (0, 2, 3), lambda m, x: x @ m.ones(1, 3, 4)),
    ("matmul_batched_inner", (2, 2, 0), lambda m, x: x @ m.ones(2, 0, 4)),
    ("conv2d_batch", (0, 1, 5, 5), lambda m, x: _functional(m).conv2d(x, m.ones(2, 1, 3, 3))),
    ("max_pool_batch", (0, 1, 4, 4), lambda m, x: _functional(m).max_pool2d(x, 2)),
    ("avg_pool_batch", (0, 1, 4, 4), lambda m, x: _functional(m).avg_pool2d(x, 2)),
    ("batch_norm_eval", (0, 3), lambda m, x: _functional(m).batch_norm(
        x, m.zeros(3), m.ones(3), training=False)),
    ("group_norm", (0, 4, 2), lambda m, x: _functional(m).group_norm(x, 2)),
    ("layer_norm_rows", (0, 3), lambda m, x: _functional(m).layer_norm(x, (3,))),
    ("cross_entropy_probs", (0, 3), lambda m, x: _functional(m).cross_entropy(
        x, m.zeros(0, 3))),
    ("mse", (0, 3), lambda m, x: _functional(m).mse_loss(x, m.zeros(0, 3))),
]


@pytest.mark.parametrize("name,shape,fn", CASES, ids=[c[0] for c in CASES])
def test_empty_inputs_match_pytorch(name, shape, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # both warn on var's degrees of freedom
        a, b = nn.zeros(*shape, requires_grad=True), torch.zeros(*shape, requires_grad=True)
        got, want = fn(nn, a), fn(torch, b)
        assert got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        got.sum().backward()
        want.sum().backward()
    assert a.grad.shape == tuple(b.grad.shape)
    np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


def test_linear_with_an_empty_batch():
    layer = nn.Linear(3, 2)
    x = nn.zeros(0, 3, requires_grad=True)
    y = layer(x)
    assert y.shape == (0, 2)
    y.sum().backward()
    assert x.grad.shape == (0, 3)
    np.testing.assert_array_equal(layer.weight.grad.numpy(), np.zeros((2, 3), "float32"))
    np.testing.assert_array_equal(layer.bias.grad.numpy(), np.zeros(2, "float32"))


def test_the_issue_examples():
    assert nn.zeros(0).mean().shape == () and np.isnan(nn.zeros(0).mean().item())
    out = nn.zeros(0, 3).mean(0)
    assert out.shape == (3,) and np.isnan(out.numpy()).all()
    assert nn.Linear(3, 2)(nn.zeros(0, 3)).shape == (0, 2)


def test_batch_norm_training_on_an_empty_batch_keeps_running_stats():
    running_mean, running_var = nn.zeros(2), nn.ones(2)
    x = nn.zeros(0, 2, 3, requires_grad=True)
    nn.functional.batch_norm(x, running_mean, running_var, training=True).sum().backward()
    assert x.grad.shape == (0, 2, 3)
    assert running_mean.tolist() == [0.0, 0.0] and running_var.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("op", [lambda m: m.zeros(0, 3).amax(0),
                                lambda m: m.zeros(0, 3).max(0),
                                lambda m: m.zeros(0, 3).argmin(0)])
def test_extremum_over_an_empty_dim_raises_as_pytorch(op):
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        op(torch)
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        op(nn)
    assert nn.zeros(0, 3).amax(1).shape == (0,)

"""relu's backward is one kernel (PyTorch's threshold_backward) reading the saved output; its
gradients match PyTorch's and finite differences, and can be differentiated again."""
import numpy as np
import pytest
import torch

import nn
import nn.functional as F
from nn.functional import kernel_calls

# zeros of both signs, NaN and infinities: where PyTorch's mask passes the gradient or not
EDGES = np.array([-2.0, -0.0, 0.0, 1e-30, 0.5, 3.0, np.nan, np.inf, -np.inf, -1e-30])


def _delta(before):
    return {k: v - before.get(k, 0) for k, v in kernel_calls.items() if v != before.get(k, 0)}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_gradient_matches_pytorch_at_the_edges(dtype):
    data = EDGES.astype(dtype)
    weights = np.arange(1, data.size + 1).astype(dtype)
    x = nn.tensor(data.copy(), requires_grad=True)
    t = torch.tensor(data.copy(), requires_grad=True)
    (F.relu(x) * nn.tensor(weights)).sum().backward()
    (torch.relu(t) * torch.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_relu_backward_runs_one_kernel():
    x = nn.tensor(np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype("float32"),
                  requires_grad=True)
    y = F.relu(x)
    g = nn.tensor(np.random.default_rng(1).standard_normal(y.shape).astype("float32"))
    before = dict(kernel_calls)
    y.backward(g)
    assert _delta(before) == {"relu_backward": 1}
    t = torch.tensor(x.detach().numpy(), requires_grad=True)
    torch.relu(t).backward(torch.tensor(g.numpy()))
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_relu_module_and_inplace_gradient_match_pytorch():
    data = np.random.default_rng(2).standard_normal((3, 7)).astype("float32")
    x = nn.tensor(data.copy(), requires_grad=True)
    t = torch.tensor(data.copy(), requires_grad=True)
    before = dict(kernel_calls)
    (nn.ReLU(inplace=True)(x * 2) ** 2).sum().backward()
    assert _delta(before).get("relu_backward") == 1
    (torch.nn.ReLU(inplace=True)(t * 2) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6)


def test_relu_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    data = rng.standard_normal(12)
    data[np.abs(data) < 0.05] = 0.5           # away from the kink
    w = rng.standard_normal(12)
    x = nn.tensor(data.copy(), requires_grad=True)
    (F.relu(x) * nn.tensor(w)).sum().backward()
    eps = 1e-6
    fd = [((np.maximum(data + eps * e, 0) - np.maximum(data - eps * e, 0)) @ w) / (2 * eps)
          for e in np.eye(12)]
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6, atol=1e-9)


def test_relu_double_backward_matches_pytorch():
    rng = np.random.default_rng(4)
    data, gdata = rng.standard_normal(9), rng.standard_normal(9)
    x = nn.tensor(data.copy(), requires_grad=True)
    g = nn.tensor(gdata.copy(), requires_grad=True)
    t = torch.tensor(data.copy(), requires_grad=True)
    tg = torch.tensor(gdata.copy(), requires_grad=True)
    (gx,) = nn.autograd.grad(F.relu(x) ** 2, x, g, create_graph=True)
    (tgx,) = torch.autograd.grad(torch.relu(t) ** 2, t, tg, create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), tgx.detach().numpy(), rtol=1e-12)
    gg, ggx = nn.autograd.grad((gx * gx).sum(), [g, x])
    tgg, tggx = torch.autograd.grad((tgx * tgx).sum(), [tg, t])
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ggx.numpy(), tggx.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name,args", [("leaky_relu", (0.1,)), ("relu6", ()),
                                       ("hardtanh", (-0.5, 0.5))])
def test_piecewise_linear_activations_run_one_kernel_each_way(name, args):
    data = np.random.default_rng(5).standard_normal((4, 6)).astype("float32") * 4
    x = nn.tensor(data.copy(), requires_grad=True)
    t = torch.tensor(data.copy(), requires_grad=True)
    before = dict(kernel_calls)
    y = getattr(F, name)(x, *args)
    y.backward(nn.ones_like(y))
    assert sum(_delta(before).values()) == 2
    getattr(torch.nn.functional, name)(t, *args).backward(torch.ones_like(t))
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


# max_pool with rows narrower than a vector runs rows and columns fused in vectors
# (nn.ops.pool._schedule_narrow): tails, padding, ceil_mode, dilation, NaN, ties, float64
@pytest.mark.parametrize("shape,kw", [
    ((2, 3, 13, 13), dict(kernel_size=2, stride=1)),
    ((2, 3, 30, 30), dict(kernel_size=2, stride=2)),
    ((1, 2, 9, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ((1, 2, 11, 10), dict(kernel_size=2, stride=1, dilation=2)),
    ((3, 1, 6, 5), dict(kernel_size=(2, 3), stride=(1, 2)))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_narrow_max_pool_matches_pytorch(shape, kw, dtype):
    rng = np.random.default_rng(6)
    data = rng.integers(-3, 4, shape).astype(dtype)      # ties: the first maximum wins
    data.flat[::17] = np.nan
    x = nn.tensor(data.copy(), requires_grad=True)
    t = torch.tensor(data.copy(), requires_grad=True)
    out, idx = F.max_pool2d(x, return_indices=True, **kw)
    want, widx = torch.nn.functional.max_pool2d(t, return_indices=True, **kw)
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
    np.testing.assert_array_equal(idx.numpy(), widx.numpy())
    g = rng.standard_normal(want.shape).astype(dtype)
    out.backward(nn.tensor(g))
    want.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6)

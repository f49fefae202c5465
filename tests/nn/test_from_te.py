"""nn.autograd.Function.from_te: te declarations as differentiable nn functions, forward and
backward (te.gradient) compiled with default schedules, on the CPU and on cuda tensors (numba's
simulator here), checked against numpy, PyTorch and finite differences."""
import numpy as np
import torch

import nn
import te
from nn.ops import cpu

RNG = np.random.default_rng(0)


def linear_tanh(x, w):
    k = te.reduce_axis((0, x.shape[1]), "k")
    y = te.compute((x.shape[0], w.shape[0]),
                   lambda i, j: te.sum(x[i, k] * w[j, k], axis=k), name="y")
    return te.compute(y.shape, lambda i, j: te.tanh(y[i, j]), name="out")


def stats(x):
    """Two outputs: the row sums of squares and the row maxima."""
    k = te.reduce_axis((0, x.shape[1]), "k")
    sq = te.compute((x.shape[0],), lambda i: te.sum(x[i, k] * x[i, k], axis=k), name="sq")
    m = te.reduce_axis((0, x.shape[1]), "m")
    mx = te.compute((x.shape[0],), lambda i: te.max(x[i, m], axis=m), name="mx")
    return sq, mx


def gather_scale(x, index):
    """An integer input (indices) and an integer output next to the float one."""
    out = te.compute(index.shape, lambda i: x[index[i]] * x[index[i]], name="g")
    twice = te.compute(index.shape, lambda i: index[i] * 2, name="twice")
    return out, twice


def test_forward_backward_match_torch():
    f = nn.autograd.Function.from_te(linear_tanh)
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((5, 4))
    x, w = nn.tensor(a, requires_grad=True), nn.tensor(b, requires_grad=True)
    out = f(x, w)
    assert type(out.grad_fn).__name__ == "LinearTanhBackward"
    (out * out).sum().backward()
    tx, tw = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    tout = torch.tanh(tx @ tw.T)
    (tout * tout).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-10)


def test_gradcheck_and_apply():
    f = nn.autograd.Function.from_te(linear_tanh)
    x = nn.tensor(RNG.standard_normal((2, 3)), requires_grad=True)
    w = nn.tensor(RNG.standard_normal((4, 3)), requires_grad=True)
    assert nn.autograd.gradcheck(f, (x, w))
    assert nn.autograd.gradcheck(f.apply, (x, w))


def test_multiple_outputs():
    f = nn.autograd.Function.from_te(stats)
    a = RNG.standard_normal((3, 5))
    x = nn.tensor(a, requires_grad=True)
    sq, mx = f(x)
    np.testing.assert_allclose(sq.detach().numpy(), (a * a).sum(1))
    np.testing.assert_allclose(mx.detach().numpy(), a.max(1))
    (sq.sum() + 3 * mx.sum()).backward()
    expected = 2 * a + 3 * (a == a.max(1, keepdims=True))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)
    assert nn.autograd.gradcheck(lambda t: f(t)[0], (x,))


def test_integer_inputs_and_outputs_get_no_gradient():
    f = nn.autograd.Function.from_te(gather_scale)
    a = RNG.standard_normal(4)
    x = nn.tensor(a, requires_grad=True)
    index = nn.tensor(np.array([0, 3, 3, 1, 0], "int32"))
    out, twice = f(x, index)
    assert not twice.requires_grad and twice.tolist() == [0, 6, 6, 2, 0]
    out.sum().backward()
    expected = np.zeros(4)
    np.add.at(expected, [0, 3, 3, 1, 0], 2 * a[[0, 3, 3, 1, 0]])
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_compiled_once_per_shape():
    f = nn.autograd.Function.from_te(linear_tanh)
    x = nn.tensor(RNG.standard_normal((3, 4)).astype("float32"), requires_grad=True)
    w = nn.tensor(RNG.standard_normal((5, 4)).astype("float32"), requires_grad=True)
    for _ in range(2):          # the second call also builds the grads' accumulation (+)
        f(x, w).sum().backward()
    misses = cpu._build.cache_info().misses
    f(x, w).sum().backward()
    assert cpu._build.cache_info().misses == misses            # nothing rebuilt
    y = f(nn.tensor(RNG.standard_normal((2, 4)).astype("float32")), w)   # a new shape
    assert y.shape == (2, 5) and cpu._build.cache_info().misses == misses + 1


def test_double_backward_matches_torch():
    f = nn.autograd.Function.from_te(linear_tanh)
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((4, 3))
    x, w = nn.tensor(a, requires_grad=True), nn.tensor(b, requires_grad=True)
    (gx,) = nn.autograd.grad(f(x, w).sum(), [x], create_graph=True)
    (gx * gx).sum().backward()
    tx, tw = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (tgx,) = torch.autograd.grad(torch.tanh(tx @ tw.T).sum(), [tx], create_graph=True)
    (tgx * tgx).sum().backward()
    np.testing.assert_allclose(gx.detach().numpy(), tgx.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-8)


def test_cuda_tensors_match_cpu():
    f = nn.autograd.Function.from_te(linear_tanh)
    a = RNG.standard_normal((3, 4)).astype("float32")
    b = RNG.standard_normal((5, 4)).astype("float32")
    results = []
    for where in ("cpu", "cuda"):
        x = nn.tensor(a).to(where).requires_grad_()
        w = nn.tensor(b).to(where).requires_grad_()
        out = f(x, w)
        assert out.device == x.device
        (out * out).sum().backward()
        assert x.grad.device == x.device and w.grad.device == w.device
        results.append([t.detach().cpu().numpy() for t in (out, x.grad, w.grad)])
    for c, g in zip(*results):
        np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-6)


def max_pool_2x2(x):
    ry = te.reduce_axis((0, 2), "ry")
    rx = te.reduce_axis((0, 2), "rx")
    N, C, H, W = (int(d.value) for d in x.shape)
    return te.compute((N, C, H // 2, W // 2), lambda n, c, y, w: te.max(
        x[n, c, 2 * y + ry, 2 * w + rx], axis=[ry, rx]), name="pool")


def test_cuda_max_pool_gradient_matches_torch():
    f = nn.autograd.Function.from_te(max_pool_2x2)
    a = RNG.standard_normal((1, 2, 4, 4)).astype("float32")
    x = nn.tensor(a).cuda().requires_grad_()
    out = f(x)
    (out * out).sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    tout = torch.nn.functional.max_pool2d(tx, 2)
    (tout * tout).sum().backward()
    assert x.grad.is_cuda
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy())
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-6)


def sqnorm(x):
    k = te.reduce_axis((0, x.shape[0]), "k")
    return te.compute((), lambda: te.sum(x[k] * x[k], axis=k), name="sq")


def scale(x, a):
    return te.compute(x.shape, lambda i: x[i] * a[()], name="scale")


def test_zero_dimensional_outputs_and_inputs_on_both_devices():
    loss, mul = nn.autograd.Function.from_te(sqnorm), nn.autograd.Function.from_te(scale)
    values = np.array([1.0, -2.0, 3.0], "float32")
    for where in ("cpu", "cuda"):
        x = nn.tensor(values).to(where).requires_grad_()
        a = nn.tensor(np.float32(2.0)).to(where).requires_grad_()
        y = loss(mul(x, a))
        assert y.shape == () and y.device == x.device
        y.backward()
        np.testing.assert_allclose(y.item(), 4 * (values ** 2).sum(), rtol=1e-6)
        np.testing.assert_allclose(x.grad.cpu().numpy(), 8 * values, rtol=1e-6)
        np.testing.assert_allclose(a.grad.item(), 4 * (values ** 2).sum(), rtol=1e-6)


def test_inside_a_module_with_an_optimizer():
    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(nn.tensor(RNG.standard_normal((2, 3)) * 0.5))
            self.fn = nn.autograd.Function.from_te(linear_tanh)

        def forward(self, x):
            return self.fn(x, self.weight)
    layer = Layer()
    opt = nn.optim.SGD(layer.parameters(), lr=0.5)
    x = nn.tensor(RNG.standard_normal((8, 3)))
    target = nn.tensor(np.tanh(RNG.standard_normal((8, 3)) @ np.ones((3, 2))))
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = ((layer(x) - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]

"""Pooling: max (with indices), average and adaptive pooling in 1-d and 2-d, max_unpool and
the pooling layers, against numpy references, PyTorch and finite differences."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import nn

rng = np.random.default_rng(11)


def _out(n, k, s, p, d, ceil):
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    return out - 1 if ceil and (out - 1) * s >= n + p else out


def _windows(n, k, s, p, d, ceil):
    """Per output index, the input indices of its taps (padding left out) and the
    count_include_pad divisor factor, as PyTorch defines them."""
    result = []
    for o in range(_out(n, k, s, p, d, ceil)):
        start = o * s - p
        taps = [start + j * d for j in range(k) if 0 <= start + j * d < n]
        result.append((taps, min(start + k, n + p) - start))
    return result


def _adaptive(n, out):
    return [(list(range(o * n // out, -(-(o + 1) * n // out))), None) for o in range(out)]


def pool_numpy(x, rows, cols, kind, include_pad=True, divisor=None):
    """Max (values, flat indices) or average pooling of (N, C, H, W) over given windows."""
    N, C, H, W = x.shape
    out = np.zeros((N, C, len(rows), len(cols)))
    index = np.zeros(out.shape, dtype=np.int64)
    for i, (hs, hspan) in enumerate(rows):
        for j, (ws, wspan) in enumerate(cols):
            block = x[:, :, hs][:, :, :, ws].reshape(N, C, -1)
            if kind == "max":
                k = block.argmax(-1)
                out[:, :, i, j] = block.max(-1)
                index[:, :, i, j] = np.array(hs)[k // len(ws)] * W + np.array(ws)[k % len(ws)]
            else:
                count = divisor or (hspan * wspan if include_pad and hspan else block.shape[-1])
                out[:, :, i, j] = block.sum(-1) / count
    return out, index


FIXED = [   # input, kernel, stride, padding, dilation, ceil_mode
    ((2, 3, 9, 11), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((1, 2, 10, 9), (3, 2), (2, 3), (1, 1), (1, 1), True),
    ((1, 2, 10, 20), (3, 3), (2, 1), (1, 0), (2, 2), True),
]


@pytest.mark.parametrize("case", FIXED)
def test_max_pool2d_indices_and_grad(case):
    shape, k, s, p, d, ceil = case
    x = rng.standard_normal(shape).astype(np.float32)
    rows, cols = (_windows(shape[2 + a], k[a], s[a], p[a], d[a], ceil) for a in range(2))
    want, want_index = pool_numpy(x, rows, cols, "max")
    xs, tx = nn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, index = nn.functional.max_pool2d(xs, k, s, p, d, ceil_mode=ceil, return_indices=True)
    ty, tindex = TF.max_pool2d(tx, k, s, p, d, ceil_mode=ceil, return_indices=True)
    np.testing.assert_array_equal(y.detach().numpy(), want.astype(np.float32))
    np.testing.assert_array_equal(index.numpy(), want_index)
    np.testing.assert_array_equal(index.numpy(), tindex.numpy())
    assert y.grad_fn.name() == "MaxPool2DWithIndicesBackward0" and index.dtype == "int64"
    g = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(nn.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(xs.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", FIXED[:2])
@pytest.mark.parametrize("include_pad, divisor", [(True, None), (False, None), (True, 3)])
def test_avg_pool2d_against_numpy_and_torch(case, include_pad, divisor):
    shape, k, s, p, _, ceil = case
    x = rng.standard_normal(shape).astype(np.float32)
    rows, cols = (_windows(shape[2 + a], k[a], s[a], p[a], 1, ceil) for a in range(2))
    want, _ = pool_numpy(x, rows, cols, "avg", include_pad, divisor)
    xs, tx = nn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    args = (k, s, p, ceil, include_pad, divisor)
    y, ty = nn.functional.avg_pool2d(xs, *args), TF.avg_pool2d(tx, *args)
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-5, atol=1e-6)
    g = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(nn.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(xs.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("out", [(3, 4), (7, None)])
def test_adaptive_pool2d_against_numpy_and_torch(out):
    x = rng.standard_normal((2, 3, 5, 10)).astype(np.float32)
    size = tuple(n if o is None else o for o, n in zip(out, x.shape[2:]))
    rows, cols = _adaptive(5, size[0]), _adaptive(10, size[1])
    xs, tx = nn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    mean, tmean = nn.functional.adaptive_avg_pool2d(xs, out), TF.adaptive_avg_pool2d(tx, out)
    np.testing.assert_allclose(mean.detach().numpy(), pool_numpy(x, rows, cols, "avg")[0],
                               rtol=1e-5, atol=1e-6)
    top, index = nn.functional.adaptive_max_pool2d(xs, out, return_indices=True)
    ttop, tindex = TF.adaptive_max_pool2d(tx, out, return_indices=True)
    want, want_index = pool_numpy(x, rows, cols, "max")
    np.testing.assert_array_equal(top.detach().numpy(), want.astype(np.float32))
    np.testing.assert_array_equal(index.numpy(), want_index)
    np.testing.assert_array_equal(index.numpy(), tindex.numpy())
    g = rng.standard_normal(mean.shape).astype(np.float32)
    (mean * nn.tensor(g) + top).sum().backward()
    (tmean * torch.tensor(g) + ttop).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_pool1d_against_torch():
    x = rng.standard_normal((2, 3, 11)).astype(np.float32)
    xs, tx = nn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    pairs = [(nn.functional.max_pool1d(xs, 3, 2, 1, 2, return_indices=True),
              TF.max_pool1d(tx, 3, 2, 1, 2, return_indices=True)),
             (nn.functional.avg_pool1d(xs, 4, 3, 2, ceil_mode=True),
              TF.avg_pool1d(tx, 4, 3, 2, ceil_mode=True)),
             (nn.functional.adaptive_avg_pool1d(xs, 4), TF.adaptive_avg_pool1d(tx, 4)),
             (nn.functional.adaptive_max_pool1d(xs, 4, True),
              TF.adaptive_max_pool1d(tx, 4, True))]
    total, ttotal = 0, 0
    for ours, theirs in pairs:
        if isinstance(ours, tuple):
            np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
            ours, theirs = ours[0], theirs[0]
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6)
        total, ttotal = total + (ours * ours).sum(), ttotal + (theirs * theirs).sum()
    rows = [([0], None)]
    want = pool_numpy(x[:, :, None], rows, _windows(11, 3, 2, 1, 2, False), "max")[0]
    np.testing.assert_array_equal(pairs[0][0][0].detach().numpy(), want[:, :, 0])
    total.backward()
    ttotal.backward()
    np.testing.assert_allclose(xs.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_pool_gradcheck_and_double_backward():
    x = nn.tensor(rng.standard_normal((1, 1, 4, 5)), requires_grad=True)
    assert nn.autograd.gradcheck(lambda a: nn.functional.avg_pool2d(a, 3, 2, 1), (x,))
    assert nn.autograd.gradcheck(lambda a: nn.functional.max_pool2d(a, 2, 1), (x,))
    assert nn.autograd.gradcheck(lambda a: nn.functional.adaptive_avg_pool2d(a, (2, 3)), (x,))
    assert nn.autograd.gradcheck(lambda a: nn.functional.adaptive_max_pool2d(a, (2, 3)), (x,))

    def second(pool):
        def grad_of_square(a):
            y = pool(a)
            return nn.autograd.grad((y * y).sum(), a, create_graph=True)[0]
        return grad_of_square
    assert nn.autograd.gradcheck(second(lambda a: nn.functional.max_pool2d(a, 2, 1)), (x,))
    assert nn.autograd.gradcheck(second(lambda a: nn.functional.avg_pool2d(a, 3, 2, 1)), (x,))


def test_max_unpool2d_against_torch():
    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    values, index = nn.functional.max_pool2d(nn.tensor(x), 2, return_indices=True)
    tvalues, tindex = TF.max_pool2d(torch.tensor(x), 2, return_indices=True)
    v = nn.tensor(values.numpy(), requires_grad=True)
    tv = torch.tensor(tvalues.numpy(), requires_grad=True)
    up = nn.functional.max_unpool2d(v, index, 2, output_size=(7, 6))
    tup = TF.max_unpool2d(tv, tindex, 2, output_size=(7, 6))
    np.testing.assert_array_equal(up.detach().numpy(), tup.detach().numpy())
    g = rng.standard_normal(up.shape).astype(np.float32)
    up.backward(nn.tensor(g))
    tup.backward(torch.tensor(g))
    np.testing.assert_array_equal(v.grad.numpy(), tv.grad.numpy())


LAYERS = ["MaxPool2d(3, 2, 1, ceil_mode=True)", "MaxPool1d(3)", "AvgPool1d(2)",
          "AvgPool2d(3, count_include_pad=False, divisor_override=2)",
          "AdaptiveAvgPool2d((None, 3))", "AdaptiveMaxPool2d(3)", "AdaptiveAvgPool1d(3)",
          "AdaptiveMaxPool1d(4)"]


@pytest.mark.parametrize("layer", LAYERS)
def test_pooling_layers_match_torch(layer):
    ours, theirs = eval("nn." + layer), eval("torch.nn." + layer)
    assert repr(ours) == repr(theirs)
    x = rng.standard_normal((2, 3, 9, 11) if "2d" in layer else (2, 3, 11)).astype(np.float32)
    y, ty = ours(nn.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-6, atol=1e-6)


def test_max_pool_layer_with_indices_and_unpool_layer():
    pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
    assert repr(unpool) == repr(torch.nn.MaxUnpool2d(2))
    x = rng.standard_normal((1, 2, 4, 6)).astype(np.float32)
    values, index = pool(nn.tensor(x))
    tvalues, tindex = torch.nn.MaxPool2d(2, return_indices=True)(torch.tensor(x))
    np.testing.assert_array_equal(index.numpy(), tindex.numpy())
    np.testing.assert_array_equal(unpool(values, index).numpy(),
                                  torch.nn.MaxUnpool2d(2)(tvalues, tindex).numpy())

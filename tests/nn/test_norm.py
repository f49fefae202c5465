"""Normalization: batch_norm, layer_norm, group_norm, instance_norm and their layers, against
numpy, finite differences (gradcheck, also of the double backward) and torch.nn given the same
weights (outputs, gradients, running statistics)."""
import numpy as np
import pytest
import torch

import nn
from nn import functional as F

RNG = np.random.default_rng(5)


def t64(*shape):
    return nn.tensor(RNG.standard_normal(shape), requires_grad=True)


def numpy_norm(x, axes, eps=1e-5):
    mean = x.mean(axes, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axes, keepdims=True) + eps)


def test_forward_matches_numpy():
    x = RNG.standard_normal((3, 4, 5)).astype("float32") * 3 + 2
    w, b = RNG.standard_normal(4).astype("float32"), RNG.standard_normal(4).astype("float32")
    rm, rv = nn.zeros(4), nn.ones(4)
    y = F.batch_norm(nn.tensor(x), rm, rv, nn.tensor(w), nn.tensor(b), training=True)
    expect = numpy_norm(x, (0, 2)) * w[:, None] + b[:, None]
    np.testing.assert_allclose(y.numpy(), expect, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rm.numpy(), 0.1 * x.mean((0, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv.numpy(), 0.9 + 0.1 * x.var((0, 2), ddof=1), rtol=1e-5)
    y = F.batch_norm(nn.tensor(x), rm, rv, nn.tensor(w), nn.tensor(b))         # eval
    expect = (x - rm.numpy()[:, None]) / np.sqrt(rv.numpy()[:, None] + 1e-5)
    np.testing.assert_allclose(y.numpy(), expect * w[:, None] + b[:, None], rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(F.layer_norm(nn.tensor(x), (4, 5)).numpy(),
                               numpy_norm(x, (1, 2)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(F.group_norm(nn.tensor(x), 2).numpy(),
                               numpy_norm(x.reshape(3, 2, 10), 2).reshape(x.shape), atol=1e-5)
    np.testing.assert_allclose(F.instance_norm(nn.tensor(x)).numpy(), numpy_norm(x, 2),
                               atol=1e-5)


def test_large_mean_keeps_precision():
    x = (RNG.standard_normal((4, 2, 33)) + 3000).astype("float32")    # E[x^2] - mean^2 fails
    y = F.batch_norm(nn.tensor(x), None, None, training=True)
    np.testing.assert_allclose(y.numpy(), numpy_norm(x.astype("float64"), (0, 2)), atol=2e-3)


def test_one_kernel_each_way():
    calls = nn.functional.kernel_calls
    x = nn.tensor(RNG.standard_normal((3, 4, 5)).astype("float32"), requires_grad=True)
    before = dict(calls)
    F.batch_norm(x, None, None, nn.ones(4, requires_grad=True), nn.zeros(4), True).sum()
    assert calls["batch_norm_train"] == before.get("batch_norm_train", 0) + 1
    y = F.layer_norm(x, (5,))
    y.backward(nn.ones(3, 4, 5))
    assert calls["row_norm"] == before.get("row_norm", 0) + 1
    assert calls["row_norm_backward"] == before.get("row_norm_backward", 0) + 1


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradcheck(training):
    stats = (nn.tensor(RNG.standard_normal(2)), nn.tensor(RNG.random(2) + 0.5))
    assert nn.autograd.gradcheck(
        lambda x, w, b: F.batch_norm(x, stats[0].detach(), stats[1].detach(), w, b, training,
                                     0.0), (t64(3, 2, 5), t64(2), t64(2)))


def test_row_norms_gradcheck():
    x = t64(3, 2, 5)
    assert nn.autograd.gradcheck(lambda x, w, b: F.layer_norm(x, (5,), w, b),
                                 (x, t64(5), t64(5)))
    assert nn.autograd.gradcheck(lambda x, w, b: F.layer_norm(x, (2, 5), w, b),
                                 (x, t64(2, 5), t64(2, 5)))
    assert nn.autograd.gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b),
                                 (t64(3, 4, 3), t64(4), t64(4)))
    assert nn.autograd.gradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
                                 (x, t64(2), t64(2)))
    assert nn.autograd.gradcheck(lambda x: F.group_norm(x, 1), (x,))


@pytest.mark.parametrize("norm", ["batch", "layer", "group"])
def test_double_backward(norm):
    def fn(x, w, b):
        if norm == "batch":
            y = F.batch_norm(x, None, None, w, b, True)
        elif norm == "layer":
            y = F.layer_norm(x, (2, 5), w.reshape(2, 1).expand(2, 5), b.reshape(2, 1).expand(2, 5))
        else:
            y = F.group_norm(x, 1, w, b)
        (gx,) = nn.autograd.grad((y * y * y).sum(), [x], create_graph=True)
        return gx
    assert nn.autograd.gradcheck(fn, (t64(3, 2, 5), t64(2), t64(2)))


def torch_pair(cls, *args, **kwargs):
    ours, theirs = getattr(nn, cls)(*args, **kwargs), getattr(torch.nn, cls)(*args, **kwargs)
    for name, p in theirs.named_parameters():          # same (random) weights in both
        value = RNG.standard_normal(p.shape).astype("float32")
        with torch.no_grad():
            p.copy_(torch.tensor(value))
        ours.get_parameter(name).detach().numpy()[...] = value
    return ours, theirs


LAYERS = [("BatchNorm1d", (6, 3), (3,), {}), ("BatchNorm1d", (6, 3, 4), (3,), {"momentum": None}),
          ("BatchNorm2d", (4, 3, 5, 6), (3,), {}),
          ("BatchNorm2d", (4, 3, 5, 6), (3,), {"affine": False, "track_running_stats": False}),
          ("LayerNorm", (4, 3, 5), ((3, 5),), {}), ("GroupNorm", (4, 6, 5), (3, 6), {}),
          ("InstanceNorm1d", (4, 3, 5), (3,), {"affine": True, "track_running_stats": True}),
          ("InstanceNorm2d", (2, 3, 4, 5), (3,), {}), ("InstanceNorm1d", (3, 5), (3,), {})]


@pytest.mark.parametrize("cls,shape,args,kwargs", LAYERS)
def test_layer_matches_torch(cls, shape, args, kwargs):
    ours, theirs = torch_pair(cls, *args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for mode in ("train", "train", "eval"):
        getattr(ours, mode)()
        getattr(theirs, mode)()
        x = RNG.standard_normal(shape).astype("float32") * 2 + 1
        g = RNG.standard_normal(shape).astype("float32")
        xo, xt = nn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        yo, yt = ours(xo), theirs(xt)
        np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), atol=2e-5)
        yo.backward(nn.tensor(g))
        yt.backward(torch.tensor(g))
        np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), atol=2e-5)
        for name, p in theirs.named_parameters():
            np.testing.assert_allclose(ours.get_parameter(name).grad.numpy(), p.grad.numpy(),
                                       rtol=1e-4, atol=1e-4)
            p.grad = None
        ours.zero_grad()
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_batch_norm_buffers_and_modes():
    bn = nn.BatchNorm2d(3)
    assert bn.num_batches_tracked.dtype == "int64" and bn.weight.tolist() == [1.0] * 3
    assert bn.bias.tolist() == [0.0] * 3 and bn.running_var.tolist() == [1.0] * 3
    x = nn.tensor(RNG.standard_normal((2, 3, 2, 2)).astype("float32"))
    bn(x)
    assert int(bn.num_batches_tracked) == 1
    before = bn.running_mean.numpy().copy()
    bn.eval()
    bn(x)
    np.testing.assert_array_equal(bn.running_mean.numpy(), before)
    assert int(bn.num_batches_tracked) == 1
    assert list(nn.BatchNorm1d(3, track_running_stats=False).state_dict()) == ["weight", "bias"]

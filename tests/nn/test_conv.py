"""nn.conv1d / conv2d / pad and the Conv and padding layers: forward against numpy and
PyTorch (same weights), gradients against PyTorch and finite differences, double backward,
and the kernels that run."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import nn
from nn.functions import kernel_calls
from te.testing import conv2d_nchw_python

rng = np.random.default_rng(7)


def _pads(padding, kernel, dilation):
    """(top, left, bottom, right) for conv2d_nchw_python from conv2d's padding argument."""
    if padding == "valid":
        return (0, 0, 0, 0)
    if padding == "same":
        th, tw = (d * (k - 1) for d, k in zip(dilation, kernel))
        return (th // 2, tw // 2, th - th // 2, tw - tw // 2)
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    return (ph, pw, ph, pw)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _leaves(*arrays):
    return ([nn.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


CASES = [   # input, weight, bias, stride, padding, dilation, groups
    ((2, 3, 9, 8), (5, 3, 3, 3), True, (1, 3), "valid", 1, 1),
    ((1, 4, 11, 10), (6, 2, 3, 2), True, (2, 1), (1, 2), (1, 2), 2),
    ((2, 4, 7, 9), (4, 1, 3, 3), False, 2, 1, 1, 4),             # depthwise, strided
    ((1, 2, 8, 7), (3, 2, 4, 2), True, 1, "same", (2, 1), 1),    # asymmetric "same"
    ((1, 32, 9, 12), (32, 32, 3, 3), True, 1, (3, 0), 1, 1),     # packed layout, pad > kernel
]


@pytest.mark.parametrize("case", CASES)
def test_conv2d_against_numpy_and_torch(case):
    shape, wshape, bias, stride, padding, dilation, groups = case
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(wshape).astype(np.float32)
    b = rng.standard_normal(wshape[0]).astype(np.float32) if bias else None
    ours, theirs = _leaves(*[a for a in (x, w, b) if a is not None])
    y = nn.conv2d(*ours[:2], ours[2] if bias else None, stride, padding, dilation, groups)
    ty = TF.conv2d(*theirs[:2], theirs[2] if bias else None, stride, padding, dilation, groups)
    want = conv2d_nchw_python(x, w, stride, _pads(padding, wshape[2:], _pair(dilation)),
                              dilation, groups, b)
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    assert y.grad_fn.name() == "ConvolutionBackward0"
    g = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(nn.tensor(g))
    ty.backward(torch.tensor(g))
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-3)


def test_conv2d_float64_unbatched_and_kernels_run():
    x = rng.standard_normal((3, 7, 6))
    w = rng.standard_normal((4, 3, 3, 3))
    ours, theirs = _leaves(x, w)
    before = dict(kernel_calls)
    y = nn.conv2d(*ours, stride=2, padding=1)
    y.sum().backward()
    TF.conv2d(*theirs, stride=2, padding=1).sum().backward()
    assert y.dtype == "float64" and y.shape == (4, 4, 3)
    np.testing.assert_allclose(y.detach().numpy(),
                               conv2d_nchw_python(x[None], w, (2, 2), (1, 1, 1, 1), (1, 1),
                                                  1)[0], rtol=1e-12)
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    # stride 2: the input gradient runs per stride phase (4), then interleaves them
    runs = {"conv2d": 1, "conv2d_grad_input_phase": 4, "interleave_phases": 1,
            "conv2d_grad_weight": 1, "conv2d_grad_input": 0}
    for name, count in runs.items():
        assert kernel_calls[name] == before.get(name, 0) + count


def test_conv2d_input_gradient_when_every_output_reads_padding():
    x = rng.standard_normal((1, 2, 1, 3)).astype(np.float32)
    w = rng.standard_normal((2, 2, 1, 1)).astype(np.float32)
    ours, theirs = _leaves(x, w)
    y = nn.conv2d(*ours, stride=(3, 1), padding=(1, 0))
    ty = TF.conv2d(*theirs, stride=(3, 1), padding=(1, 0))
    np.testing.assert_array_equal(y.detach().numpy(), np.zeros((1, 2, 1, 3)))
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_array_equal(ours[0].grad.numpy(), np.zeros(x.shape))
    np.testing.assert_array_equal(ours[1].grad.numpy(), theirs[1].grad.numpy())


def test_conv1d_against_torch():
    x = rng.standard_normal((2, 4, 13)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    ours, theirs = _leaves(x, w, b)
    y = nn.conv1d(*ours, stride=2, padding=2, dilation=2, groups=2)
    ty = TF.conv1d(*theirs, stride=2, padding=2, dilation=2, groups=2)
    want = conv2d_nchw_python(x[:, :, None], w[:, :, None], (1, 2), (0, 2, 0, 2), (1, 2), 2,
                              b)
    np.testing.assert_allclose(y.detach().numpy(), want[:, :, 0], rtol=1e-4, atol=1e-4)
    g = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(nn.tensor(g))
    ty.backward(torch.tensor(g))
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)
    same = nn.conv1d(ours[0].detach(), ours[1].detach(), padding="same", groups=2)
    np.testing.assert_allclose(same.numpy(), TF.conv1d(theirs[0], theirs[1], padding="same",
                                                       groups=2).detach().numpy(), atol=1e-5)


def test_conv2d_gradcheck():
    x = nn.tensor(rng.standard_normal((1, 2, 4, 5)), requires_grad=True)
    w = nn.tensor(rng.standard_normal((2, 1, 2, 3)), requires_grad=True)
    b = nn.tensor(rng.standard_normal(2), requires_grad=True)
    assert nn.autograd.gradcheck(
        lambda a, k, c: nn.conv2d(a, k, c, stride=(2, 1), padding=(1, 0), dilation=(1, 2),
                                  groups=2), (x, w, b))


def test_conv2d_double_backward():
    x = nn.tensor(rng.standard_normal((1, 2, 3, 3)), requires_grad=True)
    w = nn.tensor(rng.standard_normal((2, 2, 2, 2)), requires_grad=True)

    def grads(a, k):
        y = nn.conv2d(a, k, stride=2, padding=1)
        return nn.autograd.grad((y * y).sum(), (a, k), create_graph=True)
    assert nn.autograd.gradcheck(lambda a, k: grads(a, k)[0], (x, w))
    assert nn.autograd.gradcheck(lambda a, k: grads(a, k)[1], (x, w))


# ----------------------------------------------------------------------------- pad

NUMPY_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
               "circular": "wrap"}


@pytest.mark.parametrize("mode", list(NUMPY_MODES))
def test_pad_modes_against_numpy_and_gradcheck(mode):
    x = rng.standard_normal((1, 2, 3, 4))
    pad = (2, 1, 0, 2)                  # last dimension (2, 1), the one before (0, 2)
    y = nn.pad(nn.tensor(x), pad, mode=mode)
    want = np.pad(x, ((0, 0), (0, 0), (0, 2), (2, 1)), mode=NUMPY_MODES[mode])
    np.testing.assert_array_equal(y.numpy(), want)
    np.testing.assert_array_equal(y.numpy(), TF.pad(torch.tensor(x), pad, mode=mode).numpy())
    small = nn.tensor(rng.standard_normal((1, 3, 3)), requires_grad=True)
    assert nn.autograd.gradcheck(lambda a: nn.pad(a, (2, 1), mode=mode), (small,))


def test_pad_constant_value_crop_and_double_backward():
    x = rng.standard_normal((2, 3, 5))
    y = nn.pad(nn.tensor(x), (-1, 2, 1, 0), value=2.5)
    np.testing.assert_array_equal(y.numpy(), np.pad(x[:, :, 1:], ((0, 0), (1, 0), (0, 2)),
                                                    constant_values=2.5))
    t = nn.tensor(rng.standard_normal((2, 4)), requires_grad=True)

    def grad_of_square(a):
        y = nn.pad(a, (1, 1), mode="reflect")
        return nn.autograd.grad((y * y).sum(), a, create_graph=True)[0]
    assert nn.autograd.gradcheck(grad_of_square, (t,))
    assert nn.autograd.gradcheck(lambda a: nn.pad(a, (-1, 2, 1, 1), value=1.0), (t,))


# ----------------------------------------------------------------------------- modules

def _copy_params(ours, theirs):
    with torch.no_grad():
        for p, q in zip(ours.parameters(), theirs.parameters()):
            q.copy_(torch.tensor(p.detach().numpy()))


@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv2d_module_matches_torch(padding_mode):
    args = dict(stride=(1, 2), padding=(2, 1), dilation=(1, 2), groups=2,
                padding_mode=padding_mode)
    ours, theirs = nn.Conv2d(4, 6, (3, 2), **args), torch.nn.Conv2d(4, 6, (3, 2), **args)
    assert repr(ours) == repr(theirs)
    _copy_params(ours, theirs)
    x = rng.standard_normal((2, 4, 7, 9)).astype(np.float32)
    y, ty = ours(nn.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-5)
    g = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(nn.tensor(g))
    ty.backward(torch.tensor(g))
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_conv_modules_init_repr_and_same_padding():
    nn.manual_seed(0)
    conv = nn.Conv2d(8, 4, 3, bias=True)
    bound = 1 / np.sqrt(8 * 9)
    assert conv.weight.shape == (4, 8, 3, 3) and conv.bias.shape == (4,)
    for p in (conv.weight, conv.bias):
        data = p.detach().numpy()
        assert data.min() >= -bound and data.max() <= bound and data.std() > bound / 3
    ours = nn.Conv1d(3, 4, 4, padding="same", bias=False, padding_mode="reflect",
                     dtype="float64")
    theirs = torch.nn.Conv1d(3, 4, 4, padding="same", bias=False, padding_mode="reflect",
                             dtype=torch.float64)
    assert repr(ours) == repr(theirs) and ours.weight.dtype == "float64"
    _copy_params(ours, theirs)
    x = rng.standard_normal((3, 10))
    np.testing.assert_allclose(ours(nn.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-10)


PAD_LAYERS = ["ZeroPad2d((1, 2, 0, 1))", "ConstantPad1d((2, 1), 3.5)", "ConstantPad2d(1, -1.0)",
              "ReflectionPad1d(2)", "ReflectionPad2d((1, 0, 2, 1))", "ReplicationPad1d((0, 3))",
              "ReplicationPad2d(1)", "CircularPad1d(1)", "CircularPad2d((1, 2, 2, 0))"]


@pytest.mark.parametrize("layer", PAD_LAYERS)
def test_padding_layers_match_torch(layer):
    ours, theirs = eval("nn." + layer), eval("torch.nn." + layer)
    assert repr(ours) == repr(theirs)
    x = rng.standard_normal((2, 3, 4, 5) if "2d" in layer else (2, 3, 5)).astype(np.float32)
    xs, txs = _leaves(x)
    y, ty = ours(xs[0]), theirs(txs[0])
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    g = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(nn.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(xs[0].grad.numpy(), txs[0].grad.numpy(), rtol=1e-6, atol=1e-6)

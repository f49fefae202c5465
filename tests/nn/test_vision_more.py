"""Conv3d / ConvTranspose3d, ``interpolate``'s "bicubic", "area" and "nearest-exact" modes
(and Upsample with them), ``affine_grid`` and ``grid_sample``, against torch: the values and
the gradients of every input (grid included), plus tiny cases on the GPU (the simulator)."""
import warnings

import numpy as np
import pytest
import torch

import nn

F = nn.functional
TF = torch.nn.functional
RNG = np.random.default_rng(0)


def _check(fn, *arrays, rtol=1e-4, atol=1e-4, device="cpu"):
    """``fn(F, ...)`` on nn (on ``device``) and on torch: values and the inputs' gradients
    (an input nn gives no gradient must have torch's all zero)."""
    ours = [nn.tensor(a).to(device).requires_grad_() for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    got, want = fn(F, *ours), fn(TF, *theirs)
    assert got.shape == tuple(want.shape)
    assert got.device.type == device
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol, atol)
    w = RNG.standard_normal(tuple(want.shape)).astype("float32")
    (got * nn.tensor(w).to(device)).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    for a, b in zip(ours, theirs):
        grad = np.zeros(a.shape, "float32") if a.grad is None else a.grad.cpu().numpy()
        np.testing.assert_allclose(grad, b.grad.numpy(), rtol, atol)


def randn(*shape):
    return RNG.standard_normal(shape).astype("float32")


# ----------------------------------------------------------------------------- conv3d

@pytest.mark.parametrize("kwargs,w_shape", [
    (dict(padding=1), (6, 4, 3, 3, 3)),
    (dict(stride=(2, 1, 2), padding="valid", dilation=(1, 2, 1)), (6, 4, 3, 3, 3)),
    (dict(padding="same", groups=2, dilation=2), (6, 2, 2, 3, 3)),
    (dict(stride=2, padding=(0, 1, 2)), (3, 4, 2, 2, 3)),
])
def test_conv3d(kwargs, w_shape):
    _check(lambda f, x, w, b: f.conv3d(x, w, b, **kwargs), randn(2, 4, 8, 16, 16),
           randn(*w_shape), randn(w_shape[0]))


def test_conv3d_unbatched_without_bias():
    _check(lambda f, x, w: f.conv3d(x, w, padding=(1, 0, 1)), randn(2, 4, 5, 6), randn(3, 2, 3, 2, 3))


@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv3d_module_padding_modes(padding_mode):
    kw = dict(padding=(1, 2, 1), padding_mode=padding_mode, stride=(1, 2, 1))
    ours, theirs = nn.Conv3d(4, 3, 3, **kw), torch.nn.Conv3d(4, 3, 3, **kw)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.detach().numpy()))
        theirs.bias.copy_(torch.tensor(ours.bias.detach().numpy()))
    x = randn(2, 4, 4, 6, 5)
    a, b = nn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, want = ours(a), theirs(b)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), 1e-4, 1e-4)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), 1e-4, 1e-4)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), 1e-4, 1e-3)
    np.testing.assert_allclose(ours.bias.grad.numpy(), theirs.bias.grad.numpy(), 1e-4, 1e-3)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("kwargs", [dict(stride=2, padding=1, output_padding=1, groups=2),
                                    dict(stride=(1, 2, 1), dilation=(2, 1, 1))])
def test_conv_transpose3d(kwargs):
    _check(lambda f, x, w, b: f.conv_transpose3d(x, w, b, **kwargs), randn(2, 4, 3, 4, 5),
           randn(4, 3, 2, 3, 3), randn(3 * kwargs.get("groups", 1)))


def test_conv_transpose3d_module():
    ours = nn.ConvTranspose3d(2, 3, (2, 3, 2), stride=2)
    theirs = torch.nn.ConvTranspose3d(2, 3, (2, 3, 2), stride=2)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.detach().numpy()))
        theirs.bias.copy_(torch.tensor(ours.bias.detach().numpy()))
    x = randn(1, 2, 3, 3, 2)
    a, b = nn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got = ours(a, output_size=(7, 8, 5))
    want = theirs(b, output_size=(7, 8, 5))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), 1e-4, 1e-4)
    w = randn(*want.shape)
    (got * nn.tensor(w)).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), 1e-4, 1e-4)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), 1e-4, 1e-4)
    np.testing.assert_allclose(ours.bias.grad.numpy(), theirs.bias.grad.numpy(), 1e-4, 1e-4)


# ----------------------------------------------------------------------------- interpolate

SIZES = [dict(size=(9, 4)), dict(scale_factor=2), dict(scale_factor=(1.7, 0.6)),
         dict(scale_factor=1.3, recompute_scale_factor=True), dict(size=1)]


@pytest.mark.parametrize("kwargs", SIZES)
@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_bicubic(kwargs, align_corners):
    _check(lambda f, a: f.interpolate(a, mode="bicubic", align_corners=align_corners, **kwargs),
           randn(2, 3, 5, 7))


@pytest.mark.parametrize("kwargs", SIZES)
@pytest.mark.parametrize("mode", ["area", "nearest-exact"])
def test_interpolate_area_and_nearest_exact_2d(kwargs, mode):
    _check(lambda f, a: f.interpolate(a, mode=mode, **kwargs), randn(2, 3, 5, 7))


@pytest.mark.parametrize("shape", [(2, 3, 7), (1, 2, 3, 5, 6)])
@pytest.mark.parametrize("kwargs", [dict(scale_factor=2.5), dict(scale_factor=0.5), dict(size=4),
                                    dict(scale_factor=1.6, recompute_scale_factor=True)])
@pytest.mark.parametrize("mode", ["area", "nearest-exact"])
def test_interpolate_area_and_nearest_exact_1d_3d(shape, kwargs, mode):
    _check(lambda f, a: f.interpolate(a, mode=mode, **kwargs), randn(*shape))


@pytest.mark.parametrize("mode,kw", [("bicubic", dict(align_corners=True)), ("area", {}),
                                     ("nearest-exact", {})])
def test_upsample_modes(mode, kw):
    ours, theirs = nn.Upsample(scale_factor=2, mode=mode, **kw), torch.nn.Upsample(
        scale_factor=2, mode=mode, **kw)
    _check(lambda f, a: (ours if f is F else theirs)(a), randn(1, 2, 3, 4))


def test_interpolate_refusals():
    x = nn.zeros(1, 1, 4, 4)
    with pytest.raises(NotImplementedError, match="needs a 4-D input"):
        F.interpolate(nn.zeros(1, 1, 4), scale_factor=2, mode="bicubic")
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, scale_factor=2, mode="area", align_corners=False)
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful with an "
                                         "explicit size"):
        F.interpolate(x, size=3, recompute_scale_factor=True)


# ----------------------------------------------------------------------------- grid sampling

@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid(align_corners):
    _check(lambda f, t: f.affine_grid(t, (2, 3, 5, 4), align_corners=align_corners),
           randn(2, 2, 3))
    _check(lambda f, t: f.affine_grid(t, (2, 1, 4, 3, 2), align_corners=align_corners),
           randn(2, 3, 4))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_2d(mode, padding_mode, align_corners):
    grid = RNG.uniform(-1.6, 1.6, (2, 4, 7, 2)).astype("float32")
    _check(lambda f, a, g: f.grid_sample(a, g, mode, padding_mode, align_corners),
           randn(2, 3, 5, 6), grid)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "reflection"])
def test_grid_sample_3d(mode, padding_mode):
    grid = RNG.uniform(-1.6, 1.6, (2, 3, 2, 4, 3)).astype("float32")
    _check(lambda f, a, g: f.grid_sample(a, g, mode, padding_mode, False),
           randn(2, 2, 4, 5, 3), grid)


def test_affine_grid_then_grid_sample_gradient_reaches_theta():
    def fn(f, x, t):
        return f.grid_sample(x, f.affine_grid(t, (2, 3, 6, 5), align_corners=False),
                             align_corners=False)
    theta = np.tile(np.array([[0.9, 0.2, 0.1], [-0.1, 1.1, 0.05]], "float32"), (2, 1, 1))
    _check(fn, randn(2, 3, 4, 4), theta + 0.05 * randn(2, 2, 3))


def test_grid_sample_default_align_corners_warns_and_is_false():
    x, grid = randn(1, 1, 3, 3), RNG.uniform(-1, 1, (1, 2, 2, 2)).astype("float32")
    with pytest.warns(UserWarning, match="align_corners=False"):
        got = F.grid_sample(nn.tensor(x), nn.tensor(grid))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = TF.grid_sample(torch.tensor(x), torch.tensor(grid), align_corners=False)
    np.testing.assert_allclose(got.numpy(), want.numpy(), 1e-5, 1e-6)


# ----------------------------------------------------------------------------- on the GPU

def test_gpu_conv3d():
    _check(lambda f, x, w, b: f.conv3d(x, w, b, padding=1), randn(1, 2, 3, 4, 4),
           randn(2, 2, 2, 3, 3), randn(2), device="cuda")


def test_gpu_grid_sample_and_bicubic():
    _check(lambda f, a, g: f.grid_sample(a, g, "bilinear", "border", False), randn(1, 2, 3, 4),
           RNG.uniform(-1.2, 1.2, (1, 2, 3, 2)).astype("float32"), device="cuda")
    _check(lambda f, a: f.interpolate(a, scale_factor=1.5, mode="bicubic", align_corners=False),
           randn(1, 2, 3, 4), device="cuda")


def test_grid_sample_nearest_keeps_the_grid_in_the_graph_with_zero_gradient():
    rng = np.random.default_rng(0)
    x = rng.random((2, 1, 5, 5), dtype="float32")
    theta = np.array([[[0.9, 0.1, 0.05], [-0.1, 1.1, 0.0]]] * 2, "float32")
    results = []
    for lib, fun in ((nn, nn.functional), (torch, torch.nn.functional)):
        t = lib.tensor(theta, requires_grad=True)
        grid = fun.affine_grid(t, [2, 1, 5, 5], align_corners=False)
        out = fun.grid_sample(lib.tensor(x), grid, mode="nearest", align_corners=False)
        assert out.requires_grad
        out.sum().backward()
        results.append((out.detach().numpy(), t.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])

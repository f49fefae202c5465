"""1-d and 3-d resampling (``interpolate`` "linear" / "trilinear" / "nearest"), BatchNorm3d,
InstanceNorm3d, the composed 3-d pools and einsum's diagonals, against torch with gradients."""
import numpy as np
import pytest
import torch

import nn

F = nn.functional
TF = torch.nn.functional
RNG = np.random.default_rng(0)


def _check(fn, *arrays, rtol=1e-5, atol=1e-6):
    """``fn(F, ...)`` on nn and on torch: the values and the inputs' gradients."""
    ours = [nn.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    got, want = fn(F, *ours), fn(TF, *theirs)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol, atol)
    w = RNG.standard_normal(tuple(want.shape))
    (got * nn.tensor(w, dtype=got.dtype)).sum().backward()
    (want * torch.tensor(w, dtype=want.dtype)).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol, atol)


def randn(*shape):
    return RNG.standard_normal(shape).astype("float32")


@pytest.mark.parametrize("kwargs", [dict(size=7), dict(scale_factor=2), dict(scale_factor=0.6),
                                    dict(size=3)])
@pytest.mark.parametrize("mode,align_corners", [("nearest", None), ("linear", False),
                                                ("linear", True)])
def test_interpolate_1d(kwargs, mode, align_corners):
    _check(lambda f, a: f.interpolate(a, mode=mode, align_corners=align_corners, **kwargs),
           randn(2, 3, 5))


@pytest.mark.parametrize("kwargs", [dict(size=(3, 4, 2)), dict(scale_factor=2),
                                    dict(scale_factor=(1.5, 0.5, 2))])
@pytest.mark.parametrize("mode,align_corners", [("nearest", None), ("trilinear", False),
                                                ("trilinear", True)])
def test_interpolate_3d(kwargs, mode, align_corners):
    _check(lambda f, a: f.interpolate(a, mode=mode, align_corners=align_corners, **kwargs),
           randn(1, 2, 2, 3, 4))


def test_interpolate_errors_and_upsample():
    with pytest.raises(NotImplementedError, match="needs a 4-D input"):
        F.interpolate(nn.ones(1, 1, 3), scale_factor=2, mode="bilinear")
    with pytest.raises(NotImplementedError, match="'trilinear'"):
        F.interpolate(nn.ones(1, 1, 2, 2, 2), scale_factor=2, mode="linear")
    with pytest.raises(ValueError, match="3 numbers"):
        F.interpolate(nn.ones(1, 1, 2, 2, 2), size=(2, 2))
    x = randn(1, 2, 2, 2, 3)
    got = nn.Upsample(scale_factor=2, mode="trilinear")(nn.tensor(x))
    want = torch.nn.Upsample(scale_factor=2, mode="trilinear")(torch.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), 1e-5, 1e-6)
    x = randn(1, 2, 4)
    got = nn.Upsample(size=6, mode="linear", align_corners=True)(nn.tensor(x))
    want = torch.nn.Upsample(size=6, mode="linear", align_corners=True)(torch.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), 1e-5, 1e-6)


@pytest.mark.parametrize("ours,theirs", [(nn.BatchNorm3d, torch.nn.BatchNorm3d),
                                         (nn.InstanceNorm3d, torch.nn.InstanceNorm3d)])
def test_norms_3d(ours, theirs):
    a, b = ours(3, affine=True, track_running_stats=True), theirs(3, affine=True,
                                                                  track_running_stats=True)
    with torch.no_grad():
        b.weight.copy_(torch.tensor(randn(3)))
        b.bias.copy_(torch.tensor(randn(3)))
    a.load_state_dict({k: nn.tensor(v.numpy().copy()) for k, v in b.state_dict().items()})
    x = randn(2, 3, 2, 3, 2)
    xa, xb = nn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ya, yb = a(xa), b(xb)
    np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), 1e-4, 1e-5)
    w = randn(*x.shape)
    (ya * nn.tensor(w)).sum().backward()
    (yb * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xa.grad.numpy(), xb.grad.numpy(), 1e-4, 1e-5)
    for n in ("weight", "bias"):
        np.testing.assert_allclose(getattr(a, n).grad.numpy(), getattr(b, n).grad.numpy(),
                                   1e-4, 1e-5)
    for n in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(a, n).numpy(), getattr(b, n).numpy(), 1e-5, 1e-6)
    a.eval(), b.eval()
    np.testing.assert_allclose(a(nn.tensor(x)).detach().numpy(),
                               b(torch.tensor(x)).detach().numpy(),
                               1e-4, 1e-5)
    with pytest.raises(ValueError, match="expected"):
        a(nn.ones(2, 3, 4))


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=(2, 3, 2), stride=1),
                                    dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=2, stride=(1, 2, 2), ceil_mode=True)])
def test_max_and_avg_pool3d(kwargs):
    x = randn(1, 2, 4, 5, 4)
    _check(lambda f, a: f.max_pool3d(a, **kwargs), x)
    _check(lambda f, a: f.avg_pool3d(a, **kwargs), x)
    if kwargs.get("padding"):
        _check(lambda f, a: f.avg_pool3d(a, count_include_pad=False, **kwargs), x)


@pytest.mark.parametrize("size", [(2, 3, 2), 1, (None, 2, 3)])
def test_adaptive_avg_pool3d(size):
    _check(lambda f, a: f.adaptive_avg_pool3d(a, size), randn(2, 1, 3, 5, 4))


def test_pool3d_layers_and_unbatched():
    x = randn(2, 3, 4, 4)        # (C, D, H, W)
    for ours, theirs in ((nn.MaxPool3d(2, dilation=(1, 2, 1)),
                          torch.nn.MaxPool3d(2, dilation=(1, 2, 1))),
                         (nn.AvgPool3d((1, 2, 2)), torch.nn.AvgPool3d((1, 2, 2))),
                         (nn.AdaptiveAvgPool3d((1, 3, 2)), torch.nn.AdaptiveAvgPool3d((1, 3, 2)))):
        np.testing.assert_allclose(ours(nn.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(),
                                   1e-5, 1e-6)
    with pytest.raises(NotImplementedError, match="return_indices"):
        F.max_pool3d(nn.tensor(x), 2, return_indices=True)
    with pytest.raises(RuntimeError, match="5D"):
        F.avg_pool3d(nn.ones(2, 2, 2), 1)


@pytest.mark.parametrize("equation,shapes", [("ii->i", [(3, 3)]), ("ii->", [(3, 3)]),
                                             ("ii", [(3, 3)]), ("bii->bi", [(2, 3, 3)]),
                                             ("iji->j", [(3, 2, 3)]), ("iii->i", [(2, 2, 2)]),
                                             ("bii,ij->bj", [(2, 3, 3), (3, 4)])])
def test_einsum_diagonal(equation, shapes):
    _check(lambda f, *ops: (nn if f is F else torch).einsum(equation, *ops),
           *[randn(*s) for s in shapes])


def test_einsum_diagonal_size_mismatch():
    with pytest.raises(RuntimeError, match="repeated for operand 0.*2 != 3"):
        nn.einsum("ii->i", nn.ones(2, 3))

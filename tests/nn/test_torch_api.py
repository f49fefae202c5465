"""PyTorch API that nn had missing, each against torch: dtype objects (nn.float32, nn.long...)
and the conversions (long(), int(), bool(), half()), ``.data`` and ``copy_``, gradient
clipping (``nn.utils``), ``normalize``, ``cosine_similarity``, ``pixel_shuffle`` /
``pixel_unshuffle``, ``interpolate`` and the layers over them, with their gradients."""
import math

import numpy as np
import pytest
import torch

import nn
from nn.autograd import gradcheck

RNG = np.random.default_rng(7)
F, TF = nn.functional, torch.nn.functional


def _close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- dtypes

@pytest.mark.parametrize("name", ["float16", "float32", "float64", "half", "float", "double",
                                  "uint8", "int8", "int16", "int32", "int64", "short", "int",
                                  "long", "bool"])
def test_dtype_objects_match_pytorch(name):
    ours, theirs = getattr(nn, name), getattr(torch, name)
    x = nn.zeros(2, dtype=ours)
    assert x.dtype == ours and x.dtype == str(theirs).replace("torch.", "")
    assert np.dtype(ours) == torch.zeros(2, dtype=theirs).numpy().dtype
    assert ours.is_floating_point == theirs.is_floating_point
    assert ours.itemsize == theirs.itemsize
    assert nn.ones(3).to(ours).dtype == ours
    assert repr(ours) == "nn." + str(ours) and isinstance(x.dtype, nn.dtype)


def test_dtype_strings_still_work():
    x = nn.tensor([1.5, -2.5], dtype="float64")
    assert x.dtype == "float64" and x.dtype == nn.float64 and x.dtype == nn.double
    assert f"{x.dtype}" == "float64" and x.to("int32").dtype == nn.int32
    assert nn.Linear(2, 2).to(nn.float64).weight.dtype == nn.float64
    assert nn.arange(3, dtype=nn.float32).dtype == "float32"


@pytest.mark.parametrize("method", ["long", "int", "bool", "half", "double", "float", "short",
                                    "byte"])
def test_conversion_methods(method):
    x = np.array([1.7, -2.2, 0.0, 3.0], "float32")
    got, want = getattr(nn.tensor(x), method)(), getattr(torch.tensor(x), method)()
    assert got.dtype == str(want.dtype).replace("torch.", "")
    _close(got.numpy().astype("float64"), want.numpy().astype("float64"), rtol=1e-3)


def test_conversion_gradient_flows_back():
    a = nn.tensor([1.0, 2.0], requires_grad=True)
    (a.double() * 3).sum().backward()
    assert a.grad.dtype == nn.float32 and a.grad.tolist() == [3.0, 3.0]


# ----------------------------------------------------------------------------- data, copy_

def test_data_shares_storage_outside_the_graph():
    p = nn.ones(3, requires_grad=True)
    d = p.data
    assert not d.requires_grad and d.grad_fn is None
    d.mul_(2)
    assert p.tolist() == [2.0, 2.0, 2.0] and p.requires_grad
    p.data = nn.zeros(2)
    assert p.shape == (2,) and p.requires_grad
    with pytest.raises(TypeError, match="data must be set to a Tensor"):
        p.data = [1.0]


def test_copy_broadcasts_casts_and_carries_the_gradient():
    for m in (nn, torch):
        dst = m.zeros(2, 3)
        src = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        dst.copy_(src)
        (dst * m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
        if m is nn:
            got = (dst.detach().numpy(), src.grad.numpy())
        else:
            want = (dst.detach().numpy(), src.grad.numpy())
    _close(got[0], want[0])
    _close(got[1], want[1])
    ints = nn.zeros(3, dtype=nn.int64).copy_(nn.tensor([1.7, -2.2, 3.0]))
    assert ints.tolist() == torch.zeros(3, dtype=torch.int64).copy_(
        torch.tensor([1.7, -2.2, 3.0])).tolist()
    leaf = nn.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.copy_(nn.zeros(3))
    with nn.no_grad():
        leaf.copy_(nn.tensor([1.0, 2.0, 3.0]))
    assert leaf.tolist() == [1.0, 2.0, 3.0]


# ----------------------------------------------------------------------------- clip_grad

@pytest.mark.parametrize("norm_type", [2.0, 1, 3, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_pytorch(norm_type, max_norm):
    grads = [RNG.standard_normal(s).astype("float32") for s in ((3, 4), (5,), (2, 1))]
    results = []
    for m, utils in ((nn, nn.utils), (torch, torch.nn.utils)):
        params = [m.zeros(*g.shape, requires_grad=True) for g in grads]
        for p, g in zip(params, grads):
            p.grad = m.tensor(g)
        params.append(m.zeros(2, requires_grad=True))        # no gradient: skipped
        total = utils.clip_grad_norm_(params, max_norm, norm_type=norm_type)
        results.append((total.item(), [p.grad.numpy() for p in params[:-1]]))
    (a, ga), (b, gb) = results
    _close(a, b)
    for g, h in zip(ga, gb):
        _close(g, h)


def test_clip_grad_norm_single_tensor_and_nonfinite():
    p = nn.zeros(2, requires_grad=True)
    p.grad = nn.tensor([3.0, 4.0])
    assert nn.utils.clip_grad_norm_(p, 1.0).item() == pytest.approx(5.0)
    _close(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)
    p.grad = nn.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


def test_clip_grad_value_matches_pytorch():
    g = RNG.standard_normal((4, 5)).astype("float32")
    got, want = nn.zeros(4, 5, requires_grad=True), torch.zeros(4, 5, requires_grad=True)
    got.grad, want.grad = nn.tensor(g), torch.tensor(g)
    nn.utils.clip_grad_value_([got], 0.3)
    torch.nn.utils.clip_grad_value_([want], 0.3)
    _close(got.grad.numpy(), want.grad.numpy())


# ----------------------------------------------------------------------------- functional

def _forward_and_grad(fn, *arrays, rtol=1e-5):
    """``fn(F, ...)`` on nn and on torch: the values and the gradients of a weighted sum."""
    ours = [nn.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    got, want = fn(F, *ours), fn(TF, *theirs)
    assert got.shape == tuple(want.shape)
    _close(got.detach().numpy(), want.detach().numpy(), rtol=rtol)
    w = RNG.standard_normal(tuple(want.shape))
    (got * nn.tensor(w, dtype=got.dtype)).sum().backward()
    (want * torch.tensor(w, dtype=want.dtype)).sum().backward()
    for a, b in zip(ours, theirs):
        _close(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("p,dim", [(2, 1), (1, -1), (3, 0), (float("inf"), 2)])
def test_normalize(p, dim):
    x = RNG.standard_normal((3, 4, 5))
    _forward_and_grad(lambda f, a: f.normalize(a, p=p, dim=dim), x)
    assert gradcheck(lambda a: F.normalize(a, p=p, dim=dim),
                     (nn.tensor(x[:2, :3, :2], requires_grad=True),))


def test_normalize_zero_vector_uses_eps():
    _forward_and_grad(lambda f, a: f.normalize(a, dim=1), np.zeros((2, 3)))


@pytest.mark.parametrize("s1,s2,dim", [((4, 5), (4, 5), 1), ((3, 4, 5), (1, 4, 5), -1),
                                       ((6, 3), (3,), -1), ((2, 3, 4), (2, 3, 4), 0)])
def test_cosine_similarity(s1, s2, dim):
    a, b = RNG.standard_normal(s1), RNG.standard_normal(s2)
    _forward_and_grad(lambda f, x, y: f.cosine_similarity(x, y, dim=dim), a, b)
    assert gradcheck(lambda x, y: F.cosine_similarity(x, y, dim=dim),
                     (nn.tensor(a, requires_grad=True), nn.tensor(b, requires_grad=True)))


@pytest.mark.parametrize("shape,r", [((2, 8, 3, 5), 2), ((9, 2, 2), 3), ((1, 2, 4, 1, 1), 2)])
def test_pixel_shuffle_and_unshuffle(shape, r):
    x = RNG.standard_normal(shape)
    _forward_and_grad(lambda f, a: f.pixel_shuffle(a, r), x)
    y = F.pixel_shuffle(nn.tensor(x), r)
    _forward_and_grad(lambda f, a: f.pixel_unshuffle(a, r), y.numpy())
    _close(F.pixel_unshuffle(y, r).numpy(), x)
    assert nn.PixelShuffle(r)(nn.tensor(x)).shape == y.shape
    assert nn.PixelUnshuffle(r)(y).shape == shape


def test_pixel_shuffle_errors():
    with pytest.raises(RuntimeError, match=r"input.size\(-3\)=5 is not divisible by 4"):
        F.pixel_shuffle(nn.zeros(1, 5, 2, 2), 2)
    with pytest.raises(RuntimeError, match="upscale_factor must be a positive int"):
        F.pixel_shuffle(nn.zeros(1, 4, 2, 2), 0)
    with pytest.raises(RuntimeError, match="width to be divisible by downscale_factor"):
        F.pixel_unshuffle(nn.zeros(1, 1, 4, 3), 2)


INTERPOLATE = [dict(size=(8, 11)), dict(size=7), dict(scale_factor=2), dict(scale_factor=3),
               dict(scale_factor=(0.5, 1.7)), dict(size=(3, 4)), dict(size=(1, 1)),
               dict(scale_factor=1.5, recompute_scale_factor=True)]


@pytest.mark.parametrize("kwargs", INTERPOLATE, ids=[str(k) for k in INTERPOLATE])
@pytest.mark.parametrize("mode,align_corners", [("nearest", None), ("bilinear", False),
                                                ("bilinear", True)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_interpolate_matches_pytorch(kwargs, mode, align_corners, dtype):
    x = RNG.standard_normal((2, 3, 5, 7)).astype(dtype)
    _forward_and_grad(lambda f, a: f.interpolate(a, mode=mode, align_corners=align_corners,
                                                 **kwargs), x)


def test_interpolate_gradcheck_and_layers():
    x = RNG.standard_normal((1, 2, 3, 4))
    assert gradcheck(lambda a: F.interpolate(a, size=(5, 3), mode="bilinear"),
                     (nn.tensor(x, requires_grad=True),))
    for ours, theirs in ((nn.Upsample(scale_factor=2), torch.nn.Upsample(scale_factor=2)),
                         (nn.Upsample(size=(4, 6), mode="bilinear", align_corners=True),
                          torch.nn.Upsample(size=(4, 6), mode="bilinear", align_corners=True)),
                         (nn.UpsamplingNearest2d(scale_factor=2),
                          torch.nn.UpsamplingNearest2d(scale_factor=2)),
                         (nn.UpsamplingBilinear2d(size=(5, 5)),
                          torch.nn.UpsamplingBilinear2d(size=(5, 5)))):
        _close(ours(nn.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy())


def test_interpolate_errors():
    x = nn.zeros(1, 1, 2, 2)
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, scale_factor=2, align_corners=True)
    with pytest.raises(NotImplementedError, match="expected a 3-D .* or 5-D"):
        F.interpolate(nn.zeros(1, 2), scale_factor=2)      # 3-D and 5-D inputs are resampled

"""Vector normalization and image resampling with PyTorch's signatures and results:
``normalize``, ``cosine_similarity``, ``pixel_shuffle`` / ``pixel_unshuffle`` and
``interpolate`` (nearest, nearest-exact, area, linear / bilinear / trilinear and bicubic;
NCL, NCHW and NCDHW), ``affine_grid`` and ``grid_sample`` (bilinear / nearest, zeros /
border / reflection padding; 4-D and 5-D).

Each is composed of differentiable operators (norms, views, ``index_select``, products), so
its gradient is theirs; resampling computes its source rows and columns (and bilinear
weights) on the host, in the input's floating type as PyTorch does, then gathers with
``index_select``, whose gradient adds each output's share back to its sources.
``grid_sample`` works out each sample's source coordinate on the host too (unnormalized,
reflected or clipped as PyTorch does) together with its derivative for the grid value
(0 where clipped, -1 where reflected), and rebuilds it as ``grid * slope + constant``, so
the bilinear weights carry the grid's gradient.
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from .base import Tensor, _dim, broadcast_shape, to_device
from .elementwise import clamp_min
from .index import index_select
from .reduce import norm
from .shape import expand

__all__ = ["normalize", "cosine_similarity", "pixel_shuffle", "pixel_unshuffle",
           "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "affine_grid",
           "grid_sample"]


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(norm_p(input over dim), eps)``: unit vectors along ``dim``."""
    if out is not None:
        raise TypeError("normalize(): out= is not supported; assign the result instead")
    denom = clamp_min(norm(input, p, dim, keepdim=True), eps)
    return input / denom


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """The cosine of the angle between ``x1`` and ``x2`` (broadcast) along ``dim``, each norm
    at least ``eps``, as PyTorch's ``sum((x1 / |x1|) * (x2 / |x2|), dim)``."""
    for name, x in (("x1", x1), ("x2", x2)):
        if not isinstance(x, Tensor):
            raise TypeError(f"cosine_similarity(): argument '{name}' must be Tensor, not "
                            f"{type(x).__name__}")
    shape = broadcast_shape(x1.shape, x2.shape)
    x1, x2 = expand(x1, shape), expand(x2, shape)
    d = _dim(dim, len(shape))
    n1 = clamp_min(norm(x1, 2, d, keepdim=True), eps)
    n2 = clamp_min(norm(x2, 2, d, keepdim=True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(d)


# ----------------------------------------------------------------------------- pixel shuffle

def _factor(name, argument, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise RuntimeError(f"{name}: {argument} must be a positive int, got {value!r}")
    return int(value)


def pixel_shuffle(input, upscale_factor):
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r): channel blocks become r x r pixels."""
    r = _factor("pixel_shuffle", "upscale_factor", upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W): the inverse of ``pixel_shuffle``."""
    r = _factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    for axis, where, size in (("height", -2, h), ("width", -1, w)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {axis} to be divisible by "
                               f"downscale_factor, but input.size({where})={size} is not "
                               f"divisible by {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


# ----------------------------------------------------------------------------- interpolate

MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_LINEAR = {3: "linear", 4: "bilinear", 5: "trilinear"}     # input ndim -> its linear mode
_RANK = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}  # modes of one rank only
_INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")
_LAYOUT = {3: "(N, C, L)", 4: "(N, C, H, W)", 5: "(N, C, D, H, W)"}
_CUBIC_A = -0.75                                           # PyTorch's cubic convolution


def _tuple(name, value, what, n):
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    if len(values) != n:
        raise ValueError(f"{name}: {what} must be a number or {n} numbers for a {n + 2}-D "
                         f"input, got {value!r}")
    return values


def _output_size(input, size, scale_factor):
    """(output sizes, scale factors or Nones) from ``size`` or ``scale_factor``."""
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    n = input.ndim - 2
    if size is not None:
        out = tuple(int(s) for s in _tuple("interpolate", size, "size", n))
        return out, (None,) * n
    scales = tuple(float(s) for s in _tuple("interpolate", scale_factor, "scale_factor", n))
    if any(s <= 0 for s in scales):
        raise ValueError(f"interpolate: scale_factor must be positive, got {scale_factor!r}")
    return tuple(int(math.floor(n * s)) for n, s in zip(input.shape[2:], scales)), scales


def _scale(n_in, n_out, scale, align_corners, dtype):
    """PyTorch's source-per-destination step (``area_pixel_compute_scale``)."""
    if align_corners:
        return dtype((n_in - 1) / (n_out - 1)) if n_out > 1 else dtype(0)
    if scale is not None:
        return dtype(1.0 / scale)
    return dtype(n_in) / dtype(n_out)


def _nearest_index(n_in, n_out, scale):
    """Source index of each destination (PyTorch's ``nearest_idx``, in float32 as it is)."""
    if n_in == n_out:
        return np.arange(n_out)
    if n_out == 2 * n_in:
        return np.arange(n_out) >> 1
    step = np.float32(1.0 / scale) if scale is not None else (np.float32(n_in)
                                                               / np.float32(n_out))
    src = np.floor(np.arange(n_out, dtype=np.float32) * step).astype(np.int64)
    return np.minimum(src, n_in - 1)


def _nearest_exact_index(n_in, n_out, scale):
    """Source index of each destination for "nearest-exact": the pixel whose center is
    nearest, ``floor((dst + 0.5) * step)`` (PyTorch's, the product rounded to float32)."""
    step = np.float32(1.0 / scale) if scale is not None else (np.float32(n_in)
                                                               / np.float32(n_out))
    src = ((np.arange(n_out) + 0.5) * np.float64(step)).astype(np.float32)
    return np.minimum(np.floor(src).astype(np.int64), n_in - 1)


def _linear_taps(n_in, n_out, scale, align_corners, dtype):
    """(low index, high index, weight of the high one) of each destination."""
    step = _scale(n_in, n_out, scale, align_corners, dtype)
    dst = np.arange(n_out, dtype=dtype)
    if align_corners:
        src = step * dst
    else:
        src = np.maximum(step * (dst + dtype(0.5)) - dtype(0.5), dtype(0))
    low = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    high = np.minimum(low + 1, n_in - 1)
    return low, high, (src - low).astype(dtype)


def _cubic_taps(n_in, n_out, scale, align_corners, dtype):
    """(4, n_out) source indices and weights of each destination: PyTorch's cubic
    convolution (A = -0.75) over the pixels ``floor(src) - 1 .. floor(src) + 2``, indices
    clamped to the edge (``upsample_get_value_bounded``); ``src`` is not clamped at 0."""
    step = _scale(n_in, n_out, scale, align_corners, dtype)
    dst = np.arange(n_out, dtype=dtype)
    src = step * dst if align_corners else step * (dst + dtype(0.5)) - dtype(0.5)
    low = np.floor(src).astype(np.int64)
    t = (src - low).astype(dtype)
    a, one = dtype(_CUBIC_A), dtype(1)

    def near(x):                            # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + one

    def far(x):                             # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = np.stack([far(t + one), near(t), near(one - t), far(2 * one - t)]).astype(dtype)
    index = np.clip(low[None, :] + np.arange(-1, 3)[:, None], 0, n_in - 1)
    return index, weights


def _along(x, dim, index):
    return index_select(x, dim, to_device(Tensor(np.ascontiguousarray(index)), x.device))


def _weights(w, dim, ndim, like):
    shape = [1] * ndim
    shape[dim] = -1
    return to_device(Tensor(np.ascontiguousarray(w).reshape(shape)), like.device)


def _check_interpolate(input, mode, align_corners, antialias):
    """PyTorch's checks of ``interpolate``'s mode against the input's rank and options."""
    if not isinstance(input, Tensor):
        raise TypeError(f"interpolate(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if mode not in MODES:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported; use one of "
                                  f"{', '.join(MODES)}")
    if input.ndim not in _LAYOUT:
        raise NotImplementedError(
            f"interpolate: expected a 3-D (N, C, L), 4-D (N, C, H, W) or 5-D (N, C, D, H, W) "
            f"input, got {input.ndim}-D of shape {list(input.shape)}")
    if mode in _RANK and _RANK[mode] != input.ndim:
        raise NotImplementedError(
            f"interpolate: got a {input.ndim}-D {_LAYOUT[input.ndim]} input, but mode {mode!r} "
            f"needs a {_RANK[mode]}-D input; use mode {_LINEAR[input.ndim]!r}, 'nearest', "
            f"'nearest-exact' or 'area'")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported (only "
                                  "antialias=False)")
    if mode not in _INTERPOLATING and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if not input.is_floating_point():
        raise RuntimeError(f"interpolate: expected a floating point input, got {input.dtype}")


def _area(x, out_size):
    """"area": adaptive average pooling to ``out_size``, as PyTorch's."""
    from . import pool
    pooling = {3: pool.adaptive_avg_pool1d, 4: pool.adaptive_avg_pool2d,
               5: pool.adaptive_avg_pool3d}[x.ndim]
    return pooling(x, out_size[0] if x.ndim == 3 else out_size)


def _cubic(x, axis, n_out, scale, align_corners):
    """Cubic convolution along ``axis``: four gathers weighted and added."""
    dtype = np.dtype(str(x.dtype)).type
    index, weights = _cubic_taps(x.shape[axis], n_out, scale, align_corners, dtype)
    taps = _along(x, axis, index.ravel())
    taps = taps.reshape(*x.shape[:axis], 4, n_out, *x.shape[axis + 1:])
    shape = (1,) * axis + (4, n_out) + (1,) * (x.ndim - axis - 1)
    return (taps * to_device(Tensor(weights.reshape(shape)), x.device)).sum(axis)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resample the spatial axes of an (N, C, L), (N, C, H, W) or (N, C, D, H, W) ``input`` to
    ``size`` or by ``scale_factor``: ``mode`` "nearest" (PyTorch's legacy rule),
    "nearest-exact" (the nearest pixel center), "area" (adaptive average pooling), the linear
    mode of its rank, "linear" (3-D), "bilinear" (4-D), "trilinear" (5-D), or "bicubic"
    (4-D; cubic convolution with A = -0.75), one axis after the other (``align_corners``:
    corner pixels' centers map onto each other). ``recompute_scale_factor=True`` resamples by
    the output size instead of the given factor; ``antialias`` must be False."""
    _check_interpolate(input, mode, align_corners, antialias)
    if recompute_scale_factor is not None and recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    out_size, scales = _output_size(input, size, scale_factor)
    if any(n < 1 for n in out_size):
        raise ValueError(f"interpolate: output size must be positive, got {list(out_size)}")
    if recompute_scale_factor:
        scales = (None,) * len(scales)
    if mode == "area":
        return _area(input, out_size)
    x = input
    axes = range(2, input.ndim)
    if mode in ("nearest", "nearest-exact"):
        rule = _nearest_index if mode == "nearest" else _nearest_exact_index
        for axis, n_out, scale in zip(axes, out_size, scales):
            x = _along(x, axis, rule(x.shape[axis], n_out, scale))
        return x
    if mode == "bicubic":
        for axis, n_out, scale in zip(axes, out_size, scales):
            x = _cubic(x, axis, n_out, scale, bool(align_corners))
        return x
    dtype = np.dtype(str(input.dtype)).type
    for axis, n_out, scale in zip(axes, out_size, scales):
        low, high, w = _linear_taps(x.shape[axis], n_out, scale, bool(align_corners), dtype)
        weight = _weights(w, axis, input.ndim, x)
        a, b = _along(x, axis, low), _along(x, axis, high)
        x = a + (b - a) * weight
    return x


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """``interpolate`` (PyTorch's deprecated name)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """``interpolate(..., mode="nearest")``."""
    return interpolate(input, size, scale_factor, "nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """``interpolate(..., mode="bilinear", align_corners=True)``, as PyTorch's."""
    return interpolate(input, size, scale_factor, "bilinear", align_corners=True)


# ----------------------------------------------------------------------------- grid sampling

def _linspace(steps, align_corners, dtype):
    """PyTorch's ``linspace_from_neg_one``: -1 .. 1 (computed from both ends as torch's
    linspace), scaled by (steps - 1) / steps without ``align_corners``."""
    if steps <= 1:
        return np.zeros(1, dtype)
    step = dtype((1 - -1) / (steps - 1))
    i = np.arange(steps)
    half = steps // 2
    out = np.where(i < half, dtype(-1) + step * i.astype(dtype),
                   dtype(1) - step * (steps - i - 1).astype(dtype)).astype(dtype)
    return out if align_corners else (out * dtype((steps - 1) / steps)).astype(dtype)


def _align_corners(name, align_corners):
    if align_corners is None:
        warnings.warn(f"Default {name} behavior has changed to align_corners=False since 1.3.0."
                      " Please specify align_corners=True if the old behavior is desired. See "
                      f"the documentation of {name} for details.")
        return False
    return bool(align_corners)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of a batch of affine maps ``theta``
    (N, 2, 3) (or (N, 3, 4)) for an output of ``size`` (N, C, H, W) (or (N, C, D, H, W)):
    each output pixel's normalized (x, y[, z]) through ``theta``."""
    align_corners = _align_corners("affine_grid", align_corners)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    given, size = size, [int(n) for n in size]
    if len(size) == 4:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{given}. Got {list(theta.shape)}.")
    elif len(size) == 5:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{given}. Got {list(theta.shape)}.")
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {given}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {given}")
    if theta.shape[0] != size[0]:
        raise ValueError(f"Expected theta of batch size {size[0]}, got {theta.shape[0]}")
    dtype = np.dtype(str(theta.dtype)).type
    spatial = size[2:]
    axes = [_linspace(n, align_corners, dtype) for n in spatial]     # (D,) H, W
    mesh = np.meshgrid(*axes, indexing="ij")
    base = np.stack([m.ravel() for m in reversed(mesh)] + [np.ones(mesh[0].size, dtype)], 1)
    base = to_device(Tensor(base.astype(dtype)), theta.device)      # (P, n + 1): x, y[, z], 1
    grid = base @ theta.transpose(1, 2)                              # (N, P, n)
    return grid.reshape(size[0], *spatial, len(spatial))


def _reflect(x, twice_low, twice_high):
    """PyTorch's ``reflect_coordinates``: (value, derivative)."""
    if twice_low == twice_high:
        return np.zeros_like(x), np.zeros_like(x)
    low, span = x.dtype.type(twice_low / 2), x.dtype.type((twice_high - twice_low) / 2)
    shifted = x - low
    sign = np.where(shifted < 0, -1, 1).astype(x.dtype)
    shifted = np.abs(shifted)
    extra = np.fmod(shifted, span)
    even = np.floor(shifted / span) % 2 == 0
    value = np.where(even, extra + low, span - extra + low).astype(x.dtype)
    return value, np.where(even, sign, -sign).astype(x.dtype)


def _clip(x, size):
    """PyTorch's ``clip_coordinates``: (value, derivative; 0 on the borders too)."""
    top = x.dtype.type(size - 1)
    inside = (x > 0) & (x < top)
    return np.clip(x, 0, top).astype(x.dtype), inside.astype(x.dtype)


def _source(g, size, padding_mode, align_corners):
    """A grid coordinate (host values) as a source pixel coordinate: (value, derivative)."""
    dtype = g.dtype.type
    if align_corners:
        slope = dtype((size - 1) / 2)
        value = ((g + dtype(1)) / dtype(2) * dtype(size - 1)).astype(g.dtype)
    else:
        slope = dtype(size / 2)
        value = (((g + dtype(1)) * dtype(size) - dtype(1)) / dtype(2)).astype(g.dtype)
    slope = np.full_like(g, slope)
    if padding_mode == "border":
        value, d = _clip(value, size)
        slope = slope * d
    elif padding_mode == "reflection":
        value, d = (_reflect(value, 0, 2 * (size - 1)) if align_corners
                    else _reflect(value, -1, 2 * size - 1))
        value, c = _clip(value, size)
        slope = slope * d * c
    return value, slope


def _check_grid_sample(input, grid, mode, padding_mode):
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if mode == "bicubic":
        raise NotImplementedError("grid_sample: mode 'bicubic' is not supported; use "
                                  "'bilinear' or 'nearest'")
    if input.device != grid.device:
        raise RuntimeError(f"grid_sampler(): expected input and grid to be on same device, but "
                           f"input is on {input.device} and grid is on {grid.device}")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but "
                           f"input has {input.dtype} and grid has {grid.dtype}")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in "
                           f"last dimension, but got grid with sizes {list(grid.shape)}")
    if not input.is_floating_point():
        raise RuntimeError(f"grid_sampler(): expected a floating point input, got "
                           f"{input.dtype}")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (N, C, H, W) (or (N, C, D, H, W)) at the normalized coordinates
    ``grid`` (N, H', W', 2) (or (N, D', H', W', 3); (x, y[, z]) in [-1, 1]): ``mode``
    "bilinear" (trilinear for 5-D) or "nearest" (rounding half to even), ``padding_mode``
    "zeros", "border" or "reflection". Gradients reach ``input`` and, for "bilinear",
    ``grid``."""
    _check_grid_sample(input, grid, mode, padding_mode)
    align_corners = _align_corners("grid_sample", align_corners)
    n = input.ndim - 2
    N, C, sizes = input.shape[0], input.shape[1], input.shape[2:]
    out_spatial = grid.shape[1:-1]
    P = int(np.prod(out_spatial))
    host = grid.detach().cpu().numpy().reshape(N, P, n)
    flat_grid = grid.reshape(N, P, n)
    coords = []                             # per input axis (D,) H, W: (host value, tensor)
    for axis, size in enumerate(sizes):
        k = n - 1 - axis                    # the grid's last axis holds x (W) first
        value, slope = _source(host[:, :, k], size, padding_mode, align_corners)
        if mode == "bilinear" and grid.requires_grad:
            g = flat_grid[:, :, k]
            t = (g - to_device(Tensor(host[:, :, k].copy()), grid.device)) * to_device(
                Tensor(slope), grid.device) + to_device(Tensor(value), grid.device)
        else:
            t = to_device(Tensor(value), grid.device)
        coords.append((value, t))
    rows = input.permute(0, *range(2, input.ndim), 1).reshape(-1, C)   # (N * prod(sizes), C)
    strides = [int(np.prod(sizes[a + 1:])) for a in range(n)]
    start = (np.arange(N) * int(np.prod(sizes)))[:, None]
    if mode == "nearest":
        picks = [np.rint(v).astype(np.int64) for v, _ in coords]
        # the grid stays in the graph with a zero gradient, as in PyTorch
        weight = flat_grid[:, :, 0] * 0 + 1 if grid.requires_grad else None
        out = _corner(rows, picks, sizes, strides, start, weight, input)
    else:
        lows = [np.floor(v).astype(np.int64) for v, _ in coords]
        out = None
        for corner in itertools.product((0, 1), repeat=n):
            weight = None
            for (value, t), low, c in zip(coords, lows, corner):
                lo = to_device(Tensor(low.astype(value.dtype)), grid.device)
                w = t - lo if c else (lo + 1) - t
                weight = w if weight is None else weight * w
            picks = [low + c for low, c in zip(lows, corner)]
            term = _corner(rows, picks, sizes, strides, start, weight, input)
            out = term if out is None else out + term
    out = out.reshape(N, *out_spatial, C)
    return out.permute(0, n + 1, *range(1, n + 1)).contiguous()


def _corner(rows, picks, sizes, strides, start, weight, like):
    """The input rows at the pixels ``picks`` (per axis, (N, P) each), zero outside the input,
    times ``weight`` (N, P) if given: (N * P, C)."""
    inside = np.ones(picks[0].shape, bool)
    flat = start.copy()
    for pick, size, stride in zip(picks, sizes, strides):
        inside &= (pick >= 0) & (pick < size)
        flat = flat + np.clip(pick, 0, size - 1) * stride
    mask = to_device(Tensor(inside.astype(np.dtype(str(like.dtype)))), like.device)
    weight = mask if weight is None else weight * mask
    values = _along(rows, 0, flat.ravel())
    return values * weight.reshape(-1, 1)

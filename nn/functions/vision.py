"""Vector normalization and image resampling with PyTorch's signatures and results:
``normalize``, ``cosine_similarity``, ``pixel_shuffle`` / ``pixel_unshuffle`` and
``interpolate`` (nearest and linear / bilinear / trilinear; NCL, NCHW and NCDHW).

Each is composed of differentiable operators (norms, views, ``index_select``, products), so
its gradient is theirs; resampling computes its source rows and columns (and bilinear
weights) on the host, in the input's floating type as PyTorch does, then gathers with
``index_select``, whose gradient adds each output's share back to its sources.
"""
from __future__ import annotations

import math

import numpy as np

from .base import Tensor, _dim, broadcast_shape, to_device
from .elementwise import clamp_min
from .index import index_select
from .reduce import norm
from .shape import expand

__all__ = ["normalize", "cosine_similarity", "pixel_shuffle", "pixel_unshuffle",
           "interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]


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

MODES = ("nearest", "linear", "bilinear", "trilinear")
_LINEAR = {3: "linear", 4: "bilinear", 5: "trilinear"}     # input ndim -> its linear mode
_LAYOUT = {3: "(N, C, L)", 4: "(N, C, H, W)", 5: "(N, C, D, H, W)"}


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


def _along(x, dim, index):
    return index_select(x, dim, to_device(Tensor(np.ascontiguousarray(index)), x.device))


def _weights(w, dim, ndim, like):
    shape = [1] * ndim
    shape[dim] = -1
    return to_device(Tensor(w.reshape(shape)), like.device)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resample the spatial axes of an (N, C, L), (N, C, H, W) or (N, C, D, H, W) ``input`` to
    ``size`` or by ``scale_factor``: ``mode`` "nearest" (PyTorch's, not "nearest-exact") or
    the linear mode of its rank, "linear" (3-D), "bilinear" (4-D), "trilinear" (5-D), one axis
    after the other (``align_corners``: corner pixels' centers map onto each other)."""
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
    if mode != "nearest" and mode != _LINEAR[input.ndim]:
        raise NotImplementedError(
            f"interpolate: got a {input.ndim}-D {_LAYOUT[input.ndim]} input, but mode {mode!r} "
            f"needs a {MODES.index(mode) + 2}-D input; use mode {_LINEAR[input.ndim]!r} or "
            f"'nearest'")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if mode == "nearest" and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if not input.is_floating_point():
        raise RuntimeError(f"interpolate: expected a floating point input, got {input.dtype}")
    out_size, scales = _output_size(input, size, scale_factor)
    if any(n < 1 for n in out_size):
        raise ValueError(f"interpolate: output size must be positive, got {list(out_size)}")
    if recompute_scale_factor:
        scales = (None,) * len(scales)
    x = input
    axes = range(2, input.ndim)
    if mode == "nearest":
        for axis, n_out, scale in zip(axes, out_size, scales):
            x = _along(x, axis, _nearest_index(x.shape[axis], n_out, scale))
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

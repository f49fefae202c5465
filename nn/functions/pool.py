"""Pooling, as torch.nn.functional has it: max (with PyTorch's flat indices), average and
adaptive pooling in 1-d and 2-d, and ``max_unpool1d/2d``.

Every pooling runs as a 2-d one over (N, C, H, W) (1-d inputs get rows of height 1), with a
window rule per axis (``nn/ops/pool.py``). The gradients are compiled kernels too, each a
Function whose own gradient is the forward kernel again: the average pooling's gradient is
its adjoint (so the forward kernel is the adjoint's gradient), and a max pooling's gradient
scatters to the indices while the scatter's gradient gathers from them.
"""
from __future__ import annotations

import numpy as np

from nn.ops import pool as ops

from .base import Op, Tensor, _kernel
from .fused import run_kernel

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "max_unpool1d", "max_unpool2d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d"]


def _pair_kernel(declare, *arrays, schedule, **params):
    """Run a declaration with two outputs (on the arrays' device); both come back as
    Tensors."""
    return tuple(Tensor(out) for out in run_kernel(declare, *arrays, schedule=schedule,
                                                   **params))


class MaxPool2DWithIndices(Op):
    """Max pooling of (N, C, H, W), with the flat index h * W + w of each maximum."""

    @staticmethod
    def forward(ctx, x, rules):
        values, indices = _pair_kernel(ops.max_pool, x._data,
                                       schedule=ops.schedule_pool, rules=rules)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.in_size, ctx.rules = x.shape[2:], rules
        return values, indices

    @staticmethod
    def backward(ctx, g, _):
        (indices,) = ctx.saved_tensors
        return MaxPool2DWithIndicesBackward.apply(g, indices, ctx.in_size, ctx.rules), None


class AdaptiveMaxPool2D(MaxPool2DWithIndices):
    """Adaptive max pooling: the code of ``MaxPool2DWithIndices``, PyTorch's node name."""


class MaxPool2DWithIndicesBackward(Op):
    """Each window's gradient added into the input at its index (a scatter)."""

    @staticmethod
    def forward(ctx, g, indices, in_size, rules):
        ctx.save_for_backward(indices)
        ctx.in_size, ctx.rules = in_size, rules
        return _kernel(ops.max_pool_grad, g._data, indices._data,
                       out_shape=g.shape[:2] + tuple(in_size), schedule=ops.schedule_pool,
                       in_size=tuple(in_size), rules=rules)

    @staticmethod
    def backward(ctx, gg):
        (indices,) = ctx.saved_tensors
        return MaxPoolGather.apply(gg, indices, ctx.in_size, ctx.rules), None, None, None


class MaxPoolGather(Op):
    """(N, C, H, W) read at the indices of a max pooling: the scatter's adjoint."""

    @staticmethod
    def forward(ctx, x, indices, in_size, rules):
        ctx.save_for_backward(indices)
        ctx.in_size, ctx.rules = in_size, rules
        flat = x._data.reshape(x.shape[:2] + (-1,))
        return _kernel(ops.max_pool_gather, flat, indices._data, out_shape=indices.shape)

    @staticmethod
    def backward(ctx, g):
        (indices,) = ctx.saved_tensors
        return (MaxPool2DWithIndicesBackward.apply(g, indices, ctx.in_size, ctx.rules),
                None, None, None)


class AvgPool2D(Op):
    """Average pooling of (N, C, H, W)."""

    @staticmethod
    def forward(ctx, x, rules, count_include_pad, divisor_override):
        ctx.args = x.shape[2:], rules, count_include_pad, divisor_override
        h, w = rules
        shape = x.shape[:2] + (ops._out_size(h), ops._out_size(w))
        return _kernel(ops.avg_pool, x._data, out_shape=shape, schedule=ops.schedule_pool,
                       rules=rules, count_include_pad=count_include_pad,
                       divisor_override=divisor_override)

    @staticmethod
    def backward(ctx, g):
        return AvgPool2DBackward.apply(g, *ctx.args), None, None, None


class AdaptiveAvgPool2D(AvgPool2D):
    """Adaptive average pooling: the code of ``AvgPool2D``, PyTorch's node name."""


class AvgPool2DBackward(Op):
    """The adjoint of an average pooling: each window's gradient over its divisor, spread
    over the window."""

    @staticmethod
    def forward(ctx, g, in_size, rules, count_include_pad, divisor_override):
        ctx.args = rules, count_include_pad, divisor_override
        return _kernel(ops.avg_pool_grad, g._data, out_shape=g.shape[:2] + tuple(in_size),
                       schedule=ops.schedule_pool, in_size=tuple(in_size), rules=rules,
                       count_include_pad=count_include_pad, divisor_override=divisor_override)

    @staticmethod
    def backward(ctx, gg):
        return (AvgPool2D.apply(gg, *ctx.args),) + (None,) * 4


# ----------------------------------------------------------------------------- arguments

def _tuple(value, n, what, name):
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    values = tuple(int(v) for v in value)
    if len(values) == 1:
        return values * n
    if len(values) != n:
        raise RuntimeError(f"{name}: {what} must either be a single int, or a tuple of {n} "
                           f"ints, got {list(values)}")
    return values


def _batched(input, nd, name):
    """``input`` as (N, C, H, W) and whether it had no batch axis."""
    # a batch of no images is allowed, as in PyTorch; an image of no pixels is not
    if input.ndim not in (nd + 1, nd + 2) or 0 in input.shape[input.ndim - nd - 1:]:
        raise RuntimeError(f"{name}: expected a non-empty {nd + 1}D (unbatched) or {nd + 2}D "
                           f"(batched) input, but got input of size: {list(input.shape)}")
    if not input.is_floating_point():
        raise RuntimeError(f"{name}: expected a floating point input, got {input.dtype}")
    x = input.unsqueeze(0) if input.ndim == nd + 1 else input
    return (x.unsqueeze(2) if nd == 1 else x), input.ndim == nd + 1


def _restore(t, nd, unbatched):
    t = t.squeeze(2) if nd == 1 else t
    return t.squeeze(0) if unbatched else t


def _fixed_rules(x, nd, kernel_size, stride, padding, dilation, ceil_mode, name):
    """The window rule of each axis of a fixed-window pooling, with PyTorch's checks."""
    k = _tuple(kernel_size, nd, "kernel_size", name)
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _tuple(stride, nd, "stride", name)
    p = _tuple(padding, nd, "padding", name)
    d = _tuple(dilation, nd, "dilation", name)
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{name}: kernel_size must be greater than zero, but got "
                           f"kernel_size={list(k)}")
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{name}: dilation must be greater than zero, but got "
                           f"dilation={list(d)}")
    sizes = x.shape[-nd:]
    rules, outs = [], []
    for n, kk, ss, pp, dd in zip(sizes, k, s, p, d):
        if pp < 0 or pp > (dd * (kk - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={pp}, kernel_size={kk} and dilation={dd}")
        out = (n + 2 * pp - dd * (kk - 1) - 1 + (ss - 1 if ceil_mode else 0)) // ss + 1
        if ceil_mode and (out - 1) * ss >= n + pp:
            out -= 1
        rules.append(("fixed", kk, ss, pp, dd, out))
        outs.append(out)
    if any(o < 1 for o in outs):
        channels = x.shape[1]
        raise RuntimeError(f"Given input size: ({channels}x{'x'.join(map(str, sizes))}). "
                           f"Calculated output size: ({channels}x{'x'.join(map(str, outs))}). "
                           "Output size is too small")
    rules = ([("fixed", 1, 1, 0, 1, 1)] if nd == 1 else []) + rules
    return tuple(rules)


def _adaptive_rules(x, nd, output_size, name):
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        sizes = (output_size,) * nd
    else:
        sizes = tuple(output_size)
    if len(sizes) != nd:
        raise RuntimeError(f"{name}: output_size must be {nd}")
    sizes = tuple(n if o is None else int(o) for o, n in zip(sizes, x.shape[-nd:]))
    if any(o < 1 for o in sizes):
        raise RuntimeError(f"{name}: output_size must be positive, got {list(sizes)}")
    rules = tuple(("adaptive", o) for o in sizes)
    return (("adaptive", 1),) + rules if nd == 1 else rules


def _max_pool(input, nd, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    name = f"max_pool{nd}d"
    x, unbatched = _batched(input, nd, name)
    rules = _fixed_rules(x, nd, kernel_size, stride, padding, dilation, ceil_mode, name)
    values, indices = MaxPool2DWithIndices.apply(x, rules)
    values, indices = _restore(values, nd, unbatched), _restore(indices, nd, unbatched)
    return (values, indices) if return_indices else values


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over windows of (N, C, L) or (C, L); indices count along L."""
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over windows of (N, C, H, W) or (C, H, W); indices are flat: h * W + w.

    ``stride`` defaults to ``kernel_size``; padding (at most half the dilated kernel) never
    wins; ``ceil_mode`` keeps a last partial window that starts inside the input.
    """
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def _avg_pool(input, nd, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    name = f"avg_pool{nd}d"
    x, unbatched = _batched(input, nd, name)
    rules = _fixed_rules(x, nd, kernel_size, stride, padding, 1, ceil_mode, name)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    out = AvgPool2D.apply(x, rules, bool(count_include_pad), divisor_override or 0)
    return _restore(out, nd, unbatched)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """Mean over windows of (N, C, L) or (C, L)."""
    return _avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over windows of (N, C, H, W) or (C, H, W): padding counts as zeros, and in the
    divisor when ``count_include_pad``; ``divisor_override`` replaces the divisor."""
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def adaptive_avg_pool1d(input, output_size):
    """Mean over ``output_size`` windows of (N, C, L) spread evenly (PyTorch's bounds)."""
    x, unbatched = _batched(input, 1, "adaptive_avg_pool1d")
    rules = _adaptive_rules(x, 1, output_size, "adaptive_avg_pool1d")
    return _restore(AdaptiveAvgPool2D.apply(x, rules, True, 0), 1, unbatched)


def adaptive_avg_pool2d(input, output_size):
    """Mean over an ``output_size`` grid of windows; None keeps that input size."""
    x, unbatched = _batched(input, 2, "adaptive_avg_pool2d")
    rules = _adaptive_rules(x, 2, output_size, "adaptive_avg_pool2d")
    return _restore(AdaptiveAvgPool2D.apply(x, rules, True, 0), 2, unbatched)


def _adaptive_max(input, nd, output_size, return_indices):
    name = f"adaptive_max_pool{nd}d"
    x, unbatched = _batched(input, nd, name)
    rules = _adaptive_rules(x, nd, output_size, name)
    values, indices = AdaptiveMaxPool2D.apply(x, rules)
    values, indices = _restore(values, nd, unbatched), _restore(indices, nd, unbatched)
    return (values, indices) if return_indices else values


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max over ``output_size`` windows of (N, C, L) spread evenly."""
    return _adaptive_max(input, 1, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over an ``output_size`` grid of windows; None keeps that input size."""
    return _adaptive_max(input, 2, output_size, return_indices)


def _max_unpool(input, indices, nd, kernel_size, stride, padding, output_size):
    name = f"max_unpool{nd}d"
    x, unbatched = _batched(input, nd, name)
    idx = indices.unsqueeze(0) if unbatched else indices
    idx = idx.unsqueeze(2) if nd == 1 else idx
    if idx.shape != x.shape or idx.dtype != "int64":
        raise RuntimeError(f"{name}: expected indices of dtype int64 and the input's shape "
                           f"{list(input.shape)}, got {indices.dtype} {list(indices.shape)}")
    k = _tuple(kernel_size, nd, "kernel_size", name)
    s = k if stride is None else _tuple(stride, nd, "stride", name)
    p = _tuple(padding, nd, "padding", name)
    default = tuple((n - 1) * ss - 2 * pp + kk for n, kk, ss, pp in zip(x.shape[-nd:], k, s, p))
    size = default if output_size is None else tuple(output_size)[-nd:]
    if len(size) != nd:
        raise RuntimeError(f"{name}: output_size must have {nd} elements, got "
                           f"{list(output_size)}")
    for want, ss, out in zip(size, s, default):
        if not out - ss < want < out + ss:
            raise RuntimeError(f"{name}: invalid output_size {list(size)} (it must lie "
                               f"between {[o - ss + 1 for o in default]} and "
                               f"{[o + ss - 1 for o in default]})")
    # the windows that produced the indices, over the unpooled size
    rules = tuple(("fixed", kk, ss, pp, 1, n) for kk, ss, pp, n in zip(k, s, p, x.shape[-nd:]))
    rules = ((("fixed", 1, 1, 0, 1, 1),) if nd == 1 else ()) + rules
    in_size = ((1,) if nd == 1 else ()) + tuple(size)
    out = MaxUnpool2D.apply(x, idx, in_size, rules)
    return _restore(out, nd, unbatched)


class MaxUnpool2D(MaxPool2DWithIndicesBackward):
    """The scatter of a max pooling's gradient, applied to values: PyTorch's node name."""


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Values put back at the indices that ``max_pool1d(..., return_indices=True)`` gave,
    zeros elsewhere (the pooling's kernel_size, stride and padding)."""
    return _max_unpool(input, indices, 1, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Values put back at the flat indices that ``max_pool2d(..., return_indices=True)``
    gave, zeros elsewhere. The indices must come from a pooling with the same kernel_size,
    stride and padding: each output element looks only in the windows that contain it."""
    return _max_unpool(input, indices, 2, kernel_size, stride, padding, output_size)


# ----------------------------------------------------------------------------- 3-d, composed
# A box window over (D, H, W) is a (H, W) window followed by a D window: max, mean (count with
# or without padding: the count is a product of per-axis counts) and adaptive means all
# separate, and each axis's output size, padding and ceil_mode rule are its own. So the 3-d
# pools run the 2-d pool over (N, C*D, H, W), then the 1-d pool over D of (N, C*H'*W', D).

def _pool3d(input, name, over_hw, over_d):
    if input.ndim not in (4, 5) or 0 in input.shape[input.ndim - 4:]:
        raise RuntimeError(f"{name}: expected a non-empty 4D (unbatched) or 5D (batched) "
                           f"input, but got input of size: {list(input.shape)}")
    if not input.is_floating_point():
        raise RuntimeError(f"{name}: expected a floating point input, got {input.dtype}")
    x = input.unsqueeze(0) if input.ndim == 4 else input
    n, c, d, h, w = x.shape
    y = over_hw(x.reshape(n, c * d, h, w))
    h2, w2 = y.shape[2:]
    y = y.reshape(n, c, d, h2 * w2).transpose(2, 3).reshape(n, c * h2 * w2, d)
    y = over_d(y)
    y = y.reshape(n, c, h2, w2, y.shape[-1]).permute(0, 1, 4, 2, 3).contiguous()
    return y.squeeze(0) if input.ndim == 4 else y


def _split3(value, what, name):
    """(value over D, value over (H, W)) of an int or a 3-tuple."""
    values = _tuple(value, 3, what, name)
    return values[0], values[1:]


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over (kD, kH, kW) windows of (N, C, D, H, W) or (C, D, H, W)."""
    name = "max_pool3d"
    if return_indices:
        raise NotImplementedError(f"{name}: return_indices=True is not supported")
    no_stride = stride is None or (not isinstance(stride, int) and len(stride) == 0)
    kd, khw = _split3(kernel_size, "kernel_size", name)
    sd, shw = _split3(kernel_size if no_stride else stride, "stride", name)
    pd, phw = _split3(padding, "padding", name)
    dd, dhw = _split3(dilation, "dilation", name)
    return _pool3d(input, name,
                   lambda t: max_pool2d(t, khw, shw, phw, dhw, ceil_mode),
                   lambda t: max_pool1d(t, kd, sd, pd, dd, ceil_mode))


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over (kD, kH, kW) windows of (N, C, D, H, W) or (C, D, H, W)."""
    name = "avg_pool3d"
    if divisor_override is not None:
        raise NotImplementedError(f"{name}: divisor_override is not supported")
    no_stride = stride is None or (not isinstance(stride, int) and len(stride) == 0)
    kd, khw = _split3(kernel_size, "kernel_size", name)
    sd, shw = _split3(kernel_size if no_stride else stride, "stride", name)
    pd, phw = _split3(padding, "padding", name)
    return _pool3d(input, name,
                   lambda t: avg_pool2d(t, khw, shw, phw, ceil_mode, count_include_pad),
                   lambda t: avg_pool1d(t, kd, sd, pd, ceil_mode, count_include_pad))


def adaptive_avg_pool3d(input, output_size):
    """Mean over an ``output_size`` (D, H, W) grid of windows (None keeps that input size)."""
    name = "adaptive_avg_pool3d"
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        sizes = (output_size,) * 3
    else:
        sizes = tuple(output_size)
        if len(sizes) != 3:
            raise ValueError(f"{name}: output_size must be an int, None or 3 of them, got "
                             f"{output_size!r}")
    d_in = input.shape[-3] if input.ndim in (4, 5) else None
    od = d_in if sizes[0] is None else sizes[0]
    return _pool3d(input, name, lambda t: adaptive_avg_pool2d(t, sizes[1:]),
                   lambda t: adaptive_avg_pool1d(t, od))

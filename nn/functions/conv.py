"""Convolution and padding: ``conv1d``, ``conv2d``, ``conv3d``, ``conv_transpose3d`` and
``pad``, as torch.nn.functional has them.

A convolution is one autograd node (``ConvolutionBackward0``) whose backward runs two more
compiled kernels: the gradient for the input (a convolution of the output gradient with the
flipped kernel, ``nn/ops/conv.py``; for strided convolutions one per stride phase of the
input, interleaved) and the gradient for the kernel (a reduction over images and output
positions, scheduled like a matrix product, both operands read as contiguous vectors).
Those two are Functions of their own, each differentiable through the other two, so
``create_graph=True`` gives double backward:

    y  = conv(x, w)                  dx = grad_input(g, w)        dw = grad_weight(x, g)
    grad_input(g, w)  backward:      dg = conv(ggx, w)            dw = grad_weight(ggx, g)
    grad_weight(x, g) backward:      dx = grad_input(g, ggw)      dg = conv(x, ggw)

1-d convolutions run as 2-d ones over rows of height 1. A 3-d convolution gathers, for each
output depth, the kD input depth slices its taps read (``index_select``), stacks them as
channels and runs one 2-d convolution over (N * D', C * kD, H, W) with the kernel's depth
folded into its input channels; its gradients are those of the gather and the 2-d
convolution. ``pad`` pads the trailing dimensions
(PyTorch's order: last dimension first) with a constant (negative sizes crop), a reflection,
the edge values or a wrap-around; its gradient folds the padded copies back.
"""
from __future__ import annotations

import collections

import numpy as np

from nn.ops import conv as ops

from .base import Op, Tensor, _kernel, to_device, torch_name

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose3d", "pad"]

# stride (h, w), padding (top, left, bottom, right), dilation (h, w), groups
Geometry = collections.namedtuple("Geometry", ["stride", "padding", "dilation", "groups"])

_KERNEL_AXES = {1: "kW", 2: "kH, kW", 3: "kT, kH, kW"}



def _conv2d_data(x, w, bias, geo):
    params = dict(stride=geo.stride, padding=geo.padding, dilation=geo.dilation,
                  groups=geo.groups)
    arrays = (x._data, w._data) + (() if bias is None else (bias._data,))
    N, F = x.shape[0], w.shape[0]
    OH = (x.shape[2] + geo.padding[0] + geo.padding[2]
          - geo.dilation[0] * (w.shape[2] - 1) - 1) // geo.stride[0] + 1
    OW = (x.shape[3] + geo.padding[1] + geo.padding[3]
          - geo.dilation[1] * (w.shape[3] - 1) - 1) // geo.stride[1] + 1
    return _kernel(ops.conv2d, *arrays, out_shape=(N, F, OH, OW), schedule=ops.schedule_conv2d,
                   **params)


class Convolution(Op):
    """A 2-d convolution of (N, C, H, W) with (F, C / groups, KH, KW), plus a bias."""

    @staticmethod
    def forward(ctx, x, w, bias, geo):
        ctx.save_for_backward(x, w)
        ctx.geo = geo
        return _conv2d_data(x, w, bias, geo)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (ConvGradInput.apply(g, w, x.shape, ctx.geo) if need[0] else None,
                ConvGradWeight.apply(x, g, w.shape, ctx.geo) if need[1] else None,
                g.sum((0, 2, 3)) if need[2] else None, None)


class ConvGradInput(Op):
    """The gradient of a convolution for its input: the transposed convolution of ``g``."""

    @staticmethod
    def forward(ctx, g, w, in_shape, geo):
        ctx.save_for_backward(g, w)
        ctx.geo = geo
        if geo.stride != (1, 1) and geo.dilation == (1, 1):
            return _grad_input_by_phases(g, w, in_shape, geo)
        return _kernel(ops.conv2d_grad_input, g._data, w._data, out_shape=in_shape,
                       schedule=ops.schedule_conv2d_grad_input, in_size=tuple(in_shape[2:]),
                       stride=geo.stride, padding=geo.padding, dilation=geo.dilation,
                       groups=geo.groups)

    @staticmethod
    def backward(ctx, ggx):
        g, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (Convolution.apply(ggx, w, None, ctx.geo) if need[0] else None,
                ConvGradWeight.apply(ggx, g, w.shape, ctx.geo) if need[1] else None,
                None, None)


def _grad_input_by_phases(g, w, in_shape, geo):
    """The input gradient of a strided convolution, one stride phase of the input at a time
    (``ops.grad_input_phase``: no multiplications with inserted zeros), then interleaved."""
    (sh, sw), (pt, pl, _, _) = geo.stride, geo.padding
    N, F, OH, OW = g.shape
    phases, present = [], []
    for ph in range(sh):
        fh, th, top, bottom, rows = ops.grad_input_phase(in_shape[2], OH, w.shape[2], sh, pt,
                                                         ph)
        for pw in range(sw):
            fw, tw, left, right, cols = ops.grad_input_phase(in_shape[3], OW, w.shape[3], sw,
                                                             pl, pw)
            reads = (OH - max(-top, 0) - max(-bottom, 0), OW - max(-left, 0) - max(-right, 0))
            if min(th, tw, rows, cols, *reads) < 1:
                continue                    # no tap reaches these positions: zero gradient
            phases.append(_kernel(ops.conv2d_grad_input_phase, g._data, w._data,
                                  out_shape=(N, in_shape[1], rows, cols),
                                  schedule=ops.schedule_conv2d, stride=geo.stride,
                                  taps=((fh, th), (fw, tw)), padding=(top, left, bottom, right),
                                  groups=geo.groups)._data)
            present.append((ph, pw))
    if not phases:
        return _kernel(ops.zeros, g._data, out_shape=in_shape, shape=tuple(in_shape))
    return _kernel(ops.interleave_phases, *phases, out_shape=in_shape, shape=tuple(in_shape),
                   stride=geo.stride, present=tuple(present))


class ConvGradWeight(Op):
    """The gradient of a convolution for its kernel, from the input and the output gradient."""

    @staticmethod
    def forward(ctx, x, g, w_shape, geo):
        ctx.save_for_backward(x, g)
        ctx.geo = geo
        return _kernel(ops.conv2d_grad_weight, x._data, g._data, out_shape=w_shape,
                       schedule=ops.schedule_conv2d_grad_weight,
                       kernel_size=tuple(w_shape[2:]), stride=geo.stride,
                       padding=geo.padding, dilation=geo.dilation, groups=geo.groups)

    @staticmethod
    def backward(ctx, ggw):
        x, g = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (ConvGradInput.apply(g, ggw, x.shape, ctx.geo) if need[0] else None,
                Convolution.apply(x, ggw, None, ctx.geo) if need[1] else None,
                None, None)


# ----------------------------------------------------------------------------- arguments

def _ntuple(value, n, what):
    """``value`` (an int or n ints) as a tuple of n ints, with PyTorch's message."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    values = tuple(value)
    if len(values) == 1:
        return (int(values[0]),) * n
    if len(values) != n or not all(isinstance(v, (int, np.integer)) for v in values):
        raise RuntimeError(f"expected {what} to be a single integer value or a list of {n} "
                           f"values to match the convolution dimensions, but got "
                           f"{what}={list(values)}")
    return tuple(int(v) for v in values)


def _shape(t):
    return "[" + ", ".join(str(n) for n in t.shape) + "]"


def _padding(padding, kernel, stride, dilation):
    """(before, after) per spatial dimension, from an int, a tuple, "valid" or "same"."""
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * len(kernel)
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        total = [d * (k - 1) for d, k in zip(dilation, kernel)]
        return [(t // 2, t - t // 2) for t in total]
    pads = _ntuple(padding, len(kernel), "padding")
    if any(p < 0 for p in pads):
        raise RuntimeError("negative padding is not supported")
    return [(p, p) for p in pads]


def _check_conv(name, x, w, bias, stride, dilation, groups, nd):
    """PyTorch's checks of conv{nd}d's operands."""
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}, but got input of size: {_shape(x)}")
    if w.ndim != nd + 2:
        raise RuntimeError(f"{name}: expected a {nd + 2}D weight (out_channels, in_channels / "
                           f"groups, {_KERNEL_AXES[nd]}), but got weight of "
                           f"size {_shape(w)}")
    if not x.is_floating_point():
        raise RuntimeError(f"{name}: expected a floating point input, got {x.dtype}")
    if x.dtype != w.dtype or (bias is not None and bias.dtype != x.dtype):
        other = w.dtype if w.dtype != x.dtype else bias.dtype
        raise RuntimeError(f"expected scalar type {torch_name(x.dtype)} but "
                           f"found {torch_name(other)}")
    if groups < 1:
        raise RuntimeError("non-positive groups is not supported")
    if any(s < 1 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d < 1 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size [{_shape(w)}] instead")
    channels = x.shape[-nd - 1]
    if channels != w.shape[1] * groups:
        batched = x if x.ndim == nd + 2 else x.unsqueeze(0)
        raise RuntimeError(f"Given groups={groups}, weight of size {_shape(w)}, expected "
                           f"input{_shape(batched)} to have {w.shape[1] * groups} channels, "
                           f"but got {channels} channels instead")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != w.shape[0]):
        raise RuntimeError(f"Given weight of size {_shape(w)}, expected bias to be 1-dimensional"
                           f" with {w.shape[0]} elements, but got bias of size {_shape(bias)} "
                           "instead")


def _check_size(x, w, pads, dilation):
    """The padded input must hold the dilated kernel."""
    padded = [n + lo + hi for n, (lo, hi) in zip(x.shape[2:], pads)]
    kernel = [d * (k - 1) + 1 for d, k in zip(dilation, w.shape[2:])]
    if any(p < k for p, k in zip(padded, kernel)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, kernel))}). Kernel size can't be greater "
                           "than actual input size")


def _arguments(name, nd, input, weight, bias, stride, padding, dilation, groups):
    """Check an ``nd``-d convolution's arguments as PyTorch does: (input with a batch axis,
    whether it had none, stride, (before, after) padding per axis, dilation)."""
    stride, dilation = _ntuple(stride, nd, "stride"), _ntuple(dilation, nd, "dilation")
    _check_conv(name, input, weight, bias, stride, dilation, groups, nd)
    pads = _padding(padding, weight.shape[2:], stride, dilation)
    unbatched = input.ndim == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    _check_size(x, weight, pads, dilation)
    return x, unbatched, stride, pads, dilation


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution of input (N, C, H, W) or (C, H, W) with weight (F, C / groups, kH, kW).

    ``padding``: an int, (pad_h, pad_w), "valid" (none) or "same" (the output as large as
    the input, stride 1; an odd total puts the extra row/column at the bottom/right).
    """
    x, unbatched, stride, pads, dilation = _arguments("conv2d", 2, input, weight, bias, stride,
                                                      padding, dilation, groups)
    geo = Geometry(stride, (pads[0][0], pads[1][0], pads[0][1], pads[1][1]), dilation, groups)
    out = Convolution.apply(x, weight, bias, geo)
    return out.squeeze(0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution of input (N, C, L) or (C, L) with weight (F, C / groups, k); the
    options as ``conv2d``'s. It runs as a 2-d convolution over rows of height 1."""
    x, unbatched, stride, pads, dilation = _arguments("conv1d", 1, input, weight, bias, stride,
                                                      padding, dilation, groups)
    geo = Geometry((1,) + stride, (0, pads[0][0], 0, pads[0][1]), (1,) + dilation, groups)
    out = Convolution.apply(x.unsqueeze(2), weight.unsqueeze(2), bias, geo).squeeze(2)
    return out.squeeze(0) if unbatched else out


def _depth_taps(x, taps, stride, dilation):
    """(N, C, D, H, W) -> (N * D', C * taps, H, W): for each output depth, the input depth
    slices its ``taps`` kernel depths read, as channels (channel c * taps + t)."""
    from .index import index_select
    N, C, D, H, W = x.shape
    OD = (D - dilation * (taps - 1) - 1) // stride + 1
    index = (np.arange(OD)[:, None] * stride + np.arange(taps)[None, :] * dilation).ravel()
    picked = index_select(x, 2, to_device(Tensor(index), x.device))
    picked = picked.reshape(N, C, OD, taps, H, W).permute(0, 2, 1, 3, 4, 5)
    return picked.reshape(N * OD, C * taps, H, W), OD


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution of input (N, C, D, H, W) or (C, D, H, W) with weight
    (F, C / groups, kD, kH, kW); the options as ``conv2d``'s, per (D, H, W). The depth taps
    become input channels of one 2-d convolution (see the module's docstring)."""
    x, unbatched, stride, pads, dilation = _arguments("conv3d", 3, input, weight, bias, stride,
                                                      padding, dilation, groups)
    if pads[0] != (0, 0):
        x = pad(x, (0, 0, 0, 0) + pads[0])
    N, F, KD = x.shape[0], weight.shape[0], weight.shape[2]
    taps, OD = _depth_taps(x, KD, stride[0], dilation[0])
    w = weight.reshape(F, weight.shape[1] * KD, *weight.shape[3:])
    geo = Geometry(stride[1:], (pads[1][0], pads[2][0], pads[1][1], pads[2][1]), dilation[1:],
                   groups)
    out = Convolution.apply(taps, w, bias, geo)
    out = out.reshape(N, OD, F, *out.shape[2:]).permute(0, 2, 1, 3, 4).contiguous()
    return out.squeeze(0) if unbatched else out


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """3-d transposed convolution of (N, C_in, D, H, W) or (C_in, D, H, W) with weight
    (C_in, C_out / groups, kD, kH, kW): a 2-d transposed convolution over (H, W) with the
    kernel's depth folded into its output channels, then each (input depth, kernel depth)
    pair added onto output depth ``d * stride - padding + k * dilation`` (a product with a
    0/1 matrix, so gradients come with it)."""
    from .conv_transpose import _check, conv_transpose2d, transpose_sizes
    _check("conv_transpose3d", input, weight, bias, groups, 3)
    stride, padding, output_padding, dilation = transpose_sizes(stride, padding,
                                                                output_padding, dilation, 3)
    unbatched = input.ndim == 4
    x = input.unsqueeze(0) if unbatched else input
    N, C, D, H, W = x.shape
    KD = weight.shape[2]
    OD = (D - 1) * stride[0] - 2 * padding[0] + dilation[0] * (KD - 1) + output_padding[0] + 1
    out_hw = [(n - 1) * s - 2 * p + d * (k - 1) + op + 1 for n, s, p, d, k, op in
              zip((H, W), stride[1:], padding[1:], dilation[1:], weight.shape[3:],
                  output_padding[1:])]
    if min([OD] + out_hw) < 1:
        raise RuntimeError(f"Given input size per channel: ({D} x {H} x {W}). Calculated output "
                           f"size per channel: ({OD} x {out_hw[0]} x {out_hw[1]}). Output size "
                           "is too small")
    w = weight.reshape(C, weight.shape[1] * KD, *weight.shape[3:])
    planes = x.permute(0, 2, 1, 3, 4).reshape(N * D, C, H, W)
    y = conv_transpose2d(planes, w, None, stride[1:], padding[1:], output_padding[1:], groups,
                         dilation[1:])                      # (N * D, C_out * KD, H', W')
    OH, OW = y.shape[2:]
    co = weight.shape[1] * groups
    y = y.reshape(N, D, co, KD, OH * OW).permute(0, 2, 4, 1, 3).reshape(N, co, OH * OW, D * KD)
    fold = np.zeros((D * KD, OD), dtype=np.dtype(str(x.dtype)))
    for d in range(D):
        for k in range(KD):
            o = d * stride[0] - padding[0] + k * dilation[0]
            if 0 <= o < OD:
                fold[d * KD + k, o] = 1
    out = (y @ to_device(Tensor(fold), x.device)).reshape(N, co, OH, OW, OD)
    out = out.permute(0, 1, 4, 2, 3).contiguous()
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    return out.squeeze(0) if unbatched else out


# ----------------------------------------------------------------------------- padding

class ConstantPadNd(Op):
    """Constant padding of the trailing dimensions; negative sizes crop."""

    @staticmethod
    def forward(ctx, x, pairs, value):
        ctx.pairs = pairs
        return _kernel(ops.pad_nd, x._data, out_shape=_padded_shape(x.shape, pairs),
                       pads=pairs, mode="constant", value=value)

    @staticmethod
    def backward(ctx, g):
        crop = tuple((-lo, -hi) for lo, hi in ctx.pairs)
        return ConstantPadNd.apply(g, crop, 0.0), None, None


class PadNd(Op):
    """Reflect, replicate or circular padding of the trailing dimensions."""

    @staticmethod
    def forward(ctx, x, pairs, mode):
        ctx.pairs, ctx.mode, ctx.shape = pairs, mode, x.shape
        return _kernel(ops.pad_nd, x._data, out_shape=_padded_shape(x.shape, pairs),
                       pads=pairs, mode=mode, value=0.0)

    @staticmethod
    def backward(ctx, g):
        return PadFold.apply(g, ctx.shape, ctx.pairs, ctx.mode), None, None


class PadFold(Op):
    """The gradient of ``PadNd``: each padded copy added back to its source, one dimension
    at a time; its own gradient is the padding again."""

    @staticmethod
    def forward(ctx, g, shape, pairs, mode):
        ctx.pairs, ctx.mode = pairs, mode
        data = g._data
        lead = len(shape) - len(pairs)
        for k, (lo, hi) in enumerate(pairs):
            axis = lead + k
            out_shape = data.shape[:axis] + (shape[axis],) + data.shape[axis + 1:]
            data = _kernel(ops.pad_fold, data, out_shape=out_shape, axis=axis,
                           size=shape[axis], before=lo, after=hi, mode=mode)._data
        return Tensor(data)

    @staticmethod
    def backward(ctx, gg):
        return PadNd.apply(gg, ctx.pairs, ctx.mode), None, None, None


def _padded_shape(shape, pairs):
    lead = len(shape) - len(pairs)
    return shape[:lead] + tuple(n + lo + hi for n, (lo, hi) in zip(shape[lead:], pairs))


_MODES = ("constant", "reflect", "replicate", "circular")


def _check_pad_mode(x, pad, mode):
    k = len(pad) // 2
    if not (1 <= k <= 3 and x.ndim in (k + 1, k + 2)):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {x.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    for j in range(k):
        dim = x.ndim - 1 - j
        lo, hi = pad[2 * j], pad[2 * j + 1]
        size = x.shape[dim]
        if mode == "reflect" and (lo >= size or hi >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension "
                               f"{dim} of input {_shape(x)}")
        if mode == "circular" and (lo > size or hi > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")


def pad(input, pad, mode="constant", value=None):
    """Pad the trailing dimensions of ``input``: ``pad`` is (last_before, last_after,
    second_last_before, ...), PyTorch's order. ``mode``: "constant" (``value``, default 0;
    negative sizes crop), "reflect", "replicate" or "circular"."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.ndim}")
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    # pairs for the padded dimensions, first to last
    pairs = tuple((pad[2 * j], pad[2 * j + 1]) for j in reversed(range(len(pad) // 2)))
    lead = input.ndim - len(pairs)
    for k, (lo, hi) in enumerate(pairs):
        if input.shape[lead + k] + lo + hi < 0:
            raise RuntimeError(f"pad: dimension {lead + k} of size {input.shape[lead + k]} "
                               f"padded by ({lo}, {hi}) would have a negative size")
    if mode == "constant":
        value = 0.0 if value is None else value
        value = float(value) if input.is_floating_point() else int(value)
        return ConstantPadNd.apply(input, pairs, value)
    if value is not None:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    _check_pad_mode(input, pad, mode)
    return PadNd.apply(input, pairs, mode)

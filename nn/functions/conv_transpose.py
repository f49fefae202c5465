"""Transposed convolution, as ``torch.nn.functional.conv_transpose2d`` / ``conv_transpose1d``.

A transposed convolution is the input gradient of a convolution: ``conv_transpose2d(x, w)``
with ``w`` (C_in, C_out / groups, kH, kW) is ``ConvGradInput`` (``nn/functions/conv.py``)
of a convolution whose weight is ``w`` (its C_in as the convolution's output channels) and
whose input has the transposed output's size. That node's backward is a convolution (for
``x``) and a kernel gradient (for ``w``), so gradients, and double backward, come with it.
"""
from __future__ import annotations

from .conv import ConvGradInput, Geometry, _ntuple

__all__ = ["conv_transpose2d", "conv_transpose1d"]


def _check(name, x, w, bias, groups, nd):
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(x.shape)}")
    if w.ndim != nd + 2:
        raise RuntimeError(f"{name}: expected a {nd + 2}D weight, got {list(w.shape)}")
    if groups < 1:
        raise RuntimeError("non-positive groups is not supported")
    channels = x.shape[-nd - 1]
    if channels != w.shape[0] or w.shape[0] % groups:
        raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected "
                           f"input{list(x.shape)} to have {w.shape[0]} channels, but got "
                           f"{channels} channels instead")
    if bias is not None and tuple(bias.shape) != (w.shape[1] * groups,):
        raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected bias "
                           f"to be 1-dimensional with {w.shape[1] * groups} elements, but got "
                           f"bias of size {list(bias.shape)} instead")


def transpose_sizes(stride, padding, output_padding, dilation, n):
    """The ``n``-tuples of a transposed convolution's sizes, checked as PyTorch does."""
    stride, padding = _ntuple(stride, n, "stride"), _ntuple(padding, n, "padding")
    output_padding = _ntuple(output_padding, n, "output_padding")
    dilation = _ntuple(dilation, n, "dilation")
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= s and op >= d:
            raise RuntimeError("output padding must be smaller than either stride or dilation,"
                               f" but got output_padding: {output_padding}, stride: {stride}, "
                               f"dilation: {dilation}")
    return stride, padding, output_padding, dilation


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """2-d transposed convolution of (N, C_in, H, W) or (C_in, H, W) with weight
    (C_in, C_out / groups, kH, kW); output size ``(H - 1) * stride - 2 * padding +
    dilation * (kH - 1) + output_padding + 1`` (likewise W)."""
    _check("conv_transpose2d", input, weight, bias, groups, 2)
    stride, padding, output_padding, dilation = transpose_sizes(stride, padding,
                                                                output_padding, dilation, 2)
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    N, _, H, W = x.shape
    out_hw = [(n - 1) * s - 2 * p + d * (k - 1) + op + 1 for n, s, p, d, k, op in
              zip((H, W), stride, padding, dilation, weight.shape[2:], output_padding)]
    if min(out_hw) < 1:
        raise RuntimeError(f"Given input size per channel: ({H} x {W}). Calculated output size "
                           f"per channel: ({out_hw[0]} x {out_hw[1]}). Output size is too small")
    out_shape = (N, weight.shape[1] * groups, *out_hw)
    geo = Geometry(stride, (padding[0], padding[1], padding[0], padding[1]), dilation, groups)
    out = ConvGradInput.apply(x, weight, out_shape, geo)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """1-d transposed convolution of (N, C_in, L) or (C_in, L) with weight
    (C_in, C_out / groups, k): a 2-d one over rows of height 1."""
    _check("conv_transpose1d", input, weight, bias, groups, 1)

    def one(v, name):
        return (1,) + _ntuple(v, 1, name)
    pad = (0,) + _ntuple(padding, 1, "padding")
    x = input.unsqueeze(-2)
    out = conv_transpose2d(x, weight.unsqueeze(2), bias, one(stride, "stride"), pad,
                           (0,) + _ntuple(output_padding, 1, "output_padding"), groups,
                           one(dilation, "dilation"))
    return out.squeeze(-2)

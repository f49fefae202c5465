"""2-D convolutions in NCHW layout (TVM's ``topi.nn.conv2d_nchw``, ``depthwise_conv2d_nchw``).

``stride`` and ``dilation`` are an int or (height, width); ``padding`` is an int, (height,
width), (top, left, bottom, right), or "SAME" / "VALID". The outputs are reductions tagged
``"conv2d_nchw"`` / ``"depthwise_conv2d_nchw"`` over a padded input (an ``"injective,pad"``
stage that schedules inline).
"""
from __future__ import annotations

from ... import expr as _expr
from ...arith import simplify
from ...reduce import sum as _sum
from ...tensor import Tensor, TEError, compute, reduce_axis
from ..utils import const_size
from .pad import pad


def _pair(opname, arg, value):
    items = (value, value) if isinstance(value, int) else tuple(value)
    if len(items) != 2 or any(not isinstance(v, int) or v < 1 for v in items):
        raise ValueError(f"topi.nn.{opname}: {arg} must be a positive int or two of them "
                         f"(height, width), got {value!r}")
    return items


def get_pad_tuple(padding, kernel):
    """(top, left, bottom, right) padding from ``padding`` and the (dilated) kernel size."""
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return 0, 0, 0, 0
        if padding.upper() == "SAME":
            kh, kw = kernel
            return (kh - 1) // 2, (kw - 1) // 2, kh - 1 - (kh - 1) // 2, \
                kw - 1 - (kw - 1) // 2
        raise ValueError(f"padding must be an int, a tuple, 'SAME' or 'VALID', got {padding!r}")
    if isinstance(padding, int):
        items = (padding,) * 4
    else:
        items = tuple(padding)
        if len(items) == 2:
            items = (items[0], items[1], items[0], items[1])
    if len(items) != 4 or any(not isinstance(v, int) or v < 0 for v in items):
        raise ValueError(f"padding must be an int >= 0, (height, width) or (top, left, "
                         f"bottom, right), got {padding!r}")
    return items


def _check(opname, arg, t, ndim, layout):
    if not isinstance(t, Tensor):
        raise TEError(f"topi.nn.{opname}: {arg} must be a te tensor, got "
                      f"{type(t).__name__} {t!r}")
    if len(t.shape) != ndim:
        raise ValueError(f"topi.nn.{opname}: {arg} {t.name} must be 4-D ({layout}), got "
                         f"shape {tuple(t.shape)}")


def _geometry(opname, data, kh, kw, stride, padding, dilation):
    sh, sw = _pair(opname, "stride", stride)
    dh, dw = _pair(opname, "dilation", dilation)
    dkh, dkw = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    try:
        top, left, bottom, right = get_pad_tuple(padding, (dkh, dkw))
    except ValueError as err:
        raise ValueError(f"topi.nn.{opname}: {err}") from None
    _, _, h, w = data.shape
    oh = simplify(_expr.floordiv(h + (top + bottom - dkh), sh) + 1)
    ow = simplify(_expr.floordiv(w + (left + right - dkw), sw) + 1)
    for size, axis in ((oh, "height"), (ow, "width")):
        if isinstance(size, _expr.IntImm) and size.value < 1:
            raise ValueError(f"topi.nn.{opname}: the output {axis} would be {size.value}: "
                             f"the dilated kernel ({dkh}x{dkw}) is larger than the padded "
                             f"input {data.name} ({h}x{w} with padding "
                             f"{(top, left, bottom, right)})")
    padded = pad(data, (0, 0, top, left), (0, 0, bottom, right), name="pad_temp")
    return padded, (sh, sw), (dh, dw), oh, ow


def conv2d_nchw(Input, Filter, stride, padding, dilation, out_dtype=None):
    """``out[n, f, y, x] = sum_{c, ky, kx} in[n, c, y*sh + ky*dh, x*sw + kx*dw] *
    Filter[f, c, ky, kx]`` over the zero-padded input; Filter is (F, C, KH, KW)."""
    _check("conv2d_nchw", "Input", Input, 4, "NCHW")
    _check("conv2d_nchw", "Filter", Filter, 4, "OIHW")
    out_dtype = out_dtype or Input.dtype
    batch, channels, _, _ = Input.shape
    filters, fchannels, kh, kw = Filter.shape
    kh, kw = const_size(kh), const_size(kw)
    if not isinstance(kh, int) or not isinstance(kw, int):
        raise ValueError("topi.nn.conv2d_nchw: the kernel size of Filter must be constant")
    if const_size(fchannels) != const_size(channels):
        raise ValueError(f"topi.nn.conv2d_nchw: Filter {Filter.name} has {fchannels} input "
                         f"channels (dimension 1) but Input {Input.name} has {channels}")
    padded, (sh, sw), (dh, dw), oh, ow = _geometry("conv2d_nchw", Input, kh, kw, stride,
                                                   padding, dilation)
    rc = reduce_axis((0, channels), name="rc")
    ry = reduce_axis((0, kh), name="ry")
    rx = reduce_axis((0, kw), name="rx")
    return compute(
        (batch, filters, oh, ow),
        lambda nn, ff, yy, xx: _sum(
            padded[nn, rc, yy * sh + ry * dh, xx * sw + rx * dw].astype(out_dtype)
            * Filter[ff, rc, ry, rx].astype(out_dtype), axis=[rc, ry, rx]),
        name="conv2d_nchw", tag="conv2d_nchw")


def conv2d(input, filter, strides, padding, dilation, layout="NCHW", out_dtype=None):
    """``conv2d_nchw`` for ``layout="NCHW"`` (the only layout here)."""
    if layout != "NCHW":
        raise ValueError(f"topi.nn.conv2d: layout {layout!r} is not supported; use 'NCHW'")
    return conv2d_nchw(input, filter, strides, padding, dilation, out_dtype)


def depthwise_conv2d_nchw(Input, Filter, stride, padding, dilation, out_dtype=None):
    """Each input channel ``c`` convolved with its own ``M`` filters: Filter is (C, M, KH,
    KW) and output channel ``c * M + m`` holds filter ``m`` of channel ``c``."""
    _check("depthwise_conv2d_nchw", "Input", Input, 4, "NCHW")
    _check("depthwise_conv2d_nchw", "Filter", Filter, 4, "C, multiplier, KH, KW")
    out_dtype = out_dtype or Input.dtype
    batch, channels, _, _ = Input.shape
    fchannels, multiplier, kh, kw = Filter.shape
    kh, kw, m = const_size(kh), const_size(kw), const_size(multiplier)
    if not all(isinstance(v, int) for v in (kh, kw, m)):
        raise ValueError("topi.nn.depthwise_conv2d_nchw: the kernel size and channel "
                         "multiplier of Filter must be constant")
    if const_size(fchannels) != const_size(channels):
        raise ValueError(f"topi.nn.depthwise_conv2d_nchw: Filter {Filter.name} has "
                         f"{fchannels} channels (dimension 0) but Input {Input.name} has "
                         f"{channels}")
    padded, (sh, sw), (dh, dw), oh, ow = _geometry("depthwise_conv2d_nchw", Input, kh, kw,
                                                   stride, padding, dilation)
    di = reduce_axis((0, kh), name="di")
    dj = reduce_axis((0, kw), name="dj")
    return compute(
        (batch, simplify(_expr.convert(channels * m)), oh, ow),
        lambda b, c, i, j: _sum(
            padded[b, _expr.floordiv(c, m), i * sh + di * dh, j * sw + dj * dw]
            .astype(out_dtype)
            * Filter[_expr.floordiv(c, m), _expr.floormod(c, m), di, dj].astype(out_dtype),
            axis=[di, dj]),
        name="DepthwiseConv2d", tag="depthwise_conv2d_nchw")

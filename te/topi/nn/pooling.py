"""Pooling in NCHW layout (TVM's ``topi.nn.pool2d``, ``global_pool``): max or average over
windows; padded positions never win a max and, with ``count_include_pad``, count in the
average's divisor (as TVM's and PyTorch's)."""
from __future__ import annotations

from ... import expr as _expr
from ... import reduce as _reduce
from ...arith import simplify
from ...tensor import Tensor, TEError, compute, reduce_axis
from ..utils import const_size
from .pad import pad


def _check(opname, data, layout):
    if not isinstance(data, Tensor):
        raise TEError(f"topi.nn.{opname}: data must be a te tensor, got "
                      f"{type(data).__name__} {data!r}")
    if layout != "NCHW":
        raise ValueError(f"topi.nn.{opname}: layout {layout!r} is not supported; use 'NCHW'")
    if len(data.shape) != 4:
        raise ValueError(f"topi.nn.{opname}: data {data.name} must be 4-D (NCHW), got shape "
                         f"{tuple(data.shape)}")


def _pool_type(opname, pool_type):
    if pool_type not in ("max", "avg"):
        raise ValueError(f"topi.nn.{opname}: pool_type must be 'max' or 'avg', got "
                         f"{pool_type!r}")


def _ints(opname, arg, value, count, least):
    items = tuple(value) if isinstance(value, (list, tuple)) else (value,) * count
    if len(items) != count or any(not isinstance(v, int) or v < least for v in items):
        raise ValueError(f"topi.nn.{opname}: {arg} must be {count} ints >= {least}, got "
                         f"{value!r}")
    return items


def pool2d(data, kernel, stride, dilation, padding, pool_type, ceil_mode=False,
           layout="NCHW", count_include_pad=True):
    """Max or average pooling over ``kernel`` windows; ``padding`` is (top, left, bottom,
    right); ``ceil_mode`` rounds the output size up (the extra windows see padding)."""
    _check("pool2d", data, layout)
    _pool_type("pool2d", pool_type)
    kh, kw = _ints("pool2d", "kernel", kernel, 2, 1)
    sh, sw = _ints("pool2d", "stride", stride, 2, 1)
    dh, dw = _ints("pool2d", "dilation", dilation, 2, 1)
    top, left, bottom, right = _ints("pool2d", "padding", padding, 4, 0)
    n, c, h, w = data.shape
    h, w = const_size(h), const_size(w)
    if not isinstance(h, int) or not isinstance(w, int):
        raise ValueError("topi.nn.pool2d: the height and width of data must be constant")
    dkh, dkw = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    extra = []
    sizes = []
    for size, lo, hi, dk, s, axis in ((h, top, bottom, dkh, sh, "height"),
                                      (w, left, right, dkw, sw, "width")):
        span = size + lo + hi - dk
        if span < 0:
            raise ValueError(f"topi.nn.pool2d: the dilated kernel ({dk}) is larger than the "
                             f"padded {axis} of data {data.name} ({size} + {lo} + {hi})")
        out = (span + s - 1) // s + 1 if ceil_mode else span // s + 1
        extra.append((out - 1) * s + dk - (size + lo + hi))     # ceil_mode's extra padding
        sizes.append(out)
    oh, ow = sizes
    low = _reduce.min_value(data.dtype) if pool_type == "max" else _expr.const(0, data.dtype)
    padded = pad(data, (0, 0, top, left), (0, 0, bottom + max(extra[0], 0),
                                           right + max(extra[1], 0)),
                 pad_value=low.value, name="pad_temp")
    ry = reduce_axis((0, kh), name="rv0")
    rx = reduce_axis((0, kw), name="rv1")

    def window(b, ch, y, x):
        return padded[b, ch, y * sh + ry * dh, x * sw + rx * dw]
    if pool_type == "max":
        return compute((n, c, oh, ow), lambda b, ch, y, x: _reduce.max(window(b, ch, y, x),
                                                                       axis=[ry, rx]),
                       name="pool_max", tag="pool_max")
    total = compute((n, c, oh, ow), lambda b, ch, y, x: _reduce.sum(window(b, ch, y, x),
                                                                    axis=[ry, rx]),
                    name="pool_sum", tag="pool_sum")

    def count(o, s, lo, size, hi, k, d):
        start = o * s - lo
        end = start + (k - 1) * d
        if count_include_pad:
            end = _expr.binary(_expr.Min, end, size + hi - 1)
            return simplify(_expr.floordiv(end - start, d) + 1)
        first = _expr.binary(_expr.Max, start, 0)
        # the first tap at or after position 0, and the last at or before size - 1
        first_tap = _expr.floordiv(first - start + d - 1, d)
        last = _expr.binary(_expr.Min, end, size - 1)
        last_tap = _expr.floordiv(last - start, d)
        return _expr.binary(_expr.Max, last_tap - first_tap + 1, 1)

    def average(b, ch, y, x):
        taps = count(y, sh, top, h, bottom, kh, dh) * count(x, sw, left, w, right, kw, dw)
        return total[b, ch, y, x] / taps.astype(data.dtype)
    return compute((n, c, oh, ow), average, name="pool_avg", tag="elemwise,pool_avg")


def global_pool(data, pool_type, layout="NCHW"):
    """The max or average of each channel over its whole height and width: (N, C, 1, 1)."""
    _check("global_pool", data, layout)
    _pool_type("global_pool", pool_type)
    n, c, h, w = data.shape
    ry = reduce_axis((0, h), name="rv0")
    rx = reduce_axis((0, w), name="rv1")
    if pool_type == "max":
        return compute((n, c, 1, 1), lambda b, ch, y, x: _reduce.max(data[b, ch, ry, rx],
                                                                     axis=[ry, rx]),
                       name="adaptive_pool_max", tag="adaptive_pool_max")
    total = compute((n, c, 1, 1), lambda b, ch, y, x: _reduce.sum(data[b, ch, ry, rx],
                                                                  axis=[ry, rx]),
                    name="adaptive_pool_sum", tag="adaptive_pool_sum")
    area = simplify(_expr.convert(h * w))
    return compute((n, c, 1, 1), lambda *i: total[i] / area.astype(data.dtype),
                   name="adaptive_pool_avg", tag="elemwise")

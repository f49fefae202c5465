"""Padding: TVM's ``topi.nn.pad`` (constant, every axis) and ``pad_nd`` (the trailing axes in
constant, reflect, replicate or circular mode; nn.ops's declaration)."""
from __future__ import annotations

from ... import expr as _expr
from ... import intrin as _intrin
from ...tensor import Tensor, TEError, compute
from ..utils import const_shape, const_size


def pad(data, pad_before, pad_after=None, pad_value=0.0, name="PadInput"):
    """``data`` with ``pad_before[d]`` elements of ``pad_value`` before and ``pad_after[d]``
    after each dimension ``d`` (``pad_after`` defaults to ``pad_before``). Tagged
    ``"injective,pad"``."""
    if not isinstance(data, Tensor):
        raise TEError(f"topi.nn.pad: data must be a te tensor, got {type(data).__name__}")
    ndim = len(data.shape)
    pad_before = list(pad_before)
    pad_after = list(pad_after) if pad_after is not None else list(pad_before)
    for arg, pads in (("pad_before", pad_before), ("pad_after", pad_after)):
        if len(pads) != ndim:
            raise ValueError(f"topi.nn.pad: {arg} has {len(pads)} entries but data "
                             f"{data.name} has {ndim} dimensions; give one per dimension")
        for d, p in enumerate(pads):
            if isinstance(p, int) and p < 0:
                raise ValueError(f"topi.nn.pad: {arg}[{d}] = {p}; padding must be >= 0")
    shape = [data.shape[d] + pad_before[d] + pad_after[d] for d in range(ndim)]
    from ...arith import simplify
    shape = [simplify(_expr.convert(s)) for s in shape]
    value = _expr.cast(data.dtype, pad_value)

    def body(*idx):
        inside, src = [], []
        for d, i in enumerate(idx):
            lo, n = pad_before[d], data.shape[d]
            if const_size(lo) == 0 and const_size(pad_after[d]) == 0:
                src.append(i)
                continue
            k = i - lo
            inside.append(_expr.all_(k >= 0, k < n))
            # the index is clamped too: a vectorized select may read both sides
            src.append(_expr.binary(_expr.Min, _expr.binary(_expr.Max, k, 0), n - 1))
        if not inside:
            return data[tuple(src)]
        return _intrin.if_then_else(_expr.all_(*inside), data[tuple(src)], value)
    return compute(shape, body, name=name, tag="injective,pad")


def _min(a, b):
    return _expr.binary(_expr.Min, a, b)


def _max(a, b):
    return _expr.binary(_expr.Max, a, b)


def _source(i, size, lo, mode):
    """(index into the input, whether it is inside) for output index ``i`` of one axis."""
    src = i - lo
    if mode == "constant":
        inside = _expr.all_(src >= 0, src < size)
        return _min(_max(src, 0), size - 1), inside
    if mode == "reflect":
        src = _intrin.abs(src) if size > 1 else src * 0
        return _min(src, 2 * (size - 1) - src) if size > 1 else src, None
    if mode == "replicate":
        return _min(_max(src, 0), size - 1), None
    return src % size, None                                 # circular


def pad_nd(x, pads=(), mode="constant", value=0.0):
    """``x`` padded along its trailing axes: ``pads`` is ((before, after), ...) for the last
    len(pads) axes, first to last; negative sizes crop (constant mode)."""
    shape = const_shape(x, "pad")
    lead = len(shape) - len(pads)
    out_shape = shape[:lead] + tuple(n + lo + hi for n, (lo, hi) in zip(shape[lead:], pads))

    def body(*idx):
        src, inside = list(idx[:lead]), []
        for i, n, (lo, _) in zip(idx[lead:], shape[lead:], pads):
            k, ok = _source(i, n, lo, mode)
            src.append(k)
            if ok is not None:
                inside.append(ok)
        v = x[tuple(src)]
        if not inside:
            return v
        return _intrin.if_then_else(_expr.all_(*inside), v, _expr.const(value, x.dtype))
    return compute(out_shape, body, name="pad", tag="elemwise")

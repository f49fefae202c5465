"""Constant padding (TVM's ``topi.nn.pad``)."""
from __future__ import annotations

from ... import expr as _expr
from ... import intrin as _intrin
from ...tensor import Tensor, TEError, compute
from ..utils import const_size


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

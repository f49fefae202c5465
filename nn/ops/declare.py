"""te declarations of the tensor layer's operators that the CPU library does not have:
comparisons, a scalar power, a cast, a broadcast copy, argmax. Elementwise ones take the
default injective schedule of ``cpu.build``.
"""
from __future__ import annotations

import numpy as np

import te

from . import cpu

__all__ = ["cmp_lt", "cmp_le", "cmp_gt", "cmp_ge", "cmp_eq", "cmp_ne", "power_scalar", "astype",
           "broadcast_to", "argmax"]


def _compare(fn, name):
    def declare(a, b):
        return cpu.broadcast(fn, a, b, name=name)
    declare.__name__ = name
    return declare


cmp_lt = _compare(lambda x, y: x < y, "lt")
cmp_le = _compare(lambda x, y: x <= y, "le")
cmp_gt = _compare(lambda x, y: x > y, "gt")
cmp_ge = _compare(lambda x, y: x >= y, "ge")
cmp_eq = _compare(lambda x, y: x.equal(y), "eq")
cmp_ne = _compare(lambda x, y: x.not_equal(y), "ne")


def power_scalar(x, exponent):
    """``x ** exponent`` for a constant exponent."""
    return cpu.broadcast(lambda v: te.power(v, te.const(exponent, x.dtype)), x, name="power")


def astype(x, to):
    """``x`` converted to dtype ``to``."""
    return te.compute(x.shape, lambda *i: x[i].astype(to), name="cast", tag="elemwise")


def broadcast_to(x, shape):
    """``x`` repeated along its size-1 (and missing leading) axes up to ``shape``."""
    lead = len(shape) - len(x.shape)

    def body(*idx):
        return x[tuple(0 if x.shape[k].value == 1 and shape[lead + k] != 1 else idx[lead + k]
                       for k in range(len(x.shape)))]
    return te.compute(shape, body, name="broadcast_to", tag="elemwise")


def argmax(x, axis, keepdims=False):
    """The first index of the maximum along ``axis`` (int64), as numpy's ``argmax``."""
    top = cpu.max(x, axis=axis, keepdims=True)
    k = te.reduce_axis((0, x.shape[axis]), name="k")
    never = te.const(np.iinfo("int64").max, "int64")

    def body(*idx):
        full = list(idx) if keepdims else list(idx[:axis]) + [0] + list(idx[axis:])
        src = full[:axis] + [k] + full[axis + 1:]
        at_top = full[:axis] + [0] + full[axis + 1:]
        hit = x[tuple(src)].equal(top[tuple(at_top)])
        return te.min(te.select(hit, k.var.astype("int64"), never), axis=k)
    shape = [1 if d == axis else x.shape[d] for d in range(len(x.shape))
             if keepdims or d != axis]
    return te.compute(shape, body, name="argmax")

"""Softmax along an axis (TVM's ``topi.nn.softmax``, ``log_softmax``), numerically stable:
the row maximum is subtracted before the exponentials. ``softmax`` is also ``nn.ops``'s
declaration; its stages are tagged ``"softmax_reduce"`` (maximum, sum), ``"softmax_exp"`` and
``"softmax"`` (the output), which the schedules look for."""
from __future__ import annotations

from ... import intrin as _intrin
from ... import reduce as _reduce
from ...tensor import Tensor, TEError, compute, reduce_axis
from ..reduction import normalize_axes


def _check(opname, x):
    if not isinstance(x, Tensor):
        raise TEError(f"topi.nn.{opname}: x must be a te tensor, got {type(x).__name__} "
                      f"{x!r}")
    if len(x.shape) == 0:
        raise ValueError(f"topi.nn.{opname}: x {x.name} is 0-d; it needs an axis")


def _row_reducer(x, axis, name):
    def reduce_row(fn, src, rname):
        k = reduce_axis((0, x.shape[axis]), name="k")

        def body(*idx):
            return fn(src[idx[:axis] + (k,) + idx[axis:]], axis=k)
        shape = list(x.shape[:axis]) + list(x.shape[axis + 1:])
        return compute(shape, body, name=f"{name}.{rname}", tag="softmax_reduce")
    return reduce_row


def softmax(x, axis=-1, name="softmax"):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``."""
    _check("softmax", x)
    ndim = len(x.shape)
    (axis,) = normalize_axes(axis, ndim, name)

    def without(idx):
        return idx[:axis] + idx[axis + 1:]
    reduce_row = _row_reducer(x, axis, name)
    xmax = reduce_row(_reduce.max, x, "max")
    e = compute(x.shape, lambda *i: _intrin.exp(x[i] - xmax[without(i)]), name=f"{name}.exp",
                tag="softmax_exp")
    esum = reduce_row(_reduce.sum, e, "sum")
    return compute(x.shape, lambda *i: e[i] / esum[without(i)], name=name, tag="softmax",
                   attrs={"axis": axis})


def log_softmax(x, axis=-1, name="log_softmax"):
    """``x - max - log(sum(exp(x - max)))`` along ``axis``."""
    _check("log_softmax", x)
    ndim = len(x.shape)
    (axis,) = normalize_axes(axis, ndim, name)

    def without(idx):
        return idx[:axis] + idx[axis + 1:]
    reduce_row = _row_reducer(x, axis, name)
    xmax = reduce_row(_reduce.max, x, "max")
    e = compute(x.shape, lambda *i: _intrin.exp(x[i] - xmax[without(i)]), name=f"{name}.exp",
                tag="softmax_exp")
    esum = reduce_row(_reduce.sum, e, "sum")
    return compute(x.shape, lambda *i: x[i] - xmax[without(i)] - _intrin.log(esum[without(i)]),
                   name=name, tag="log_softmax", attrs={"axis": axis})

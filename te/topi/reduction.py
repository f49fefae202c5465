"""Reductions over axes (TVM's ``topi.reduction``): ``sum``, ``max``, ``min``, ``prod``,
``argmax``, ``argmin``, ``all``, ``any``. ``axis`` is an int, a tuple of ints or None (all
axes); ``keepdims`` keeps the reduced axes with size 1. The outputs are tagged
``"comm_reduce"`` (``"comm_reduce_idx"`` for argmax/argmin). ``comm_reduce`` is the
declaration they share with ``nn.ops``.
"""
from __future__ import annotations

import numbers
import operator

from .. import dtypes
from .. import reduce as _reduce
from ..expr import all_, any_, const, select
from ..tensor import Tensor, TEError, compute, reduce_axis
from . import tag as _tag

__all__ = ["normalize_axes", "comm_reduce", "sum", "max", "min", "prod", "argmax", "argmin",
           "all", "any"]


def normalize_axes(axis, ndim, what) -> tuple:
    """``axis`` (an int, a sequence of ints or None for all) as sorted non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    items = [axis] if isinstance(axis, numbers.Integral) else list(axis)
    out = []
    for a in items:
        try:
            a = operator.index(a)
        except TypeError:
            raise ValueError(f"{what}: axis {a!r} must be an int") from None
        if not -ndim <= a < ndim:
            raise ValueError(f"{what}: axis {a} is out of range for {ndim} dimensions")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: axis {axis} repeats an axis")
    return tuple(sorted(out))


def comm_reduce(x, axis, keepdims, reducer, name, tag=_tag.COMM_REDUCE, what=None):
    """``reducer`` over ``axis`` of ``x``; the output's ``attrs`` record the axes reduced."""
    ndim = len(x.shape)
    axes = normalize_axes(axis, ndim, what or name)
    raxes = {a: reduce_axis((0, x.shape[a]), name=f"k{a}") for a in axes}
    out_shape = [1 if d in axes else x.shape[d] for d in range(ndim)
                 if keepdims or d not in axes]

    def body(*idx):
        it = iter(idx)
        full = []
        for d in range(ndim):
            if d in axes:
                full.append(raxes[d])
                if keepdims:
                    next(it)
            else:
                full.append(next(it))
        return reducer(x[tuple(full)], axis=[raxes[a] for a in axes])
    return compute(out_shape, body, name=name, tag=tag, attrs={"axes": axes, "ndim": ndim})


def _check(opname, data):
    if not isinstance(data, Tensor):
        raise TEError(f"topi.{opname}: data must be a te tensor, got {type(data).__name__} "
                      f"{data!r}")


def _reduction(opname, reducer):
    def op(data, axis=None, keepdims=False):
        _check(opname, data)
        if len(data.shape) == 0:
            raise ValueError(f"topi.{opname}(data, axis): data {data.name} is 0-d; there is "
                             "no axis to reduce")
        return comm_reduce(data, axis, keepdims, reducer, f"{data.name}_red",
                           what=f"topi.{opname}(data, axis={axis!r})")
    op.__name__ = opname
    op.__doc__ = f"The {opname} of ``data`` over ``axis`` (None: every axis)."
    return op


sum = _reduction("sum", _reduce.sum)
max = _reduction("max", _reduce.max)
min = _reduction("min", _reduce.min)
prod = _reduction("prod", _reduce.prod)


def _flag_reduction(opname, reducer):
    def op(data, axis=None, keepdims=False):
        _check(opname, data)
        flags = compute(data.shape, lambda *i: (data[i] if dtypes.is_bool(data.dtype)
                                                else data[i].not_equal(0)).astype("int8"),
                        name=f"T_{opname}_flags", tag=_tag.ELEMWISE)
        red = comm_reduce(flags, axis, keepdims, reducer, f"{data.name}_red",
                          what=f"topi.{opname}(data, axis={axis!r})")
        return compute(red.shape, lambda *i: red[i].not_equal(0), name=f"T_{opname}",
                       tag=_tag.ELEMWISE)
    op.__name__ = opname
    op.__doc__ = f"Whether {'every' if opname == 'all' else 'some'} element over ``axis`` is " \
                 "true (nonzero), as bool."
    return op


all = _flag_reduction("all", _reduce.min)
any = _flag_reduction("any", _reduce.max)


def _arg_combine(better):
    # the first index wins a tie, whatever order partial results are combined in
    def combine(acc, new):
        take_new = any_(better(new[1], acc[1]),
                        all_(new[1].equal(acc[1]), new[0] < acc[0]))
        return (select(take_new, new[0], acc[0]), select(take_new, new[1], acc[1]))
    return combine


def _arg_reducer(name, better, worst):
    return _reduce.comm_reducer(_arg_combine(better),
                                lambda ti, tv: (const(-1, ti), worst(tv)), name=name)


def _lowest(t):
    return const(float("-inf"), t) if dtypes.is_float(t) else const(dtypes.min_value(t), t)


def _highest(t):
    return const(float("inf"), t) if dtypes.is_float(t) else const(dtypes.max_value(t), t)


_argmax = _arg_reducer("argmax", lambda a, b: a > b, _lowest)
_argmin = _arg_reducer("argmin", lambda a, b: a < b, _highest)


def _arg_extremum(opname, reducer, data, axis, keepdims):
    _check(opname, data)
    ndim = len(data.shape)
    if axis is not None and not isinstance(axis, int):
        axes = normalize_axes(axis, ndim, f"topi.{opname}(data, axis={axis!r})")
        if len(axes) != 1:
            raise ValueError(f"topi.{opname}(data, axis={axis!r}): give one axis (or None "
                             "for the flattened tensor)")
        axis = axes[0]
    if axis is None:
        from .transform import reshape
        total = 1
        for d in data.shape:
            total = total * d
        out = _arg_extremum(opname, reducer, reshape(data, (total,)), 0, False)
        if keepdims:
            out = reshape(out, (1,) * ndim)
        return out
    (axis,) = normalize_axes(axis, ndim, f"topi.{opname}(data, axis={axis!r})")
    k = reduce_axis((0, data.shape[axis]), name="k")

    def body(*idx):
        full = list(idx) if keepdims else list(idx[:axis]) + [0] + list(idx[axis:])
        src = tuple(full[:axis] + [k] + full[axis + 1:])
        return reducer((k.var.astype("int32"), data[src]), axis=k)
    shape = [1 if d == axis else data.shape[d] for d in range(ndim) if keepdims or d != axis]
    index, _ = compute(shape, body, name=f"T_{opname}", tag=_tag.COMM_REDUCE_IDX)
    return index


def argmax(data, axis=None, keepdims=False):
    """The index of the largest element along ``axis`` (the first one where they tie)."""
    return _arg_extremum("argmax", _argmax, data, axis, keepdims)


def argmin(data, axis=None, keepdims=False):
    """The index of the smallest element along ``axis`` (the first one where they tie)."""
    return _arg_extremum("argmin", _argmin, data, axis, keepdims)


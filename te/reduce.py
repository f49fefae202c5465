"""Commutative reducers: ``te.sum``, ``te.max``, ``te.min`` and user-made ``comm_reducer``.

A reducer called with an axis builds a ``Reduce`` node (one per value for tuple reducers such as
argmax); called with two expressions and no reduce axis it combines them elementwise.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import dtypes
from .expr import Expr, Max, Min, Reduce, Var, binary, const, convert
from .functor import substitute
from .tensor import COMM_REDUCE, IterVar, TEError


@dataclass(frozen=True, eq=False, repr=False)
class CommReducer:
    """``result`` combines ``lhs`` (the accumulator) with ``rhs`` (a new value)."""
    name: str
    lhs: tuple
    rhs: tuple
    result: tuple
    identity: tuple

    def combine(self, acc, new) -> tuple:
        vmap = dict(zip(self.lhs, acc))
        vmap.update(zip(self.rhs, new))
        return tuple(substitute(r, vmap) for r in self.result)

    def __repr__(self):
        return f"CommReducer({self.name})"


def _axes(axis, reducer_name):
    items = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    for a in items:
        if not isinstance(a, IterVar) or a.iter_type != COMM_REDUCE:
            raise TEError(f"te.{reducer_name}: axis {a!r} is not a reduce axis; create it with "
                          "te.reduce_axis((begin, end), name=...)")
    if not items:
        raise TEError(f"te.{reducer_name}: give at least one reduce axis")
    return tuple(items)


def _values(reducer_name, what, got, count) -> tuple:
    """The ``count`` expressions that a reducer's ``what`` function returned, or a TEError."""
    items = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    if len(items) != count:
        form = (f"a tuple of {count} values, one per reduced value" if count > 1
                else "one value, not a tuple")
        raise TEError(f"te.{reducer_name}: the {what} function must return {form}; "
                      f"it returned {got!r}")
    return tuple(convert(i) for i in items)


def comm_reducer(fcombine, fidentity, name="reduce"):
    """Make a reducer from ``fcombine(x, y)`` and ``fidentity(dtype, ...)``."""

    def reducer(expr, axis=None, where=None, init=None):
        if axis is not None and not isinstance(axis, (IterVar, list, tuple)):
            return fcombine(convert(expr), convert(axis))       # elementwise form: max(a, b)
        if axis is None:
            raise TEError(f"te.{name} needs axis=<reduce axis> (or two expressions to combine)")
        axes = _axes(axis, name)
        is_tuple = isinstance(expr, (tuple, list))
        source = tuple(convert(e) for e in (expr if is_tuple else (expr,)))
        types = [s.dtype for s in source]
        lhs = tuple(Var(f"x{k}" if is_tuple else "x", t) for k, t in enumerate(types))
        rhs = tuple(Var(f"y{k}" if is_tuple else "y", t) for k, t in enumerate(types))
        result = fcombine(lhs, rhs) if is_tuple else fcombine(lhs[0], rhs[0])
        result = _values(name, "combine", result, len(source))
        ident = _values(name, "identity", fidentity(*types), len(source))
        result = tuple(r if r.dtype == t else r.astype(t) for r, t in zip(result, types))
        ident = tuple(i if i.dtype == t else i.astype(t) for i, t in zip(ident, types))
        combiner = CommReducer(name, lhs, rhs, result, ident)
        cond = const(True) if where is None else convert(where)
        inits = () if init is None else tuple(
            convert(i) for i in (init if isinstance(init, (tuple, list)) else (init,)))
        outs = tuple(Reduce(combiner, source, axes, cond, k, types[k], inits)
                     for k in range(len(source)))
        return outs if is_tuple else outs[0]

    reducer.__name__ = name
    reducer.__doc__ = f"The {name} reduction over ``axis`` (optionally only where ``where``)."
    return reducer


sum = comm_reducer(lambda x, y: x + y, lambda t: const(0, t), name="sum")
max = comm_reducer(lambda x, y: binary(Max, x, y),
                   lambda t: const(dtypes.min_value(t), t), name="max")
min = comm_reducer(lambda x, y: binary(Min, x, y),
                   lambda t: const(dtypes.max_value(t), t), name="min")
prod = comm_reducer(lambda x, y: x * y, lambda t: const(1, t), name="prod")


def min_value(dtype) -> Expr:
    """The smallest value of ``dtype`` (the identity of ``max``)."""
    dtype = dtypes.canonical(dtype)
    return const(dtypes.min_value(dtype), dtype)


def max_value(dtype) -> Expr:
    """The largest value of ``dtype`` (the identity of ``min``)."""
    dtype = dtypes.canonical(dtype)
    return const(dtypes.max_value(dtype), dtype)

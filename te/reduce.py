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
    return _reducer(fcombine, fidentity, name, fcombine)


def _reducer(fcombine, fidentity, name, faccumulate):
    """A reducer whose elementwise form is ``fcombine(a, b)`` and whose reduction combines
    the accumulator ``x`` with a new value ``y`` as ``faccumulate(x, y)`` (the same function
    in another operand order for max and min)."""

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
        result = faccumulate(lhs, rhs) if is_tuple else faccumulate(lhs[0], rhs[0])
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


def _accumulate(cls):
    """How max and min combine an accumulator with a new value. For floats the new value
    comes first: the backends NaN-check the first operand, which is then off the
    accumulator's dependency chain (a float32 row-max ran 1.5x slower the other way round);
    the result is the same but for the sign of a zero when -0.0 and 0.0 tie."""
    return lambda acc, new: binary(cls, new, acc) if dtypes.is_float(acc.dtype) else \
        binary(cls, acc, new)


def _lowest(t):
    """The identity of max: -inf for floats (so that a row of -inf reduces to -inf)."""
    return const(float("-inf") if dtypes.is_float(t) else dtypes.min_value(t), t)


def _highest(t):
    """The identity of min: inf for floats."""
    return const(float("inf") if dtypes.is_float(t) else dtypes.max_value(t), t)


sum = comm_reducer(lambda x, y: x + y, lambda t: const(0, t), name="sum")
max = _reducer(lambda x, y: binary(Max, x, y), _lowest, "max", _accumulate(Max))
min = _reducer(lambda x, y: binary(Min, x, y), _highest, "min", _accumulate(Min))
max.__doc__ = """The largest value over ``axis`` (``te.max(expr, axis=k)``), or the larger of two
expressions (``te.max(a, b)``). Floats propagate NaN, as numpy's ``np.maximum`` / ``np.max`` and
PyTorch's ``torch.maximum`` / ``torch.amax``: the result is NaN if any operand is NaN, wherever
it is, on every backend (CPU, GPU, interpreter). ``te.max(a, b)`` returns ``b`` when the two
are equal, so ``te.max(-0.0, 0.0)`` is ``0.0`` and ``te.max(0.0, -0.0)`` is ``-0.0``, as
``np.maximum`` on float32 and float64 (float16 too, where numpy returns ``a``); the sign of
a zero maximum of a reduction is unspecified. The identity (the result of an empty
reduction) is ``-inf`` for floats and the smallest value for integers."""
min.__doc__ = """The smallest value over ``axis`` (``te.min(expr, axis=k)``), or the smaller of
two expressions (``te.min(a, b)``). Floats propagate NaN, as numpy's ``np.minimum`` /
``np.min`` and PyTorch's ``torch.minimum`` / ``torch.amin``: the result is NaN if any operand
is NaN, on every backend. ``te.min(a, b)`` returns ``b`` when the two are equal
(``te.min(0.0, -0.0)`` is ``-0.0``, as ``np.minimum``); the sign of a zero minimum of a
reduction is unspecified. The identity is ``inf`` for floats, the largest value for integers."""
prod = comm_reducer(lambda x, y: x * y, lambda t: const(1, t), name="prod")


def min_value(dtype) -> Expr:
    """The lowest finite value of ``dtype``, as TVM's (``te.max`` starts integer reductions
    from it, float ones from -inf)."""
    dtype = dtypes.canonical(dtype)
    return const(dtypes.min_value(dtype), dtype)


def max_value(dtype) -> Expr:
    """The largest finite value of ``dtype``, as TVM's (``te.min`` starts integer reductions
    from it, float ones from inf)."""
    dtype = dtypes.canonical(dtype)
    return const(dtypes.max_value(dtype), dtype)

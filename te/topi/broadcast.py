"""Elementwise binary operators with numpy's broadcasting (TVM's ``topi.broadcast``).

Each takes two operands, tensors or scalars (Python numbers, expressions). Two tensors give a
compute op tagged ``"broadcast"`` whose shape is the broadcast of theirs (a rank-0 tensor
broadcasts like a scalar); a tensor and a scalar give one tagged ``"elemwise"`` of the tensor's
shape; two scalars give the expression itself. ``broadcast_compute`` is the declaration they
share with ``nn.ops``.
"""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from .. import expr as _expr
from .. import intrin as _intrin
from .. import dtypes
from ..tensor import Tensor, TEError, compute
from . import tag as _tag
from .utils import const_size

__all__ = ["broadcast_shape", "broadcast_compute", "add", "subtract", "multiply", "divide",
           "floor_divide", "trunc_divide", "mod", "floor_mod", "trunc_mod", "maximum",
           "minimum", "power", "left_shift", "right_shift", "equal", "not_equal", "less",
           "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
           "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"]


def broadcast_shape(shapes, what="broadcast") -> list:
    """The numpy broadcast of ``shapes``: trailing axes aligned, size 1 stretches."""
    ndim = builtins.max((len(s) for s in shapes), default=0)
    out = []
    for d in range(ndim):
        sizes = {const_size(s[d - ndim + len(s)]) for s in shapes if d - ndim + len(s) >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            raise ValueError(f"{what}: shapes {[tuple(s) for s in shapes]} do not broadcast "
                             f"(axis {d} has sizes {sorted(map(str, sizes))})")
        out.append(next(iter(sizes)) if sizes else 1)
    return out


def broadcast_compute(fn, *operands, name="elemwise", tag=_tag.ELEMWISE, what="broadcast"):
    """``fn(*elements)`` elementwise with numpy's broadcasting; operands: tensors or scalars."""
    tensors = [t for t in operands if isinstance(t, Tensor)]
    if not tensors:
        raise ValueError(f"{name}: give at least one tensor")
    out_shape = broadcast_shape([list(t.shape) for t in tensors], what)
    ndim = len(out_shape)

    def element(t, idx):
        if not isinstance(t, Tensor):
            return t
        lead = ndim - len(t.shape)
        return t[tuple(0 if const_size(d) == 1 and const_size(out_shape[lead + k]) != 1
                       else idx[lead + k] for k, d in enumerate(t.shape))]

    def body(*idx):
        return fn(*[element(t, idx) for t in operands])
    return compute(out_shape, body, name=name, tag=tag)


def _check_operand(opname, side, value):
    if isinstance(value, (Tensor, _expr.ExprOp, numbers.Number, np.generic)) or \
            isinstance(getattr(value, "var", None), _expr.Var):        # an IterVar
        return
    raise TEError(f"topi.{opname}: the {side} operand is {type(value).__name__} {value!r}; "
                  "give a te tensor, an expression or a number")


def _binary(opname, rule, doc):
    def op(lhs, rhs):
        _check_operand(opname, "left", lhs)
        _check_operand(opname, "right", rhs)
        left, right = isinstance(lhs, Tensor), isinstance(rhs, Tensor)
        if not left and not right:
            return rule(lhs, rhs)
        tag = _tag.BROADCAST if left and right else _tag.ELEMWISE
        return broadcast_compute(rule, lhs, rhs, name=f"T_{opname}", tag=tag,
                                 what=f"topi.{opname}(lhs, rhs)")
    op.__name__ = opname
    op.__doc__ = f"{doc}, with numpy's broadcasting (tensors or scalars)."
    return op


def _float(*vals):
    return builtins.any(dtypes.is_float(_expr.convert(v).dtype) for v in vals)


def _divide(a, b):
    # TVM's div: true division for floats, truncation toward zero for integers
    return a / b if _float(a, b) else _expr.truncdiv(a, b)


def _trunc_mod(a, b):
    return _intrin.fmod(a, b) if _float(a, b) else _expr.truncmod(a, b)


def _trunc_divide(a, b):
    return _intrin.trunc(a / b) if _float(a, b) else _expr.truncdiv(a, b)


def _bool(v):
    v = _expr.convert(v)
    return v if dtypes.is_bool(v.dtype) else v.not_equal(0)


add = _binary("add", lambda a, b: a + b, "lhs + rhs")
subtract = _binary("subtract", lambda a, b: a - b, "lhs - rhs")
multiply = _binary("multiply", lambda a, b: a * b, "lhs * rhs")
divide = _binary("divide", _divide, "lhs / rhs (integers: truncated toward zero, as TVM's div)")
floor_divide = _binary("floor_divide", _expr.floordiv, "floor(lhs / rhs)")
trunc_divide = _binary("trunc_divide", _trunc_divide, "lhs / rhs rounded toward zero")
mod = _binary("mod", _trunc_mod, "the remainder of trunc_divide (TVM's mod; the dividend's sign)")
trunc_mod = _binary("trunc_mod", _trunc_mod, "the remainder of trunc_divide")
floor_mod = _binary("floor_mod", _expr.floormod, "the remainder of floor_divide (the divisor's "
                    "sign)")
maximum = _binary("maximum", lambda a, b: _expr.binary(_expr.Max, a, b), "max(lhs, rhs)")
minimum = _binary("minimum", lambda a, b: _expr.binary(_expr.Min, a, b), "min(lhs, rhs)")
power = _binary("power", _intrin.power, "lhs ** rhs")
left_shift = _binary("left_shift", lambda a, b: _expr.convert(a) << b, "lhs << rhs")
right_shift = _binary("right_shift", lambda a, b: _expr.convert(a) >> b, "lhs >> rhs")
equal = _binary("equal", lambda a, b: _expr.compare(_expr.EQ, a, b), "lhs == rhs")
not_equal = _binary("not_equal", lambda a, b: _expr.compare(_expr.NE, a, b), "lhs != rhs")
less = _binary("less", lambda a, b: _expr.compare(_expr.LT, a, b), "lhs < rhs")
less_equal = _binary("less_equal", lambda a, b: _expr.compare(_expr.LE, a, b), "lhs <= rhs")
greater = _binary("greater", lambda a, b: _expr.compare(_expr.GT, a, b), "lhs > rhs")
greater_equal = _binary("greater_equal", lambda a, b: _expr.compare(_expr.GE, a, b),
                        "lhs >= rhs")
logical_and = _binary("logical_and", lambda a, b: _expr.all_(_bool(a), _bool(b)), "lhs and rhs")
logical_or = _binary("logical_or", lambda a, b: _expr.any_(_bool(a), _bool(b)), "lhs or rhs")
logical_xor = _binary("logical_xor", lambda a, b: _bool(a).not_equal(_bool(b)), "lhs xor rhs")
bitwise_and = _binary("bitwise_and", lambda a, b: _expr.bitwise("bitwise_and", a, b), "lhs & rhs")
bitwise_or = _binary("bitwise_or", lambda a, b: _expr.bitwise("bitwise_or", a, b), "lhs | rhs")
bitwise_xor = _binary("bitwise_xor", lambda a, b: _expr.bitwise("bitwise_xor", a, b),
                      "lhs ^ rhs")

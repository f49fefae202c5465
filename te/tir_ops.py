"""Expression builders that TVM programs call as ``tvm.tir.<name>`` and that the operators of
``te.expr`` do not spell (``te.tir`` exports them): C-style division, ceiling division, the
bitwise operations by name and the ``likely`` hint."""
from __future__ import annotations

from . import dtypes
from .expr import Expr, bitwise, convert, div as true_div, floordiv, truncdiv


def ceildiv(a, b) -> Expr:
    """Division rounding toward positive infinity (``(a + b - 1) // b`` for b > 0)."""
    return floordiv(a + (b - 1), b) if isinstance(b, int) else floordiv(a + b - 1, b)


def div(a, b) -> Expr:
    """TVM's ``tir.div``: C semantics, true division for floats and truncation toward zero
    for integers."""
    a, b = convert(a), convert(b)
    if dtypes.is_float(a.dtype) or dtypes.is_float(b.dtype):
        return true_div(a, b)
    return truncdiv(a, b)


def bitwise_and(a, b) -> Expr:
    """``a & b`` of integers (``tvm.tir.bitwise_and``)."""
    return bitwise("bitwise_and", a, b)


def bitwise_or(a, b) -> Expr:
    """``a | b`` of integers."""
    return bitwise("bitwise_or", a, b)


def bitwise_xor(a, b) -> Expr:
    """``a ^ b`` of integers."""
    return bitwise("bitwise_xor", a, b)


def bitwise_not(a) -> Expr:
    """``~a``: all bits flipped (logical not of a bool)."""
    return ~convert(a)


def shift_left(a, b) -> Expr:
    """``a << b`` of integers."""
    return bitwise("shift_left", a, b)


def shift_right(a, b) -> Expr:
    """``a >> b`` of integers (arithmetic for signed types)."""
    return bitwise("shift_right", a, b)


def likely(cond) -> Expr:
    """``cond``, marked as usually true in TVM (a hint this compiler does not need)."""
    return convert(cond)

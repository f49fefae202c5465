"""Elementwise operators of two operands that bound or fold values: maximum, minimum, fmod,
remainder, atan2, lerp, and the clamps (clamp/clip, clamp_min, clamp_max) with number or
tensor bounds. Operands are promoted and broadcast by the rules of ``nn.functions.elementwise``,
which exports these names.
"""
from __future__ import annotations

import numpy as np

from nn.ops import declare

from .base import FLOATING, Op, Tensor, _sum_to, cast
from .elementwise import (_out_of_range, _refuse_integer_zero, _run, _tensors, div,
                          result_type_of, where)
from .elementwise_unary import _no_kernel_for

__all__ = ["clamp", "clip", "clamp_min", "clamp_max", "maximum", "minimum", "fmod",
           "remainder", "lerp", "atan2"]


# ----------------------------------------------------------------------------- two-sided

class Maximum(Op):
    """Elementwise maximum; at ties each operand gets half the gradient, as PyTorch's."""
    kernel = declare.maximum

    @classmethod
    def _pick(cls, a, b):
        return a > b

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _run(ctx._forward_cls.kernel, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        tie, pick = a == b, ctx._forward_cls._pick(a, b)
        half = g * 0.5
        return (_sum_to(where(tie, half, where(pick, g, 0.0)), a.shape) if need[0] else None,
                _sum_to(where(tie, half, where(pick, 0.0, g)), b.shape) if need[1] else None)


class Minimum(Maximum):
    kernel = declare.minimum

    @classmethod
    def _pick(cls, a, b):
        return a < b


def maximum(input, other):
    """The larger element of the two tensors (NaN if either is)."""
    return Maximum.apply(*_tensors(input, other))


def minimum(input, other):
    """The smaller element of the two tensors (NaN if either is)."""
    return Minimum.apply(*_tensors(input, other))


class Fmod(Op):
    """The remainder of division toward zero (the sign of the dividend)."""
    kernel, mode = declare.fmod, "trunc"

    @staticmethod
    def forward(ctx, a, b, number_dividend=False):
        # the operands only for the divisor's gradient, as PyTorch's (none for a number's
        # remainder, whose backward raises)
        keep = ctx.needs_input_grad[1] and not number_dividend
        ctx.save_for_backward(*((a, b) if keep else (None, None)))
        ctx.shapes, ctx.number_dividend = (a.shape, b.shape), number_dividend
        return _run(ctx._forward_cls.kernel, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        if need[1] and ctx.number_dividend:
            raise RuntimeError(f"derivative for aten::{ctx._forward_cls.__name__.lower()} is "
                               "not implemented (the gradient of a number modulo a tensor, as "
                               "PyTorch's); detach() the divisor")
        quotient = div(a, b, rounding_mode=ctx._forward_cls.mode).detach() if need[1] else None
        return (_sum_to(g, ctx.shapes[0]) if need[0] else None,
                _sum_to(-g * quotient, ctx.shapes[1]) if need[1] else None, None)


class Remainder(Fmod):
    """The remainder of division rounded down (the sign of the divisor)."""
    kernel, mode = declare.remainder, "floor"


def _modulo(op, input, other):
    a, b = _tensors(input, other)
    if a.dtype == "bool":
        a, b = cast(a, "int64"), cast(b, "int64")
    _refuse_integer_zero(b, "remainder")
    return op.apply(a, b, not isinstance(input, Tensor))


def fmod(input, other):
    """``input - trunc(input / other) * other``: the remainder with the dividend's sign."""
    return _modulo(Fmod, input, other)


def remainder(input, other):
    """``input - floor(input / other) * other``: Python's ``%``, the divisor's sign."""
    return _modulo(Remainder, input, other)


class Atan2(Op):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _run(declare.atan2, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        # PyTorch's: g * b / (a^2 + b^2) and -g * a / (a^2 + b^2), with 1 / (a^2 + b^2) read
        # as 0 where a^2 + b^2 is 0 (the gradient at the origin is 0, signed as b and -a)
        square = a * a + b * b
        recip = where(square == 0, 0.0, square.reciprocal())
        return (_sum_to(g * b * recip, a.shape) if need[0] else None,
                _sum_to(g * -a * recip, b.shape) if need[1] else None)


def atan2(input, other):
    """The angle of the point (other, input), in (-pi, pi]."""
    dtype = result_type_of(input, other)
    return Atan2.apply(*_tensors(input, other, dtype=dtype if dtype in FLOATING
                                 else "float32"))


class Lerp(Op):
    """``start + weight * (end - start)``."""

    @staticmethod
    def forward(ctx, start, end, weight):
        # the ends only for the weight's gradient, as PyTorch's
        ends = (start, end) if ctx.needs_input_grad[2] else (None, None)
        ctx.save_for_backward(*ends, weight)
        ctx.shapes = start.shape, end.shape, weight.shape
        return _run(declare.lerp, start, end, weight)

    @staticmethod
    def backward(ctx, g):
        start, end, weight = ctx.saved_tensors
        need, shapes = ctx.needs_input_grad, ctx.shapes
        return (_sum_to(g * (1 - weight), shapes[0]) if need[0] else None,
                _sum_to(g * weight, shapes[1]) if need[1] else None,
                _sum_to(g * (end - start), shapes[2]) if need[2] else None)


def lerp(input, end, weight):
    """Linear interpolation from ``input`` to ``end`` by ``weight`` (a number or tensor)."""
    if not isinstance(end, Tensor):
        raise TypeError(f"lerp(): argument 'end' must be Tensor, not {type(end).__name__}")
    dtype = result_type_of(input, end)
    if dtype not in FLOATING:
        raise _no_kernel_for("lerp_kernel_scalar", dtype)
    if isinstance(weight, Tensor) and weight.dtype != dtype:
        raise RuntimeError(f"expected dtype {dtype} for `weight` but got dtype "
                           f"{weight.dtype}")
    return Lerp.apply(*_tensors(input, end, weight, dtype=dtype))


# ----------------------------------------------------------------------------- clamps

class Clamp(Op):
    """``input`` limited to [low, high]; a bound is a tensor or None (a number arrives as a
    0-d tensor). The gradient goes to the input inside the bounds, else to the bound used."""

    @staticmethod
    def forward(ctx, x, low, high):
        ctx.save_for_backward(x, low, high)
        if high is None:
            return _run(declare.clamp_min, x, low)
        if low is None:
            return _run(declare.clamp_max, x, high)
        return _run(declare.clamp, x, low, high)

    @staticmethod
    def backward(ctx, g):
        x, low, high = ctx.saved_tensors
        need = ctx.needs_input_grad
        # PyTorch's clamp_backward and clamp_backward_min_max: the input's gradient where
        # low <= x <= high (none where x or a bound is NaN); the low bound's where x < low <
        # high, the high bound's where x > high or high < low
        inside = (x >= low) if low is not None else None
        if high is not None:
            inside = (x <= high) if inside is None else inside & (x <= high)
        to_low = (x < low) if low is not None else None
        to_high = (x > high) if high is not None else None
        if low is not None and high is not None:
            to_low, to_high = to_low & (low < high), to_high | (high < low)
        return (_sum_to(where(inside, g, 0.0), x.shape) if need[0] else None,
                _sum_to(where(to_low, g, 0.0), low.shape) if need[1] else None,
                _sum_to(where(to_high, g, 0.0), high.shape) if need[2] else None)


class ClampMin(Clamp):
    pass


class ClampMax(Clamp):
    pass


_C_TYPES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int"}


def _check_bound(name, value):
    if value is not None and not isinstance(value, (Tensor, bool, int, float, np.number)):
        raise TypeError(f"clamp(): argument '{name}' must be a Number or a Tensor, not "
                        f"{type(value).__name__}")


def clamp(input, min=None, max=None):
    """Each element limited to [min, max]; either bound a number, a tensor or None."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    _check_bound("min", min)
    _check_bound("max", max)
    bounds = [b for b in (min, max) if b is not None]
    dtype = result_type_of(input, *bounds)
    if dtype == "bool" and not any(isinstance(b, Tensor) for b in bounds):
        which = "clamp" if len(bounds) == 2 else "clamp_min" if max is None else "clamp_max"
        raise _no_kernel_for(f"{which}_scalar_cpu", "bool")
    for bound in bounds:
        if _out_of_range(bound, dtype) and dtype != "int64":
            raise RuntimeError(f"value cannot be converted to type {_C_TYPES[dtype]} without "
                               "overflow")
    x, *rest = _tensors(input, *bounds, dtype=dtype)
    low = rest.pop(0) if min is not None else None
    high = rest.pop(0) if max is not None else None
    op = Clamp if low is not None and high is not None else ClampMin if high is None \
        else ClampMax
    return op.apply(x, low, high)


clip = clamp


def clamp_min(input, min):
    """``clamp(input, min=min)``."""
    return clamp(input, min=min)


def clamp_max(input, max):
    """``clamp(input, max=max)``."""
    return clamp(input, max=max)

"""Elementwise operators with numpy broadcasting and PyTorch's dtype promotion: arithmetic,
powers, comparisons, logical and bitwise operators, clamps, selections (``where``,
``masked_fill``), and casts. The unary math functions (``exp``, ``sin``...) are in
``elementwise_unary`` and exported from here.

Operands are promoted as PyTorch promotes them: dimensioned tensors decide the dtype, a 0-d
tensor or a Python number only raises its kind (bool < integer < floating). A Python number
travels to the kernel as a one-element operand, so one compiled kernel serves every value.
"""
from __future__ import annotations

import collections
import math

import numpy as np

from nn.ops import cpu, declare

from ..device import is_gpu
from ..tensor import _DEFAULT_DTYPE
from .base import (FLOATING, Op, Tensor, _kernel, _sum_to, broadcast_shape, cast)
from .elementwise_unary import *  # noqa: F401,F403  (re-exported)
from .elementwise_unary import __all__ as _unary_names, _check, _no_kernel_for

__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "pow",
           "lt", "le", "gt", "ge", "eq", "ne", "less", "less_equal", "greater",
           "greater_equal", "not_equal", "equal", "clamp", "clip", "clamp_min", "clamp_max",
           "maximum", "minimum", "fmod", "remainder", "floor_divide", "lerp", "atan2",
           "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
           "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "where", "masked_fill",
           "cast", "promote_types", "addcmul", "addcdiv", "fmax", "fmin", "hypot", "heaviside",
           "sgn", "xlogy", "float_power", "frexp", "ldexp", "lgamma", "digamma",
           "erfinv"] + _unary_names

_KIND = {"b": 0, "u": 1, "i": 1, "f": 2}
# the dtype a Python bool or int stands for (a float stands for the default dtype)
_DEFAULT = {0: "bool", 1: "int64"}


def _kind(dtype):
    return _KIND[np.dtype(dtype).kind]


def promote_types(a, b) -> str:
    """The dtype two dtypes promote to: the higher kind wins; within a kind, the wider."""
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        return np.dtype(a if ka > kb else b).name
    return np.promote_types(a, b).name


def result_type_of(*operands) -> str:
    """PyTorch's result type of tensors and Python numbers.

    Dimensioned tensors decide; 0-d tensors count only when of a higher kind than those; a
    Python number only when of a higher kind than every tensor, and then as float32 / int64.
    """
    tiers = [[o.dtype for o in operands if isinstance(o, Tensor) and o.ndim],
             [o.dtype for o in operands if isinstance(o, Tensor) and not o.ndim]]
    result = None
    for dtypes in tiers:
        if not dtypes:
            continue
        tier = dtypes[0]
        for d in dtypes[1:]:
            tier = promote_types(tier, d)
        if result is None or _kind(tier) > _kind(result):
            result = tier
    numbers = [o for o in operands if not isinstance(o, Tensor) and o is not None]
    if numbers:
        kind = max(0 if isinstance(n, (bool, np.bool_)) else
                   1 if isinstance(n, (int, np.integer)) else 2 for n in numbers)
        if result is None or kind > _kind(result):
            result = _DEFAULT_DTYPE[0] if kind == 2 else _DEFAULT[kind]
    return result


def _tensors(*operands, dtype=None):
    """The operands as tensors of one dtype (numbers become 0-d tensors)."""
    if not any(isinstance(o, Tensor) for o in operands):
        raise TypeError("expected a Tensor operand, got " +
                        " and ".join(type(o).__name__ for o in operands))
    for o in operands:
        if not isinstance(o, (Tensor, bool, int, float, np.number, np.bool_)):
            raise TypeError(f"expected a Tensor or a Python number, got {type(o).__name__}")
    dtype = dtype or result_type_of(*operands)
    return tuple(cast(o, dtype) if isinstance(o, Tensor) else _scalar(o, dtype)
                 for o in operands)


def _scalar(number, dtype):
    """A Python number as a 0-d tensor of ``dtype``; an integer out of an integer dtype's
    range wraps around, as PyTorch's (``int8`` 300 is 44, ``uint8`` -1 is 255)."""
    if isinstance(number, (int, np.integer)) and not isinstance(number, (bool, np.bool_)) \
            and _kind(dtype) == 1 and -2 ** 63 <= number < 2 ** 64:
        wide = "int64" if number < 2 ** 63 else "uint64"
        return Tensor(np.array(number, wide).astype(dtype))
    return Tensor(np.array(number, dtype))


def _out_of_range(number, dtype) -> bool:
    """Whether Python integer ``number`` lies outside integer ``dtype``'s range."""
    if not isinstance(number, (int, np.integer)) or isinstance(number, (bool, np.bool_)) \
            or _kind(dtype) != 1:
        return False
    info = np.iinfo(dtype)
    return not info.min <= number <= info.max


def _run(kernel, *tensors, **params):
    """``kernel`` on the tensors' data, broadcast to their common shape."""
    return _kernel(kernel, *(t._data for t in tensors),
                   out_shape=broadcast_shape(*(t.shape for t in tensors)), **params)


# ----------------------------------------------------------------------------- arithmetic

class Add(Op):
    """``a + alpha * b``."""

    @staticmethod
    def forward(ctx, a, b, alpha):
        ctx.shapes, ctx.alpha = (a.shape, b.shape), alpha
        if alpha == 1:
            return _run(cpu.add, a, b)
        return _run(declare.add_scaled, a, b, Tensor(np.array(alpha, a.dtype)))

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        gb = g if ctx.alpha == 1 else g * ctx.alpha
        return (_sum_to(g, ctx.shapes[0]) if need[0] else None,
                _sum_to(gb, ctx.shapes[1]) if need[1] else None, None)


class Sub(Op):
    """``a - alpha * b``."""

    @staticmethod
    def forward(ctx, a, b, alpha):
        ctx.shapes, ctx.alpha = (a.shape, b.shape), alpha
        if alpha == 1:
            return _run(cpu.subtract, a, b)
        return _run(declare.add_scaled, a, b, Tensor(np.array(-alpha, a.dtype)))

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (_sum_to(g, ctx.shapes[0]) if need[0] else None,
                _sum_to(g * -ctx.alpha, ctx.shapes[1]) if need[1] else None, None)


# What a node saves is what its backward reads for the gradients that are needed, as
# PyTorch's: ``y * 2`` keeps no tensor that the user sees (``d(y * 2)/dy`` is 2), so writing
# ``y`` in place afterwards is allowed; ``y * w`` keeps ``y`` only when ``w`` needs a gradient


class Mul(Op):
    @staticmethod
    def forward(ctx, a, b):
        need = ctx.needs_input_grad
        ctx.save_for_backward(a if need[1] else None, b if need[0] else None)
        ctx.shapes = a.shape, b.shape
        return _run(cpu.multiply, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (_sum_to(g * b, ctx.shapes[0]) if need[0] else None,
                _sum_to(g * a, ctx.shapes[1]) if need[1] else None)


class Div(Op):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
        ctx.shapes = a.shape, b.shape
        return _run(cpu.divide, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (_sum_to(g / b, ctx.shapes[0]) if need[0] else None,
                _sum_to(-(g * a) / (b * b), ctx.shapes[1]) if need[1] else None)


class DivRounded(Op):
    """Division rounded toward zero or down; its gradient is zero almost everywhere."""

    @staticmethod
    def forward(ctx, a, b, mode):
        ctx.shapes = a.shape, b.shape
        kernel = declare.trunc_divide if mode == "trunc" else declare.floor_divide
        return _run(kernel, a, b)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (_sum_to(g * 0, ctx.shapes[0]) if need[0] else None,
                _sum_to(g * 0, ctx.shapes[1]) if need[1] else None, None)


DivRounded._node_cls.__name__ = "DivBackward2"


def _alpha_ok(name, alpha, dtype):
    if not isinstance(alpha, (bool, int, float, np.number)):
        raise TypeError(f"{name}(): argument 'alpha' must be a Number, not "
                        f"{type(alpha).__name__}")
    if isinstance(alpha, float) and dtype not in FLOATING:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")


def add(input, other, *, alpha=1):
    """``input + alpha * other`` with broadcasting (two bool tensors: their logical or)."""
    a, b = _tensors(input, other)
    _alpha_ok("add", alpha, a.dtype)
    if a.dtype == "bool":
        return _run(declare.logical_or, a, b) if alpha else a
    return Add.apply(a, b, alpha)


def sub(input, other, *, alpha=1):
    """``input - alpha * other`` with broadcasting."""
    a, b = _tensors(input, other)
    if a.dtype == "bool":
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    _alpha_ok("sub", alpha, a.dtype)
    return Sub.apply(a, b, alpha)


def mul(input, other):
    """``input * other`` with broadcasting (two bool tensors: their logical and)."""
    a, b = _tensors(input, other)
    if a.dtype == "bool":
        return _run(declare.logical_and, a, b)
    return Mul.apply(a, b)


def div(input, other, *, rounding_mode=None):
    """``input / other``: true division (integers give float32), or rounded with
    ``rounding_mode="trunc"`` (toward zero) or ``"floor"`` (down), which keep the dtype."""
    if rounding_mode not in (None, "trunc", "floor"):
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    dtype = result_type_of(input, other)
    if rounding_mode is None:
        return Div.apply(*_tensors(input, other, dtype=dtype if dtype in FLOATING
                                   else "float32"))
    a, b = _tensors(input, other, dtype="int64" if dtype == "bool" else dtype)
    _refuse_integer_zero(b, "division")
    return DivRounded.apply(a, b, rounding_mode)


def _refuse_integer_zero(divisor, what):
    """PyTorch's error for an integer division or remainder by zero. Checked on the host, so
    for CPU tensors only: on the GPU, as in PyTorch, the result is unspecified."""
    if divisor.dtype in FLOATING or is_gpu(divisor._data):
        return
    if (divisor._data == 0).any():
        raise RuntimeError(f"ZeroDivisionError: integer {what} by zero (the divisor has a zero "
                           "element); divide float tensors to get inf / nan, or replace the "
                           "zeros first (nn.where(divisor == 0, 1, divisor))")


def true_divide(dividend, divisor):
    return div(dividend, divisor)


class FloorDivide(Op):
    """``input // other``: as PyTorch's, its result requires grad when an operand does, and
    backward through it raises (it has no derivative; ``div(rounding_mode="floor")`` has a
    zero one)."""

    @staticmethod
    def forward(ctx, a, b):
        return _run(declare.floor_divide, a, b)

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("derivative for aten::floor_divide is not implemented; use "
                           "div(a, b, rounding_mode='floor') for a zero gradient, or detach() "
                           "the operands")


FloorDivide._node_cls.__name__ = "NotImplemented"


def floor_divide(input, other):
    """``input // other`` rounded down (no derivative, as PyTorch's)."""
    dtype = result_type_of(input, other)
    a, b = _tensors(input, other, dtype="int64" if dtype == "bool" else dtype)
    _refuse_integer_zero(b, "division")
    return FloorDivide.apply(a, b)


subtract, multiply, divide = sub, mul, div


# ----------------------------------------------------------------------------- powers

class Pow(Op):
    """``x ** p`` for a Python number ``p``."""

    @staticmethod
    def forward(ctx, x, exponent):
        ctx.save_for_backward(x)
        ctx.exponent = exponent
        return _kernel(declare.power_scalar, x._data, out_shape=x.shape, exponent=exponent)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        p = ctx.exponent
        if p == 0:
            return g * 0.0, None
        return g * (x ** (p - 1) * p), None


class PowTensor(Op):
    """``a ** b`` for tensors; the exponent's gradient is zero where ``a == 0 <= b``."""

    @staticmethod
    def forward(ctx, a, b):
        out = _run(declare.power, a, b)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b, out = ctx.saved_tensors
        need = ctx.needs_input_grad
        ga = gb = None
        if need[0]:
            ga = _sum_to(g * b * a ** (b - 1), a.shape)
        if need[1]:
            log_a = where((a == 0) & (b >= 0), 0.0, out * a.log())
            gb = _sum_to(g * log_a, b.shape)
        return ga, gb


PowTensor._node_cls.__name__ = "PowBackward1"


def pow(input, exponent):
    """``input ** exponent``: tensor and number in either order, or two tensors."""
    if not isinstance(input, Tensor) or isinstance(exponent, Tensor):
        a, b = _tensors(input, exponent)
        if a.dtype == "bool":
            a, b = cast(a, "int64"), cast(b, "int64")
        return PowTensor.apply(a, b)
    if not isinstance(exponent, (bool, int, float, np.number)):
        raise TypeError(f"pow(): argument 'exponent' must be a Number or a Tensor, not "
                        f"{type(exponent).__name__}")
    x = cast(input, result_type_of(input, exponent))
    if x.dtype == "bool":
        x = cast(x, "int64")
    if x.dtype not in FLOATING and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return Pow.apply(x, float(exponent))


# ----------------------------------------------------------------------------- comparisons

def _comparison(kernel, name):
    def compare(input, other):
        return _run(kernel, *_tensors(input, other))
    compare.__name__ = name
    compare.__doc__ = f"Elementwise ``{name}`` with broadcasting: a bool tensor without grad."
    return compare


lt = less = _comparison(declare.cmp_lt, "lt")
le = less_equal = _comparison(declare.cmp_le, "le")
gt = greater = _comparison(declare.cmp_gt, "gt")
ge = greater_equal = _comparison(declare.cmp_ge, "ge")
eq = _comparison(declare.cmp_eq, "eq")
ne = not_equal = _comparison(declare.cmp_ne, "ne")


def equal(input, other) -> bool:
    """True when both tensors have the same shape and elements (a Python bool)."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"equal(): expected two Tensors, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    if input.shape != other.shape:
        return False
    same = eq(input, other)
    return bool(_kernel(declare.all, same._data, out_shape=()).item())


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


# ----------------------------------------------------------------------------- logical, bitwise

def _logical(kernel, name):
    def logical(input, other):
        for t in (input, other):
            if not isinstance(t, (Tensor, bool, int, float)):
                raise TypeError(f"{name}(): expected a Tensor, got {type(t).__name__}")
        a, b = (t if isinstance(t, Tensor) else Tensor(np.array(t)) for t in (input, other))
        return _run(kernel, a, b)
    logical.__name__ = name
    logical.__doc__ = f"Elementwise ``{name}`` of the truth values (nonzero is true): bool."
    return logical


logical_and = _logical(declare.logical_and, "logical_and")
logical_or = _logical(declare.logical_or, "logical_or")
logical_xor = _logical(declare.logical_xor, "logical_xor")


def _bitwise(kernel, name, cpu_name=None, bools=True):
    """The function ``name`` running ``kernel``; PyTorch's error names its CPU kernel
    ``cpu_name`` (``{name}_cpu`` when not given)."""
    def bitwise(input, other):
        a, b = _tensors(input, other)
        if a.dtype in FLOATING or (a.dtype == "bool" and not bools):
            raise _no_kernel_for(cpu_name or f"{name}_cpu", a.dtype)
        return _run(kernel, a, b)
    bitwise.__name__ = name
    bitwise.__doc__ = f"Elementwise ``{name}`` of integer or bool tensors."
    return bitwise


bitwise_and = _bitwise(declare.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(declare.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(declare.bitwise_xor, "bitwise_xor")
bitwise_left_shift = _bitwise(declare.bitwise_left_shift, "bitwise_left_shift", "lshift_cpu",
                              bools=False)
bitwise_right_shift = _bitwise(declare.bitwise_right_shift, "bitwise_right_shift",
                               "rshift_cpu", bools=False)


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


# ----------------------------------------------------------------------------- selections

class Where(Op):
    @staticmethod
    def forward(ctx, condition, x, y):
        ctx.save_for_backward(condition)
        ctx.shapes = x.shape, y.shape
        return _run(declare.where, condition, x, y)

    @staticmethod
    def backward(ctx, g):
        (condition,) = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (None,
                _sum_to(where(condition, g, 0.0), ctx.shapes[0]) if need[1] else None,
                _sum_to(where(condition, 0.0, g), ctx.shapes[1]) if need[2] else None)


def where(condition, input=None, other=None):
    """``input`` where ``condition`` holds, else ``other`` (tensors or numbers, broadcast)."""
    if input is None or other is None:
        raise TypeError("where(condition) with one argument is nonzero(condition, "
                        "as_tuple=True); give both input and other to select between them")
    if not isinstance(condition, Tensor) or condition.dtype != "bool":
        got = condition.dtype if isinstance(condition, Tensor) else type(condition).__name__
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a "
                           f"tensor with dtype {got}")
    if isinstance(input, Tensor) or isinstance(other, Tensor):
        x, y = _tensors(input, other)
    else:
        dtype = result_type_of(input, other)
        x, y = Tensor(np.array(input, dtype)), Tensor(np.array(other, dtype))
    return Where.apply(condition, x, y)


class MaskedFill(Op):
    """``input`` with ``value`` where ``mask`` holds."""

    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.save_for_backward(mask)
        ctx.shape = x.shape
        return _run(declare.where, mask, value, x)

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (_sum_to(where(mask, 0.0, g), ctx.shape) if need[0] else None, None,
                where(mask, g, 0.0).sum() if need[2] else None)


def masked_fill(input, mask, value):
    """``input`` with ``value`` (a number or a 0-d tensor) where the bool ``mask`` holds."""
    if not isinstance(mask, Tensor) or mask.dtype != "bool":
        got = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{got}")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
        value = cast(value, input.dtype)
    else:
        if not isinstance(value, (bool, int, float, np.number)):
            raise TypeError(f"masked_fill(): argument 'value' must be a Number or a 0-d "
                            f"Tensor, not {type(value).__name__}")
        value = Tensor(np.array(value).astype(input.dtype))
    broadcast_shape(input.shape, mask.shape)
    return MaskedFill.apply(input, mask, value)


# ----------------------------------------------------------------------------- composed

def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2`` (broadcast)."""
    product = mul(tensor1, tensor2)
    return add(input, product if value == 1 else mul(product, value))


def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2`` (broadcast; a true division)."""
    if all(isinstance(t, Tensor) and not t.is_floating_point() for t in (tensor1, tensor2)):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future release addcdiv will perform a true division of tensor1 and "
                           "tensor2. The historic addcdiv behavior can be implemented as "
                           "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) "
                           "for integer inputs and as (input + value * tensor1 / tensor2) for "
                           "float inputs. The future addcdiv behavior is just the latter "
                           "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    quotient = div(tensor1, tensor2)
    return add(input, quotient if value == 1 else mul(quotient, value))


frexp_result = collections.namedtuple("frexp", ["mantissa", "exponent"])


def _nan_ignoring(larger, input, other):
    """``fmax``/``fmin``: the larger (smaller) element, the other one where one is NaN. The
    gradient goes to ``input`` at ties, as PyTorch's."""
    a, b = _tensors(input, other)
    pick = ((a >= b) if larger else (a <= b)) | b.isnan()
    return where(pick, a, b)


def fmax(input, other):
    """The elementwise maximum, ignoring NaN (NaN only where both are)."""
    return _nan_ignoring(True, input, other)


def fmin(input, other):
    """The elementwise minimum, ignoring NaN (NaN only where both are)."""
    return _nan_ignoring(False, input, other)


def hypot(input, other):
    """``sqrt(input**2 + other**2)`` elementwise (floating point only)."""
    a, b = _tensors(input, other)
    if a.dtype not in FLOATING:
        raise _no_kernel_for("hypot_cpu", a.dtype)
    return (a * a + b * b).sqrt()


def heaviside(input, values):
    """The Heaviside step of ``input``: 0 below zero, 1 above, ``values`` at zero."""
    if input.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    step = cast(input > 0, input.dtype)
    return where(input == 0, values, step)


def sgn(input):
    """The sign of each element (``sign`` for real tensors)."""
    return sign(input)


def xlogy(input, other):
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    a, b = _tensors(input, other)
    if a.dtype not in FLOATING:
        a, b = cast(a, "float32"), cast(b, "float32")
    zero = (a == 0) & ~b.isnan()
    return a * where(zero, 1.0, b).log()      # log(1) = 0 there, and its gradient too


def float_power(input, exponent):
    """``input ** exponent`` computed in float64."""
    as64 = [cast(x, "float64") if isinstance(x, Tensor) else float(x)
            for x in (input, exponent)]
    return pow(*as64)


def frexp(input):
    """(mantissa, exponent): ``input = mantissa * 2**exponent``, ``0.5 <= |mantissa| < 1``
    (0, inf and NaN keep their value with exponent 0); the exponent is int32."""
    if input.dtype not in FLOATING:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    finite = input.isfinite() & (input != 0)
    safe = where(finite, input, 1.0).detach()
    exponent = safe.abs().log2().floor() + 1
    mantissa = safe / exponent.exp2()
    big, small = mantissa.abs() >= 1, mantissa.abs() < 0.5      # log2 rounded the wrong way
    exponent = exponent + cast(big, input.dtype) - cast(small, input.dtype)
    mantissa = where(big, mantissa * 0.5, where(small, mantissa * 2, mantissa))
    return frexp_result(where(finite, mantissa, input.detach()),
                        cast(where(finite, exponent, 0.0), "int32"))


class Ldexp(Op):
    """``input * 2**other``; as PyTorch's, the node keeps ``other`` and the result (not
    ``input``): the gradients are ``g * 2**other`` and ``g * result * ln 2``."""

    @staticmethod
    def forward(ctx, x, other):
        power = other.exp2()
        out = mul(x, power)
        ctx.save_for_backward(other, out)
        ctx.shapes = x.shape, other.shape
        return out

    @staticmethod
    def backward(ctx, g):
        other, out = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (_sum_to(g * other.exp2(), ctx.shapes[0]) if need[0] else None,
                _sum_to(g * out * math.log(2.0), ctx.shapes[1]) if need[1] else None)


def ldexp(input, other):
    """``input * 2**other``."""
    if not isinstance(other, Tensor):
        return mul(input, 2.0 ** other)
    dtype = result_type_of(input, other)
    x, e = _tensors(input, other, dtype=dtype if dtype in FLOATING else "float32")
    return Ldexp.apply(x, e)


# ----------------------------------------------------------------------------- special functions
# Composed of the elementwise operators, computed in float64 (then rounded to the input's
# dtype), so their gradients come from the composition. In float64 lgamma is accurate to
# ~1e-14, digamma to ~1e-11, erfinv to ~1e-15 except within ~1e-6 of +-1 (where erf itself
# runs out of digits); float32 results match PyTorch's.

def _special_input(input, name):
    _check(input, name)
    dtype = input.dtype if input.dtype in FLOATING else "float32"
    return cast(input, "float64"), dtype


_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)


def _positive_lgamma(z):
    """``lgamma(z)`` for ``z >= 0.5``: shifted up by 8 (a sum of logs), then Stirling's
    series to ``w^-13``."""
    shift = 0.0
    for k in range(8):
        shift = shift + (z + k).log()
    w = z + 8
    inv, inv2 = 1 / w, 1 / (w * w)
    series = _STIRLING[-1]
    for c in reversed(_STIRLING[:-1]):
        series = c + inv2 * series
    return (w - 0.5) * w.log() - w + 0.5 * math.log(2 * math.pi) + inv * series - shift


def _sin_pi(x):
    """``|sin(pi x)|`` as a signed value, reduced to ``|x| <= 1/2`` first (exactly) so large or
    near-integer ``x`` keep their precision."""
    return (math.pi * (x - x.round().detach())).sin()


def _non_positive_integer(x):
    return (x <= 0) & (x == x.floor())


def lgamma(input):
    """``log|Gamma(input)|`` (inf at the non-positive integers and at +-inf, 0 at 1 and 2,
    as PyTorch's); reflected below 1/2."""
    x, dtype = _special_input(input, "lgamma")
    low = x < 0.5
    finite = x.isfinite()
    xf = where(finite, x, 3.0)               # the series only on finite values (inf - inf)
    z = where(low, 1 - xf, xf)
    xr = where(low, xf, 0.25)                # the reflection only where it is used
    reflected = (math.pi / _sin_pi(xr).abs()).log() - _positive_lgamma(z)
    out = where(low, reflected, _positive_lgamma(z))
    out = where((x == 1) | (x == 2), 0.0, out)
    out = where(_non_positive_integer(x) | x.isinf(), math.inf, where(x.isnan(), x, out))
    return cast(out, dtype)


def _digamma_positive(z):
    """``digamma(z)`` for ``z >= 0.5``: shifted up by 6, then the asymptotic series."""
    shift = 0.0
    for k in range(6):
        shift = shift + 1 / (z + k)
    w = z + 6
    inv2 = 1 / (w * w)
    tail = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
        1 / 240 - inv2 * (1 / 132 - inv2 * (691 / 32760 - inv2 / 12))))))
    return w.log() - 0.5 / w - tail - shift


def digamma(input):
    """The logarithmic derivative of Gamma (as PyTorch's: -inf at 0.0, +inf at -0.0, NaN at
    the negative integers and at -inf); reflected below 1/2."""
    x, dtype = _special_input(input, "digamma")
    low = x < 0.5
    z = where(low, 1 - x, x)
    xr = where(low, x, 0.25)
    reflected = _digamma_positive(z) - math.pi / (math.pi * (xr - xr.round().detach())).tan()
    out = where(low, reflected, _digamma_positive(z))
    out = where(_non_positive_integer(x), math.nan, out)
    # C's copysign(inf, -x) at zero: the sign of the zero is that of 1 / x
    out = where(x == 0, where(x.reciprocal() > 0, -math.inf, math.inf), out)
    return cast(out, dtype)


def _erfinv_guess(y):
    """Giles' single-precision approximation of ``erfinv`` (|y| < 1)."""
    w = -((1 - y) * (1 + y)).log()
    small = w < 5
    ws = where(small, w, 2.5) - 2.5
    p = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941):
        p = c + p * ws
    wl = where(small, 5.0, w).sqrt() - 3
    q = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682):
        q = c + q * wl
    return where(small, p, q) * y


def erfinv(input):
    """The inverse of ``erf`` on (-1, 1) (+-inf at +-1, NaN outside): Giles' approximation
    refined by Newton's method; the last step carries the gradient ``sqrt(pi)/2 exp(x^2)``."""
    y, dtype = _special_input(input, "erfinv")
    inside = y.abs() < 1
    ys = where(inside, y, 0.0)
    x = _erfinv_guess(ys.detach())
    slope = 2 / math.sqrt(math.pi)
    for _ in range(3):
        x = x - (erf(x) - ys.detach()) / ((-x * x).exp() * slope)
    x = x.detach()
    x = x - (erf(x) - ys) / ((-x * x).exp() * slope)
    edge = where(y == 1, math.inf, where(y == -1, -math.inf, math.nan))
    return cast(where(inside, x, edge), dtype)

"""Elementwise operators with numpy broadcasting and PyTorch's dtype promotion: arithmetic,
powers, comparisons, logical and bitwise operators, selections (``where``, ``masked_fill``),
and casts. The unary math functions (``exp``, ``sin``...) are in ``elementwise_unary``,
maximum/minimum, fmod, atan2, lerp and the clamps in ``elementwise_binary``, the composed and
special functions (addcmul, hypot, xlogy, lgamma...) in ``elementwise_composed``; all are
exported from here.

Operands are promoted as PyTorch promotes them: dimensioned tensors decide the dtype, a 0-d
tensor or a Python number only raises its kind (bool < integer < floating). A Python number
travels to the kernel as a one-element operand, so one compiled kernel serves every value.
"""
from __future__ import annotations

import numpy as np

from nn.ops import cpu, declare

from ..device import is_gpu
from ..tensor import _DEFAULT_DTYPE
from .base import (FLOATING, Op, Tensor, _kernel, _sum_to, broadcast_shape, cast)
from .elementwise_unary import *  # noqa: F401,F403  (re-exported)
from .elementwise_unary import __all__ as _unary_names, _no_kernel_for

__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "pow",
           "lt", "le", "gt", "ge", "eq", "ne", "less", "less_equal", "greater",
           "greater_equal", "not_equal", "equal", "floor_divide", "logical_and", "logical_or",
           "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
           "bitwise_right_shift", "where", "masked_fill", "cast", "promote_types"] + _unary_names

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


# Operators built on the promotion rules and kernels above, so they load last.
from . import elementwise_binary as _binary, elementwise_composed as _composed  # noqa: E402
from .elementwise_binary import *  # noqa: F401,F403,E402
from .elementwise_composed import *  # noqa: F401,F403,E402
from .elementwise_binary import (Atan2, Clamp, ClampMax, ClampMin, Fmod,  # noqa: F401,E402
                                 Lerp, Maximum, Minimum, Remainder)
from .elementwise_composed import Ldexp, frexp_result  # noqa: F401,E402

__all__ += _binary.__all__ + _composed.__all__

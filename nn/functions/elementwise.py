"""Elementwise operators: arithmetic with numpy broadcasting, comparisons, unary math, casts."""
from __future__ import annotations


from nn.ops import cpu, declare

from .base import (FLOATING, cast, Op, Tensor, _binary, _floating, _kernel,
                   _operands, _sum_to, result_type)


__all__ = ["add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sqrt", "tanh", "sigmoid",
           "relu", "cast", "lt", "le", "gt", "ge", "eq", "ne"]


# ----------------------------------------------------------------------------- elementwise

class Add(Op):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a.shape, b.shape
        return _binary(cpu.add, a, b)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (_sum_to(g, ctx.shapes[0]) if need[0] else None,
                _sum_to(g, ctx.shapes[1]) if need[1] else None)


class Sub(Op):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a.shape, b.shape
        return _binary(cpu.subtract, a, b)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (_sum_to(g, ctx.shapes[0]) if need[0] else None,
                _sum_to(-g, ctx.shapes[1]) if need[1] else None)


class Mul(Op):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary(cpu.multiply, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (_sum_to(g * b, a.shape) if need[0] else None,
                _sum_to(g * a, b.shape) if need[1] else None)


class Div(Op):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary(cpu.divide, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (_sum_to(g / b, a.shape) if need[0] else None,
                _sum_to(-(g * a) / (b * b), b.shape) if need[1] else None)


class Neg(Op):
    @staticmethod
    def forward(ctx, x):
        return _kernel(cpu.negative, x._data, out_shape=x.shape)

    @staticmethod
    def backward(ctx, g):
        return -g


class Pow(Op):
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


def _unary(declare, name, derivative, save):
    """An Op whose gradient is ``g * derivative(saved)``; ``save`` is "input" or "output"."""

    def forward(ctx, x):
        _floating(x, name)
        out = _kernel(declare, x._data, out_shape=x.shape)
        ctx.save_for_backward(x if save == "input" else out)
        return out

    def backward(ctx, g):
        (saved,) = ctx.saved_tensors
        return g * derivative(saved)
    return type(name, (Op,), {"forward": staticmethod(forward),
                              "backward": staticmethod(backward), "__module__": __name__,
                              "__doc__": f"Elementwise {name.lower()}."})


Exp = _unary(cpu.exp, "Exp", lambda out: out, "output")
Log = _unary(cpu.log, "Log", lambda x: 1.0 / x, "input")
Sqrt = _unary(cpu.sqrt, "Sqrt", lambda out: 0.5 / out, "output")
Tanh = _unary(cpu.tanh, "Tanh", lambda out: 1.0 - out * out, "output")
Sigmoid = _unary(cpu.sigmoid, "Sigmoid", lambda out: out * (1.0 - out), "output")
Relu = _unary(cpu.relu, "Relu", lambda out: (out > 0).to(out.dtype), "output")


def add(a, b, alpha=1):
    """``a + alpha * b`` with broadcasting."""
    if alpha != 1:
        b = mul(b, alpha)
    return Add.apply(*_operands(a, b))


def sub(a, b, alpha=1):
    """``a - alpha * b`` with broadcasting."""
    if alpha != 1:
        b = mul(b, alpha)
    return Sub.apply(*_operands(a, b))


def mul(a, b):
    return Mul.apply(*_operands(a, b))


def div(a, b):
    """True division: integer operands give float32, as in PyTorch."""
    dtype = result_type(a, b)
    return Div.apply(*_operands(a, b, dtype if dtype in FLOATING else "float32"))


def neg(x):
    return Neg.apply(x)


def pow(x, exponent):
    """``x ** exponent`` for a Python number ``exponent``."""
    if isinstance(exponent, Tensor) or not isinstance(exponent, (int, float)):
        raise TypeError(f"pow: the exponent must be a Python number for now, got "
                        f"{type(exponent).__name__}")
    if not x.is_floating_point():
        x = cast(x, "float32")
    return Pow.apply(x, float(exponent))


def exp(x):
    return Exp.apply(x)


def log(x):
    return Log.apply(x)


def sqrt(x):
    return Sqrt.apply(x)


def tanh(x):
    return Tanh.apply(x)


def sigmoid(x):
    return Sigmoid.apply(x)


def relu(x):
    return Relu.apply(x)


def _comparison(declare, name):
    def compare(a, b):
        a, b = _operands(a, b)
        return _binary(declare, a, b)
    compare.__name__ = name
    compare.__doc__ = f"Elementwise ``{name}`` with broadcasting: a bool tensor without grad."
    return compare


lt = _comparison(declare.cmp_lt, "lt")
le = _comparison(declare.cmp_le, "le")
gt = _comparison(declare.cmp_gt, "gt")
ge = _comparison(declare.cmp_ge, "ge")
eq = _comparison(declare.cmp_eq, "eq")
ne = _comparison(declare.cmp_ne, "ne")

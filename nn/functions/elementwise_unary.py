"""Unary elementwise operators: negation, the math functions, rounding, tests for NaN and
infinity, ``clone``. ``nn.functions.elementwise`` exports them.

Integer inputs follow PyTorch: the transcendental functions compute in float32 (``exp`` of an
int64 tensor is float32); rounding, ``abs``, ``sign``, ``square`` and ``relu`` keep the dtype;
the few that PyTorch does not run on integers (``frac``) raise its error. Each gradient is
written in the differentiable operators, so that it can be differentiated again.
"""
from __future__ import annotations

import math

import numpy as np

from nn.ops import activation as act
from nn.ops import cpu, declare

from ..tensor import zeros_like
from .base import FLOATING, Op, Tensor, _kernel, cast, torch_name

__all__ = ["neg", "negative", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt",
           "rsqrt", "square", "abs", "absolute", "sign", "sin", "cos", "tan", "asin", "acos",
           "atan", "sinh", "cosh", "erf", "reciprocal", "floor", "ceil", "round", "trunc",
           "frac", "sigmoid", "tanh", "relu", "logical_not", "bitwise_not", "isnan", "isinf",
           "isfinite", "nan_to_num", "clone"]

def _no_kernel_for(kernel, dtype):
    """PyTorch's error for an operator that has no kernel for ``dtype``."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{torch_name(dtype)}\'')


def _check(x, name):
    """PyTorch's error for an ``input`` that is not a tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


class Unary(Op):
    """An elementwise operator of one tensor whose gradient is ``g * derivative(x, out)``.

    Subclasses set ``kernel`` (a te declaration) and ``derivative`` (written in operators);
    ``None`` as derivative means zero almost everywhere (rounding, ``sign``).
    """
    kernel = None
    # an Op ``gradient(g, saved)`` computing ``g * derivative`` in one kernel (else the
    # derivative runs in operators)
    gradient = None
    # what the derivative reads, and so what the node keeps, as PyTorch's: "input" (log,
    # sin...), "output" (exp, tanh, relu, reciprocal...) or "" (nothing: rounding, sign,
    # frac). An in-place write to a tensor that is not kept is then allowed, as in PyTorch,
    # and one to a kept tensor is caught by its version check
    saves = "input"

    @staticmethod
    def derivative(x, out):
        return None

    @staticmethod
    def forward(ctx, x, params):
        out = _kernel(ctx._forward_cls.kernel, x._data, out_shape=x.shape, **dict(params))
        saves = ctx._forward_cls.saves
        ctx.save_for_backward(x if saves == "input" else None,
                              out if saves == "output" else None)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        gradient = ctx._forward_cls.gradient
        if gradient is not None:
            return gradient.apply(g, x if out is None else out), None
        d = ctx._forward_cls.derivative(x, out)
        if d is None:       # zeros, not g * 0: an inf or NaN gradient still gives 0 (PyTorch)
            return zeros_like(g, device=g.device), None
        if isinstance(d, Tensor) and d.dtype == "bool":   # a mask: select (inf * 0 is NaN)
            from .elementwise import where  # (elementwise builds on this module)
            return where(d, g, 0.0), None
        return g * d, None


def _unary(name, kernel, derivative=None, integers="float", saves="input", gradient=None):
    """Define the Op ``name`` and its public function.

    ``integers``: "float" computes integer inputs in float32, "keep" keeps their dtype,
    "refuse" raises PyTorch's error for them. ``saves``: what ``derivative`` reads ("input",
    "output" or ""; nothing without a derivative). ``gradient``: the one-kernel Op of
    ``g * derivative`` (``Unary.gradient``).
    """
    body = {"kernel": kernel, "__module__": __name__, "__doc__": f"Elementwise {name}.",
            "gradient": gradient}
    if derivative is not None:
        body["derivative"] = staticmethod(derivative)
    body["saves"] = saves if derivative is not None else ""
    op = type(name.title().replace("_", ""), (Unary,), body)

    def function(input, **params):
        _check(input, name)
        if input.dtype not in FLOATING:
            if integers == "float":
                input = cast(input, "float32")
            elif integers == "refuse":
                raise _no_kernel_for(f"{name}_cpu", input.dtype)
        return op.apply(input, tuple(sorted(params.items())))
    function.__name__ = name
    function.__doc__ = f"Elementwise ``{name}``."
    return function


LN2, LN10 = math.log(2.0), math.log(10.0)

exp = _unary("exp", cpu.exp, lambda x, out: out, saves="output")
exp2 = _unary("exp2", declare.exp2, lambda x, out: out * LN2, saves="output")
expm1 = _unary("expm1", declare.expm1, lambda x, out: out + 1, saves="output")
log = _unary("log", cpu.log, lambda x, out: x.reciprocal())
log2 = _unary("log2", declare.log2, lambda x, out: (x * LN2).reciprocal())
log10 = _unary("log10", declare.log10, lambda x, out: (x * LN10).reciprocal())
log1p = _unary("log1p", declare.log1p, lambda x, out: (x + 1).reciprocal())
sqrt = _unary("sqrt", cpu.sqrt, lambda x, out: 0.5 / out, saves="output")
rsqrt = _unary("rsqrt", declare.rsqrt, lambda x, out: out * out * out * -0.5, saves="output")
sin = _unary("sin", declare.sin, lambda x, out: x.cos())
cos = _unary("cos", declare.cos, lambda x, out: -x.sin())
tan = _unary("tan", declare.tan, lambda x, out: out * out + 1, saves="output")
asin = _unary("asin", declare.asin, lambda x, out: (1 - x * x).rsqrt())
acos = _unary("acos", declare.acos, lambda x, out: -(1 - x * x).rsqrt())
atan = _unary("atan", declare.atan, lambda x, out: (x * x + 1).reciprocal())
sinh = _unary("sinh", declare.sinh, lambda x, out: x.cosh())
cosh = _unary("cosh", declare.cosh, lambda x, out: x.sinh())
erf = _unary("erf", declare.erf, lambda x, out: (-x * x).exp() * (2 / math.sqrt(math.pi)))
tanh = _unary("tanh", cpu.tanh, lambda x, out: 1 - out * out, saves="output")
sigmoid = _unary("sigmoid", cpu.sigmoid, lambda x, out: out * (1 - out), saves="output")
reciprocal = _unary("reciprocal", declare.reciprocal, lambda x, out: -(out * out),
                    saves="output")


class ReluGrad(Op):
    """relu's gradient ``g * (out != 0)`` from its saved output in one kernel (PyTorch's
    ``threshold_backward``); its own gradient in ``g`` is the same kernel, in ``out`` zero."""

    @staticmethod
    def forward(ctx, g, out):
        ctx.save_for_backward(out)
        return _kernel(act.relu_backward, g._data, out._data, out_shape=out.shape)

    @staticmethod
    def backward(ctx, gg):
        (out,) = ctx.saved_tensors
        return (ReluGrad.apply(gg, out) if ctx.needs_input_grad[0] else None), None


# out != 0, not out > 0: the gradient passes where the output is NaN, as PyTorch's
_relu = _unary("relu", cpu.relu, lambda x, out: out != 0, integers="keep", saves="output",
               gradient=ReluGrad)


def relu(input, inplace=False):
    """Elementwise ``relu``; ``inplace`` writes it into ``input`` (``F.relu(x, inplace=True)``,
    as PyTorch's functional form)."""
    _check(input, "relu")
    return input._inplace(_relu) if inplace else _relu(input)


square_ = _unary("square", declare.square, lambda x, out: x * 2, integers="keep")
abs_ = _unary("abs", declare.abs, lambda x, out: x.sign(), integers="keep")
sign_ = _unary("sign", declare.sign, integers="keep")
floor = _unary("floor", declare.floor, integers="keep")
ceil = _unary("ceil", declare.ceil, integers="keep")
trunc = _unary("trunc", declare.trunc, integers="keep")
frac = _unary("frac", declare.frac, lambda x, out: 1, integers="refuse", saves="")
round_ = _unary("round", declare.round, integers="keep")


def round(input, *, decimals=0):
    """Round half to even, to ``decimals`` decimal places."""
    if decimals and input.dtype not in FLOATING:
        raise _no_kernel_for("round_cpu", input.dtype)
    return round_(input, decimals=int(decimals))


def square(input):
    """``input * input`` (bool gives int64)."""
    return square_(cast(input, "int64") if input.dtype == "bool" else input)


def abs(input):
    """The absolute value."""
    _check(input, "abs")
    if input.dtype == "bool":
        raise _no_kernel_for("abs_cpu", "bool")
    return abs_(input)


absolute = abs


def sign(input):
    """-1, 0 or 1 after the sign (0 for NaN); bool stays bool."""
    return sign_(input)


class Neg(Op):
    @staticmethod
    def forward(ctx, x):
        return _kernel(cpu.negative, x._data, out_shape=x.shape)

    @staticmethod
    def backward(ctx, g):
        return -g


def neg(input):
    """``-input``."""
    _check(input, "neg")
    if input.dtype == "bool":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return Neg.apply(input)


negative = neg


class Clone(Op):
    @staticmethod
    def forward(ctx, x):
        return _kernel(declare.copy, x._data, out_shape=x.shape)

    @staticmethod
    def backward(ctx, g):
        return g


def clone(input, *, memory_format=None):
    """A copy of ``input`` on new storage (gradients flow through it)."""
    _check(input, "clone")
    return Clone.apply(input)


class NanToNum(Op):
    @staticmethod
    def forward(ctx, x, nan, posinf, neginf):
        ctx.save_for_backward(x)
        return _kernel(declare.nan_to_num, x._data, out_shape=x.shape, nan=nan, posinf=posinf,
                       neginf=neginf)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * isfinite(x).to(g.dtype), None, None, None


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN replaced by ``nan``, infinities by ``posinf`` / ``neginf`` (default: the largest
    finite values of the dtype)."""
    _check(input, "nan_to_num")
    if input.dtype not in FLOATING:
        return clone(input)
    info = np.finfo(input.dtype)
    return NanToNum.apply(input, float(nan), float(info.max if posinf is None else posinf),
                          float(info.min if neginf is None else neginf))


def _predicate(name, kernel, doc):
    def predicate(input):
        _check(input, name)
        return _kernel(kernel, input._data, out_shape=input.shape)
    predicate.__name__ = name
    predicate.__doc__ = doc
    return predicate


isnan = _predicate("isnan", declare.isnan, "Where the elements are NaN (a bool tensor).")
isinf = _predicate("isinf", declare.isinf, "Where the elements are infinite (bool).")
isfinite = _predicate("isfinite", declare.isfinite, "Where the elements are finite (bool).")
logical_not = _predicate("logical_not", declare.logical_not,
                         "Where the elements are zero (bool).")


def bitwise_not(input):
    """``~input`` for integer and bool tensors."""
    _check(input, "bitwise_not")
    if input.dtype in FLOATING:
        raise _no_kernel_for("bitwise_not_cpu", input.dtype)
    return _kernel(declare.bitwise_not, input._data, out_shape=input.shape)

"""Activation functions with ``torch.nn.functional``'s names and signatures.

Each runs as one fused kernel forward and one fused kernel backward (``g * f'(x)`` from the
saved input, ``nn/ops/activation.py``). The backward is itself a Function, so gradients can be
differentiated again: its gradient with respect to ``g`` is the same kernel, and with respect
to ``x`` it differentiates the activation written in operators (``_REFERENCE`` below) twice.
``relu``, ``sigmoid``, ``tanh``, ``softmax`` and ``log_softmax`` live in ``elementwise`` and
``reduce``.
"""
from __future__ import annotations

from nn.ops import activation as act

from .. import autograd
from ..tensor import ones_like
from .base import FLOATING, Op, Tensor, _dim, _kernel, _sum_to
from .elementwise import clamp, logical_and, minimum, where
from .elementwise_unary import _no_kernel_for, relu
from .shape import cat, chunk

__all__ = ["leaky_relu", "elu", "selu", "celu", "gelu", "prelu", "softplus", "silu", "mish",
           "hardtanh", "relu6", "hardsigmoid", "hardswish", "softsign", "logsigmoid",
           "threshold", "glu", "hardshrink", "softshrink", "tanhshrink", "relu_",
           "leaky_relu_", "elu_", "hardtanh_", "threshold_"]

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _softplus_ops(x, beta=1.0, threshold=20.0):
    # the log1p branch clamped to the threshold: where it is not taken, exp does not
    # overflow (inf there would make its zero gradient NaN)
    scaled = x * beta
    return where(scaled > threshold, x, clamp(scaled, None, threshold).exp().log1p() / beta)


# each activation in differentiable operators: what its second derivative is taken from
_REFERENCE = {
    "elu": lambda x, alpha, scale, input_scale: where(
        x > 0, x * scale, ((x * input_scale).exp() - 1) * (scale * alpha)),
    "celu": lambda x, alpha, scale, input_scale: _REFERENCE["elu"](x, alpha, scale, input_scale),
    "gelu": lambda x, approximate: (
        x * 0.5 * (1 + ((x + x * x * x * act.GELU_CUBIC) * act.SQRT_2_PI).tanh())
        if approximate == "tanh" else x * 0.5 * (1 + (x * act.SQRT1_2).erf())),
    "softplus": _softplus_ops,
    "silu": lambda x: x * x.sigmoid(),
    "mish": lambda x: x * x.exp().log1p().tanh(),
    "hardswish": lambda x: x * clamp(x + 3, 0.0, 6.0) / 6,
    "softsign": lambda x: x / (1 + x.abs()),
    "logsigmoid": lambda x: minimum(x, 0.0) - (-x.abs()).exp().log1p(),
}


class Activation(Op):
    """``f(x)`` for the activation ``name`` of ``nn.ops.activation`` with ``params``."""

    @staticmethod
    def forward(ctx, x, name, params):
        ctx.save_for_backward(x)
        ctx.kind, ctx.params = name, params
        forward, _ = act.ACTIVATIONS[name]
        return _kernel(forward, x._data, out_shape=x.shape, **dict(params))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return ctx._forward_cls.gradient.apply(g, x, ctx.kind, ctx.params), None, None


class ActivationBackward(Op):
    """``g * f'(x)`` in one kernel; differentiable again."""

    @staticmethod
    def forward(ctx, g, x, name, params):
        ctx.save_for_backward(g, x)
        ctx.kind, ctx.params = name, params
        _, backward = act.ACTIVATIONS[name]
        return _kernel(backward, g._data, x._data, out_shape=x.shape, **dict(params))

    @staticmethod
    def backward(ctx, gg):
        g, x = ctx.saved_tensors
        need = ctx.needs_input_grad
        grad_g = ctx._forward_cls.apply(gg, x, ctx.kind, ctx.params) if need[0] else None
        grad_x = None
        if need[1]:
            reference = _REFERENCE.get(ctx.kind)
            if reference is None:       # piecewise linear: f'' is zero almost everywhere
                grad_x = gg * 0
            else:
                with autograd.enable_grad():
                    y = reference(x, **dict(ctx.params))
                    (slope,) = autograd.grad(y, x, ones_like(y), create_graph=True)
                    (grad_x,) = autograd.grad(slope, x, gg * g, create_graph=True)
        return grad_g, grad_x, None, None


def _activation_class(node):
    """The Op of one activation, named so that its nodes read as PyTorch's."""
    backward = type(f"{node}Backward", (ActivationBackward,), {"__module__": __name__})
    return type(node, (Activation,), {"gradient": backward, "__module__": __name__})


_OPS = {name: _activation_class(node) for name, node in [
    ("leaky_relu", "LeakyRelu"), ("elu", "Elu"), ("celu", "Celu"), ("gelu", "Gelu"),
    ("softplus", "Softplus"), ("silu", "Silu"), ("mish", "Mish"), ("hardtanh", "Hardtanh"),
    ("hardsigmoid", "Hardsigmoid"), ("hardswish", "Hardswish"), ("softsign", "Softsign"),
    ("logsigmoid", "LogSigmoid"), ("threshold", "Threshold")]}


def _apply(name, input, integers=False, inplace=False, **params):
    """Activation ``name`` of ``input``; ``inplace`` writes it into ``input`` (which then takes
    the result's place in the graph, as PyTorch rebases an in-place result)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dtype not in FLOATING and not integers:
        raise _no_kernel_for(f"{name}_cpu", input.dtype)
    params = tuple(sorted(params.items()))
    if inplace:
        return input._inplace(lambda x: _OPS[name].apply(x, name, params))
    return _OPS[name].apply(input, name, params)


def _number(name, value):
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    return float(value)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``x`` where positive, else ``negative_slope * x``."""
    return _apply("leaky_relu", input, inplace=inplace,
                  negative_slope=_number("negative_slope", negative_slope))


def elu(input, alpha=1.0, inplace=False):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""
    return _apply("elu", input, inplace=inplace, alpha=_number("alpha", alpha), scale=1.0,
                  input_scale=1.0)


def selu(input, inplace=False):
    """``scale * elu(x, alpha)`` with the self-normalizing constants."""
    return _apply("elu", input, inplace=inplace, alpha=SELU_ALPHA, scale=SELU_SCALE,
                  input_scale=1.0)


def celu(input, alpha=1.0, inplace=False):
    """``x`` where positive, else ``alpha * (exp(x / alpha) - 1)``."""
    alpha = _number("alpha", alpha)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _apply("celu", input, alpha=alpha, scale=1.0, input_scale=1.0 / alpha, inplace=inplace)


def gelu(input, approximate="none"):
    """``x * Phi(x)`` (Phi the normal CDF), or its tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _apply("gelu", input, approximate=approximate)


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""
    return _apply("softplus", input, beta=_number("beta", beta),
                  threshold=_number("threshold", threshold))


def silu(input, inplace=False):
    """``x * sigmoid(x)``."""
    return _apply("silu", input, inplace=inplace)


def mish(input, inplace=False):
    """``x * tanh(softplus(x))``."""
    return _apply("mish", input, inplace=inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``x`` clamped to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _apply("hardtanh", input, integers=True, min_val=_number("min_val", min_val),
                  max_val=_number("max_val", max_val), inplace=inplace)


def relu6(input, inplace=False):
    """``min(max(x, 0), 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input, inplace=False):
    """``relu6(x + 3) / 6``."""
    return _apply("hardsigmoid", input, inplace=inplace)


def hardswish(input, inplace=False):
    """``x * relu6(x + 3) / 6``."""
    return _apply("hardswish", input, inplace=inplace)


def softsign(input):
    """``x / (1 + |x|)``."""
    return _apply("softsign", input)


def logsigmoid(input):
    """``log(sigmoid(x))``, stable for large ``|x|``."""
    return _apply("logsigmoid", input)


def threshold(input, threshold, value, inplace=False):
    """``x`` where ``x > threshold``, else ``value``."""
    return _apply("threshold", input, integers=True, threshold=_number("threshold", threshold),
                  value=_number("value", value), inplace=inplace)


def _shrink_lambd(name, lambd):
    lambd = _number("lambd", lambd)
    if lambd < 0:
        raise RuntimeError(f"{name}: lambda must be greater or equal to 0, but found to be "
                           f"{lambd}.")
    return lambd


def _tensor_input(name, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dtype not in FLOATING:
        raise _no_kernel_for(f"{name}_cpu", input.dtype)


def hardshrink(input, lambd=0.5):
    """``x`` where ``|x| > lambd``, else 0 (NaN stays NaN, as PyTorch's)."""
    _tensor_input("hardshrink", input)
    lambd = _number("lambd", lambd)
    inside = logical_and(input >= -lambd, input <= lambd)
    return where(inside, 0.0, input)


def softshrink(input, lambd=0.5):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""
    _tensor_input("softshrink", input)
    lambd = _shrink_lambd("softshrink", lambd)
    return where(input > lambd, input - lambd,
                 where(input < -lambd, input + lambd, input * 0.0))


def tanhshrink(input):
    """``x - tanh(x)``."""
    _tensor_input("tanhshrink", input)
    return input - input.tanh()


def relu_(input):
    """``relu`` written into ``input``."""
    return input._inplace(relu)


def leaky_relu_(input, negative_slope=0.01):
    """``leaky_relu`` written into ``input``."""
    return leaky_relu(input, negative_slope, inplace=True)


def elu_(input, alpha=1.0):
    """``elu`` written into ``input``."""
    return elu(input, alpha, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """``hardtanh`` written into ``input``."""
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold_value, value):
    """``threshold`` written into ``input``."""
    return threshold(input, threshold_value, value, inplace=True)


# ----------------------------------------------------------------------------- prelu, glu

class Prelu(Op):
    """``x`` where positive, else ``weight * x``, the weight broadcast over channels."""

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return _kernel(act.prelu, x._data, weight._data, out_shape=x.shape)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        need = ctx.needs_input_grad
        positive = x > 0
        return (where(positive, g, g * weight) if need[0] else None,
                _sum_to(where(positive, 0.0, g * x), weight.shape) if need[1] else None)


Prelu._node_cls.__name__ = "PreluKernelBackward0"


def prelu(input, weight):
    """``x`` where positive, else ``weight * x``; ``weight`` has one element or one per
    channel (dimension 1 of ``input``)."""
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu(): argument 'weight' must be Tensor, not "
                        f"{type(weight).__name__}")
    if input.dtype not in FLOATING:
        raise _no_kernel_for("prelu_cpu", input.dtype)
    count = weight.numel()
    if count != 1:
        channels = input.shape[1] if input.ndim >= 2 else 1
        if input.ndim == 0 or count != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {count} and channel size = {channels}.")
        weight = weight.reshape((channels,) + (1,) * (input.ndim - 2))
    elif weight.ndim:
        weight = weight.reshape(())
    return Prelu.apply(input, weight)


class Glu(Op):
    @staticmethod
    def forward(ctx, x, dim):
        ctx.save_for_backward(x)
        ctx.dim = dim
        shape = tuple(n // 2 if d == dim else n for d, n in enumerate(x.shape))
        return _kernel(act.glu, x._data, out_shape=shape, axis=dim)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return GluBackward.apply(g, x, ctx.dim), None


class GluBackward(Op):
    """Both halves of glu's gradient in one kernel."""

    @staticmethod
    def forward(ctx, g, x, dim):
        ctx.save_for_backward(g, x)
        ctx.dim = dim
        return _kernel(act.glu_backward, g._data, x._data, out_shape=x.shape, axis=dim)

    @staticmethod
    def backward(ctx, gg):
        g, x = ctx.saved_tensors
        need = ctx.needs_input_grad
        a, b = chunk(x, 2, ctx.dim)
        gga, ggb = chunk(gg, 2, ctx.dim)
        s = b.sigmoid()
        ds = s * (1 - s)
        grad_g = gga * s + ggb * a * ds if need[0] else None
        grad_x = None
        if need[1]:
            grad_a = ggb * g * ds
            grad_b = gga * g * ds + ggb * g * a * ds * (1 - 2 * s)
            grad_x = cat([grad_a, grad_b], ctx.dim)
        return grad_g, grad_x, None


def glu(input, dim=-1):
    """``a * sigmoid(b)`` for the two halves ``a``, ``b`` of ``input`` along ``dim``."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    dim = _dim(dim, input.ndim)
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim} is size "
                           f"{input.shape[dim]}")
    if input.dtype not in FLOATING:
        raise _no_kernel_for("glu_cpu", input.dtype)
    return Glu.apply(input, dim)


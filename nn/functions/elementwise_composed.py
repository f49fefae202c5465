"""Elementwise operators composed of the others: addcmul, addcdiv, fmax, fmin, hypot,
heaviside, sgn, xlogy, float_power, frexp, ldexp, and the special functions lgamma, digamma
and erfinv (computed in float64). Their gradients come from the composition.
``nn.functions.elementwise`` exports these names.
"""
from __future__ import annotations

import collections
import math

from .base import FLOATING, Op, Tensor, _sum_to, cast
from .elementwise import _tensors, add, div, mul, pow, result_type_of, where
from .elementwise_unary import _check, _no_kernel_for, erf, sign

__all__ = ["addcmul", "addcdiv", "fmax", "fmin", "hypot", "heaviside", "sgn", "xlogy",
           "float_power", "frexp", "ldexp", "lgamma", "digamma", "erfinv"]


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

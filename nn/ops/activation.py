"""te declarations of the activation functions: for each, a fused forward ``f(x)`` and a fused
backward ``g * f'(x)`` computed from the input, one pass each, in the default injective
schedule. Parameters (a slope, alpha, beta...) are kernel parameters. ``relu_backward`` is
relu's (whose forward is ``cpu.relu``), from the saved output.

    fwd, bwd = ACTIVATIONS["elu"]
    cpu.build(fwd, [(n,)], alpha=1.0, scale=1.0, input_scale=1.0)
"""
from __future__ import annotations

import math

import te

from .declare import elementwise

SQRT1_2 = math.sqrt(0.5)
SQRT_2_PI = math.sqrt(2.0 / math.pi)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
GELU_CUBIC = 0.044715


def _c(value, x):
    return te.const(value, x.dtype)


def _sigmoid(v):
    return te.sigmoid(v)


# ----------------------------------------------------------------------------- f(x), f'(x)

def leaky_relu(x, negative_slope):
    return te.select(x > 0, x, x * _c(negative_slope, x))


def d_leaky_relu(x, negative_slope):
    return te.select(x > 0, _c(1.0, x), _c(negative_slope, x))


def elu(x, alpha, scale, input_scale):
    negative = _c(scale * alpha, x) * (te.exp(x * _c(input_scale, x)) - 1)
    return te.select(x > 0, x * _c(scale, x), negative)


def d_elu(x, alpha, scale, input_scale):
    negative = _c(scale * alpha * input_scale, x) * te.exp(x * _c(input_scale, x))
    return te.select(x > 0, _c(scale, x), negative)


def gelu(x, approximate):
    if approximate == "tanh":
        inner = _c(SQRT_2_PI, x) * (x + _c(GELU_CUBIC, x) * x * x * x)
        return _c(0.5, x) * x * (1 + te.tanh(inner))
    return _c(0.5, x) * x * (1 + te.erf(x * _c(SQRT1_2, x)))


def d_gelu(x, approximate):
    if approximate == "tanh":
        inner = _c(SQRT_2_PI, x) * (x + _c(GELU_CUBIC, x) * x * x * x)
        t = te.tanh(inner)
        d_inner = _c(SQRT_2_PI, x) * (1 + _c(3 * GELU_CUBIC, x) * x * x)
        return _c(0.5, x) * (1 + t) + _c(0.5, x) * x * (1 - t * t) * d_inner
    cdf = _c(0.5, x) * (1 + te.erf(x * _c(SQRT1_2, x)))
    return cdf + x * _c(INV_SQRT_2PI, x) * te.exp(_c(-0.5, x) * x * x)


def softplus(x, beta, threshold):
    scaled = x * _c(beta, x)
    return te.select(scaled > _c(threshold, x), x, te.log1p(te.exp(scaled)) / _c(beta, x))


def d_softplus(x, beta, threshold):
    scaled = x * _c(beta, x)
    return te.select(scaled > _c(threshold, x), _c(1.0, x), _sigmoid(scaled))


def silu(x):
    return x * _sigmoid(x)


def d_silu(x):
    s = _sigmoid(x)
    return s * (1 + x * (1 - s))


def mish(x):
    return x * te.tanh(te.log1p(te.exp(x)))


def d_mish(x):
    t = te.tanh(te.log1p(te.exp(x)))
    return t + x * _sigmoid(x) * (1 - t * t)


def hardtanh(x, min_val, max_val):
    low, high = _c(min_val, x), _c(max_val, x)
    return te.select(x < low, low, te.select(x > high, high, x))


def d_hardtanh(x, min_val, max_val):
    inside = te.all(x > _c(min_val, x), x < _c(max_val, x))
    return te.select(inside, _c(1.0, x), _c(0.0, x))


def hardsigmoid(x):
    return hardtanh(x + 3, 0.0, 6.0) * _c(1.0 / 6.0, x)


def d_hardsigmoid(x):
    inside = te.all(x > _c(-3.0, x), x < _c(3.0, x))
    return te.select(inside, _c(1.0 / 6.0, x), _c(0.0, x))


def hardswish(x):
    return x * hardsigmoid(x)


def d_hardswish(x):
    middle = x * _c(1.0 / 3.0, x) + _c(0.5, x)
    # PyTorch's: 0 at and below -3, the slope 1 at and above 3
    return te.select(x <= -3, _c(0.0, x), te.select(x < 3, middle, _c(1.0, x)))


def softsign(x):
    return x / (1 + te.abs(x))


def d_softsign(x):
    d = 1 + te.abs(x)
    return 1 / (d * d)


def logsigmoid(x):
    # min(x, 0) - log1p(exp(-|x|)): never exponentiates a large positive number
    return te.min(x, _c(0.0, x)) - te.log1p(te.exp(-te.abs(x)))


def d_logsigmoid(x):
    return _sigmoid(-x)


def threshold(x, threshold, value):
    return te.select(x > _c(threshold, x), x, _c(value, x))


def d_threshold(x, threshold, value):
    return te.select(x > _c(threshold, x), _c(1.0, x), _c(0.0, x))


def _pair(name, f, df):
    forward = elementwise(name, f)
    backward = elementwise(f"{name}_backward", lambda g, x, **p: g * df(x, **p))
    return forward, backward


ACTIVATIONS = {name: _pair(name, f, df) for name, f, df in [
    ("leaky_relu", leaky_relu, d_leaky_relu), ("elu", elu, d_elu), ("gelu", gelu, d_gelu),
    ("softplus", softplus, d_softplus), ("silu", silu, d_silu), ("mish", mish, d_mish),
    ("hardtanh", hardtanh, d_hardtanh), ("hardsigmoid", hardsigmoid, d_hardsigmoid),
    ("hardswish", hardswish, d_hardswish), ("softsign", softsign, d_softsign),
    ("logsigmoid", logsigmoid, d_logsigmoid), ("threshold", threshold, d_threshold)]}
ACTIVATIONS["celu"] = ACTIVATIONS["elu"]        # elu with input_scale = 1 / alpha

# relu's gradient from its saved output, one pass (PyTorch's threshold_backward): ``g`` where
# the output is not 0 (NaN passes, as ``NaN <= 0`` fails there), else 0
relu_backward = elementwise(
    "relu_backward", lambda g, out: te.select(out.not_equal(_c(0, out)), g, _c(0, g)))

prelu = elementwise("prelu", lambda x, w: te.select(x > 0, x, w * x))


def glu(x, axis):
    """``a * sigmoid(b)`` for the halves ``a``, ``b`` of ``x`` along ``axis``."""
    half = x.shape[axis].value // 2
    shape = [half if d == axis else x.shape[d] for d in range(len(x.shape))]

    def body(*i):
        second = i[:axis] + (i[axis] + half,) + i[axis + 1:]
        return x[i] * te.sigmoid(x[second])
    return te.compute(shape, body, name="glu", tag="elemwise")


def glu_backward(g, x, axis):
    """The gradient of ``glu`` for both halves of ``x``, in one pass."""
    half = x.shape[axis].value // 2

    def body(*i):
        upper = i[axis] >= half
        k = te.select(upper, i[axis] - half, i[axis])
        first = i[:axis] + (k,) + i[axis + 1:]
        second = i[:axis] + (k + half,) + i[axis + 1:]
        s = te.sigmoid(x[second])
        return te.select(upper, g[first] * x[first] * s * (1 - s), g[first] * s)
    return te.compute(x.shape, body, name="glu_backward", tag="elemwise")

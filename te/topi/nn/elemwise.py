"""Elementwise activations: ``relu``, ``leaky_relu``, ``prelu`` (tagged ``"elemwise"``)."""
from __future__ import annotations

from ... import expr as _expr
from ...tensor import Tensor, TEError, compute
from .. import tag as _tag


def _check(opname, arg, value):
    if not isinstance(value, Tensor):
        raise TEError(f"topi.nn.{opname}: {arg} must be a te tensor, got "
                      f"{type(value).__name__} {value!r}")


def relu(x):
    """``max(x, 0)`` elementwise."""
    _check("relu", "x", x)
    return compute(x.shape, lambda *i: _expr.binary(_expr.Max, x[i], _expr.const(0, x.dtype)),
                   name="T_relu", tag=_tag.ELEMWISE)


def leaky_relu(x, alpha):
    """``x`` where positive, else ``alpha * x``."""
    _check("leaky_relu", "x", x)

    def body(*i):
        v = x[i]
        return _expr.select(v > 0, v, v * _expr.const(alpha, x.dtype))
    return compute(x.shape, body, name="T_leaky_relu", tag=_tag.ELEMWISE)


def prelu(x, slope, axis=1):
    """``x`` where positive, else ``slope[c] * x`` with ``c`` the index along ``axis``."""
    _check("prelu", "x", x)
    _check("prelu", "slope", slope)
    ndim = len(x.shape)
    if not -ndim <= axis < ndim:
        raise ValueError(f"topi.nn.prelu: axis={axis} is out of range for x of {ndim} "
                         "dimensions")
    axis %= ndim
    if len(slope.shape) != 1:
        raise ValueError(f"topi.nn.prelu: slope must be 1-D, got shape {tuple(slope.shape)}")

    def body(*i):
        v = x[i]
        return _expr.select(v > 0, v, v * slope[i[axis]])
    return compute(x.shape, body, name="T_prelu", tag=_tag.BROADCAST)

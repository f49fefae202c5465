"""Elementwise unary operators (TVM's ``topi.math``): each returns a compute op tagged
``"elemwise"`` of its input's shape."""
from __future__ import annotations

from .. import expr as _expr
from .. import intrin as _intrin
from .. import dtypes
from ..tensor import Tensor, TEError, compute
from . import tag as _tag

__all__ = ["exp", "log", "log2", "log10", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin",
           "cos", "tan", "floor", "ceil", "round", "trunc", "abs", "negative", "identity",
           "isnan", "logical_not", "bitwise_not", "cast", "clip", "elemwise_sum", "full_like",
           "zeros_like", "ones_like"]


def _check(opname, x):
    if not isinstance(x, Tensor):
        raise TEError(f"topi.{opname}: x must be a te tensor, got {type(x).__name__} {x!r}")


def _unary(opname, rule):
    def op(x):
        _check(opname, x)
        return compute(x.shape, lambda *i: rule(x[i]), name=f"T_{opname}", tag=_tag.ELEMWISE)
    op.__name__ = opname
    op.__doc__ = f"Elementwise {opname}."
    return op


exp = _unary("exp", _intrin.exp)
log = _unary("log", _intrin.log)
log2 = _unary("log2", _intrin.log2)
log10 = _unary("log10", _intrin.log10)
sqrt = _unary("sqrt", _intrin.sqrt)
rsqrt = _unary("rsqrt", _intrin.rsqrt)
tanh = _unary("tanh", _intrin.tanh)
sigmoid = _unary("sigmoid", _intrin.sigmoid)
erf = _unary("erf", _intrin.erf)
sin = _unary("sin", _intrin.sin)
cos = _unary("cos", _intrin.cos)
tan = _unary("tan", _intrin.tan)
floor = _unary("floor", _intrin.floor)
ceil = _unary("ceil", _intrin.ceil)
round = _unary("round", _intrin.round)
trunc = _unary("trunc", _intrin.trunc)
abs = _unary("abs", _intrin.abs)
negative = _unary("negative", lambda v: -v)
identity = _unary("identity", lambda v: v)
isnan = _unary("isnan", lambda v: v.not_equal(v))
logical_not = _unary("logical_not", lambda v: ~v if dtypes.is_bool(v.dtype) else v.equal(0))
bitwise_not = _unary("bitwise_not", lambda v: ~v)


def cast(x, dtype):
    """``x`` converted to ``dtype`` (a scalar expression is cast itself)."""
    if not isinstance(x, Tensor):
        return _expr.cast(dtype, x)
    return compute(x.shape, lambda *i: x[i].astype(dtype), name="T_cast", tag=_tag.ELEMWISE)


def clip(x, a_min, a_max):
    """``x`` with each element limited to ``[a_min, a_max]``."""
    _check("clip", x)

    def body(*i):
        lo = _expr.cast(x.dtype, a_min)
        hi = _expr.cast(x.dtype, a_max)
        return _expr.binary(_expr.Max, _expr.binary(_expr.Min, x[i], hi), lo)
    return compute(x.shape, body, name="T_clip", tag=_tag.ELEMWISE)


def elemwise_sum(xs):
    """The elementwise sum of tensors of one shape."""
    xs = list(xs)
    if not xs:
        raise TEError("topi.elemwise_sum: xs must hold at least one tensor")
    for k, t in enumerate(xs):
        _check(f"elemwise_sum (xs[{k}])", t)

    def body(*i):
        total = xs[0][i]
        for t in xs[1:]:
            total = total + t[i]
        return total
    return compute(xs[0].shape, body, name="T_elemwise_sum", tag=_tag.ELEMWISE)


def full_like(x, fill_value):
    """A tensor of ``x``'s shape and dtype holding ``fill_value`` everywhere."""
    _check("full_like", x)
    return compute(x.shape, lambda *i: _expr.const(fill_value, x.dtype), name="T_full_like",
                   tag=_tag.ELEMWISE)


def zeros_like(x):
    """Zeros of ``x``'s shape and dtype."""
    return full_like(x, 0)


def ones_like(x):
    """Ones of ``x``'s shape and dtype."""
    return full_like(x, 1)

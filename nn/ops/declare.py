"""te declarations of the tensor layer's elementwise operators and reductions that the CPU
library (``nn.ops.cpu``) does not have, each named after the operator (the name counts its
kernel calls in ``nn.functions.kernel_calls``).

Elementwise declarations broadcast their operands as numpy does and take the default injective
schedule of ``cpu.build``; a Python number reaches them as a one-element operand, so one kernel
serves every value. Reductions over several stages (variance, logsumexp, log-softmax, the
softmax gradients, norm) take ``schedule_fused_reduce``: elementwise stages inlined into their
consumers; rows computed one at a time when every reduction is over the last axis (as
``cpu.schedule_softmax`` does), else each reduction as ``cpu.schedule_reduce`` runs one.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

import te
from te.tensor import ComputeOp

from . import cpu
from .cpu_reduce import _reduce, _schedule_reduction, _vector_partials
from .cpu_util import PARALLEL_MIN, num_elements, schedule_rows, vector_lanes

INF = float("inf")


def elementwise(name, fn):
    """A declaration applying ``fn(*elements, **params)`` to broadcast operands."""
    def declare(*operands, **params):
        return cpu.broadcast(lambda *v: fn(*v, **params), *operands, name=name)
    declare.__name__ = name
    declare.__doc__ = f"Elementwise {name} with numpy's broadcasting."
    return declare


def _floating(dtype):
    return dtype.startswith("float")


def _is_nan(v):
    return v.not_equal(v)       # unordered: true only for NaN (and never for integers)


# ----------------------------------------------------------------------------- unary math

def _expm1(x):
    # Kahan's expm1: (u - 1) * x / log(u) cancels the rounding error of exp near 0
    u = te.exp(x)
    um1 = u - 1
    exact = te.select(um1.equal(-1), te.const(-1.0, x.dtype), um1 * x / te.log(u))
    return te.select(u.equal(1), x, te.select(u.equal(INF), u, exact))


def _sign(x):
    if x.dtype == "bool":
        return x
    one, zero = te.const(1, x.dtype), te.const(0, x.dtype)
    return te.select(x > 0, one, te.select(x < 0, -one, zero))


def _round(x, decimals=0):
    if decimals == 0 or not _floating(x.dtype):
        return te.round(x)
    scale = te.const(10.0 ** decimals, x.dtype)
    return te.round(x * scale) / scale


copy = elementwise("clone", lambda x: x)
exp2 = elementwise("exp2", te.exp2)
log2 = elementwise("log2", te.log2)
log10 = elementwise("log10", te.log10)
log1p = elementwise("log1p", te.log1p)
expm1 = elementwise("expm1", _expm1)
rsqrt = elementwise("rsqrt", te.rsqrt)
sin = elementwise("sin", te.sin)
cos = elementwise("cos", te.cos)
tan = elementwise("tan", te.tan)
asin = elementwise("asin", te.asin)
acos = elementwise("acos", te.acos)
atan = elementwise("atan", te.atan)
sinh = elementwise("sinh", te.sinh)
cosh = elementwise("cosh", te.cosh)
erf = elementwise("erf", te.erf)
floor = elementwise("floor", te.floor)
ceil = elementwise("ceil", te.ceil)
round = elementwise("round", _round)
trunc = elementwise("trunc", te.trunc)
frac = elementwise("frac", lambda x: x - te.trunc(x))
sign = elementwise("sign", _sign)
square = elementwise("square", lambda x: x * x)
reciprocal = elementwise("reciprocal", lambda x: te.const(1.0, x.dtype) / x)
abs = elementwise("abs", te.abs)
isnan = elementwise("isnan", _is_nan)
isinf = elementwise("isinf", lambda x: te.abs(x).equal(INF) if _floating(x.dtype)
                    else te.const(False))
isfinite = elementwise("isfinite", lambda x: te.abs(x) < INF if _floating(x.dtype)
                       else te.const(True))
logical_not = elementwise("logical_not", lambda x: x.equal(0) if x.dtype != "bool" else ~x)
bitwise_not = elementwise("bitwise_not", lambda x: ~x)


def _nan_to_num(x, nan, posinf, neginf):
    out = te.select(_is_nan(x), te.const(nan, x.dtype), x)
    out = te.select(x.equal(INF), te.const(posinf, x.dtype), out)
    return te.select(x.equal(-INF), te.const(neginf, x.dtype), out)


nan_to_num = elementwise("nan_to_num", _nan_to_num)


def power_scalar(x, exponent):
    """``x ** exponent`` for a constant exponent; integers go through float64 and back."""
    def body(v):
        if _floating(x.dtype):
            return te.power(v, te.const(exponent, x.dtype))
        return te.power(v.astype("float64"), te.const(exponent, "float64")).astype(x.dtype)
    return cpu.broadcast(body, x, name="power")


def astype(x, to):
    """``x`` converted to dtype ``to``."""
    return te.compute(x.shape, lambda *i: x[i].astype(to), name="cast", tag="elemwise")


def broadcast_to(x, shape):
    """``x`` repeated along its size-1 (and missing leading) axes up to ``shape``."""
    lead = len(shape) - len(x.shape)

    def body(*idx):
        return x[tuple(0 if x.shape[k].value == 1 and shape[lead + k] != 1 else idx[lead + k]
                       for k in range(len(x.shape)))]
    return te.compute(shape, body, name="broadcast_to", tag="elemwise")


# ----------------------------------------------------------------------------- binary

cmp_lt = elementwise("lt", lambda a, b: a < b)
cmp_le = elementwise("le", lambda a, b: a <= b)
cmp_gt = elementwise("gt", lambda a, b: a > b)
cmp_ge = elementwise("ge", lambda a, b: a >= b)
cmp_eq = elementwise("eq", lambda a, b: a.equal(b))
cmp_ne = elementwise("ne", lambda a, b: a.not_equal(b))


def _power(a, b):
    if _floating(a.dtype):
        return te.power(a, b)
    return te.power(a.astype("float64"), b.astype("float64")).astype(a.dtype)


def _nonzero(b):
    """An integer divisor with 0 replaced by 1: integer division by zero would trap."""
    return te.select(b.equal(0), te.const(1, b.dtype), b)


def _floor_divide(a, b):
    if _floating(a.dtype):
        # PyTorch's div_floor_floating, from C's fmod: 2 // -inf is -1 (as Python's), inf // 2
        # is NaN, a zero quotient has the sign of a / b, and a quotient within rounding of an
        # integer rounds to it
        zero, one = te.const(0, a.dtype), te.const(1, a.dtype)
        mod = te.fmod(a, b)
        div = (a - mod) / b
        div = te.select(te.all(mod.not_equal(zero), (b < zero).not_equal(mod < zero)),
                        div - one, div)
        floor = te.floor(div)
        floor = te.select(div - floor > te.const(0.5, a.dtype), floor + one, floor)
        signed_zero = te.select(_negative(a / b), -one, one) * zero
        out = te.select(div.equal(zero), signed_zero, floor)
        return te.select(b.equal(zero), a / b, out)
    return te.floordiv(a, _nonzero(b))


def _trunc_divide(a, b):
    if _floating(a.dtype):
        return te.trunc(a / b)
    return te.truncdiv(a, _nonzero(b))


def _fmod(a, b):
    if _floating(a.dtype):
        return te.fmod(a, b)        # C's fmod (exact; the dividend's sign, -0.0 included)
    return te.truncmod(a, _nonzero(b))


def _remainder(a, b):
    if _floating(a.dtype):
        # PyTorch's: C's fmod, moved by b when its sign differs from b's (Python's %)
        zero = te.const(0, a.dtype)
        mod = te.fmod(a, b)
        crosses = te.all(mod.not_equal(zero), (b < zero).not_equal(mod < zero))
        return te.select(crosses, mod + b, mod)
    return te.floormod(a, _nonzero(b))


def _extremum(pick):
    """maximum / minimum propagating NaN, as PyTorch's."""
    def fn(a, b):
        return te.select(_is_nan(a), a, te.select(_is_nan(b), b, pick(a, b)))
    return fn


def _negative(v):
    """The sign bit of a non-NaN ``v``: ``v < 0``, and for a zero ``1 / v < 0`` (-0.0)."""
    zero = te.const(0, v.dtype)
    return te.any(v < zero, te.all(v.equal(zero), te.const(1, v.dtype) / v < zero))


def _atan2(y, x):
    """C's ``atan2`` (PyTorch's), signed zeros and infinities included: +-0 for y = +-0
    and x >= +0, +-pi for x <= -0; +-pi/2 for x = +-0; +-pi/4 or +-3pi/4 when both are
    infinite; NaN when either is."""
    dtype = y.dtype
    pi = te.const(math.pi, dtype)

    def signed(v):          # v with y's sign
        return te.select(_negative(y), -v, v)

    base = te.atan(y / x)
    quadrant = te.select(x < te.const(0, dtype), te.select(y >= te.const(0, dtype),
                                                           base + pi, base - pi), base)
    infinite = te.select(x > te.const(0, dtype), te.const(math.pi / 4, dtype),
                         te.const(3 * math.pi / 4, dtype))
    out = te.select(te.all(te.isinf(y), te.isinf(x)), signed(infinite), quadrant)
    out = te.select(x.equal(te.const(0, dtype)), signed(te.const(math.pi / 2, dtype)), out)
    out = te.select(y.equal(te.const(0, dtype)), te.select(_negative(x), signed(pi), y), out)
    return te.select(te.any(_is_nan(y), _is_nan(x)), y + x, out)


def _bool(v):
    return v if v.dtype == "bool" else v.not_equal(0)


power = elementwise("pow", _power)
maximum = elementwise("maximum", _extremum(lambda a, b: te.max(a, b)))
minimum = elementwise("minimum", _extremum(lambda a, b: te.min(a, b)))
floor_divide = elementwise("floor_divide", _floor_divide)
trunc_divide = elementwise("trunc_divide", _trunc_divide)
fmod = elementwise("fmod", _fmod)
remainder = elementwise("remainder", _remainder)
atan2 = elementwise("atan2", _atan2)
logical_and = elementwise("logical_and", lambda a, b: te.all(_bool(a), _bool(b)))
logical_or = elementwise("logical_or", lambda a, b: te.any(_bool(a), _bool(b)))
logical_xor = elementwise("logical_xor", lambda a, b: _bool(a).not_equal(_bool(b)))
bitwise_and = elementwise("bitwise_and", lambda a, b: a & b)
bitwise_or = elementwise("bitwise_or", lambda a, b: a | b)
bitwise_xor = elementwise("bitwise_xor", lambda a, b: a.not_equal(b) if a.dtype == "bool"
                          else a ^ b)


def _shift_outside(a, b):
    """Where shift ``b`` is negative or at least ``a``'s width (C leaves those undefined)."""
    bits = int(np.dtype(a.dtype).itemsize * 8)
    return te.any(b < te.const(0, b.dtype), b >= te.const(bits, b.dtype))


def _shift_left(a, b):
    # PyTorch's: 0 for a shift out of range
    return te.select(_shift_outside(a, b), te.const(0, a.dtype), a << b)


def _shift_right(a, b):
    # PyTorch's: the sign (0 or -1) for a shift out of range (arithmetic for signed types)
    zero = te.const(0, a.dtype)
    sign = te.select(a < zero, te.const(-1, a.dtype), zero) if np.dtype(a.dtype).kind == "i" \
        else zero
    return te.select(_shift_outside(a, b), sign, a >> b)


bitwise_left_shift = elementwise("bitwise_left_shift", _shift_left)
bitwise_right_shift = elementwise("bitwise_right_shift", _shift_right)
# a scaled second operand in one pass: ``a + alpha * b`` (alpha is the third operand)
add_scaled = elementwise("add", lambda a, b, alpha: a + alpha * b)


# ----------------------------------------------------------------------------- selections

def _clamp(x, low=None, high=None):
    # written as selects, not max/min, so that a NaN input stays NaN; a NaN bound gives NaN,
    # as PyTorch's (its clamp is min(max(x, low), high) with NaN-propagating max and min)
    if low is not None:
        x = te.select(_is_nan(low), low, te.select(x < low, low, x))
    if high is not None:
        x = te.select(_is_nan(high), high, te.select(x > high, high, x))
    return x


clamp = elementwise("clamp", lambda x, low, high: _clamp(x, low, high))
clamp_min = elementwise("clamp_min", lambda x, low: _clamp(x, low=low))
clamp_max = elementwise("clamp_max", lambda x, high: _clamp(x, high=high))
# the mask of clamp's gradient: where the input lies inside the bounds
clamp_mask = elementwise("clamp_mask", lambda x, low, high: te.all(x >= low, x <= high))
where = elementwise("where", lambda c, x, y: te.select(_bool(c), x, y))
lerp = elementwise("lerp", lambda a, b, w: a + w * (b - a))


# ----------------------------------------------------------------------------- reductions

def argmax(x, axis, keepdims=False):
    """The first index of the maximum along ``axis`` (int64), as numpy's ``argmax`` (of the
    first NaN where there is one)."""
    return _arg_extremum(x, axis, keepdims, cpu.max, "argmax")


def argmin(x, axis, keepdims=False):
    """The first index of the minimum along ``axis`` (int64), as numpy's ``argmin`` (of the
    first NaN where there is one)."""
    return _arg_extremum(x, axis, keepdims, cpu.min, "argmin")


def _arg_extremum(x, axis, keepdims, reduce, name):
    top = reduce(x, axis=axis, keepdims=True)
    k = te.reduce_axis((0, x.shape[axis]), name="k")
    never = te.const(np.iinfo("int64").max, "int64")

    def body(*idx):
        full = list(idx) if keepdims else list(idx[:axis]) + [0] + list(idx[axis:])
        src = full[:axis] + [k] + full[axis + 1:]
        at_top = full[:axis] + [0] + full[axis + 1:]
        value = x[tuple(src)]
        hit = value.equal(top[tuple(at_top)])
        if _floating(x.dtype):      # the maximum is NaN where the row has one: its first index
            hit = te.any(hit, _is_nan(value))
        return te.min(te.select(hit, k.var.astype("int64"), never), axis=k)
    shape = [1 if d == axis else x.shape[d] for d in range(len(x.shape))
             if keepdims or d != axis]
    return te.compute(shape, body, name=name)


def prod(x, axis=None, keepdims=False):
    """The product over ``axis``."""
    return _reduce(x, axis, keepdims, te.prod, "prod")


def all(x, axis=None, keepdims=False):
    """Whether every element over ``axis`` is nonzero, as uint8 (0 or 1; read it as bool)."""
    flags = te.compute(x.shape, lambda *i: _bool(x[i]).astype("uint8"), name="all.flags")
    return _reduce(flags, axis, keepdims, te.min, "all")


def any(x, axis=None, keepdims=False):
    """Whether some element over ``axis`` is nonzero, as uint8 (0 or 1; read it as bool)."""
    flags = te.compute(x.shape, lambda *i: _bool(x[i]).astype("uint8"), name="any.flags")
    return _reduce(flags, axis, keepdims, te.max, "any")


def _broadcast_back(r, axes):
    """An index function reading the keepdims reduction ``r`` at a full-shape index."""
    return lambda idx: r[tuple(0 if d in axes else i for d, i in enumerate(idx))]


def variance(x, axis, keepdims, correction, root=False):
    """``sum((x - mean)^2) / (n - correction)`` over ``axis`` (its square root when
    ``root``: the standard deviation), in one kernel."""
    ndim = len(x.shape)
    axes = tuple(sorted(a % ndim for a in axis))
    count = 1
    for a in axes:
        count *= x.shape[a].value
    mean = cpu.mean(x, axis=axes, keepdims=True, name="var.mean")
    at_mean = _broadcast_back(mean, axes)
    dev = te.compute(x.shape, lambda *i: (x[i] - at_mean(i)) * (x[i] - at_mean(i)),
                     name="var.dev")
    total = _reduce(dev, axes, keepdims, te.sum, "var.sum")
    if count > correction:
        scale = te.const(1.0 / (count - correction), x.dtype)

        def spread(v):
            return v * scale
    else:       # PyTorch divides by max(0, n - correction): inf, or NaN for a zero sum
        def spread(v):
            return v / te.const(0.0, x.dtype)
    if root:
        return te.compute(total.shape, lambda *i: te.sqrt(spread(total[i])), name="std",
                          tag="elemwise")
    return te.compute(total.shape, lambda *i: spread(total[i]), name="var", tag="elemwise")


def norm2(x, axis, keepdims):
    """``sqrt(sum(x^2))`` over ``axis``."""
    squares = te.compute(x.shape, lambda *i: x[i] * x[i], name="norm.square")
    total = _reduce(squares, axis, keepdims, te.sum, "norm.sum")
    return te.compute(total.shape, lambda *i: te.sqrt(total[i]), name="norm", tag="elemwise")


def product_of_others(x, axis):
    """For each element, the product of the other elements along ``axis`` (no division, so
    exact where some are zero; quadratic in the axis length)."""
    k = te.reduce_axis((0, x.shape[axis]), name="k")
    one = te.const(1, x.dtype)

    def body(*idx):
        other = x[idx[:axis] + (k,) + idx[axis + 1:]]
        return te.prod(te.select(k.var.equal(idx[axis]), one, other), axis=k)
    return te.compute(x.shape, body, name="product_of_others")


def logsumexp(x, axis, keepdims):
    """``log(sum(exp(x)))`` over ``axis``, shifted by the maximum (stable in float32)."""
    ndim = len(x.shape)
    axes = tuple(sorted(a % ndim for a in axis))
    top = _reduce(x, axes, True, te.max, "logsumexp.max")
    zero = te.const(0.0, x.dtype)
    shift = te.compute(top.shape, lambda *i: te.select(te.abs(top[i]).equal(INF), zero, top[i]),
                       name="logsumexp.shift")
    at_shift = _broadcast_back(shift, axes)
    e = te.compute(x.shape, lambda *i: te.exp(x[i] - at_shift(i)), name="logsumexp.exp")
    total = _reduce(e, axes, True, te.sum, "logsumexp.sum")

    def body(*idx):
        full = idx if keepdims else _expand_index(idx, axes, ndim)
        return te.log(total[full]) + shift[full]
    shape = [1 if d in axes else x.shape[d] for d in range(ndim) if keepdims or d not in axes]
    return te.compute(shape, body, name="logsumexp", tag="elemwise")


def _expand_index(idx, axes, ndim):
    """A keepdims index from an index of the reduced shape."""
    it = iter(idx)
    return tuple(0 if d in axes else next(it) for d in range(ndim))


def log_softmax(x, axis):
    """``x - max - log(sum(exp(x - max)))`` along ``axis``."""
    top = _reduce(x, (axis,), True, te.max, "log_softmax.max")
    at_top = _broadcast_back(top, (axis,))
    e = te.compute(x.shape, lambda *i: te.exp(x[i] - at_top(i)), name="log_softmax.exp")
    total = _reduce(e, (axis,), True, te.sum, "log_softmax.sum")
    # the logarithm once per row (a "row" stage is not inlined into the output); x - max
    # first, so that large inputs keep their precision
    log_total = te.compute(top.shape, lambda *i: te.log(total[i]), name="log_softmax.log",
                           tag="row")
    at_log = _broadcast_back(log_total, (axis,))
    return te.compute(x.shape, lambda *i: x[i] - at_top(i) - at_log(i), name="log_softmax",
                      tag="elemwise")


def softmax_backward(g, y, axis):
    """The gradient of softmax from its output ``y``: ``y * (g - sum(g * y))``."""
    gy = te.compute(g.shape, lambda *i: g[i] * y[i], name="softmax_backward.gy")
    total = _reduce(gy, (axis,), True, te.sum, "softmax_backward.sum")
    at_total = _broadcast_back(total, (axis,))
    return te.compute(g.shape, lambda *i: y[i] * (g[i] - at_total(i)), name="softmax_backward",
                      tag="elemwise")


def log_softmax_backward(g, y, axis):
    """The gradient of log-softmax from its output ``y``: ``g - exp(y) * sum(g)``."""
    total = _reduce(g, (axis,), True, te.sum, "log_softmax_backward.sum")
    at_total = _broadcast_back(total, (axis,))
    return te.compute(g.shape, lambda *i: g[i] - te.exp(y[i]) * at_total(i),
                      name="log_softmax_backward", tag="elemwise")


def cumulative(x, axis, op="sum", reverse=False):
    """The running sum (or product) along ``axis``, from the end when ``reverse``.

    Each output reduces its own prefix (quadratic in the axis length, which is fine for the
    short axes cumulative operators see in layers)."""
    n = x.shape[axis].value
    k = te.reduce_axis((0, n), name="k")
    reducer = te.sum if op == "sum" else te.prod

    def body(*idx):
        inside = k.var >= idx[axis] if reverse else k.var <= idx[axis]
        return reducer(x[idx[:axis] + (k,) + idx[axis + 1:]], axis=k, where=inside)
    return te.compute(x.shape, body, name=f"cum{op}")


def schedule_fused_reduce(outs):
    """Schedule for declarations of several stages (one output).

    Elementwise stages are inlined, except per-row ones (tag "row"). When every reduction
    runs over the last axis (softmax-like), the leading axes of the output are fused into one
    parallel loop and, inside it, each row's reductions (vector partial results) and row
    stages are computed just before the row's outputs, so the row is read from cache the
    second time. Otherwise each reduction runs as ``cpu.schedule_reduce`` runs one, and the
    output as vector rows.
    """
    out = outs[0] if isinstance(outs, (list, tuple)) else outs
    s = te.create_schedule(out.op)
    for stage in s.stages:
        op = stage.op
        if (isinstance(op, ComputeOp) and op is not out.op and not op.is_reduction
                and getattr(op, "tag", "") != "row"):
            stage.compute_inline()
    reductions = [st.op.output(0) for st in s.stages if getattr(st.op, "tag", "") == "reduce"]
    rows = [st.op.output(0) for st in s.stages if getattr(st.op, "tag", "") == "row"]
    last = len(out.shape) - 1
    if last > 0 and reductions and builtins.all(r.op.attrs["axes"] == (last,)
                                                for r in reductions):
        _schedule_by_rows(s, out, reductions, rows)
        return s
    for red in reductions:
        _schedule_reduction(s, red)
    schedule_rows(s, out, list(s[out].op.axis))
    return s


def _schedule_by_rows(s, out, reductions, rows):
    stage = s[out]
    lanes = vector_lanes(out.dtype)
    *lead, last = stage.op.axis
    outer = stage.fuse(*lead) if len(lead) > 1 else lead[0]
    if last.dom.extent.value >= lanes:
        _, vec = stage.split(last, factor=lanes)
        stage.vectorize(vec)
    for red in reductions:
        if red.op.reduce_axis[-1].dom.extent.value >= lanes * 4:
            for rf in _vector_partials(s, red):
                s[rf].compute_at(stage, outer)
        s[red].compute_at(stage, outer)
    for row in rows:
        s[row].compute_at(stage, outer)
    total = num_elements(out.shape)
    if total >= PARALLEL_MIN:
        stage.parallel(outer)

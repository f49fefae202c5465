"""Pooling over the last two axes of (N, C, H, W), te declarations with their CPU schedules.

Each spatial axis has a window rule, a hashable tuple (so that it can be a build parameter):

    ("fixed", K, s, p, d, out)   windows of K taps d apart, every s, starting at -p; ``out``
                                 windows (ceil_mode is settled by whoever computes ``out``)
    ("adaptive", out)            ``out`` windows from floor(o * n / out) to
                                 ceil((o + 1) * n / out), PyTorch's adaptive pooling

    max_pool        (values, flat indices h * W + w of the first maximum), one pass with an
                    (value, index) reducer; NaN wins, as in PyTorch
    max_pool_grad   the gradient scattered to the indices, computed per input element as a
                    gather over the few windows that can contain it
    max_pool_gather the gradient of ``max_pool_grad``: values read back at the indices
    avg_pool        window sums over the divisor (count_include_pad, divisor_override)
    avg_pool_grad   per input element, the sum over the windows containing it of g / divisor
"""
from __future__ import annotations

import numpy as np

import te

from .cpu_util import const_shape, vector_lanes

__all__ = ["max_pool", "max_pool_grad", "max_pool_gather", "avg_pool", "avg_pool_grad",
           "schedule_pool", "window_taps", "window_cover"]


def window_taps(rule, size):
    """The most taps of one window of ``rule`` over an axis of ``size`` elements."""
    if rule[0] == "fixed":
        return rule[1]
    out = rule[1]
    return max(-(-(o + 1) * size // out) - o * size // out for o in range(out))


def window_cover(rule, size):
    """The most windows of ``rule`` that contain one element of an axis of ``size``."""
    if rule[0] == "fixed":
        _, K, s, _, d, _ = rule
        return d * (K - 1) // s + 1
    out = rule[1]
    return max(-(-(h + 1) * out // size) - h * out // size for h in range(size))


def _start(rule, o, size):
    if rule[0] == "fixed":
        return o * rule[2] - rule[3]
    return o * size // rule[1]


def _position(rule, o, k, size):
    """(input index of tap ``k`` of window ``o``, whether the tap lies inside the input)."""
    if rule[0] == "fixed":
        h = _start(rule, o, size) + k * rule[4]
        return h, te.all(h >= 0, h < size)
    start = _start(rule, o, size)
    end = ((o + 1) * size + rule[1] - 1) // rule[1]
    return start + k, start + k < end


def _windows(rule, h, size):
    """(first window that can contain input index ``h``, last one) of ``rule``."""
    if rule[0] == "fixed":
        _, K, s, p, d, out = rule
        lo = te.max((h + p - d * (K - 1) + s - 1) // s, 0)
        return lo, te.min((h + p) // s, out - 1)
    out = rule[1]
    return h * out // size, ((h + 1) * out + size - 1) // size - 1


def _span(rule, o, size, include_pad):
    """The divisor's factor of window ``o`` along one axis (PyTorch's avg_pool rules)."""
    if rule[0] == "adaptive":
        return ((o + 1) * size + rule[1] - 1) // rule[1] - o * size // rule[1]
    _, K, s, p, _, _ = rule
    start = o * s - p
    end = te.min(start + K, size + p)
    if include_pad:
        return end - start
    return te.min(end, size) - te.max(start, 0)


def _out_size(rule):
    return rule[5] if rule[0] == "fixed" else rule[1]


def _clamp(i, size):
    return te.min(te.max(i, 0), size - 1)


def _argmax_combine(x, y):
    take = te.any(y[0] > x[0], y[0].not_equal(y[0]))
    return te.select(take, y[0], x[0]), te.select(take, y[1], x[1])


def _argmax_identity(value_dtype, index_dtype):
    return te.const(-np.inf, value_dtype), te.const(-1, index_dtype)


_argmax = te.comm_reducer(_argmax_combine, _argmax_identity, name="argmax")


def max_pool(x, rules=()):
    """(maxima, int64 flat indices h * W + w of the first maximum) of each window."""
    N, C, H, W = const_shape(x, "max_pool")
    rh, rw = rules
    ky = te.reduce_axis((0, window_taps(rh, H)), name="ky")
    kx = te.reduce_axis((0, window_taps(rw, W)), name="kx")
    low = te.const(-np.inf, x.dtype)

    def body(n, c, oy, ox):
        h, h_ok = _position(rh, oy, ky, H)
        w, w_ok = _position(rw, ox, kx, W)
        value = te.select(te.all(h_ok, w_ok), x[n, c, _clamp(h, H), _clamp(w, W)], low)
        return _argmax((value, (h * W + w).astype("int64")), axis=[ky, kx])
    return te.compute((N, C, _out_size(rh), _out_size(rw)), body, name="max_pool", tag="pool")


def _covering_windows(rules, in_size):
    """Reduce axes over the windows that cover an input position, along rows and columns
    (the gradients sum over them)."""
    (rh, rw), (H, W) = rules, in_size
    return (te.reduce_axis((0, window_cover(rh, H)), name="a"),
            te.reduce_axis((0, window_cover(rw, W)), name="b"))


def max_pool_grad(g, indices, in_size=(1, 1), rules=()):
    """The gradient of ``max_pool``'s values for its input (N, C, *in_size): each window's
    gradient added at its index."""
    N, C, OH, OW = const_shape(g, "max_pool_grad")
    (H, W), (rh, rw) = in_size, rules
    a, b = _covering_windows(rules, in_size)
    zero = te.const(0, g.dtype)

    def body(n, c, h, w):
        (ylo, yhi), (xlo, xhi) = _windows(rh, h, H), _windows(rw, w, W)
        oy, ox = ylo + a, xlo + b
        at = (n, c, te.min(oy, OH - 1), te.min(ox, OW - 1))
        hit = te.all(oy <= yhi, ox <= xhi, indices[at].equal((h * W + w).astype("int64")))
        return te.sum(te.select(hit, g[at], zero), axis=[a, b])
    return te.compute((N, C, H, W), body, name="max_pool_grad", tag="pool")


def max_pool_gather(grad_in, indices):
    """``grad_in`` (N, C, H * W) read at each window's index: (N, C, OH, OW)."""
    N, C, OH, OW = const_shape(indices, "max_pool_gather")
    size = const_shape(grad_in, "max_pool_gather")[2]
    return te.compute((N, C, OH, OW),
                      lambda n, c, y, x: grad_in[n, c, _clamp(indices[n, c, y, x], size)],
                      name="max_pool_gather", tag="elemwise")


def _divisor(rules, oy, ox, size, include_pad, override, dtype):
    if override:
        return te.const(override, dtype)
    return (_span(rules[0], oy, size[0], include_pad)
            * _span(rules[1], ox, size[1], include_pad)).astype(dtype)


def avg_pool(x, rules=(), count_include_pad=True, divisor_override=0):
    """The mean of each window; padding counts as zeros (and in the divisor when
    ``count_include_pad``); a nonzero ``divisor_override`` replaces the divisor."""
    N, C, H, W = const_shape(x, "avg_pool")
    rh, rw = rules
    ky = te.reduce_axis((0, window_taps(rh, H)), name="ky")
    kx = te.reduce_axis((0, window_taps(rw, W)), name="kx")
    zero = te.const(0, x.dtype)

    def total(n, c, oy, ox):
        h, h_ok = _position(rh, oy, ky, H)
        w, w_ok = _position(rw, ox, kx, W)
        value = te.select(te.all(h_ok, w_ok), x[n, c, _clamp(h, H), _clamp(w, W)], zero)
        return te.sum(value, axis=[ky, kx])
    shape = (N, C, _out_size(rh), _out_size(rw))
    sums = te.compute(shape, total, name="avg_pool.sum", tag="pool")
    return te.compute(shape, lambda n, c, oy, ox: sums[n, c, oy, ox] / _divisor(
        rules, oy, ox, (H, W), count_include_pad, divisor_override, x.dtype),
        name="avg_pool", tag="pool_divide")


def avg_pool_grad(g, in_size=(1, 1), rules=(), count_include_pad=True, divisor_override=0):
    """The gradient of ``avg_pool`` for its input (N, C, *in_size)."""
    N, C, OH, OW = const_shape(g, "avg_pool_grad")
    (H, W), (rh, rw) = in_size, rules
    a, b = _covering_windows(rules, in_size)
    zero = te.const(0, g.dtype)

    def body(n, c, h, w):
        (ylo, yhi), (xlo, xhi) = _windows(rh, h, H), _windows(rw, w, W)
        oy, ox = te.min(ylo + a, OH - 1), te.min(xlo + b, OW - 1)
        share = g[n, c, oy, ox] / _divisor(rules, oy, ox, (H, W), count_include_pad,
                                           divisor_override, g.dtype)
        return te.sum(te.select(te.all(ylo + a <= yhi, xlo + b <= xhi), share, zero),
                      axis=[a, b])
    return te.compute((N, C, H, W), body, name="avg_pool_grad", tag="pool")


def schedule_pool(outs):
    """Schedule for the pooling declarations: (image, channel, row) fused into the parallel
    loop; the columns in vectors, the window's taps (reduction) outside the lanes, so that
    each tap is one vector operation over a row of outputs. A final division is computed
    per row, right after the sums."""
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    out = outs[0]
    s = te.create_schedule(out.op)          # several outputs come from one operation
    pooled = out
    if getattr(out.op, "tag", "") == "pool_divide":
        pooled = out.op.input_tensors()[0]
    n, c, y, x = s[out].op.axis
    lanes = vector_lanes(out.dtype)
    width = out.shape[3].value
    if out.op.name == "max_pool" and width < lanes <= width * out.shape[2].value:
        return _schedule_narrow(s, out, lanes)
    outer = s[out].fuse(n, c, y)
    s[out].parallel(outer)
    if pooled is not out:
        s[pooled].compute_at(s[out], outer)
        if width >= lanes:
            _, xi = s[out].split(x, factor=lanes)
            s[out].vectorize(xi)
    stage = s[pooled]
    px = stage.op.axis[3]
    if width >= lanes:
        xo, xi = stage.split(px, factor=lanes)
        stage.reorder(xo, *stage.op.reduce_axis, xi)
        stage.vectorize(xi)
    return s


def _schedule_narrow(s, out, lanes):
    """max_pool with rows narrower than a vector: (image, channel) parallel, the rows and
    columns fused into one axis in vectors, the taps outside the lanes (1.5-2x the
    row-at-a-time loop, which runs such rows in scalars)."""
    n, c, y, x = s[out].op.axis
    s[out].parallel(s[out].fuse(n, c))
    outer, inner = s[out].split(s[out].fuse(y, x), factor=lanes)
    s[out].reorder(outer, *s[out].op.reduce_axis, inner)
    s[out].vectorize(inner)
    return s

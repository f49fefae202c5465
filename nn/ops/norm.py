"""te declarations and CPU schedules of the normalization layers, forward and backward.

Two layouts cover every layer:

- channel statistics (batch norm): ``x`` viewed as (N, C, L); mean and variance per channel
  over N and L. One kernel computes the statistics of a channel in a single vectorized pass
  (the sums of ``x - x[0, c, 0]`` and of its square: shifting by a sample of the channel keeps
  the variance exact when the mean is large) and normalizes that channel while it is still in
  the cache; channels run in parallel.
- row statistics (layer, group and instance norm): ``x`` viewed as (N, G, K, L); mean and
  variance per (n, g) over K and L; the affine weight has the shape (G, K, 1) (a weight per
  channel) or (1, 1, L) (a weight per element, layer norm). Rows run in parallel.

The backward kernels compute the closed-form gradients: the two sums a row or channel needs
(of ``g`` and of ``g * xhat``) in one pass, then ``dx`` in a second, again per channel or row.
"""
from __future__ import annotations

import te
from te.expr import IntImm
from te.tensor import ComputeOp

from .cpu_util import PARALLEL_MIN, num_elements, vector_lanes

__all__ = ["batch_norm_train", "batch_norm_eval", "batch_norm_backward", "running_stats",
           "row_norm", "row_norm_backward", "row_norm_param_grad", "schedule_channels",
           "schedule_rows_norm", "schedule_param_grad", "schedule_running"]

sum2 = te.comm_reducer(lambda x, y: (x[0] + y[0], x[1] + y[1]),
                       lambda t0, t1: (te.const(0, t0), te.const(0, t1)), name="sum2")


def _c(value, dtype):
    return te.const(value, dtype)


def _int(dim):
    return dim.value if isinstance(dim, IntImm) else int(dim)


# ----------------------------------------------------------------------------- batch norm

def _channel_stats(x):
    """Per-channel sums of ``x - x[0, c, 0]`` and of its square, in one pass."""
    n, c_, l_ = x.shape
    rn = te.reduce_axis((0, n), name="rn")
    rl = te.reduce_axis((0, l_), name="rl")

    def body(c):
        d = x[rn, c, rl] - x[0, c, 0]
        return sum2((d, d * d), axis=[rn, rl])
    return te.compute((c_,), body, name="stats", tag="norm_stats")


def batch_norm_train(x, *affine, eps):
    """Training forward of (N, C, L) ``x``: (y, mean, biased variance) with batch statistics;
    ``affine`` is (weight, bias) or empty."""
    count = _int(x.shape[0]) * _int(x.shape[2])
    s1, s2 = _channel_stats(x)
    dt = x.dtype
    if count:
        mean = te.compute(s1.shape, lambda c: x[0, c, 0] + s1[c] / _c(count, dt), name="mean")
    else:                       # an empty batch: 0 / 0, as PyTorch (x[0] does not exist)
        mean = te.compute(s1.shape, lambda c: s1[c] / _c(count, dt), name="mean")
    var = te.compute(s1.shape, lambda c: te.max(
        (s2[c] - s1[c] * s1[c] / _c(count, dt)) / _c(count, dt), _c(0.0, dt)), name="var")
    y = _normalize(x, mean, var, affine, eps, "y")
    return y, mean, var


def batch_norm_eval(x, mean, var, *affine, eps):
    """Forward of (N, C, L) ``x`` with given (running) statistics."""
    return _normalize(x, mean, var, affine, eps, "y")


def _normalize(x, mean, var, affine, eps, name):
    dt = x.dtype

    def body(n, c, l_):
        scale = te.rsqrt(var[c] + _c(eps, dt))
        if affine:
            weight, bias = affine
            return (x[n, c, l_] - mean[c]) * (scale * weight[c]) + bias[c]
        return (x[n, c, l_] - mean[c]) * scale
    return te.compute(x.shape, body, name=name, tag="norm_out")


def running_stats(running_mean, running_var, mean, var, factor, *, count):
    """The updated running statistics: ``(1 - factor) * running + factor * batch``, where the
    batch variance is made unbiased (``count / (count - 1)``) and ``mean``/``var`` (R, C) are
    averaged over R (the instances of instance norm; R = 1 for batch norm)."""
    rows = _int(mean.shape[0])
    dt = running_mean.dtype
    r = te.reduce_axis((0, rows), name="r")
    sums = te.compute(running_mean.shape, lambda c: sum2((mean[r, c], var[r, c]), axis=r),
                      name="batch")
    unbias = count / max(count - 1, 1) / rows

    def update(running, k, scale):
        return te.compute(running.shape, lambda c: (_c(1.0, dt) - factor[0]) * running[c]
                          + factor[0] * sums[k][c] * _c(scale, dt), name=f"new{k}")
    return update(running_mean, 0, 1.0 / rows), update(running_var, 1, unbias)


def batch_norm_backward(g, x, mean, var, *weight, eps, train):
    """(dx, dweight, dbias) of batch norm; ``train``: the statistics came from ``x``."""
    n, c_, l_ = x.shape
    count = _int(n) * _int(l_)
    dt = x.dtype
    rn = te.reduce_axis((0, n), name="rn")
    rl = te.reduce_axis((0, l_), name="rl")

    def invstd(c):
        return te.rsqrt(var[c] + _c(eps, dt))
    dbias, dweight = te.compute((c_,), lambda c: sum2(
        (g[rn, c, rl], g[rn, c, rl] * (x[rn, c, rl] - mean[c]) * invstd(c)), axis=[rn, rl]),
        name="dparams", tag="norm_stats")

    def gain(c):
        return invstd(c) * weight[0][c] if weight else invstd(c)

    def body(n_, c, l_):
        if not train:
            return g[n_, c, l_] * gain(c)
        inv = _c(1.0 / max(count, 1), dt)      # count 0: dx has no elements
        proj = dweight[c] * invstd(c) * inv
        return (g[n_, c, l_] - dbias[c] * inv - (x[n_, c, l_] - mean[c]) * proj) * gain(c)
    dx = te.compute(x.shape, body, name="dx", tag="norm_out")
    return dx, dweight, dbias


def _vector_partials(s, red):
    """Split the last reduce axis of ``red`` into vector lanes of partial results (an
    ``rfactor`` stage, returned) when it is at least a vector long; else None."""
    lanes = vector_lanes(red.dtype)
    rstage = s[red]
    last = rstage.op.reduce_axis[-1]
    if _int(last.dom.extent) < lanes:
        return None
    _, inner = rstage.split(last, factor=lanes)
    rf = s.rfactor(red, inner, factor_axis=len(rstage.op.axis))
    rf = rf[0] if isinstance(rf, list) else rf
    lane = s[rf].op.axis[-1]
    s[rf].reorder(*s[rf].op.reduce_axis, lane)
    s[rf].vectorize(lane)
    return rf


def _stats_inside(s, red, stage, at):
    """Compute the reduction ``red`` (and its partial results) inside loop ``at`` of
    ``stage``."""
    rf = _vector_partials(s, red)
    if rf is not None:
        s[rf].compute_at(stage, at)
    s[red].compute_at(stage, at)


def _vector_last(s, t):
    lanes = vector_lanes(t.dtype)
    last = s[t].leaf_iter_vars[-1]
    if _int(last.dom.extent) >= lanes:
        _, inner = s[t].split(last, factor=lanes)
        s[t].vectorize(inner)


def _big(t):
    total = num_elements(t.shape)
    return total is None or total >= PARALLEL_MIN


def _producers(out):
    """The compute stages that ``out`` reads, directly or not."""
    found, todo = [], [out]
    while todo:
        t = todo.pop()
        for src in t.op.input_tensors():
            if isinstance(src.op, ComputeOp) and src.op not in [f.op for f in found]:
                found.append(src)
                todo.append(src)
    return found


def _schedule_per_row(s, main, row, rest):
    """Put every producer of ``main`` inside its loop ``row`` (reductions in vector partials),
    and the ``rest`` of the outputs that ``main`` does not read at the root, rows (their
    first axis) in parallel."""
    stage = s[main]
    inside = _producers(main)
    for t in inside:
        if t.op.is_reduction:
            _stats_inside(s, t, stage, row)
        else:
            s[t].compute_at(stage, row)
    placed = {t.op for t in inside}
    for t in rest:
        if t.op in placed:
            continue
        placed.add(t.op)
        first = s[t].op.axis[0]
        rf = _vector_partials(s, t)
        if rf is not None:
            s[rf].compute_at(s[t], first)
        if _big(main):
            s[t].parallel(first)


def schedule_channels(outs):
    """Schedule for batch norm's kernels: the main output (N, C, L) runs channel by channel
    (parallel), each channel's statistics computed just before its outputs, ``L`` in vector
    lanes. Outputs that the main one does not read (the parameter gradients of the eval-mode
    backward) are computed beforehand, channels in parallel."""
    def channels(stage):
        n, c, l_ = stage.op.axis
        stage.reorder(c, n, l_)
        return c
    return _rows_in_parallel(outs, channels)


def schedule_running(outs):
    """Schedule for ``running_stats`` (a few hundred elements: one serial loop each)."""
    return te.create_schedule([o.op for o in outs])


# ----------------------------------------------------------------------------- row norms

def _row_stats(x):
    n, g_, k_, l_ = x.shape
    rk = te.reduce_axis((0, k_), name="rk")
    rl = te.reduce_axis((0, l_), name="rl")

    def body(n, g):
        d = x[n, g, rk, rl] - x[n, g, 0, 0]
        return sum2((d, d * d), axis=[rk, rl])
    return te.compute((n, g_), body, name="stats", tag="norm_stats")


def _param(p, g, k, l_):
    """The element of an affine parameter of shape (G, K, 1) or (1, 1, L)."""
    return p[g, k, 0] if _int(p.shape[2]) == 1 else p[0, 0, l_]


def row_norm(x, *affine, eps):
    """Forward of (N, G, K, L) ``x`` normalized per (n, g): (y, mean, biased variance)."""
    count = _int(x.shape[2]) * _int(x.shape[3])
    dt = x.dtype
    s1, s2 = _row_stats(x)
    mean = te.compute(s1.shape, lambda n, g: x[n, g, 0, 0] + s1[n, g] / _c(count, dt),
                      name="mean")
    var = te.compute(s1.shape, lambda n, g: te.max(
        (s2[n, g] - s1[n, g] * s1[n, g] / _c(count, dt)) / _c(count, dt), _c(0.0, dt)),
        name="var")
    rstd = te.compute(s1.shape, lambda n, g: te.rsqrt(var[n, g] + _c(eps, dt)), name="rstd")

    def body(n, g, k, l_):
        xhat = (x[n, g, k, l_] - mean[n, g]) * rstd[n, g]
        if affine:
            return xhat * _param(affine[0], g, k, l_) + _param(affine[1], g, k, l_)
        return xhat
    y = te.compute(x.shape, body, name="y", tag="norm_out")
    return y, mean, var


def row_norm_backward(g, x, mean, var, *weight, eps):
    """dx of the row norms: ``rstd * (gw - mean(gw) - xhat * mean(gw * xhat))`` per row."""
    count = _int(x.shape[2]) * _int(x.shape[3])
    dt = x.dtype
    n_, g_, k_, l_ = x.shape
    rstd = te.compute((n_, g_), lambda n, gr: te.rsqrt(var[n, gr] + _c(eps, dt)), name="rstd")

    def gw(n, gr, k, l_):
        return g[n, gr, k, l_] * _param(weight[0], gr, k, l_) if weight else g[n, gr, k, l_]
    rk = te.reduce_axis((0, k_), name="rk")
    rl = te.reduce_axis((0, l_), name="rl")
    sums = te.compute((n_, g_), lambda n, gr: sum2(
        (gw(n, gr, rk, rl), gw(n, gr, rk, rl) * (x[n, gr, rk, rl] - mean[n, gr])),
        axis=[rk, rl]), name="stats", tag="norm_stats")
    inv = _c(1.0 / max(count, 1), dt)          # count 0: dx has no elements

    def body(n, gr, k, l_):
        r = rstd[n, gr]
        proj = sums[1][n, gr] * r * r * inv
        return (gw(n, gr, k, l_) - sums[0][n, gr] * inv
                - (x[n, gr, k, l_] - mean[n, gr]) * proj) * r
    return te.compute(x.shape, body, name="dx", tag="norm_out")


def row_norm_param_grad(g, x, mean, var, *, eps, per_element):
    """(dweight, dbias) of the row norms, shaped (1, 1, L) when ``per_element`` (layer norm)
    else (G, K, 1): sums of ``g * xhat`` and ``g`` over the other axes."""
    n_, g_, k_, l_ = x.shape
    dt = x.dtype
    rn = te.reduce_axis((0, n_), name="rn")

    def xhat(n, gr, k, l2):
        return (x[n, gr, k, l2] - mean[n, gr]) * te.rsqrt(var[n, gr] + _c(eps, dt))
    if per_element:         # layer norm: G = K = 1
        sums = te.compute((1, 1, l_), lambda a, b, l2: sum2(
            (g[rn, 0, 0, l2] * xhat(rn, 0, 0, l2), g[rn, 0, 0, l2]), axis=rn),
            name="dparams", tag="param_grad")
    else:
        rl = te.reduce_axis((0, l_), name="rl")
        sums = te.compute((g_, k_, 1), lambda gr, k, z: sum2(
            (g[rn, gr, k, rl] * xhat(rn, gr, k, rl), g[rn, gr, k, rl]), axis=[rn, rl]),
            name="dparams", tag="param_grad")
    return sums[0], sums[1]


def schedule_rows_norm(outs):
    """Schedule for the row norms' forward and dx: rows (n, g) in parallel, each row's
    statistics computed just before its outputs, ``L`` in vector lanes."""
    def rows(stage):
        n, g, _, _ = stage.op.axis
        return stage.fuse(n, g)
    return _rows_in_parallel(outs, rows)


def _rows_in_parallel(outs, row_loop):
    """The main output's loop ``row_loop(stage)`` parallel (when large), each row's
    statistics computed just before its outputs, the last axis in vector lanes."""
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    s = te.create_schedule([o.op for o in outs])
    stage = s[outs[0]]
    row = row_loop(stage)
    _vector_last(s, outs[0])
    if _big(outs[0]):
        stage.parallel(row)
    _schedule_per_row(s, outs[0], row, outs[1:])
    return s


def schedule_param_grad(outs):
    """Schedule for ``row_norm_param_grad``: per element (layer norm), ``L`` in vector lanes
    with the rows reduced outside them; per channel, each channel's sums in vector lanes of
    partial sums along ``L``, channels in parallel."""
    dweight, _ = outs
    s = te.create_schedule(dweight.op)
    stage = s[dweight]
    lanes = vector_lanes(dweight.dtype)
    *lead, last = stage.op.axis
    if _int(dweight.shape[2]) > 1:          # per element: reduce over rows, L in lanes
        if _int(last.dom.extent) >= lanes:
            outer, inner = stage.split(last, factor=lanes)
            stage.reorder(outer, *stage.op.reduce_axis, inner)
            stage.vectorize(inner)
        return s
    channel = stage.fuse(*lead, last)
    rf = _vector_partials(s, dweight)
    if rf is not None:
        s[rf].compute_at(stage, channel)
    if _big(dweight.op.input_tensors()[0]):
        stage.parallel(channel)
    return s

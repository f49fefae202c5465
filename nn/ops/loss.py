"""te declarations and CPU schedules of the losses, forward and backward.

- ``cross_entropy``: (N, C, D) logits and (N, D) class indices: per sample one pass for the
  maximum and one for the sum of exponentials (the log-sum-exp), the target's logit gathered,
  weights and label smoothing applied, the reduction in the same kernel. Its backward is one
  elementwise kernel: ``coef * (softmax - onehot)`` with the weights and smoothing folded in.
  ``cross_entropy_probs`` is the same for class-probability targets.
- ``nll_loss`` and its backward: the gather of log-probabilities and its scatter.
- ``pointwise_loss``: MSE, L1, smooth L1, Huber, BCE, BCE with logits and KL divergence, an
  elementwise loss and its reduction in one kernel; ``pointwise_loss_grad`` their derivatives
  with respect to input and target, in one kernel.

A reduced loss is one element: ``sum * scale`` for "sum" and plain means, ``sum / sum of
weights`` for the weighted mean of the class-index losses (PyTorch's semantics).
"""
from __future__ import annotations

import te

from .cpu_util import inline_injective, schedule_rows, vector_lanes
from .norm import _big, _int, _stats_inside, sum2

__all__ = ["cross_entropy", "cross_entropy_probs", "cross_entropy_backward", "nll_loss",
           "nll_loss_backward", "class_weights", "pointwise_loss", "pointwise_loss_grad",
           "schedule_loss", "schedule_loss_grad"]


def _c(value, dtype):
    return te.const(value, dtype)


def _target(target, n, d, ignore_index):
    """(valid, class index safe to load with) of sample (n, d)."""
    t = target[n, d]
    valid = t.not_equal(te.const(ignore_index, t.dtype))
    return valid, te.select(valid, t, te.const(0, t.dtype))


def _log_sum_exp(x):
    n_, c_, d_ = x.shape
    k = te.reduce_axis((0, c_), name="k")
    xmax = te.compute((n_, d_), lambda n, d: te.max(x[n, k, d], axis=k), name="xmax",
                      tag="loss_stats")
    k2 = te.reduce_axis((0, c_), name="k2")
    esum = te.compute((n_, d_), lambda n, d: te.sum(te.exp(x[n, k2, d] - xmax[n, d]), axis=k2),
                      name="esum", tag="loss_stats")
    return te.compute((n_, d_), lambda n, d: xmax[n, d] + te.log(esum[n, d]), name="lse")


def _reduce_samples(loss, weight_of, reduction):
    """The (1,) total of (N, D) ``loss``: a sum, or a sum divided by ``weight_of``'s sum."""
    n_, d_ = loss.shape
    rn = te.reduce_axis((0, n_), name="rn")
    rd = te.reduce_axis((0, d_), name="rd")
    sums = te.compute((1,), lambda i: sum2((loss[rn, rd], weight_of(rn, rd)), axis=[rn, rd]),
                      name="sums", tag="loss_sums")
    if reduction == "mean":
        return te.compute((1,), lambda i: sums[0][i] / sums[1][i], name="total"), sums[1]
    return te.compute((1,), lambda i: sums[0][i], name="total"), sums[1]


def cross_entropy(x, target, weight, *, ignore_index, smoothing, reduction):
    """(loss, lse, weight sum): ``loss`` is (1,) when reduced, else (N, D)."""
    n_, c_, d_ = x.shape
    dt = x.dtype
    lse = _log_sum_exp(x)
    if smoothing:
        k = te.reduce_axis((0, c_), name="ks")
        smooth = te.compute((n_, d_), lambda n, d: te.sum(
            weight[k] * (lse[n, d] - x[n, k, d]), axis=k), name="smooth", tag="loss_stats")

    def target_weight(n, d):
        valid, t = _target(target, n, d, ignore_index)
        return te.select(valid, weight[t], _c(0.0, dt))

    def body(n, d):
        valid, t = _target(target, n, d, ignore_index)
        nll = target_weight(n, d) * (lse[n, d] - x[n, t, d])
        if not smoothing:
            return nll
        spread = te.select(valid, smooth[n, d], _c(0.0, dt)) * _c(smoothing / _int(c_), dt)
        return nll * _c(1.0 - smoothing, dt) + spread
    loss = te.compute((n_, d_), body, name="loss", tag="loss_rows")
    if reduction == "none":
        return loss, lse
    total, wsum = _reduce_samples(loss, target_weight, reduction)
    return total, lse, wsum


def cross_entropy_probs(x, target, weight, *, smoothing, reduction):
    """Cross entropy against class probabilities (N, C, D): (loss, lse)."""
    n_, c_, d_ = x.shape
    dt = x.dtype
    lse = _log_sum_exp(x)
    k = te.reduce_axis((0, c_), name="kp")

    def prob(n, c, d):
        y = target[n, c, d]
        return y * _c(1.0 - smoothing, dt) + _c(smoothing / _int(c_), dt) if smoothing else y
    sample = te.compute((n_, d_), lambda n, d: te.sum(
        weight[k] * prob(n, k, d) * (lse[n, d] - x[n, k, d]), axis=k), name="sample")
    loss = te.compute((n_, d_), lambda n, d: sample[n, d], name="loss", tag="loss_rows")
    if reduction == "none":
        return loss, lse
    total, _ = _reduce_samples(loss, lambda n, d: _c(1.0, dt), reduction)
    return total, lse


def cross_entropy_backward(x, target, weight, lse, g, wsum, *, ignore_index, smoothing,
                           reduction, probs):
    """d loss / d logits (N, C, D); ``g`` is (N, D) for "none", else (1,); ``wsum`` the sum of
    target weights (the divisor of the mean), (1,)."""
    n_, c_, d_ = x.shape
    dt = x.dtype
    count = _int(n_) * _int(d_)

    def coef(n, d):
        if reduction == "none":
            return g[n, d]
        if reduction == "sum":
            return g[0]
        return g[0] / wsum[0] if not probs else g[0] * _c(1.0 / max(count, 1), dt)

    def softmax(n, c, d):
        return te.exp(x[n, c, d] - lse[n, d])
    if probs:
        k = te.reduce_axis((0, c_), name="k")

        def prob(n, c, d):
            y = target[n, c, d]
            return y * _c(1.0 - smoothing, dt) + _c(smoothing / _int(c_), dt) if smoothing else y
        mass = te.compute((n_, d_), lambda n, d: te.sum(weight[k] * prob(n, k, d), axis=k),
                          name="mass", tag="loss_stats")
        return te.compute(x.shape, lambda n, c, d: coef(n, d) * (
            softmax(n, c, d) * mass[n, d] - weight[c] * prob(n, c, d)), name="dx",
            tag="loss_grad")
    if smoothing:
        k = te.reduce_axis((0, c_), name="k")
        wtotal = te.compute((1,), lambda i: te.sum(weight[k], axis=k), name="wtotal",
                            tag="loss_sums")

    def body(n, c, d):
        valid, t = _target(target, n, d, ignore_index)
        p = softmax(n, c, d)
        onehot = te.select(c.equal(t.astype(c.dtype)), _c(1.0, dt), _c(0.0, dt))
        grad = weight[t] * (p - onehot)
        if smoothing:
            grad = grad * _c(1.0 - smoothing, dt) + (wtotal[0] * p - weight[c]) * _c(
                smoothing / _int(c_), dt)
        return te.select(valid, coef(n, d) * grad, _c(0.0, dt))
    return te.compute(x.shape, body, name="dx", tag="loss_grad")


def nll_loss(x, target, weight, *, ignore_index, reduction):
    """(loss, weight sum) of log-probabilities (N, C, D) at the (N, D) targets."""
    n_, c_, d_ = x.shape
    dt = x.dtype

    def target_weight(n, d):
        valid, t = _target(target, n, d, ignore_index)
        return te.select(valid, weight[t], _c(0.0, dt))

    def body(n, d):
        _, t = _target(target, n, d, ignore_index)
        return -target_weight(n, d) * x[n, t, d]
    loss = te.compute((n_, d_), body, name="loss", tag="loss_rows")
    if reduction == "none":
        return loss
    return _reduce_samples(loss, target_weight, reduction)


def class_weights(target, weight, *, classes, ignore_index, smoothing):
    """(N, C, D): the weight of each log-probability in a sample's class-index loss,
    ``(1 - smoothing) * weight[t] * onehot + smoothing / C * weight`` (0 where ignored)."""
    n_, d_ = target.shape
    dt = weight.dtype

    def body(n, c, d):
        valid, t = _target(target, n, d, ignore_index)
        onehot = te.select(c.equal(t.astype(c.dtype)), weight[t], _c(0.0, dt))
        out = onehot * _c(1.0 - smoothing, dt) + weight[c] * _c(smoothing / classes, dt)
        return te.select(valid, out, _c(0.0, dt))
    return te.compute((n_, classes, d_), body, name="class_weights", tag="elemwise")


def nll_loss_backward(x, target, weight, g, wsum, *, ignore_index, reduction):
    """d loss / d log-probabilities: ``-weight[t] * coef`` at the target, 0 elsewhere."""
    dt = x.dtype

    def body(n, c, d):
        valid, t = _target(target, n, d, ignore_index)
        coef = g[n, d] if reduction == "none" else (
            g[0] / wsum[0] if reduction == "mean" else g[0])
        hit = te.all(valid, c.equal(t.astype(c.dtype)))
        return te.select(hit, -weight[t] * coef, _c(0.0, dt))
    return te.compute(x.shape, body, name="dx", tag="loss_grad")


# ----------------------------------------------------------------------------- pointwise

def _softplus_neg(x, dt):
    """log(1 + exp(-x)), stable."""
    return te.log1p(te.exp(-te.abs(x))) + te.max(-x, _c(0.0, dt))


def _loss_value(kind, param, a, b, extra, dt):
    """The elementwise loss of input ``a`` and target ``b`` (``extra``: weights)."""
    if extra and kind in ("mse", "l1", "smooth_l1", "huber"):
        return _loss_value(kind, param, a, b, [], dt) * extra[0]
    zero, one = _c(0.0, dt), _c(1.0, dt)
    d = a - b
    if kind == "mse":
        return d * d
    if kind == "l1":
        return te.abs(d)
    if kind == "smooth_l1":
        if param == 0:
            return te.abs(d)
        return te.select(te.abs(d) < _c(param, dt), _c(0.5 / param, dt) * d * d,
                         te.abs(d) - _c(0.5 * param, dt))
    if kind == "huber":
        return te.select(te.abs(d) < _c(param, dt), _c(0.5, dt) * d * d,
                         _c(param, dt) * (te.abs(d) - _c(0.5 * param, dt)))
    if kind == "bce":
        floor = _c(-100.0, dt)
        out = -(b * te.max(te.log(a), floor) + (one - b) * te.max(te.log(one - a), floor))
        return out * extra[0] if extra else out
    if kind == "bce_logits":
        weight, pos_weight = extra
        scale = one + (pos_weight - one) * b
        return weight * ((one - b) * a + scale * _softplus_neg(a, dt))
    if kind == "kl_div":
        if param:           # log_target
            return te.exp(b) * (b - a)
        return te.select(b > zero, b * (te.log(te.select(b > zero, b, one)) - a), zero)
    raise ValueError(f"pointwise_loss: unknown kind {kind!r}")


def _loss_grads(kind, param, a, b, extra, dt):
    """(d loss / d a, d loss / d b) elementwise."""
    if extra and kind in ("mse", "l1", "smooth_l1", "huber"):
        da, db = _loss_grads(kind, param, a, b, [], dt)
        return da * extra[0], db * extra[0]
    zero, one = _c(0.0, dt), _c(1.0, dt)
    d = a - b
    sign = te.select(d > zero, one, te.select(d < zero, -one, zero))
    if kind == "mse":
        da = _c(2.0, dt) * d
    elif kind == "l1" or kind == "smooth_l1" and param == 0:
        da = sign
    elif kind == "smooth_l1":
        da = te.select(te.abs(d) < _c(param, dt), d / _c(param, dt), sign)
    elif kind == "huber":
        da = te.select(te.abs(d) < _c(param, dt), d, sign * _c(param, dt))
    elif kind == "bce":
        w = extra[0] if extra else one
        da = w * (a - b) / te.max((one - a) * a, _c(1e-12, dt))
        floor = _c(-100.0, dt)
        return da, w * (te.max(te.log(one - a), floor) - te.max(te.log(a), floor))
    elif kind == "bce_logits":
        weight, pos_weight = extra
        scale = one + (pos_weight - one) * b
        da = weight * ((one - b) - scale * te.sigmoid(-a))
        return da, weight * (-a + (pos_weight - one) * _softplus_neg(a, dt))
    elif kind == "kl_div":
        if param:
            return -te.exp(b), te.exp(b) * (b - a + one)
        positive = b > zero
        return -b, te.select(positive, te.log(te.select(positive, b, one)) + one - a, zero)
    else:
        raise ValueError(f"pointwise_loss_grad: unknown kind {kind!r}")
    return da, -da


def pointwise_loss(a, b, *extra, kind, param, scale, weighted_mean=False):
    """The elementwise loss of flat ``a`` and ``b`` (M,), or, with a ``scale``, its sum times
    ``scale`` (1,); ``weighted_mean``: (the sum divided by the sum of the weights ``extra[0]``,
    that sum)."""
    dt = a.dtype
    if scale is None:
        return te.compute(a.shape, lambda i: _loss_value(
            kind, param, a[i], b[i], [e[i] for e in extra], dt), name="loss", tag="elemwise")
    k = te.reduce_axis((0, a.shape[0]), name="k")
    if weighted_mean:
        sums = te.compute((1,), lambda i: sum2((_loss_value(
            kind, param, a[k], b[k], [e[k] for e in extra], dt), extra[0][k]), axis=k),
            name="sums", tag="loss_sums")
        return te.compute((1,), lambda i: sums[0][i] / sums[1][i], name="total"), sums[1]
    total = te.compute((1,), lambda i: te.sum(_loss_value(
        kind, param, a[k], b[k], [e[k] for e in extra], dt), axis=k), name="sums",
        tag="loss_sums")
    return te.compute((1,), lambda i: total[i] * _c(scale, dt), name="total")


def pointwise_loss_grad(a, b, g, *extra, kind, param, scale, weighted_mean=False):
    """(d/da, d/db) of ``pointwise_loss`` times the incoming gradient ``g``: (M,) for an
    unreduced loss, else (1,) with the reduction's ``scale`` (``weighted_mean``: the last of
    ``extra`` is the (1,) sum of the weights, the divisor)."""
    dt = a.dtype
    if weighted_mean:
        *extra, divisor = extra

    def coef(i):
        if scale is None:
            return g[i]
        return g[0] / divisor[0] if weighted_mean else g[0] * _c(scale, dt)

    def grads(i):
        da, db = _loss_grads(kind, param, a[i], b[i], [e[i] for e in extra], dt)
        return da * coef(i), db * coef(i)
    da, db = te.compute(a.shape, grads, name="grads", tag="loss_grad")
    return da, db


# ----------------------------------------------------------------------------- schedules

def _compute_stages(outs):
    """The compute stages that ``outs`` read, themselves included."""
    found, todo = {}, list(outs)
    while todo:
        t = todo.pop()
        if t.op in found or t.op.__class__.__name__ != "ComputeOp":
            continue
        found[t.op] = t
        todo.extend(t.op.input_tensors())
    return list(found.values())


def _tagged(stages, tag):
    return next((t for t in stages if getattr(t.op, "tag", "") == tag), None)


def schedule_loss(outs):
    """Schedule for the loss kernels: samples in parallel, each sample's log-sum-exp computed
    just before its loss (over contiguous classes in vector lanes of partial results; with
    spatial dimensions, 16 neighbouring samples side by side in vector lanes), then the
    reduction to one element; a pointwise loss in vector lanes."""
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    s = te.create_schedule([o.op for o in outs])
    stages = _compute_stages(outs)
    rows, sums = _tagged(stages, "loss_rows"), _tagged(stages, "loss_sums")
    if sums is not None:
        _vector_sum(s, sums)
    if rows is None:            # a pointwise loss
        if sums is None:
            schedule_rows(s, outs[0], list(s[outs[0]].op.axis))
        return s
    stage = s[rows]
    n, d = stage.op.axis
    lanes = vector_lanes(rows.dtype)
    spatial = _int(d.dom.extent) % lanes == 0
    if spatial:     # (N, C, D): the samples of one n run in vector lanes along D
        d, lane = stage.split(d, factor=lanes)
        stage.vectorize(lane)
    row = stage.fuse(n, d)
    if _big(rows.op.input_tensors()[0]):
        stage.parallel(row)
    for t in stages:
        if len(t.op.axis) != 2 or t.op is rows.op:
            continue
        if spatial:
            s[t].compute_at(stage, row)
            inner = s[t].op.axis[-1]
            s[t].reorder(*s[t].op.reduce_axis, inner)
            s[t].vectorize(inner)
        elif t.op.is_reduction and _int(t.shape[1]) == 1:      # classes contiguous
            _stats_inside(s, t, stage, row)
        else:
            s[t].compute_at(stage, row)
    return s


def _vector_sum(s, sums):
    """A full reduction of a flat array in vector lanes of partial sums."""
    lanes = vector_lanes(sums.dtype)
    red = s[sums]
    last = red.op.reduce_axis[-1]
    if _int(last.dom.extent) >= lanes:
        _, inner = red.split(last, factor=lanes)
        rf = s.rfactor(sums, inner, factor_axis=1)
        rf = rf[0] if isinstance(rf, list) else rf
        s[rf].reorder(*s[rf].op.reduce_axis, s[rf].op.axis[-1])
        s[rf].vectorize(s[rf].op.axis[-1])


def schedule_loss_grad(outs):
    """Schedule for the loss gradients: elementwise, rows in parallel, vector lanes along the
    contiguous axis (the classes when there are no spatial dimensions); per-sample sums
    (``mass``) computed before."""
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    s = te.create_schedule([o.op for o in outs])
    inline_injective(s, outs)
    axes = list(s[outs[0]].op.axis)
    if len(axes) == 3 and _int(axes[2].dom.extent) == 1:       # (N, C, 1)
        n, c, d = axes
        s[outs[0]].reorder(n, d, c)
        axes = [n, d, c]
    schedule_rows(s, outs[0], axes)
    return s


def first_bad_target(target, *, classes, ignore_index):
    """The first class index of ``target`` (1-d, int64) outside [0, classes) that is not
    ``ignore_index``, as a (1,) tensor of [found, value]: the bounds check of the class-index
    losses, run as a kernel over the targets instead of numpy arithmetic on them."""
    n = target.shape[0].value
    k = te.reduce_axis((0, n), name="k")
    t = target[k]
    bad = te.all(t.not_equal(te.const(ignore_index, "int64")),
                 te.any(t < te.const(0, "int64"), t >= te.const(classes, "int64")))
    never = te.const(n, "int64")
    first = te.compute((1,), lambda _: te.min(te.select(bad, k.var.astype("int64"), never),
                                              axis=k), name="first_bad")
    return te.compute((2,), lambda i: te.select(
        i.equal(0), (first[0] < never).astype("int64"),
        target[te.min(first[0], never - 1)]), name="bad_target")

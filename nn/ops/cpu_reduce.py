"""Reductions and softmax for the CPU: ``sum``, ``mean``, ``max``, ``min``, ``softmax``.

A reduction over the last (contiguous) axis is vectorized by ``rfactor``: a 64-wide vector of
partial results per output (four AVX-512 registers, four independent add chains), combined at
the end. A reduction over other axes keeps the last axis as vector lanes and runs the reduced
axes outside it. ``mean`` divides in a second, elementwise stage.

``max`` and ``min`` of floating inputs propagate NaN, as numpy's and PyTorch's do (``te.max``
keeps TVM's semantics, where a NaN loses every comparison and drops out of the result).
"""
from __future__ import annotations

import te
from te.expr import IntImm
from te.tensor import Tensor
from te.topi.nn.softmax import softmax  # noqa: F401  (the declaration lives in te.topi)
from te.topi.reduction import comm_reduce

from . import host
from .cpu_util import PARALLEL_MIN, inline_injective, num_elements, schedule_rows, vector_lanes


def num_partials():
    """Vector registers of partial results in a reduction over the last axis: the host's
    ``knobs("reduce")`` (4 on Zen 4: as many add chains as FMAs in flight)."""
    return host.knobs("reduce")["partials"]


def _reduce(x, axis, keepdims, reducer, name):
    """``te.topi``'s reduction declaration, tagged "reduce" for the schedules here."""
    return comm_reduce(x, axis, keepdims, reducer, name, tag="reduce")


def _keeping_nan(wins):
    """A combiner that keeps the accumulator where it ``wins`` or is NaN, else takes the new
    value: once a NaN is in, it stays, whatever the order of the (vector, partial) combines."""
    def combine(acc, new):
        return te.select(te.any(wins(acc, new), acc.not_equal(acc)), acc, new)
    return combine


# identity +-inf, not the largest finite value, so that a row of -inf has maximum -inf
nan_max = te.comm_reducer(_keeping_nan(lambda a, b: a > b),
                          lambda t: te.const(-float("inf"), t), name="nan_max")
nan_min = te.comm_reducer(_keeping_nan(lambda a, b: a < b),
                          lambda t: te.const(float("inf"), t), name="nan_min")


def _floating(dtype) -> bool:
    return str(dtype).startswith("float")


def max_reducer(dtype):
    """The maximum reducer for ``dtype``: NaN-propagating for floating types."""
    return nan_max if _floating(dtype) else te.max


def min_reducer(dtype):
    """The minimum reducer for ``dtype``: NaN-propagating for floating types."""
    return nan_min if _floating(dtype) else te.min


def sum(x: Tensor, axis=None, keepdims=False, name="sum"):
    """Sum over ``axis`` (an int, a tuple, or None for all axes), as numpy's ``x.sum``."""
    return _reduce(x, axis, keepdims, te.sum, name)


def max(x: Tensor, axis=None, keepdims=False, name="max"):
    """Maximum over ``axis``, as numpy's ``x.max`` (NaN if any element is)."""
    return _reduce(x, axis, keepdims, max_reducer(x.dtype), name)


def min(x: Tensor, axis=None, keepdims=False, name="min"):
    """Minimum over ``axis``, as numpy's ``x.min`` (NaN if any element is)."""
    return _reduce(x, axis, keepdims, min_reducer(x.dtype), name)


def mean(x: Tensor, axis=None, keepdims=False, name="mean"):
    """Mean over ``axis``, as numpy's ``x.mean`` (float inputs)."""
    total = _reduce(x, axis, keepdims, te.sum, f"{name}.sum")
    sizes = [x.shape[a] for a in total.op.attrs["axes"]]
    count = num_elements(sizes)
    if count is None:
        return te.compute(total.shape, lambda *i: total[i] / _product(sizes).astype(x.dtype),
                          name=name, tag="mean")
    # the mean of no elements is NaN, as numpy's and PyTorch's
    scale = 1.0 / count if count else float("nan")
    return te.compute(total.shape, lambda *i: total[i] * te.const(scale, x.dtype),
                      name=name, tag="mean")


def _product(sizes):
    out = sizes[0]
    for d in sizes[1:]:
        out = out * d
    return out


def _schedule_reduction(s, red):
    """Vectorize and parallelize the reduction stage ``red`` (computed at the root)."""
    axes, ndim = red.op.attrs["axes"], red.op.attrs["ndim"]
    stage = s[red]
    data = list(stage.op.axis)
    lanes = vector_lanes(red.dtype)
    if ndim - 1 in axes:
        # the contiguous axis is reduced: partial results in vector lanes, unless it is
        # shorter than a vector
        long_rows = _extent(stage.op.reduce_axis[-1]) >= lanes
        partials = _vector_partials(s, red) if long_rows else ()
        if data:            # one output at a time; a full reduction runs on one thread
            outer = stage.fuse(*data) if len(data) > 1 else data[0]
            if _worth_parallel(red):
                stage.parallel(outer)
            for rf in partials:
                s[rf].compute_at(stage, outer)
        return
    # the contiguous axis is kept: it is the vector axis; the reduced axes run outside it
    *lead, last = data
    jo, ji = stage.split(last, factor=lanes * num_partials())
    jm, jv = stage.split(ji, factor=lanes)
    stage.reorder(*lead, jo, *stage.op.reduce_axis, jm, jv)
    outer = stage.fuse(*lead, jo) if lead else jo
    if _worth_parallel(red):
        stage.parallel(outer)
    stage.unroll(jm)
    stage.vectorize(jv)


def _vector_partials(s, red):
    """Reduce the last reduce axis of ``red`` into ``num_partials()`` vectors of partial results
    (independent add chains), add those lane by lane into one vector, and only that one
    element by element: two ``rfactor`` stages, returned for placing."""
    stage = s[red]
    lanes = vector_lanes(red.dtype)
    ndata = len(stage.op.axis)
    _, ki = stage.split(stage.op.reduce_axis[-1], factor=lanes * num_partials())
    rf = s.rfactor(red, ki, factor_axis=ndata)
    _, vi = stage.split(stage.op.reduce_axis[0], factor=lanes)
    rf2 = s.rfactor(red, vi, factor_axis=ndata)
    for t in (rf, rf2):
        lane = s[t].op.axis[-1]
        s[t].reorder(*s[t].op.reduce_axis, lane)
        s[t].vectorize(lane)
    return rf, rf2


def _extent(iv):
    ext = iv.dom.extent
    return ext.value if isinstance(ext, IntImm) else float("inf")


def _worth_parallel(red):
    src = red.op.input_tensors()[0]
    total = num_elements(src.shape)
    return total is None or total >= PARALLEL_MIN


def schedule_reduce(out):
    """Schedule for the output of ``sum``, ``mean``, ``max`` or ``min``.

    Over the last axis (e.g. a row sum): ``rfactor`` keeps 64 partial results per output
    (four 16-lane vectors, added independently), outputs spread over the threads. Over other
    axes: the last axis is split into 4 x 16 lanes (unrolled x vectorized) and the reduced
    axes loop outside them, blocks of 64 columns spread over the threads.

    Measured (2-core znver4, idle, medians, 1 / 2 threads): row sum of 4096 x 4096 float32
    30.8 / 35.9 GB/s, memory bound (numpy 22.1 / 22.1, torch 29.8 / 40.1).
    """
    s = te.create_schedule(out.op)
    inline_injective(s, [out])
    if getattr(out.op, "tag", "") == "mean":
        red = out.op.input_tensors()[0]
        schedule_rows(s, out, list(s[out].op.axis))
    else:
        red = out
    if getattr(red.op, "tag", "") != "reduce":
        raise ValueError(f"schedule_reduce: {out.name} is not the output of sum, mean, max or "
                         "min")
    _schedule_reduction(s, red)
    return s


# ----------------------------------------------------------------------------- softmax

def schedule_softmax(out):
    """Schedule for the output of ``softmax``.

    The axes before ``axis`` are fused into one parallel loop; inside it, one slice is computed
    at a time: its maximum, its exponentials (stored once), their sum and the quotients, all
    vectorized along the last axis. Over the last axis the two reductions keep 64 partial
    results (as ``schedule_reduce``); otherwise the reduced axis loops outside the lanes.

    Measured (2-core znver4, idle, medians, 1 / 2 threads): rows of 4096 x 4096 float32,
    12.0 / 9.1 ms = 11.2 / 14.7 GB/s of compulsory traffic (torch 11.9 / 8.5 ms, numpy
    28.3 / 29.6 ms).
    """
    if getattr(out.op, "tag", "") != "softmax":
        raise ValueError(f"schedule_softmax: {out.name} is not the output of softmax")
    s = te.create_schedule(out.op)
    e, esum = out.op.input_tensors()
    xmax = next(t for t in e.op.input_tensors() if getattr(t.op, "tag", "") == "softmax_reduce")
    axis = out.op.attrs["axis"]
    lanes = vector_lanes(out.dtype)
    stage = s[out]
    lead = list(stage.op.axis)[:axis]
    outer = stage.fuse(*lead) if len(lead) > 1 else (lead[0] if lead else None)
    for t in (e, out):
        _, vec = s[t].split(s[t].op.axis[-1], factor=lanes)
        s[t].vectorize(vec)
    for red in (xmax, esum):
        if axis == len(out.shape) - 1:
            for rf in _vector_partials(s, red):
                if outer is not None:
                    s[rf].compute_at(stage, outer)
        else:
            jo, jv = s[red].split(s[red].op.axis[-1], factor=lanes)
            s[red].reorder(jo, s[red].op.reduce_axis[0], jv)
            s[red].vectorize(jv)
    if outer is not None:
        for t in (xmax, e, esum):
            s[t].compute_at(stage, outer)
        total = num_elements(out.shape)
        if total is None or total >= PARALLEL_MIN:
            stage.parallel(outer)
    return s

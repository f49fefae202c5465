"""CPU schedules of the sparse convolution kernels (nn/ops/spconv.py) and ``build``, which
compiles them once per channel count, kernel volume and dtype: the row counts (sites, pairs,
tiles, chunks) are size variables bound at each call.

The product follows ``cpu_matmul.schedule_matmul``'s packed strategy: per tile of ``ROWS``
pairs (one kernel offset), the accumulators (``ROWS`` rows x ``bn`` columns) live in
registers; the reduction over input channels is outermost, the rows unrolled, the columns
vector lanes; each step broadcasts one gathered input value per row against a row of the
packed weight panel. Tiles are the parallel loop. The gather indices come from the rulebook,
which checks them on the host (``no_bound_check``); every other load is clamped in the
declaration.
"""
from __future__ import annotations

import functools

import te

from . import spconv as ops
from .cpu_util import vector_lanes

__all__ = ["build", "schedule_gather_gemm", "schedule_segment_sum", "schedule_segment",
           "schedule_weight_grad"]


def _vector_rows(s, t, parallel=True):
    """Fuse the leading axes of ``t`` (parallel) and vectorize the last one, the reduction
    (if any) between them, so that each lane accumulates in a register."""
    *lead, last = s[t].op.axis
    lanes = vector_lanes(t.dtype)
    extent = last.dom.extent.value
    inner = last
    if extent >= lanes:
        outer, inner = s[t].split(last, factor=lanes)
        lead.append(outer)
    rows = s[t].fuse(*lead) if len(lead) > 1 else lead[0]
    if lead:
        s[t].reorder(rows, *s[t].op.reduce_axis, inner)
    if extent > 1:
        s[t].vectorize(inner)
    if parallel:
        s[t].parallel(rows)
    return rows


def schedule_gather_gemm(out):
    """Register-tiled product per tile of pairs; tiles in parallel."""
    s = te.create_schedule(out.op)
    acc = out.op.input_tensors()[0]
    pack = next(t for t in acc.op.input_tensors() if t.op.tag == "pack")
    bn = acc.op.attrs["cols"]
    t, r, o = s[out].op.axis
    oo, oi = s[out].split(o, factor=bn)
    s[out].reorder(t, oo, r, oi)
    s[out].parallel(t)
    s[out].pragma(t, "no_bound_check")
    s[out].vectorize(oi)
    s[acc].compute_at(s[out], oo)
    _, ar, ao = s[acc].op.axis
    (c,) = s[acc].op.reduce_axis
    s[acc].reorder(c, ar, ao)
    s[acc].unroll(ar)
    s[acc].vectorize(ao)
    k, xo, pc, xi = s[pack].op.axis
    s[pack].parallel(s[pack].fuse(k, xo))
    s[pack].vectorize(xi)
    return s


def schedule_segment_sum(out):
    """Rows in parallel; each row's sums (C channels, in vector registers) accumulate over
    its slots, each slot's index loaded once for all channels."""
    s = te.create_schedule(out.op)
    acc = out.op.input_tensors()[0]
    i, o = s[out].op.axis
    lanes = vector_lanes(out.dtype)
    channels = o.dom.extent.value
    if channels >= lanes:
        _, oi = s[out].split(o, factor=lanes)
        s[out].vectorize(oi)
    s[out].parallel(i)
    s[out].pragma(i, "no_bound_check")
    s[acc].compute_at(s[out], i)
    _, ao = s[acc].op.axis
    (l,) = s[acc].op.reduce_axis
    if channels >= lanes:
        aoo, aoi = s[acc].split(ao, factor=lanes)
        s[acc].reorder(l, aoo, aoi)
        s[acc].unroll(aoo)
        s[acc].vectorize(aoi)
    else:
        s[acc].reorder(l, ao)
    return s


def schedule_segment(out):
    """Segmented sums / maxima: rows in parallel, channels as vector lanes, the slots of a
    row an inner serial reduction."""
    s = te.create_schedule(out.op)
    stages = [out]
    inner = out.op.input_tensors()
    for t in inner:
        if t.op.tag == "spconv_segment":
            stages.append(t)
    rows = _vector_rows(s, out)
    for t in stages[1:]:
        s[t].compute_at(s[out], rows)
        *_, last = s[t].op.axis
        if last.dom.extent.value <= 64:
            s[t].vectorize(last)
    s[out].pragma(rows, "no_bound_check")
    return s


def schedule_weight_grad(out):
    """Chunk products in parallel (each ``ROWS x Cin`` block of one an accumulation in
    registers over the chunk's ``CHUNK`` pairs), then the two levels of sums over chunks,
    rows in parallel and channels as vector lanes."""
    s = te.create_schedule(out.op)
    stages = {}
    todo = [out]
    while todo:
        t = todo.pop()
        stages[t.op.tag] = t
        todo += [u for u in t.op.input_tensors() if u.op.tag.startswith("spconv_wgrad")]
    part, acc = stages["spconv_wgrad_part"], stages["spconv_wgrad_acc"]
    q, o, c = s[part].op.axis
    rows = min(ops.ROWS, o.dom.extent.value)
    oo, oi = s[part].split(o, factor=rows)
    s[part].parallel(q)
    s[part].pragma(q, "no_bound_check")
    s[part].vectorize(c)
    s[acc].compute_at(s[part], oo)
    _, ao, ac = s[acc].op.axis
    (r,) = s[acc].op.reduce_axis
    s[acc].reorder(r, ao, ac)
    s[acc].unroll(ao)
    s[acc].vectorize(ac)
    for tag in ("spconv_wgrad_groups", "spconv_wgrad_sum"):
        rows = _vector_rows(s, stages[tag])
        s[stages[tag]].pragma(rows, "no_bound_check")
    _vector_rows(s, out, parallel=False)
    return s


SCHEDULES = {ops.gather_gemm: schedule_gather_gemm, ops.segment_sum: schedule_segment_sum,
             ops.segment_max: schedule_segment, ops.maxpool_backward: schedule_segment,
             ops.weight_grad: schedule_weight_grad}


@functools.lru_cache(maxsize=512)
def _build(declare, shapes, dtypes, params):
    sizes = {}
    inputs = []
    for k, (shape, dtype) in enumerate(zip(shapes, dtypes)):
        dims = tuple(sizes.setdefault(d, te.var(d)) if isinstance(d, str) else d
                     for d in shape)
        inputs.append(te.placeholder(dims, dtype, name=f"x{k}"))
    out = declare(*inputs, **dict(params))
    return te.build(SCHEDULES[declare](out), inputs + [out], target="llvm",
                    name=declare.__name__)


def build(declare, shapes, dtypes, **params):
    """The compiled ``declare`` for ``shapes`` (a name marks a size bound at each call; one
    name is one size) and ``dtypes`` (one per input); cached."""
    return _build(declare, tuple(tuple(s) for s in shapes), tuple(dtypes),
                  tuple(sorted(params.items())))

"""The x86 schedules. Every ``schedule_*`` takes the output tensor(s) and returns a schedule:
injective stages that are not outputs are inlined; each remaining stage is scheduled by what
it is (an injective output, a spatial reduction such as a convolution or a pooling window, a
matrix product, a softmax, or a generic reduction), so one driver serves every operator."""
from __future__ import annotations

from ... import dtypes
from ...expr import IntImm
from ..utils import as_tensors, create_schedule, inline_injective, traverse

VECTOR_BITS = 512           # AVX-512 registers; narrower hosts split the vectors in LLVM
MAX_PARALLEL = 128          # TVM's cap on the iterations fused into the parallel loop


def _lanes(dtype) -> int:
    return max(1, VECTOR_BITS // max(8, dtypes.bits(dtype)))


def _extent(iv):
    ext = iv.dom.extent if iv.dom is not None else None
    return ext.value if isinstance(ext, IntImm) else None


def _parallel_outer(stage, axes):
    """Fuse the leading ``axes`` (up to ``MAX_PARALLEL`` iterations, at least one axis) into
    one parallel loop; returns it (or None without axes)."""
    if not axes:
        return None
    take, work = [], 1
    for iv in axes:
        take.append(iv)
        ext = _extent(iv)
        if ext is None:
            break
        work *= ext
        if work >= MAX_PARALLEL:
            break
    outer = stage.fuse(*take) if len(take) > 1 else take[0]
    stage.parallel(outer)
    return outer


def _vector_split(stage, iv, dtype):
    """Split ``iv`` into (outer, vector lanes) when its extent is constant and at least one
    vector; returns (outer, inner or None)."""
    lanes = _lanes(dtype)
    ext = _extent(iv)
    if ext is None or ext < lanes:
        return iv, None
    outer, inner = stage.split(iv, factor=lanes)
    return outer, inner


def schedule_injective_from_existing(s, out):
    """Parallel outer loops and a vectorized innermost axis for the injective stage ``out``."""
    stage = s[out]
    axes = list(stage.op.axis)
    if not axes:
        return s
    if len(axes) == 1:
        outer, inner = _vector_split(stage, axes[0], out.dtype)
        if inner is not None:
            stage.vectorize(inner)
        stage.parallel(outer)
        return s
    outer, inner = _vector_split(stage, axes[-1], out.dtype)
    if inner is not None:
        stage.vectorize(inner)
    lead = axes[:-1]
    if len(lead) >= 4:
        lead = lead[:3]
    _parallel_outer(stage, lead)
    return s


def _schedule_spatial(s, op):
    """A reduction over a window (convolution, pooling): the output rows in parallel, the
    reduction loops outside the vectorized output columns."""
    out = op.output(0)
    stage = s[out]
    *lead, last = stage.op.axis
    if not lead and _extent(last) is not None and _extent(last) < _lanes(out.dtype):
        return                  # too few outputs for vectors or threads
    outer, inner = _vector_split(stage, last, out.dtype)
    if inner is not None:
        stage.reorder(*lead, outer, *stage.op.reduce_axis, inner)
        stage.vectorize(inner)
    _parallel_outer(stage, (lead[:2] if len(lead) > 2 else lead) or
                    ([outer] if inner is not None else []))


def _schedule_matmul(s, op):
    """A matrix product: rows in parallel; when the columns of the right operand are
    contiguous (``b[k, j]``) the columns are the vector lanes and the reduction loops
    outside them, else each output is a serial dot product of two contiguous rows."""
    out = op.output(0)
    stage = s[out]
    *lead, i, j = stage.op.axis
    if op.tag == "matmul" and not op.attrs.get("transpose_b", False):
        outer, inner = _vector_split(stage, j, out.dtype)
        if inner is not None:
            stage.reorder(*lead, i, outer, *stage.op.reduce_axis, inner)
            stage.vectorize(inner)
    _parallel_outer(stage, [*lead, i])


def _schedule_reduction(s, op):
    """A generic reduction: its outputs in parallel; a reduction to one value with enough
    work is split into vector lanes of partial results (``rfactor``), combined at the end."""
    out = op.output(0)
    stage = s[out]
    data = list(stage.op.axis)
    axes, ndim = op.attrs.get("axes"), op.attrs.get("ndim")
    if axes is not None and ndim - 1 not in axes and data and op.num_outputs == 1:
        # the input's contiguous last axis is kept: it is the vector lanes, the reduction
        # loops run outside them (a column sum adds whole vectors)
        _schedule_spatial(s, op)
        return
    if any(_extent(iv) not in (None, 1) for iv in data) or op.num_outputs > 1:
        _parallel_outer(stage, data)
        return
    raxes = list(stage.op.reduce_axis)
    total = 1
    for iv in raxes:
        ext = _extent(iv)
        total = None if ext is None or total is None else total * ext
    lanes = _lanes(out.dtype)
    if total is None or total < lanes * 4:
        return
    k = stage.fuse(*raxes) if len(raxes) > 1 else raxes[0]
    _, ki = stage.split(k, factor=lanes)
    rf = s.rfactor(out, ki)
    rf = rf[0] if isinstance(rf, (list, tuple)) else rf
    rf_stage = s[rf]
    lane_axis = rf_stage.op.axis[-1]
    rf_stage.reorder(*rf_stage.op.axis[:-1], *rf_stage.op.reduce_axis, lane_axis)
    rf_stage.vectorize(lane_axis)


def _schedule_softmax(s, op):
    """Softmax over the last axis: the rows in parallel; each row's maximum, exponentials
    and sum computed inside the row's loop, just before its outputs. Returns the stages it
    placed (none for another axis: they are then scheduled as reductions)."""
    out = op.output(0)
    stage = s[out]
    axis = op.attrs.get("axis", len(op.axis) - 1)
    lead = [iv for d, iv in enumerate(stage.op.axis) if d != axis]
    if axis != len(op.axis) - 1 or not lead:
        schedule_injective_from_existing(s, out)
        return []
    inner = [p for p in traverse([out]) if p is not op and
             getattr(p, "tag", "") in ("softmax_reduce", "softmax_exp")]
    outer = stage.fuse(*lead) if len(lead) > 1 else lead[0]
    _, lanes = _vector_split(stage, stage.op.axis[axis], out.dtype)
    if lanes is not None:
        stage.vectorize(lanes)
    stage.parallel(outer)
    for p in inner:
        s[p.output(0)].compute_at(stage, outer)
        if p.tag == "softmax_exp":
            row = s[p.output(0)]
            _, lanes = _vector_split(row, row.op.axis[axis], p.output(0).dtype)
            if lanes is not None:
                row.vectorize(lanes)
    return inner


_SPATIAL = ("conv2d_nchw", "depthwise_conv2d_nchw", "pool_max", "pool_sum",
            "adaptive_pool_max", "adaptive_pool_sum")
_MATMUL = ("dense", "matmul", "batch_matmul")


def _schedule(outs):
    outs = as_tensors(outs)
    s = create_schedule(outs)
    # the padded input of a convolution or pooling is materialized: the window loops then
    # read it without bounds tests, so their output columns vectorize
    inline_injective(s, outs, keep=("softmax_exp", "injective,pad"))
    out_ops = {t.op for t in outs}
    placed = set()
    for op in traverse(outs):
        if op.tag in ("softmax", "log_softmax"):
            placed.update(_schedule_softmax(s, op))
    for op in traverse(outs):
        if op in placed or op.tag in ("softmax", "log_softmax"):
            continue
        if op.is_reduction:
            if op.tag in _SPATIAL:
                _schedule_spatial(s, op)
            elif op.tag in _MATMUL:
                _schedule_matmul(s, op)
            else:
                _schedule_reduction(s, op)
        elif op in out_ops or op.tag in ("injective,pad", "softmax_exp"):
            schedule_injective_from_existing(s, op.output(0))
    return s


def _named(name, doc):
    def schedule(outs, layout=None):
        return _schedule(outs)
    schedule.__name__ = name
    schedule.__doc__ = doc
    return schedule


schedule_injective = _named("schedule_injective", "Injective outputs: producers inlined, "
                            "outer axes parallel, the innermost axis vectorized.")
schedule_elemwise = schedule_injective
schedule_broadcast = schedule_injective
schedule_concatenate = schedule_injective
schedule_reduce = _named("schedule_reduce", "Reductions: outputs in parallel; a reduction "
                         "to one value split into vector partial results (rfactor).")
schedule_conv2d_nchw = _named("schedule_conv2d_nchw", "conv2d_nchw: padding inlined, (batch, "
                              "channel) rows in parallel, output columns vectorized.")
schedule_depthwise_conv2d_nchw = _named("schedule_depthwise_conv2d_nchw",
                                        "depthwise_conv2d_nchw, as schedule_conv2d_nchw.")
schedule_dense = _named("schedule_dense", "dense: rows in parallel, contiguous dot products.")
schedule_batch_matmul = _named("schedule_batch_matmul", "batch_matmul: (batch, row) in "
                               "parallel.")
schedule_matmul = _named("schedule_matmul", "matmul: rows in parallel, columns vectorized.")
schedule_pool = _named("schedule_pool", "pool2d: rows in parallel, output columns "
                       "vectorized, the window loops outside the lanes.")
schedule_adaptive_pool = _named("schedule_adaptive_pool", "global_pool: channels in "
                                "parallel.")
schedule_global_pool = schedule_adaptive_pool
schedule_softmax = _named("schedule_softmax", "softmax: rows in parallel, each row's "
                          "reductions computed inside its loop.")

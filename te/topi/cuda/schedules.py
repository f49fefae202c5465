"""The cuda schedules. Injective stages that are not outputs are inlined (the exponentials
of a softmax are kept: they are read twice); every other stage becomes a kernel: its data
axes fused and split over ``blockIdx.x`` x ``threadIdx.x``. A reduction whose outputs are
fewer than the threads of a few blocks is instead reduced across the 32 threads of a warp:
``rfactor`` gives each thread a partial result, combined across the block."""
from __future__ import annotations

from ...expr import IntImm
from ..utils import as_tensors, create_schedule, inline_injective, traverse

NUM_THREADS = 256           # threads per block of an elementwise kernel
REDUCE_THREADS = 32         # threads sharing one output of a cross-thread reduction
FEW_OUTPUTS = 1024          # at most this many outputs: reduce across threads


def _thread_axis(tag):
    from ... import thread_axis
    return thread_axis(tag)


def _count(axes):
    total = 1
    for iv in axes:
        ext = iv.dom.extent if iv.dom is not None else None
        if not isinstance(ext, IntImm):
            return None
        total *= ext.value
    return total


def _bind_data(s, out):
    """Fuse the data axes of ``out``'s stage and spread them over blocks and threads."""
    stage = s[out]
    axes = list(stage.op.axis)
    if not axes:            # a 0-d output: one thread (a loop of one iteration)
        stage.bind(stage.fuse(), _thread_axis("threadIdx.x"))
        return
    fused = stage.fuse(*axes) if len(axes) > 1 else axes[0]
    count = _count(axes)
    threads = NUM_THREADS if count is None else max(1, min(NUM_THREADS, count))
    bx, tx = stage.split(fused, factor=threads)
    stage.bind(bx, _thread_axis("blockIdx.x"))
    stage.bind(tx, _thread_axis("threadIdx.x"))


def schedule_injective_from_existing(s, out):
    """Bind the injective stage ``out``: one thread per element."""
    _bind_data(s, out)
    return s


def _reduce_across_threads(s, out):
    """``REDUCE_THREADS`` threads share each output of the reduction ``out``; the outputs
    are spread over blocks (one per block row, ``threadIdx.y``)."""
    stage = s[out]
    raxes = list(stage.op.reduce_axis)
    k = stage.fuse(*raxes) if len(raxes) > 1 else raxes[0]
    _, ki = stage.split(k, factor=REDUCE_THREADS)
    rf = s.rfactor(out, ki)
    rf = rf[0] if isinstance(rf, (list, tuple)) else rf
    stage = s[out]
    tx = _thread_axis("threadIdx.x")
    data = list(stage.op.axis)
    if data:
        fused = stage.fuse(*data) if len(data) > 1 else data[0]
        count = _count(data)
        rows = 1 if count is None else max(1, min(8, count))
        bx, ty = stage.split(fused, factor=rows)
        stage.bind(bx, _thread_axis("blockIdx.x"))
        stage.bind(ty, _thread_axis("threadIdx.y"))
    else:                   # a reduction to one value: one block (a loop of one iteration)
        stage.bind(stage.fuse(), _thread_axis("blockIdx.x"))
    stage.bind(stage.op.reduce_axis[0], tx)
    s[rf].compute_at(stage, stage.op.reduce_axis[0])
    stage.set_store_predicate(tx.var.equal(0))


def _schedule_reduction(s, op):
    out = op.output(0)
    data = list(s[out].op.axis)
    count = _count(data)
    raxes = list(op.reduce_axis)
    length = _count(raxes)
    if op.num_outputs == 1 and count is not None and count <= FEW_OUTPUTS and \
            length is not None and length >= REDUCE_THREADS:
        _reduce_across_threads(s, out)
    else:
        _bind_data(s, out)


def _schedule(outs):
    outs = as_tensors(outs)
    s = create_schedule(outs)
    inline_injective(s, outs, keep=("softmax_exp",))
    out_ops = {t.op for t in outs}
    for op in traverse(outs):
        if op.is_reduction:
            _schedule_reduction(s, op)
        elif op in out_ops or op.tag == "softmax_exp":
            _bind_data(s, op.output(0))
    return s


def _named(name, doc):
    def schedule(outs, layout=None):
        return _schedule(outs)
    schedule.__name__ = name
    schedule.__doc__ = doc
    return schedule


schedule_injective = _named("schedule_injective", "Injective outputs: one thread per "
                            "element, 256 threads a block.")
schedule_elemwise = schedule_injective
schedule_broadcast = schedule_injective
schedule_concatenate = schedule_injective
schedule_reduce = _named("schedule_reduce", "Reductions: few outputs are each reduced by a "
                         "warp of threads, many get one thread each.")
schedule_conv2d_nchw = _named("schedule_conv2d_nchw", "conv2d_nchw: one thread per output.")
schedule_depthwise_conv2d_nchw = _named("schedule_depthwise_conv2d_nchw",
                                        "depthwise_conv2d_nchw: one thread per output.")
schedule_dense = _named("schedule_dense", "dense: one thread per output.")
schedule_batch_matmul = _named("schedule_batch_matmul", "batch_matmul: one thread per output.")
schedule_matmul = _named("schedule_matmul", "matmul: one thread per output.")
schedule_pool = _named("schedule_pool", "pool2d: one thread per output.")
schedule_adaptive_pool = _named("schedule_adaptive_pool", "global_pool: one thread per "
                                "output, or a warp per output for large windows.")
schedule_global_pool = schedule_adaptive_pool
schedule_softmax = _named("schedule_softmax", "softmax: each stage a kernel (the row "
                          "reductions across threads when the rows are few).")

"""Default GPU schedules: elementwise, reductions, matrix multiply and conv2d (HWCN).

Each takes the output tensor(s) of a te computation of the documented shape and returns a
schedule for ``te.build(..., target="cuda")``. The parameters are the tile sizes; the defaults
were measured on an H200 (see the README's GPU figures).
"""
from __future__ import annotations

import functools

import te
from codegen_cuda.emit import MAX_THREADS, simulator
from te.target import Target
from te.tensor import ComputeOp

from .cpu_util import build_key, num_elements


def _bind_1d(s, T, axis, num_thread):
    bx, tx = s[T].split(axis, factor=num_thread)
    s[T].bind(bx, te.thread_axis("blockIdx.x"))
    s[T].bind(tx, te.thread_axis("threadIdx.x"))


def _inline_producers(s, keep=()):
    """Inline every elementwise stage that is no output, not in ``keep`` and not yet placed
    elsewhere."""
    for stage in s.stages:
        op = stage.op
        if isinstance(op, ComputeOp) and not op.is_reduction and not stage.is_output \
                and stage.attach_type == "root" and all(stage is not k for k in keep):
            stage.compute_inline()


def schedule_injective(outs, num_thread=256):
    """Elementwise/broadcast outputs: intermediate stages inlined; each output's axes fused and
    spread over blocks of ``num_thread`` threads."""
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    s = te.create_schedule([o.op for o in outs])
    _inline_producers(s)
    for o in outs:
        fused = s[o].fuse(*s[o].op.axis)
        _bind_1d(s, o, fused, num_thread)
    return s


def schedule_reduce(out, num_thread=32, rows_per_block=8):
    """A reduction over its last axes: the reduction is split across ``num_thread`` threads
    (rfactor + a cross-thread combine) and ``rows_per_block`` outputs share a block."""
    s = te.create_schedule(out.op)
    _inline_producers(s)
    reduce_across_threads(s, out, num_thread, rows_per_block)
    return s


def reduce_across_threads(s, out, num_thread=32, rows_per_block=8):
    """Schedule the reduction stage ``out`` inside ``s``: ``num_thread`` threads share each
    output's reduction (rfactor, then a tree combine), ``rows_per_block`` outputs per block."""
    op = s[out].op
    reduce_axes = list(op.reduce_axis)
    k = s[out].fuse(*reduce_axes) if len(reduce_axes) > 1 else reduce_axes[0]
    _, ki = s[out].split(k, factor=num_thread)
    rf = s.rfactor(out, ki)
    rf = rf[0] if isinstance(rf, (list, tuple)) else rf     # a tuple reduction: one stage
    data = list(s[out].op.axis)
    fused = s[out].fuse(*data) if len(data) > 1 else data[0]
    bx, ty = s[out].split(fused, factor=rows_per_block)
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(ty, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[out].bind(s[out].op.reduce_axis[0], tx)
    s[rf].compute_at(s[out], s[out].op.reduce_axis[0])
    s[out].set_store_predicate(tx.var.equal(0))


def reduce_across_blocks(s, out, parts, num_thread=256, combine_threads=32):
    """A long reduction to few outputs in two kernels, so that it fills the GPU: each output's
    reduction is cut into ``parts`` pieces, each piece reduced by a block of ``num_thread``
    threads (rfactor over the outer part of the split: partial results in global memory), then
    ``combine_threads`` threads per output add its ``parts`` partial results."""
    op = s[out].op
    if not getattr(op, "is_reduction", False) or len(op.outputs) != 1:
        raise ValueError(f"reduce_across_blocks: {out.name} must be a reduction with one "
                         "output (sum, max, min, ...); schedule other stages with "
                         "schedule_injective or schedule_auto")
    for knob, value in (("parts", parts), ("num_thread", num_thread),
                        ("combine_threads", combine_threads)):
        if not _is_count(value):
            raise ValueError(f"reduce_across_blocks: {knob} must be a positive int, "
                             f"got {value!r}")
    reduce_axes = list(op.reduce_axis)
    k = s[out].fuse(*reduce_axes) if len(reduce_axes) > 1 else reduce_axes[0]
    ko, _ = s[out].split(k, nparts=parts)
    rf = s.rfactor(out, ko)
    rf = rf[0] if isinstance(rf, (list, tuple)) else rf
    reduce_across_threads(s, rf, num_thread, 1)
    reduce_across_threads(s, out, combine_threads, max(1, num_thread // combine_threads))


def reduction_parts(outputs, length, num_thread=256, per_thread=16, blocks=512):
    """How many blocks should share each of ``outputs`` reductions of ``length`` elements
    (``reduce_across_blocks``): enough for about ``blocks`` blocks in all, but each thread
    still adds ``per_thread`` elements or more; 1 means one block per output suffices."""
    return max(1, min(-(-blocks // outputs), length // (num_thread * per_thread)))


def schedule_matmul(C, num_thread=16, vthread=2, per_thread=4, step=16, s=None, unroll=True,
                    double_buffer=False, min_blocks=None):
    """``C[..., i, j] = sum_k A[..., i, k] * B[..., k, j]`` (either operand may be read
    transposed, leading axes are a batch): blocks of (vthread*num_thread*per_thread)^2
    outputs (each of the three knobs an int or a (rows, columns) pair: non-square blocks);
    A and B tiles staged through shared memory, fragments through registers, the outputs of
    each thread interleaved over ``vthread`` virtual threads; a batch is
    ``blockIdx.z``. ``C`` is the reduction itself (accumulated in registers by a
    ``cache_write``) or an elementwise stage over one (such as a bias added to a product: the
    product then accumulates in registers and the bias is added on the way out). Partial tiles
    are guarded. Schedules into ``s`` when given; ``unroll=False`` keeps the k step and the
    thread's outputs as loops (quicker to build, slower to run); ``double_buffer=True`` loads
    the next k step's tiles while this one computes (two halves per shared tile, one barrier
    per step); ``min_blocks`` asks the register allocator to fit that many blocks on an SM.
    B read transposed (``B[..., j, k]``) through its ``cache_read`` keeps B's layout in shared
    memory, where a warp's fragment loads meet on the same banks (3x slower on an H200);
    ``nn.ops.cpu_matmul`` declares such an operand's tile k-major instead (a stage with
    ``attrs["transposed"]``, tag ``gpu_matmul_pad``: filled along B's rows)."""
    knobs = dict(num_thread=num_thread, vthread=vthread, per_thread=per_thread, step=step)
    if min_blocks is not None:
        knobs["min_blocks"] = min_blocks
    _check_matmul(C, knobs)
    s = te.create_schedule(C.op) if s is None else s
    if C.op.is_reduction:
        CL = s.cache_write(C, "local")
    else:
        (acc,) = [t for t in C.op.input_tensors() if getattr(t.op, "is_reduction", False)]
        s[acc].set_scope("local")
        CL = acc
    caches = []
    for T in s[CL].op.input_tensors():
        if getattr(T.op, "tag", "") == "gpu_matmul_pad":   # the padding stage is the tile
            s[T].set_scope("shared")
            shared = T
        else:
            shared = s.cache_read(T, "shared", [CL])
        caches.append((shared, s.cache_read(shared, "local", [CL])))
    ny, nx = _pair(num_thread)
    *batch, y, x = s[C].op.axis
    block = matmul_block(dict(num_thread=num_thread, vthread=vthread, per_thread=per_thread))
    by, bx, tyz, txz, ty, tx, yi, xi = _block_tiles(s[C], y, x, block, _pair(vthread),
                                                    (ny, nx))
    s[C].reorder(*batch, by, bx, tyz, txz, ty, tx, yi, xi)
    if batch:
        s[C].bind(s[C].fuse(*batch) if len(batch) > 1 else batch[0],
                  te.thread_axis("blockIdx.z"))
    if min_blocks is not None:
        s[C].pragma(bx, "min_blocks_per_sm", min_blocks)
    if unroll:                  # constant indices: the accumulators stay registers
        s[C].unroll(yi)
        s[C].unroll(xi)
    s[CL].compute_at(s[C], tx)
    *cbatch, yo, xo = s[CL].op.axis
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=step)
    s[CL].reorder(ko, ki, *cbatch, yo, xo)
    for ax in (ki, yo, xo) if unroll else ():
        s[CL].unroll(ax)
    for shared, local in caches:
        s[shared].compute_at(s[CL], ko)
        if double_buffer:
            s[shared].double_buffer()
        s[local].compute_at(s[CL], ki)
        for ax in s[local].op.axis if unroll else ():
            s[local].unroll(ax)
        axes = list(s[shared].op.axis)
        if getattr(shared.op, "attrs", {}).get("transposed"):
            # a tile stored transposed (k-major) is filled along its source's rows: each
            # thread reads neighbouring elements of global memory and scatters them in shared
            axes[-2:] = axes[-1], axes[-2]
            s[shared].reorder(*axes)
        fused = s[shared].fuse(*axes)
        ty_, fused = s[shared].split(fused, nparts=ny)
        tx_, fused = s[shared].split(fused, nparts=nx)
        s[shared].bind(ty_, te.thread_axis("threadIdx.y"))
        s[shared].bind(tx_, te.thread_axis("threadIdx.x"))
    return s


def _block_tiles(stage, y, x, block, vthread, num_thread):
    """Split axes ``y`` and ``x`` of ``stage`` into blocks of ``block`` = (rows, columns)
    outputs, each spread over ``vthread`` x ``num_thread`` (pairs: rows, columns) virtual
    threads and threads, and bind them: (by, bx, vy, vx, ty, tx, yi, xi), the last two each
    thread's own part (the caller orders them)."""
    by, yi = stage.split(y, factor=block[0])
    bx, xi = stage.split(x, factor=block[1])
    tyz, yi = stage.split(yi, nparts=vthread[0])
    txz, xi = stage.split(xi, nparts=vthread[1])
    ty, yi = stage.split(yi, nparts=num_thread[0])
    tx, xi = stage.split(xi, nparts=num_thread[1])
    stage.bind(by, te.thread_axis("blockIdx.y"))
    stage.bind(bx, te.thread_axis("blockIdx.x"))
    stage.bind(tyz, te.thread_axis((0, vthread[0]), "vthread", name="vy"))
    stage.bind(txz, te.thread_axis((0, vthread[1]), "vthread", name="vx"))
    stage.bind(ty, te.thread_axis("threadIdx.y"))
    stage.bind(tx, te.thread_axis("threadIdx.x"))
    return by, bx, tyz, txz, ty, tx, yi, xi


def _is_count(value) -> bool:
    """Whether a knob's ``value`` is a positive int (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _pair(knob):
    """A knob that is an int or a (rows, columns) pair, as a pair."""
    return tuple(knob) if isinstance(knob, (tuple, list)) else (knob, knob)


def _check_matmul(C, knobs):
    """Clear errors for what ``schedule_matmul`` cannot schedule."""
    for knob, value in knobs.items():
        pair = knob in ("num_thread", "vthread", "per_thread")
        parts = _pair(value) if pair else (value,)
        if len(parts) != (2 if pair else 1) or not all(map(_is_count, parts)):
            what = "a positive int or a pair of them (rows, columns)" if pair else \
                "a positive int"
            raise ValueError(f"schedule_matmul: {knob} must be {what}, got {value!r}")
    ny, nx = _pair(knobs["num_thread"])
    if ny * nx > MAX_THREADS:
        raise ValueError(f"schedule_matmul: num_thread={knobs['num_thread']} makes blocks of "
                         f"{ny * nx} threads, over {MAX_THREADS}; use fewer threads (at most "
                         "32 x 32)")
    op = C.op
    products = [op] if getattr(op, "is_reduction", False) else \
        [t.op for t in op.input_tensors() if getattr(t.op, "is_reduction", False)]
    if len(products) != 1 or len(products[0].reduce_axis) != 1 or len(op.axis) < 2 or \
            len(products[0].axis) != len(op.axis):
        raise ValueError(f"schedule_matmul: {C.name} must be a product C[..., i, j] = "
                         "sum_k A[..., i, k] * B[..., k, j] (one reduce axis, at least two "
                         "data axes), or an elementwise stage of the same shape over exactly "
                         "one such product (a bias added to it); for other computations use "
                         "schedule_auto")


def matmul_block(cfg):
    """(rows, columns) of C that one block of ``schedule_matmul(**cfg)`` computes."""
    (vy, vx), (ny, nx), (py, px) = (_pair(cfg[k]) for k in ("vthread", "num_thread",
                                                             "per_thread"))
    return vy * ny * py, vx * nx * px


# 128 x 128 blocks of 256 threads, 8 x 8 outputs per thread, k steps of 8 double-buffered
# (the next step's tiles load into registers while this one computes: one barrier per step),
# registers capped at 128 so that two blocks share an SM. In sm_90 machine code (ptxas 13.0)
# the loop is 613 instructions per k step of 8: 512 FFMA, 32 LDS.128, 8 LDG, 2 STS.128, 1 BAR.
# On an H200 (2026-11-30, 4096^3 float32) 0.65-0.68 of cuBLAS, the best of the tilings that
# benchmarks/gpu/gemm_sweep.py tries (k steps of 16: 0.63; no register cap: 0.56).
MATMUL_LARGE = dict(num_thread=16, vthread=2, per_thread=4, step=8, double_buffer=True,
                    min_blocks=2)
# 64 x 64 blocks of 256 threads, 4 x 4 outputs per thread
MATMUL_MEDIUM = dict(num_thread=16, vthread=2, per_thread=2, step=16, double_buffer=True)
# 64 x 128 blocks of 256 threads, 4 x 8 outputs per thread, for a product with one short side
# (a convolution of 64 channels over many positions: 936 instructions per 512 FFMA in its
# sm_90 loop, against 560 per 256 with 64 x 64 blocks); the transpose when the columns are few
MATMUL_WIDE = dict(num_thread=16, vthread=2, per_thread=(2, 4), step=16, double_buffer=True)
# 32 x 32 blocks of 64 threads: enough blocks to fill the GPU for small products
MATMUL_SMALL = dict(num_thread=8, vthread=2, per_thread=2, step=16, double_buffer=True)
# (outputs per batch, shortest side) from which a product gets the large or the medium blocks
# (a side much shorter than a block is mostly padding)
MATMUL_LARGE_FROM = (1024 * 1024, 96)
MATMUL_MEDIUM_FROM = (512 * 1024, 48)


SPLIT_K_BLOCKS = 256     # blocks that a product of few tiles and a long reduction aims at
SPLIT_K_MIN_STEPS = 64   # ... with at least this many k steps in each part


def split_k_parts(blocks, length, step):
    """Into how many parts to split a product's reduction of ``length`` (split-K) when its
    tiles make only ``blocks`` blocks: enough parts for about ``SPLIT_K_BLOCKS`` blocks, each
    part at least ``SPLIT_K_MIN_STEPS`` steps of ``step``; 1: no split."""
    return max(1, min(-(-SPLIT_K_BLOCKS // blocks), length // (step * SPLIT_K_MIN_STEPS)))


def matmul_config(M, N, K, cap_registers=True):
    """Tile sizes of ``schedule_matmul`` for an M x N x K product (per batch):
    ``MATMUL_LARGE`` or, with fewer outputs or a shorter side (``MATMUL_*_FROM``),
    ``MATMUL_MEDIUM`` (``MATMUL_WIDE`` when one side is short and the other at least four
    times longer), else ``MATMUL_SMALL``; the k step shortened for a short reduction. On
    numba's simulator, which runs every thread as a Python thread and makes barriers slow, one
    thread per 8 x 8 block. ``cap_registers=False`` drops the large tiles' register cap (a
    product that gathers its operands, such as a convolution's patches, needs more for the
    addresses: 181 registers at 128 x 128, and capped at 128 its loop spilled)."""
    def config(cfg):                        # a short reduction: a short step, little padding
        cfg = dict(cfg, step=min(cfg["step"], -(-K // 4) * 4))
        if not cap_registers:
            cfg.pop("min_blocks", None)
        return cfg
    if simulator():
        return config(dict(num_thread=1, vthread=1, per_thread=8, step=16, unroll=False,
                           double_buffer=True))
    short, long_ = min(M, N), max(M, N)
    if M * N >= MATMUL_LARGE_FROM[0] and short >= MATMUL_LARGE_FROM[1]:
        return config(MATMUL_LARGE)
    if M * N >= MATMUL_MEDIUM_FROM[0] and short >= MATMUL_MEDIUM_FROM[1]:
        if short < MATMUL_LARGE_FROM[1] and long_ >= 4 * short:
            per_thread = MATMUL_WIDE["per_thread"]
            return config(dict(MATMUL_WIDE, per_thread=per_thread if M < N else
                               per_thread[::-1]))
        return config(MATMUL_MEDIUM)
    return config(MATMUL_SMALL)


def schedule_conv2d_hwcn(B, tile=8, num_thread=8, vthread=2, step=8):
    """The schedule of TVM's 'How to optimize convolution on GPU' for
    ``B[y, x, f, n] = sum_{ry, rx, rc} Apad[y*stride+ry, x*stride+rx, rc, n] * W[ry, rx, rc, f]``
    with a padding stage ``Apad`` (inlined) and weights ``W``."""
    s = te.create_schedule(B.op)
    Apad, W = B.op.input_tensors()
    s[Apad].compute_inline()
    AA = s.cache_read(Apad, "shared", [B])
    WW = s.cache_read(W, "shared", [B])
    AL = s.cache_read(AA, "local", [B])
    WL = s.cache_read(WW, "local", [B])
    BL = s.cache_write(B, "local")
    thread_x = te.thread_axis((0, num_thread), "threadIdx.x")
    thread_y = te.thread_axis((0, num_thread), "threadIdx.y")
    hi, wi, fi, ni = s[B].op.axis
    bz = s[B].fuse(hi, wi)
    by, bx, tyz, txz, ty, tx, fi, ni = _block_tiles(s[B], fi, ni, (tile * num_thread,) * 2,
                                                    (vthread,) * 2, (num_thread,) * 2)
    s[B].reorder(bz, by, bx, tyz, txz, ty, tx, fi, ni)
    s[B].bind(bz, te.thread_axis("blockIdx.z"))
    s[BL].compute_at(s[B], tx)
    yi, xi, fi, ni = s[BL].op.axis
    ry, rx, rc = s[BL].op.reduce_axis
    rco, rci = s[BL].split(rc, factor=step)
    s[BL].reorder(rco, ry, rx, rci, fi, ni)
    s[AA].compute_at(s[BL], rx)
    s[WW].compute_at(s[BL], rx)
    s[AL].compute_at(s[BL], rci)
    s[WL].compute_at(s[BL], rci)
    for load in (AA, WW):
        yi, xi, ci, last = s[load].op.axis
        ty, ci = s[load].split(ci, nparts=num_thread)
        tx, last = s[load].split(last, nparts=num_thread)
        _, last = s[load].split(last, factor=4)
        s[load].reorder(ty, tx, yi, xi, ci, last)
        s[load].bind(ty, thread_y)
        s[load].bind(tx, thread_x)
        s[load].vectorize(last)
    return s


# ----------------------------------------------------------------------------- any operator

CROSS_THREAD_MAX_OUTPUTS = 4096
SIMULATOR_ELEMENTS_PER_THREAD = 64


def schedule_auto(outs, num_thread=128, reduce_threads=32):
    """A correct default for any te computation on the GPU (nn's operators on cuda tensors):
    elementwise producers are inlined; every remaining stage (the outputs, and reductions that
    feed them) runs as a kernel of its own. Elementwise stages spread their fused data axes
    over blocks of ``num_thread`` threads, one element each; reductions share each output's
    reduction among ``reduce_threads`` threads (rfactor and a cross-thread combine) when there
    are few outputs (under ``CROSS_THREAD_MAX_OUTPUTS``), and among several blocks when that
    would leave the GPU mostly idle (``reduction_parts``: a long reduction to few values,
    such as a loss or a normalization's statistics; two kernels); with many outputs (a
    convolution) or several outputs per element (a tuple reduction), one thread computes
    each output serially, which already fills the GPU. Matrix
    products (nn.ops' matmul, dense, matmul_tn and batch_matmul, declared for the GPU) get
    ``schedule_matmul``'s shared-memory tiles, bias added on the way out."""
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    s = te.create_schedule([o.op for o in outs])
    tiled = _tiled_stages(s)
    for stage, product in tiled:    # the tiles that the declaration padded its operands to
        schedule_matmul(stage.op.output(0), s=s, **product.op.attrs["config"])
    tiled = [stage for stage, _ in tiled]
    _inline_producers(s, keep=tiled)
    roots = [stage for stage in s.stages if isinstance(stage.op, ComputeOp)
             and stage.attach_type == "root" and all(stage is not t for t in tiled)]
    scalar_consumer = next((o for o in outs if o.op.attrs.get("scalar_of") is not None), None)
    if scalar_consumer is not None:         # a 0-d result: one thread computes it (see _build)
        (ax,) = s[scalar_consumer].op.axis
        bx, tx = s[scalar_consumer].split(ax, factor=1)
        s[scalar_consumer].bind(bx, te.thread_axis("blockIdx.x"))
        s[scalar_consumer].bind(tx, te.thread_axis("threadIdx.x"))
    for stage in roots:
        out = stage.op.output(0)
        outputs = num_elements([iv.dom.extent for iv in stage.op.axis])
        if not stage.op.axis:
            stage.compute_at(s[scalar_consumer], s[scalar_consumer].leaf_iter_vars[-1])
        elif stage.op is scalar_consumer.op if scalar_consumer is not None else False:
            continue
        elif stage.op.is_reduction and len(stage.op.outputs) == 1 and not simulator() and \
                outputs < CROSS_THREAD_MAX_OUTPUTS:
            parts = reduction_parts(outputs, num_elements([iv.dom.extent
                                                           for iv in stage.op.reduce_axis]))
            if parts > 1:           # few outputs, long reductions: blocks share each one
                reduce_across_blocks(s, out, parts)
            else:
                reduce_across_threads(s, out, reduce_threads,
                                      max(1, num_thread // reduce_threads))
        else:
            axes = list(stage.op.axis)
            fused = stage.fuse(*axes) if len(axes) > 1 else axes[0]
            if simulator():        # a few simulated threads, each looping over many elements
                fused, _ = stage.split(fused, factor=SIMULATOR_ELEMENTS_PER_THREAD)
            _bind_1d(s, out, fused, num_thread)
    return s


def _matmul_product(op):
    """The product that ``op`` (a matmul declared for the GPU) adds its bias to, or None."""
    if getattr(op, "tag", "") != "matmul":
        return None
    accs = [t for t in op.input_tensors() if getattr(t.op, "tag", "") == "gpu_matmul_acc"]
    return accs[0] if accs else None


def _tiled_stages(s):
    """(stage, product) for each product declared for the GPU (tag ``gpu_matmul_acc``): the
    stage to tile is a matmul's output (the product stays in registers and the bias is added
    on the way out) or else the product itself, stored for a consumer of another shape (a
    convolution's output reads it at y * OW + x)."""
    out = {}
    for stage in s.stages:
        product = _matmul_product(stage.op)
        if product is not None:
            out[product.op] = (stage, product)
    for stage in s.stages:
        if getattr(stage.op, "tag", "") == "gpu_matmul_acc" and stage.op not in out:
            out[stage.op] = (stage, stage.op.output(0))
    return list(out.values())


class GpuOpFunction:
    """A built GPU operator: call it on numba device arrays; outputs are new device arrays
    (a tuple when the declaration returned several tensors)."""

    def __init__(self, module, out_shapes, out_dtypes, multiple):
        self.module = module
        self.out_shapes = out_shapes
        self.out_dtypes = out_dtypes
        self.multiple = multiple

    def __call__(self, *arrays):
        from numba import cuda
        outs = tuple(cuda.device_array(s or (1,), d)
                     for s, d in zip(self.out_shapes, self.out_dtypes))
        self.module(*arrays, *outs)
        outs = tuple(o if s else o.reshape(()) for o, s in zip(outs, self.out_shapes))
        return outs if self.multiple else outs[0]


def declare_for_gpu(declare, shapes, dtypes_, params):
    """(schedule, arguments, output shapes, dtypes, several outputs?) of ``declare`` on
    placeholders of ``shapes``, declared under ``Target("cuda")`` and scheduled by
    ``schedule_auto``: what ``build`` compiles."""
    inputs = [te.placeholder(shape, dtype, name=f"x{k}")
              for k, (shape, dtype) in enumerate(zip(shapes, dtypes_))]
    with Target("cuda"):            # declarations choose their GPU algorithm
        result = declare(*inputs, **dict(params))
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    shapes_ = tuple(tuple(d.value for d in o.shape) for o in outs)
    # a kernel needs a loop to bind: a 0-d output is computed as shape (1,)
    outs = [o if o.shape else _as_vector(o, [p for p in outs if p is not o]) for o in outs]
    return schedule_auto(outs), inputs + outs, shapes_, tuple(o.dtype for o in outs), \
        isinstance(result, (tuple, list))


@functools.lru_cache(maxsize=1024)
def _build(declare, shapes, dtypes_, params):
    s, args, shapes_, dtypes_out, multiple = declare_for_gpu(declare, shapes, dtypes_, params)
    name = getattr(declare, "__name__", "")
    module = te.build(s, args, target="cuda", name=name if name.isidentifier() else "op")
    return GpuOpFunction(module, shapes_, dtypes_out, multiple)


def _as_vector(scalar, others=()):
    """The 0-d tensor ``scalar`` as a tensor of shape (1,): a reduction (a sum or mean of a
    whole tensor, a loss) that no other output reads is declared again with one data axis, so
    that schedule_auto spreads it over many threads; anything else is copied out by one
    thread."""
    op = scalar.op
    if isinstance(op, ComputeOp) and op.is_reduction and len(op.outputs) == 1 and \
            not any(o.op.reads(op) for o in others):
        return te.compute((1,), lambda i: op.body[0], name=scalar.name + "_1")
    return te.compute((1,), lambda i: scalar(), name=scalar.name + "_1",
                      attrs={"scalar_of": scalar.name})


def build(declare, shapes, dtype="float32", **params):
    """``nn.ops.cpu.build`` for the GPU: declare for ``shapes``, schedule with
    ``schedule_auto`` and compile with numba.cuda; cached. A CPU ``schedule=`` is ignored.
    (numba's simulator runs each GPU thread as a Python thread: there ``schedule_auto`` uses
    few threads, each reducing serially over many elements.)"""
    params.pop("schedule", None)
    return _build(declare, *build_key(shapes, dtype, params))

"""Helpers shared by the CPU operators: constant shapes, padding, vector widths, row loops,
the padded input and the output stage of the convolutions."""
from __future__ import annotations

import te
from te import dtypes
from te.expr import IntImm, ProducerLoad, Var
from te.functor import post_order_visit
from te.tensor import ComputeOp

VECTOR_BITS = 512       # AVX-512 (the default; the host's width comes from nn.ops.host)


def const_shape(t, what) -> tuple:
    """The shape of tensor ``t`` as ints; the tuned schedules need constant sizes."""
    shape = []
    for d in t.shape:
        if not isinstance(d, IntImm):
            raise ValueError(f"{what}: {t.name} has the symbolic size {d}; the CPU schedules "
                             "need constant shapes (declare the placeholder with ints)")
        shape.append(d.value)
    return tuple(shape)


def pad_to(n, multiple) -> int:
    """``n`` rounded up to a multiple of ``multiple``."""
    return -(-n // multiple) * multiple


def vector_lanes(dtype) -> int:
    """Elements of ``dtype`` in one vector register of the host (``nn.ops.host``: 512 bits
    with AVX-512, 256 with AVX2)."""
    from . import host
    # bool is stored as a byte: 1-bit lanes would give 512-lane vectors LLVM takes minutes on
    return max(1, host.vector_bits() // max(8, dtypes.bits(dtype)))

PARALLEL_MIN = 1 << 15      # elements below which a parallel loop costs more than it saves


def num_elements(shape):
    """The product of ``shape``: an int when constant, else None."""
    total = 1
    for d in shape:
        if not isinstance(d, IntImm):
            return None
        total *= d.value
    return total


def inline_injective(s, outs):
    """Inline every elementwise stage of ``s`` that is not one of ``outs``."""
    out_ops = {s[o].op for o in outs}
    for stage in s.stages:
        op = stage.op
        if isinstance(op, ComputeOp) and op not in out_ops and not op.is_reduction:
            stage.compute_inline()


def _plain_reads(op) -> bool:
    """Whether every read of ``op``, and of the elementwise (non-reduction) stages it reads,
    which the default schedules inline into it, indexes with bare loop variables and
    constants (a pointwise or broadcast read), so that the fused loop's divisions and
    modulos still give exact bounds. Index arithmetic (a strided slice, a padding offset)
    keeps the axes apart: over a fused index its bounds widen past the buffer and the access
    checks refuse the kernel."""
    stack, seen = [op], set()
    while stack:
        cur = stack.pop()
        if cur in seen:
            continue
        seen.add(cur)
        loads = []
        for body in cur.body:
            post_order_visit(body, lambda n: loads.append(n) if isinstance(n, ProducerLoad)
                             else None)
        for load in loads:
            if not all(isinstance(i, (Var, IntImm)) for i in load.indices):
                return False
            src = load.producer.op
            if isinstance(src, ComputeOp) and not src.is_reduction:
                stack.append(src)
    return True


def schedule_rows(s, t, axes, parallel=True):
    """Vectorize the last of ``axes`` and fuse the others into one loop, parallel when the
    stage is large. Returns (outer loop or None, vector loop or None).

    The last axis is split into vector lanes rather than fused with the others: a fused index
    needs a division and a modulo, which turn broadcast operands' loads into gathers. When the
    lanes do not divide it, its outer part stays a loop of its own, so that loop partitioning
    can split off the partial vector (a guard on a fused loop would scalarize every vector).
    A last axis shorter than the lanes is the exception where the stage reads pointwise or
    broadcast (``_plain_reads``): it is fused with the axes before it until their product
    holds a vector (relu of a 50x64x13x13 conv output ran scalar, 11x
    slower than torch; fused, it is as fast: 54 vs 59 us on 1 thread, Zen 5).
    """
    stage = s[t]
    lanes = vector_lanes(t.dtype)
    if t.dtype == "bool":       # a compare of float32 runs 16 lanes of floats, not 64 of bytes
        lanes = min([lanes] + [vector_lanes(x.dtype) for x in stage.op.input_tensors])
    axes = list(axes)
    if not axes:
        return None, None
    extents = [ax.dom.extent for ax in axes]

    def short(k):       # the k-th axis from the end: a constant extent below the lanes
        return isinstance(extents[-k], IntImm) and extents[-k].value < lanes
    # a last axis shorter than a vector (the 13 columns of a 13x13 image) would leave the
    # whole stage scalar: fuse it with the axes before it until a vector fits in the product
    if len(axes) > 1 and short(1) and _plain_reads(stage.op):
        while len(axes) > 1 and short(1) and isinstance(extents[-2], IntImm):
            extents[-2:] = [te.const(extents[-2].value * extents[-1].value, "int32")]
            axes[-2:] = [stage.fuse(axes[-2], axes[-1])]
    lead, last = axes[:-1], axes[-1]
    extent = extents[-1]
    vec = None
    if not isinstance(extent, IntImm) or extent.value >= lanes:
        last, vec = stage.split(last, factor=lanes)
        stage.vectorize(vec)
        if isinstance(extent, IntImm) and extent.value % lanes == 0 or not lead:
            lead.append(last)
    else:
        lead.append(last)
    outer = stage.fuse(*lead) if len(lead) > 1 else lead[0]
    total = num_elements(t.shape)
    if parallel and (total is None or total >= PARALLEL_MIN):
        stage.parallel(outer)
    return outer, vec


def build_key(shapes, dtype, params) -> tuple:
    """(shapes, dtypes, params) of a ``build`` call as hashable tuples, the cache key of the
    CPU and GPU builds: one dtype for all inputs or one each; list params become tuples."""
    shapes = tuple(tuple(int(d) for d in s) for s in shapes)
    dts = (dtype,) * len(shapes) if isinstance(dtype, str) else tuple(dtype)
    params = tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                          for k, v in params.items()))
    return shapes, dts, params


def zero_outside(data, coords, boxes):
    """``data`` at ``coords`` shifted by their boxes, zero outside them: for a coordinate x with
    box ``(lo, hi)``, ``data[..., x - lo, ...]`` where ``lo <= x < hi``; a coordinate with box
    None is used as it is. A select between a load at clamped indices and zero, which
    vectorizes (a branch on the lanes' condition would not) and never reads out of bounds."""
    inside, index = [], []
    for x, box in zip(coords, boxes):
        if box is None:
            index.append(x)
            continue
        lo, hi = box
        inside += [x >= lo, x < hi]
        index.append(te.min(te.max(x - lo, 0), hi - lo - 1))
    return te.select(te.all(*inside), data[tuple(index)], te.const(0, data.dtype))


def padded_load(data, n, c, h, w, size, pad):
    """``data[n, c, h - top, w - left]`` of an NCHW tensor, zero outside (``zero_outside``)."""
    (H, W), (pt, pl) = size, pad
    return zero_outside(data, (n, c, h, w), (None, None, (pt, H + pt), (pl, W + pl)))


def conv_output(acc, shape, read, bias, name):
    """The output stage of a convolution (N, F, OH, OW): ``read(n, f, y, x)`` from the tile
    buffer ``acc``, plus ``bias[f]``."""
    if bias is not None and const_shape(bias, name) != (shape[1],):
        raise ValueError(f"{name}: bias must have shape ({shape[1]},), got "
                         f"{tuple(bias.shape)}")

    def fout(n, f, y, x):
        value = read(n, f, y, x)
        return value if bias is None else value + bias[f]
    return te.compute(shape, fout, name=name, tag="conv2d")

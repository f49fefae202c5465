"""te declarations of the shape and indexing operators: copies that rearrange (strided copy,
concatenation, repeat, flip, roll, triangles), zero-padding embeddings (the gradients of
slices and diagonals), gathers (by flat positions, along a dimension, by index lists) and
scatters that combine rows or elements into their targets.

Every declaration writes its whole output, as te kernels do, so a scatter is declared from
the output's side. Scatters work on (A, P, C) arrays, rows ``p`` of the middle axis (a flat
scatter is A = C = 1; ``index_add`` along a dimension moves whole rows, so that an embedding's
gradient sorts its indices, not its elements). The caller sorts the target rows once (integer
bookkeeping in numpy, see ``nn.functions.index``) so that the sources of row ``p`` are the
``counts[p]`` rows ``order[starts[p] + r]`` of ``src``; the kernel reduces those over a
reduction axis of a fixed ``width`` (entries past ``counts[p]`` are masked). Work is
``P * width`` rows; long segments are first folded into partial results ``width`` at a time
by ``segment_reduce``, so skewed indices (all to one place) cost ``O(K log K)`` rather than
``O(P * K)``.

Most take the default injective schedule of ``cpu.build`` (the reductions stay a loop nest of
their own, the rest is inlined, vectorized and parallel). ``flip``, ``roll`` and ``repeat``
read their last axis reversed, rotated or wrapped, which the explicit vectorizer turns into
gathers; ``schedule_copy`` leaves that axis to LLVM's loop vectorizer instead.
"""
from __future__ import annotations

import te
from te.topi.transform import concat_tree

from .cpu_util import PARALLEL_MIN, inline_injective, num_elements

__all__ = ["schedule_copy", "strided_copy", "concat", "repeat", "flip", "roll", "triangle",
           "slice_embed", "diagonal_embed", "take", "gather", "index_select", "fill_dim",
           "broadcast_cast", "nonzero_mask", "segment_reduce", "scatter_segments"]

REDUCERS = {"sum": te.sum, "prod": te.prod}


def schedule_copy(out):
    """Rows of the last axis, the other axes fused into one loop (parallel when large); the
    row loop is left to LLVM, which vectorizes reversed and rotated reads with shuffles
    (measured on 1024x1024 float32, one thread: flip of the last axis 0.2 ms against 1.1 ms
    with explicit 16-lane vectors, roll 0.2 against 1.1, repeat to 2048x2048 2.7 against
    4.9)."""
    s = te.create_schedule(out.op)
    inline_injective(s, [out])
    axes = list(s[out].op.axis)
    outer = s[out].fuse(*axes[:-1]) if len(axes) > 1 else None
    total = num_elements(out.shape)
    if outer is not None and total is not None and total >= PARALLEL_MIN:
        s[out].parallel(outer)
    return s


def _zero(dtype):
    return te.const(0, dtype)


def strided_copy(buf, shape, strides, offset):
    """The view of the 1-D buffer ``buf`` with ``shape`` and element ``strides`` (negative
    ones too) from element ``offset``, copied into a new contiguous tensor."""
    def body(*i):
        return buf[sum((a.astype("int64") * s for a, s in zip(i, strides)),
                       te.const(offset, "int64"))]
    return te.compute(shape, body, name="strided_copy", tag="elemwise")


def concat(*xs, dim, to):
    """The inputs (of equal rank, equal sizes but along ``dim``) joined along ``dim``, each
    converted to dtype ``to``."""
    offsets, total = [], 0
    for x in xs:
        offsets.append(total)
        total += x.shape[dim].value
    shape = [d.value for d in xs[0].shape]
    shape[dim] = total
    return te.compute(shape, lambda *i: concat_tree(list(xs), offsets, i, dim, to),
                      name="concat", tag="elemwise")


def repeat(x, shape):
    """``x`` (right-aligned, rank <= len(shape)) tiled to ``shape``: element ``i`` is
    ``x[i mod x.shape]``."""
    lead = len(shape) - len(x.shape)

    def body(*i):
        return x[tuple(te.floormod(i[lead + k], n.value) if n.value != shape[lead + k]
                       else i[lead + k] for k, n in enumerate(x.shape))]
    return te.compute(shape, body, name="repeat", tag="elemwise")


def flip(x, dims):
    """``x`` reversed along ``dims``."""
    def body(*i):
        return x[tuple(x.shape[d].value - 1 - a if d in dims else a for d, a in enumerate(i))]
    return te.compute(x.shape, body, name="flip", tag="elemwise")


def roll(x, shifts, dims):
    """``x`` rotated by ``shifts[k]`` (in [0, size)) along ``dims[k]``."""
    amount = dict(zip(dims, shifts))

    def source(d, a):
        s, n = amount.get(d, 0), x.shape[d].value
        return te.select(a >= s, a - s, a + (n - s)) if s else a

    return te.compute(x.shape, lambda *i: x[tuple(source(d, a) for d, a in enumerate(i))],
                      name="roll", tag="elemwise")


def triangle(x, diagonal, upper):
    """``x`` with the elements below (``upper``) or above the ``diagonal`` of its last two
    axes set to zero: ``triu`` and ``tril``."""
    def body(*i):
        row, col = i[-2], i[-1]
        keep = col - row >= diagonal if upper else col - row <= diagonal
        return te.select(keep, x[i], _zero(x.dtype))
    return te.compute(x.shape, body, name="triu" if upper else "tril", tag="elemwise")


def slice_embed(g, shape, dim, start, step):
    """Zeros of ``shape`` with ``g`` at positions ``start, start + step, ...`` along ``dim``:
    the gradient of a slice (and, with a size-1 ``g``, of a select)."""
    count = g.shape[dim].value

    def body(*i):
        rel = i[dim] - start
        inside = te.all(rel >= 0, rel < count * step)
        if step != 1:
            inside = te.all(inside, te.floormod(rel, step).equal(0))
        j = list(i)
        j[dim] = te.floordiv(rel, step) if step != 1 else rel
        return te.if_then_else(inside, g[tuple(j)], _zero(g.dtype))
    return te.compute(shape, body, name="slice_embed", tag="elemwise")


def diagonal_embed(g, shape, offset, dim1, dim2):
    """Zeros of ``shape`` with ``g`` (whose last axis runs along the diagonal) on the
    ``offset`` diagonal of axes ``dim1, dim2``: the gradient of ``diagonal``."""
    def body(*i):
        on = (i[dim2] - i[dim1]).equal(offset)
        rest = [a for d, a in enumerate(i) if d not in (dim1, dim2)]
        k = i[dim1] if offset >= 0 else i[dim2]
        return te.if_then_else(on, g[tuple(rest + [k])], _zero(g.dtype))
    return te.compute(shape, body, name="diagonal_embed", tag="elemwise")


def take(x, positions):
    """``x`` (1-D) read at ``positions`` (int64, in range): the result has their shape."""
    return te.compute(positions.shape, lambda *i: x[positions[i]], name="take", tag="elemwise")


def gather(x, index, dim):
    """``out[i] = x[i with i[dim] replaced by index[i]]`` (``index`` in range)."""
    def body(*i):
        j = list(i)
        j[dim] = index[i]
        return x[tuple(j)]
    return te.compute(index.shape, body, name="gather", tag="elemwise")


def index_select(x, index, dim):
    """``x`` at the positions ``index`` (1-D, in range) along ``dim``."""
    shape = [d.value for d in x.shape]
    shape[dim] = index.shape[0].value

    def body(*i):
        j = list(i)
        j[dim] = index[i[dim]]
        return x[tuple(j)]
    return te.compute(shape, body, name="index_select", tag="elemwise")


def fill_dim(x, selected, value, dim):
    """``x`` with ``value[0]`` wherever the position along ``dim`` is ``selected`` (bool)."""
    return te.compute(x.shape, lambda *i: te.select(selected[i[dim]], value[0], x[i]),
                      name="index_fill", tag="elemwise")


def broadcast_cast(v, shape, to):
    """``v`` broadcast to ``shape`` and converted to dtype ``to``."""
    lead = len(shape) - len(v.shape)

    def body(*i):
        return v[tuple(0 if n.value == 1 else i[lead + k]
                       for k, n in enumerate(v.shape))].astype(to)
    return te.compute(shape, body, name="broadcast_cast", tag="elemwise")


def nonzero_mask(x):
    """Where ``x`` is not zero (bool): what ``nonzero`` lists."""
    return te.compute(x.shape, lambda *i: x[i].not_equal(te.const(0, x.dtype)),
                      name="nonzero_mask", tag="elemwise")


def _segment(src, order, starts, counts, width, reduce, a, p, c):
    """The ``reduce`` of ``src[a, order[starts[p] + r], c]`` over ``r < counts[p]``."""
    last = src.shape[1].value - 1
    r = te.reduce_axis((0, width), name="r")
    rank = r.var.astype("int64")
    pos = te.min(starts[p] + rank, te.const(last, "int64"))     # masked lanes stay in range
    identity = te.const(0 if reduce == "sum" else 1, src.dtype)
    return REDUCERS[reduce](te.select(rank < counts[p], src[a, order[pos], c], identity),
                            axis=r)


def segment_reduce(src, order, starts, counts, width, reduce):
    """Per segment ``p``, the ``reduce`` ("sum" or "prod") of its ``counts[p] <= width`` rows
    ``src[:, order[starts[p] + r], :]`` of the (A, K, C) ``src``: one level of folding."""
    shape = (src.shape[0], starts.shape[0], src.shape[2])
    return te.compute(shape, lambda a, p, c: _segment(src, order, starts, counts, width,
                                                      reduce, a, p, c),
                      name="segment_" + reduce)


def scatter_segments(base, src, order, starts, counts, width, reduce):
    """``base`` (A, P, C) with the rows of ``src`` (A, K, C) that target row ``p`` combined
    into it: "sum" adds them, "prod" multiplies, "none" writes the last one (numpy's order
    for repeated targets)."""
    if reduce == "none":
        last = src.shape[1].value - 1

        def body(a, p, c):
            pos = te.min(te.max(starts[p] + counts[p] - 1, te.const(0, "int64")),
                         te.const(last, "int64"))
            return te.select(counts[p] > 0, src[a, order[pos], c], base[a, p, c])
        return te.compute(base.shape, body, name="scatter", tag="elemwise")
    total = te.compute(base.shape, lambda a, p, c: _segment(src, order, starts, counts, width,
                                                            reduce, a, p, c),
                       name="segment_" + reduce)
    if reduce == "sum":
        return te.compute(base.shape, lambda *i: base[i] + total[i], name="scatter_add")
    return te.compute(base.shape, lambda *i: base[i] * total[i], name="scatter_mul")

"""te declarations of sparse convolution and pooling (spconv's gather -> GEMM -> scatter-add),
with their CPU schedules in nn/ops/spconv_schedule.py.

A rulebook (nn/spconv/rulebook.py) lists the pairs (input site, output site, kernel offset)
grouped by offset, each group padded to whole tiles of ``ROWS`` pairs, so that every tile of
the product uses one offset's weights. The row counts (sites, pairs, tiles) are size
variables: one build serves every point cloud of the same channels and kernel volume.

    products[t, r, o]  = sum_c X[gather[t, r], c] * W[o, offset[t], c]   gather + GEMM, per tile
    out[i, o]          = sum_l products[slots[i, l], o]  (slots < 0 skipped)   the scatter-add,
                         a segmented sum over each output's pairs in a fixed order: no atomics,
                         the same result on every run
    wgrad[o, k, c]     = sum over the pairs of offset k of dY[out_p, o] * X[in_p, c]
                         in chunks of ``CHUNK`` pairs, then the chunks of each offset added
                         (in groups of ``GROUP``, then the groups)

The feature gradient is the forward product run on the reversed rulebook with the weights
transposed (``transpose_w``). Max pooling takes the maximum over the same slots.
"""
from __future__ import annotations

import te

ROWS = 8            # pairs per tile: the register tile's rows (as nn/ops/cpu_matmul.py's)
BN = 32             # its columns: two 16-lane AVX-512 vectors of float32
CHUNK = 64          # pairs per partial weight gradient; a multiple of ROWS
GROUP = 32          # partial weight gradients added per group (the first of two levels)

__all__ = ["gather_gemm", "segment_sum", "segment_max", "maxpool_backward", "weight_grad",
           "ROWS", "CHUNK", "GROUP"]


def _cols(n):
    """Columns of the register tile for ``n`` output channels, and ``n`` padded to them."""
    bn = BN if n > BN // 2 else 16
    return bn, -(-n // bn) * bn


def gather_gemm(x, weight, gather, offset, *, transpose_w=False):
    """(T, ROWS, Cout) products of the gathered rows of ``x`` (N, Cin) with the weights
    ``weight`` (Cout, K, Cin) of each tile's ``offset`` (T,); ``gather`` is (T, ROWS).
    ``transpose_w`` multiplies by W[k]^T instead: x (N, Cout) -> (T, ROWS, Cin)."""
    if transpose_w:
        n_out, kv, n_in = weight.shape[2].value, weight.shape[1].value, weight.shape[0].value
    else:
        n_out, kv, n_in = (d.value for d in weight.shape)
    bn, n_pad = _cols(n_out)

    def fpack(k, xo, c, xi):
        col = te.min(xo * bn + xi, n_out - 1) if n_pad != n_out else xo * bn + xi
        return weight[c, k, col] if transpose_w else weight[col, k, c]
    pack = te.compute((kv, n_pad // bn, n_in, bn), fpack, name="spconv.packW", tag="pack")
    c = te.reduce_axis((0, n_in), name="c")
    tiles = gather.shape[0]
    acc = te.compute((tiles, ROWS, n_pad), lambda t, r, o: te.sum(
        x[gather[t, r], c] * pack[offset[t], o // bn, c, o % bn], axis=c),
        name="spconv.acc", tag="spconv_acc", attrs={"cols": bn})
    return te.compute((tiles, ROWS, n_out), lambda t, r, o: acc[t, r, o],
                      name="spconv_gemm", tag="spconv_gemm")


def segment_sum(products, slots, bias=None):
    """(M, C): for each row i, the sum of ``products`` (P, C) rows ``slots[i, :]`` (M, L),
    in order, skipping negative slots; plus ``bias`` (C,)."""
    width = slots.shape[1].value
    last = products.shape[0] - 1
    dt = products.dtype
    l = te.reduce_axis((0, width), name="l")

    def body(i, o):
        s = slots[i, l]
        return te.sum(te.select(s >= 0, products[te.max(te.min(s, last), 0), o],
                                te.const(0, dt)), axis=l)
    total = te.compute((slots.shape[0], products.shape[1]), body, name="spconv_scatter.acc",
                       tag="spconv_segment_acc")
    if bias is None:
        return te.compute(total.shape, lambda i, o: total[i, o], name="spconv_scatter",
                          tag="spconv_segment_sum")
    return te.compute(total.shape, lambda i, o: total[i, o] + bias[o], name="spconv_scatter",
                      tag="spconv_segment_sum")


def segment_max(x, gather, slots):
    """(M, C) max pooling: for each output row i the maximum of ``x[gather[s]]`` over its
    slots ``s`` (M, L) (negative slots skipped; a row without slots is 0)."""
    width = slots.shape[1].value
    last = gather.shape[0] - 1
    dt = x.dtype
    l = te.reduce_axis((0, width), name="l")
    lowest = te.min_value(dt)

    def body(i, c):
        s = slots[i, l]
        return te.max(te.select(s >= 0, x[gather[te.max(te.min(s, last), 0)], c], lowest),
                      axis=l)
    best = te.compute((slots.shape[0], x.shape[1]), body, name="spconv_maxpool.best",
                      tag="spconv_segment")
    return te.compute(best.shape, lambda i, c: te.select(slots[i, 0] >= 0, best[i, c],
                                                         te.const(0, dt)),
                      name="spconv_maxpool", tag="spconv_segment")


def maxpool_backward(x, y, g, pair_out, slots):
    """(N, C) gradient of max pooling: each input row i gets ``g[o]`` of every output o of its
    pairs (``slots[i, :]`` index ``pair_out``) where ``x[i] == y[o]`` (spconv's rule: ties
    all receive it)."""
    width = slots.shape[1].value
    last = pair_out.shape[0] - 1
    dt = x.dtype
    l = te.reduce_axis((0, width), name="l")

    def body(i, c):
        s = slots[i, l]
        o = pair_out[te.max(te.min(s, last), 0)]
        hit = te.all(s >= 0, x[i, c].equal(y[o, c]))
        return te.sum(te.select(hit, g[o, c], te.const(0, dt)), axis=l)
    return te.compute(x.shape, body, name="spconv_maxpool_grad", tag="spconv_segment")


def weight_grad(x, g, pair_in, pair_out, groups, offset_groups):
    """(Cout, K, Cin) weight gradient: ``pair_in`` / ``pair_out`` (Q * CHUNK,) index ``x``
    (N, Cin) and ``g`` (M, Cout) (negative: padding). The chunk products are added in groups
    of at most ``GROUP`` chunks of one offset (``groups`` (S, GROUP): chunk numbers), then
    the groups of each offset (``offset_groups`` (K, W): group numbers); negative: none. Two
    levels, so that an offset with many chunks (the centre of a submanifold convolution) does
    not make every offset's sum as long as its own."""
    n_in, n_out = x.shape[1].value, g.shape[1].value
    dt = x.dtype
    nchunk = pair_in.shape[0] // CHUNK
    r = te.reduce_axis((0, CHUNK), name="r")
    lastx, lastg = x.shape[0] - 1, g.shape[0] - 1

    def fpart(q, o, c):
        p = q * CHUNK + r
        i, j = pair_in[p], pair_out[p]
        value = g[te.max(te.min(j, lastg), 0), o] * x[te.max(te.min(i, lastx), 0), c]
        return te.sum(te.select(i >= 0, value, te.const(0, dt)), axis=r)
    acc = te.compute((nchunk, n_out, n_in), fpart, name="spconv_wgrad.acc",
                     tag="spconv_wgrad_acc")
    part = te.compute(acc.shape, lambda q, o, c: acc[q, o, c], name="spconv_wgrad.part",
                      tag="spconv_wgrad_part")

    def masked_sum(table, src, name, tag):
        """For each row s of ``table``, the sum of the ``src`` rows it lists."""
        j = te.reduce_axis((0, table.shape[1]), name="j")
        last = src.shape[0] - 1

        def body(row, o, c):
            q = table[row, j]
            return te.sum(te.select(q >= 0, src[te.max(te.min(q, last), 0), o, c],
                                    te.const(0, dt)), axis=j)
        return te.compute((table.shape[0], n_out, n_in), body, name=name, tag=tag)
    grouped = masked_sum(groups, part, "spconv_wgrad.groups", "spconv_wgrad_groups")
    total = masked_sum(offset_groups, grouped, "spconv_wgrad.sum", "spconv_wgrad_sum")
    return te.compute((n_out, offset_groups.shape[0], n_in), lambda o, k, c: total[k, o, c],
                      name="spconv_wgrad", tag="spconv_wgrad")

"""te declarations of the embedding lookup, its gradient, the max-norm renormalization and
one_hot.

The gradient of a lookup is a scatter-add of the output's rows into the table. te has no
scatter, so the host sorts the positions by row (index bookkeeping: ``order``, and per used
row its ``start`` in that order and its ``count``) and the kernel sums, for each used row, the
gradient rows of its positions: a reduction of ``longest`` steps, masked past ``count``.
"""
from __future__ import annotations

import te

__all__ = ["embedding", "embedding_backward", "embedding_renorm", "one_hot"]


def embedding(weight, indices):
    """Rows ``weight[indices[i]]``: (M, D)."""
    return te.compute((indices.shape[0], weight.shape[1]),
                      lambda i, j: weight[indices[i], j], name="embedding", tag="elemwise")


def embedding_backward(g, order, start, count, *, longest, by_frequency):
    """(U, D) summed gradient rows of each used row (divided by ``count`` when
    ``by_frequency``)."""
    last = order.shape[0].value - 1
    k = te.reduce_axis((0, longest), name="k")
    dt = g.dtype

    def body(u, j):
        pos = te.min(start[u] + k.var.astype(start.dtype), te.const(last, start.dtype))
        return te.sum(te.select(k.var.astype(count.dtype) < count[u], g[order[pos], j],
                                te.const(0.0, dt)), axis=k)
    sums = te.compute((start.shape[0], g.shape[1]), body, name="rows")
    if not by_frequency:
        return sums
    return te.compute(sums.shape, lambda u, j: sums[u, j] / count[u].astype(dt), name="scaled")


def embedding_renorm(weight, rows, *, max_norm, norm_type):
    """The ``rows`` of ``weight`` scaled to a ``norm_type``-norm of at most ``max_norm``."""
    d = te.reduce_axis((0, weight.shape[1]), name="d")
    dt = weight.dtype
    p = te.const(norm_type, dt)
    if norm_type == float("inf"):
        norms = te.compute(rows.shape, lambda r: te.max(te.abs(weight[rows[r], d]), axis=d),
                           name="norms")
    else:
        powers = te.compute(rows.shape, lambda r: te.sum(
            te.power(te.abs(weight[rows[r], d]), p), axis=d), name="powers")
        norms = te.compute(rows.shape, lambda r: te.power(
            powers[r], te.const(1.0 / norm_type, dt)), name="norms")

    def body(r, j):
        big = norms[r] > te.const(max_norm, dt)
        scale = te.select(big, te.const(max_norm, dt) / (norms[r] + te.const(1e-7, dt)),
                          te.const(1.0, dt))
        return weight[rows[r], j] * scale
    return te.compute((rows.shape[0], weight.shape[1]), body, name="renormed")


def one_hot(indices, *, classes):
    """(M, classes) int64: 1 where the column is the index."""
    return te.compute((indices.shape[0], classes), lambda i, c: te.select(
        indices[i].equal(c.astype(indices.dtype)), te.const(1, "int64"), te.const(0, "int64")),
        name="one_hot", tag="elemwise")

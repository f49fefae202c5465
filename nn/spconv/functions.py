"""The differentiable sparse operators: convolution under a rulebook (gather -> GEMM ->
segmented scatter-add), max pooling, densifying, all on the compiled kernels of
nn/ops/spconv.py. Each is an ``Op`` (autograd Function) whose backward runs the same kernels:
the feature gradient is the product on the reversed rulebook with the weights transposed, the
weight gradient a chunked product over each offset's pairs.

Features on the CPU run the CPU builds (nn/ops/spconv_schedule.py: one build per channel
count, row counts bound at each call); cuda features run the GPU builds of the same
declarations (``nn.ops.gpu.schedule_auto``, one build per shape) on the rulebook's device
tables (nn/spconv/rulebook_gpu.py; a host rulebook's tables are copied). The counts of
kernel calls are in ``nn.functions.base.kernel_calls``.
An operator with nothing to compute (no sites, no pairs) returns zeros without a kernel.
"""
from __future__ import annotations

import threading

import numpy as np

from nn.ops import spconv as ops
from nn.ops.spconv_schedule import build

from ..device import CUDA, host, is_gpu, move, of
from ..functions.base import Op, Tensor, _gpu_kernel, kernel_calls
from ..tensor import dtype_name

__all__ = ["sparse_conv", "sparse_maxpool", "to_dense", "gather_rows", "empty_cache"]


def _run(declare, arrays, shapes, out_shape, scratch=False, **params):
    """The compiled ``declare`` on host ``arrays``; ``shapes`` name the row sizes. With
    ``scratch`` the output is a view of a buffer that the next scratch call overwrites."""
    if any(map(is_gpu, arrays)):
        out = _gpu_kernel(declare, [move(a, CUDA) for a in arrays], params)
        return out.reshape(out_shape)
    arrays = [np.ascontiguousarray(a) for a in arrays]
    f = build(declare, shapes, [dtype_name(a.dtype) for a in arrays], **params)
    out = _scratch(out_shape, arrays[0].dtype) if scratch else \
        np.empty(out_shape, arrays[0].dtype)
    kernel_calls[declare.__name__] += 1
    f(*arrays, out)
    return out


_SCRATCH = threading.local()       # per thread: kernels release the GIL


def _scratch(shape, dtype):
    """A reused buffer for the products between the GEMM and the scatter: a fresh array of
    that size (pairs x channels, often hundreds of MB) costs its page faults on every call.
    It grows to the largest size used; ``empty_cache()`` frees it."""
    size = int(np.prod(shape))
    buffers = _SCRATCH.__dict__
    buf = buffers.get(np.dtype(dtype).name)
    if buf is None or buf.size < size:
        buf = np.empty(max(size, 1), dtype)
        buffers[np.dtype(dtype).name] = buf
    return buf[:size].reshape(shape)


def empty_cache():
    """Free this thread's buffer of products (it is allocated again when needed)."""
    _SCRATCH.__dict__.clear()


def _host(t):
    """The storage of ``t``: a numpy array, or a numba device array for cuda tensors."""
    return t._data


def _zeros(shape, like, bias=None):
    """Zeros (plus ``bias``) of ``like``'s dtype on ``like``'s device."""
    out = np.zeros(shape, like.dtype)
    if bias is not None:
        out = out + host(bias)
    return move(out, of(like))


def _contiguous(array):
    return array if is_gpu(array) else np.ascontiguousarray(array)


def conv_forward(x, w, book, bias=None):
    """(n_out, Cout) ``x`` (n_in, Cin) convolved with ``w`` (Cout, K, Cin) under ``book``."""
    n_out, n_in, kv = w.shape[0], w.shape[2], w.shape[1]
    if book.num_pairs == 0 or book.n_out == 0:
        return _zeros((book.n_out, n_out), x, bias)
    tiles = book.gather_in.shape[0]
    prod = _run(ops.gather_gemm, [x, w, book.gather_in, book.tile_offset],
                [("N", n_in), (n_out, kv, n_in), ("T", ops.ROWS), ("T",)],
                (tiles, ops.ROWS, n_out), scratch=True)
    prod = prod.reshape(-1, n_out)
    slots = book.slots_out
    args = [prod, slots] + ([bias] if bias is not None else [])
    shapes = [("P", n_out), ("M", slots.shape[1])] + ([(n_out,)] if bias is not None else [])
    return _run(ops.segment_sum, args, shapes, (book.n_out, n_out))


def conv_input_grad(g, w, book):
    """(n_in, Cin) gradient of ``conv_forward`` for its features."""
    n_out, n_in, kv = w.shape[0], w.shape[2], w.shape[1]
    if book.num_pairs == 0 or book.n_in == 0:
        return _zeros((book.n_in, n_in), g)
    tiles = book.gather_out.shape[0]
    prod = _run(ops.gather_gemm, [g, w, book.gather_out, book.tile_offset],
                [("N", n_out), (n_out, kv, n_in), ("T", ops.ROWS), ("T",)],
                (tiles, ops.ROWS, n_in), scratch=True, transpose_w=True)
    slots = book.slots_in
    return _run(ops.segment_sum, [prod.reshape(-1, n_in), slots],
                [("P", n_in), ("M", slots.shape[1])], (book.n_in, n_in))


def conv_weight_grad(x, g, w_shape, book):
    """(Cout, K, Cin) gradient of ``conv_forward`` for its weights."""
    n_out, kv, n_in = w_shape
    if book.num_pairs == 0:
        return _zeros(w_shape, g)
    groups, offset_groups = book.chunk_groups
    return _run(ops.weight_grad, [x, g, book.pair_in, book.pair_out, groups, offset_groups],
                [("N", n_in), ("M", n_out), ("P",), ("P",), ("S", ops.GROUP), (kv, "W")],
                w_shape)


class SparseConvolution(Op):
    """Features (n_in, Cin), weight (Cout, *kernel, Cin), bias (Cout,) or None -> (n_out,
    Cout) under ``book`` (the rulebook, reversed already for inverse convolutions)."""

    @staticmethod
    def forward(ctx, features, weight, bias, book):
        x = _host(features)
        w = _host(weight).reshape(weight.shape[0], book.kv, weight.shape[-1])
        ctx.save_for_backward(features, weight)
        ctx.book = book
        return Tensor(conv_forward(x, w, book, None if bias is None else _host(bias)))

    @staticmethod
    def backward(ctx, g):
        features, weight = ctx.saved_tensors
        book = ctx.book
        gd = _contiguous(_host(g))
        w = _host(weight).reshape(weight.shape[0], book.kv, weight.shape[-1])
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = Tensor(conv_input_grad(gd, w, book))
        if ctx.needs_input_grad[1]:
            dw = Tensor(conv_weight_grad(_host(features), gd, w.shape, book)
                        .reshape(weight.shape))
        if ctx.needs_input_grad[2]:
            db = g.sum(0)
        return dx, dw, db, None


def sparse_conv(features, weight, bias, book):
    """``SparseConvolution`` of ``features`` under the rulebook ``book``."""
    return SparseConvolution.apply(features, weight, bias, book)


class SparseMaxPool(Op):
    """Max over each output's input sites (only active ones, as spconv's pooling)."""

    @staticmethod
    def forward(ctx, features, book):
        x = _host(features)
        ctx.book = book
        if book.num_pairs == 0 or book.n_out == 0:
            out = _zeros((book.n_out, x.shape[1]), x)
        else:
            slots = book.slots_out
            out = _run(ops.segment_max, [x, book.pair_in, slots],
                       [("N", x.shape[1]), ("P",), ("M", slots.shape[1])],
                       (book.n_out, x.shape[1]))
        ctx.save_for_backward(features)
        ctx.out = out
        return Tensor(out)

    @staticmethod
    def backward(ctx, g):
        (features,) = ctx.saved_tensors
        x, book = _host(features), ctx.book
        if book.num_pairs == 0 or book.n_in == 0:
            return Tensor(_zeros(x.shape, x)), None
        slots = book.slots_in
        c = x.shape[1]
        dx = _run(ops.maxpool_backward, [x, ctx.out, _contiguous(_host(g)),
                                         book.pair_out, slots],
                  [("N", c), ("M", c), ("M", c), ("P",), ("N", slots.shape[1])], x.shape)
        return Tensor(dx), None


def sparse_maxpool(features, book):
    return SparseMaxPool.apply(features, book)


class GatherRows(Op):
    """Rows ``table[rows]`` of a 2-D tensor (-1: a zero row); the gradient sums the rows
    back (a segmented sum over the positions of each source row)."""

    @staticmethod
    def forward(ctx, table, rows, slots):
        t = _host(table)
        ctx.n, ctx.slots_fwd = t.shape[0], slots
        ctx.rows = rows
        if rows.size == 0 or t.shape[0] == 0:
            return Tensor(_zeros((rows.size, t.shape[1]), t))
        # a gather is a segmented sum of one slot per row
        return Tensor(_run(ops.segment_sum, [t, rows.reshape(-1, 1).astype(np.int32)],
                           [("P", t.shape[1]), ("M", 1)], (rows.size, t.shape[1])))

    @staticmethod
    def backward(ctx, g):
        gd = _contiguous(_host(g))
        if ctx.rows.size == 0 or ctx.n == 0:
            return Tensor(_zeros((ctx.n, gd.shape[1]), gd)), None, None
        slots = ctx.slots_fwd()
        return Tensor(_run(ops.segment_sum, [gd, slots], [("P", gd.shape[1]),
                                                           ("M", slots.shape[1])],
                           (ctx.n, gd.shape[1]))), None, None


def gather_rows(table, rows, inverse_slots):
    """Differentiable ``table[rows]`` (rows < 0 give zeros); ``inverse_slots()`` returns the
    (table rows, L) positions in ``rows`` of each table row, for the gradient."""
    return GatherRows.apply(table, rows, inverse_slots)


def to_dense(features, cells, sites, batch_size, spatial_shape, channels_first=True):
    """The dense (B, C, *spatial) (or channels-last) tensor of ``features`` at the linear
    cells ``cells`` (n,) of a ``batch_size x spatial`` grid; zeros elsewhere."""
    from .rulebook import _slot_table
    total = int(batch_size * np.prod(spatial_shape))
    where = np.full(total, -1, np.int32)
    where[cells] = np.arange(cells.size, dtype=np.int32)
    flat = gather_rows(features, where, lambda: _slot_table(where, sites))
    dense = flat.reshape(batch_size, *spatial_shape, features.shape[1])
    if channels_first:
        dense = dense.permute(0, dense.ndim - 1, *range(1, dense.ndim - 1)).contiguous()
    return dense

"""Rulebooks of cuda SparseConvTensors built on the device (the numba.cuda kernels of
nn/ops/spconv_rulebook_kernels.py, described in nn/ops/spconv_rulebook_gpu.py): the same
rulebook as ``rulebook.build_rulebook`` (the same pairs in the same order, the same output
sites in the same order, the same index tables), its tables device arrays, so that the GPU
kernels read them where they are.

    sites -> hash table (key -> row); bad sites or duplicates: the host check raises
    submanifold   M[k, o] = the neighbour of site o at offset k (a probe per (k, o))
    regular /     C[k, i] = the output key of input i at offset k; the distinct keys are
    transposed    hashed, sorted (bitonic), numbered; M[k, rank] = i
    then          M compacted per offset (in output order: the host rulebook sorts each
                  group by output) into lists padded to whole chunks

Only an error flag, the number of output sites, the per-offset pair counts (K numbers), two
table widths and the output sites (which ``SparseConvTensor`` keeps on the host) come back
to the host. ``seconds`` is the time of the
construction and of the forward's tables, the GPU synchronized.
"""
from __future__ import annotations

import functools
import time

import numpy as np

from codegen_cuda.emit import simulator
from nn.ops.spconv import CHUNK, ROWS
from nn.ops.spconv_rulebook_gpu import THREADS, kernels

from .rulebook import (Rulebook, _offsets, check_indices, conv_output_shape,
                       deconv_output_shape)

__all__ = ["GpuRulebook", "build_rulebook_gpu"]

SEGMENT = 256       # sites per thread of the compaction


def _launch(kernel, n, *args):
    if n > 0:
        kernel[(n + THREADS - 1) // THREADS, THREADS](*args)


def _dev(array):
    from numba import cuda
    return cuda.to_device(np.ascontiguousarray(array))


def _empty(shape, dtype, value=None, kernel=not simulator()):
    """A device array, filled with ``value`` (by a kernel, or on numba's simulator, where a
    kernel costs a Python thread per element, by a copy)."""
    from numba import cuda
    if value is not None and not kernel:
        return cuda.to_device(np.full(shape, value, dtype))
    a = cuda.device_array(shape, dtype)
    if value is not None and a.size:
        _launch(kernels().fill, a.size, a.reshape(a.size), value)
    return a


def _hash_table(n):
    capacity = 16
    while capacity < 2 * n:
        capacity *= 2
    return _empty(capacity, np.int64, -1), _empty(capacity, np.int32), capacity - 1


def _slot_table_gpu(rows, count):
    """``rulebook._slot_table`` of the device array ``rows`` (P,): (count, L) int32."""
    k = kernels()
    p = rows.shape[0]
    counts = _empty(count, np.int32, 0)
    _launch(k.slot_count, p, rows, counts)
    widest = _empty(1, np.int32, 0)
    _launch(k.max_of, count, counts, widest)
    width = max(int(widest.copy_to_host()[0]), 1)
    table = _empty((count, width), np.int32, -1)
    _launch(k.slot_fill, p, rows, _empty(count, np.int32, 0), table)
    _launch(k.slot_sort, count, table, counts)
    return table


def _clamped(pairs):
    out = _empty(pairs.shape[0], np.int32)
    _launch(kernels().clamp0, pairs.shape[0], pairs, out)
    return out.reshape(pairs.shape[0] // ROWS, ROWS)


class GpuRulebook(Rulebook):
    """A ``Rulebook`` whose pair lists and index tables are numba device arrays (the small
    per-offset counts, ``out_indices`` and ``seconds`` stay on the host)."""

    def __init__(self, pair_in, pair_out, counts, kv, n_in, n_out, out_indices):
        self.kv, self.n_in, self.n_out = kv, n_in, n_out
        self.out_indices = out_indices
        padded = -(-counts // CHUNK) * CHUNK
        starts = np.concatenate([[0], np.cumsum(padded)[:-1]]).astype(np.int64)
        self.pair_in, self.pair_out = pair_in, pair_out
        self.tile_offset = _dev(np.repeat(np.arange(kv, dtype=np.int32), padded // ROWS))
        self.chunk_counts, self.chunk_starts = padded // CHUNK, starts // CHUNK
        self.num_pairs = int(counts.sum())
        self.seconds = 0.0

    @functools.cached_property
    def gather_in(self):
        return _clamped(self.pair_in)

    @functools.cached_property
    def gather_out(self):
        return _clamped(self.pair_out)

    @functools.cached_property
    def slots_out(self):
        return _slot_table_gpu(self.pair_out, self.n_out)

    @functools.cached_property
    def slots_in(self):
        return _slot_table_gpu(self.pair_in, self.n_in)

    @functools.cached_property
    def chunk_groups(self):
        """The host rulebook's chunk groups (from the K chunk counts), on the device."""
        groups, offset_groups = Rulebook.chunk_groups.func(self)
        return _dev(groups), _dev(offset_groups)


def _compact(m, n_in, n_out, kv, out_indices):
    """The GpuRulebook of M (K, n_out): per offset, the pairs (M[k, o], o) in order of o."""
    k = kernels()
    nseg = max(-(-n_out // SEGMENT), 1)
    counts = _empty((kv, nseg), np.int32)
    _launch(k.count_segments, kv * nseg, m, SEGMENT, counts)
    totals = _empty(kv, np.int64)
    _launch(k.scan_segments, kv, counts, totals)
    per_offset = totals.copy_to_host()
    padded = -(-per_offset // CHUNK) * CHUNK
    starts = np.concatenate([[0], np.cumsum(padded)[:-1]]).astype(np.int64)
    total = int(padded.sum())
    pair_in, pair_out = _empty(total, np.int32, -1), _empty(total, np.int32, -1)
    _launch(k.write_pairs, kv * nseg, m, SEGMENT, counts, _dev(starts), pair_in, pair_out)
    return GpuRulebook(pair_in, pair_out, per_offset, kv, n_in, n_out, out_indices)


def _sort(keys, n):
    """The first ``n`` entries of the device array ``keys``, sorted (a bitonic sort)."""
    k = kernels()
    size = 1
    while size < n:
        size *= 2
    a = _empty(size, np.int64, np.iinfo(np.int64).max)
    if n:
        a[:n].copy_to_device(keys[:n])
    width = 2
    while width <= size:
        step = width // 2
        while step >= 1:
            _launch(k.bitonic_step, size, a, step, width)
            step //= 2
        width *= 2
    return a


def build_rulebook_gpu(indices, batch_size, spatial_shape, ksize, stride, padding, dilation,
                       subm=False, transposed=False, output_padding=None):
    """``build_rulebook`` on the GPU: (GpuRulebook, out spatial shape)."""
    from numba import cuda
    start = time.perf_counter()
    shape = [int(n) for n in spatial_shape]
    ndim = len(shape)
    if indices.ndim != 2 or indices.shape[1] != ndim + 1 or indices.dtype.kind not in "iu":
        check_indices(indices, shape, batch_size)          # raises the host's message
    k = kernels()
    n = indices.shape[0]
    idx = _dev(indices.astype(np.int32))
    shape_d = _dev(np.array(shape, np.int64))
    offsets = _offsets(ksize)
    kv = len(offsets)
    offsets_d = _dev(offsets.reshape(kv, ndim))
    vec = lambda v: _dev(np.array(v, np.int64))         # noqa: E731
    keys = _empty(n, np.int64)
    bad = _empty(1, np.int32, 0)
    _launch(k.site_keys, n, idx, shape_d, int(batch_size), keys, bad)
    tkeys, tvals, mask = _hash_table(n)
    _launch(k.insert_sites, n, keys, tkeys, tvals, mask, bad)
    if n and bad.copy_to_host()[0]:
        check_indices(indices, shape, batch_size)           # names the bad row
        raise RuntimeError("build_rulebook_gpu: the device flagged the indices, the host "
                           "check did not")
    if subm:
        out_shape = shape
        m = _empty((kv, n), np.int32)
        _launch(k.subm_pairs, kv * n, idx, shape_d, offsets_d, vec(np.array(ksize) // 2),
                vec(dilation), tkeys, tvals, mask, m)
        book = _compact(m, n, n, kv, indices.astype(np.int32))
    else:
        if transposed:
            out_shape = deconv_output_shape(shape, ksize, stride, padding, dilation,
                                            output_padding or [0] * ndim)
        else:
            out_shape = conv_output_shape(shape, ksize, stride, padding, dilation)
        out_shape_d = _dev(np.array(out_shape, np.int64))
        cand = _empty((kv, n), np.int64)
        _launch(k.conv_candidates, kv * n, idx, out_shape_d, offsets_d, vec(stride),
                vec(padding), vec(dilation), bool(transposed), cand)
        okeys, ovals, omask = _hash_table(kv * n)
        distinct = _empty(kv * n, np.int64)
        count = _empty(1, np.int32, 0)
        _launch(k.insert_keys, kv * n, cand, okeys, omask, distinct, count)
        n_out = int(count.copy_to_host()[0])
        sorted_keys = _sort(distinct, n_out)
        _launch(k.set_rank, n_out, sorted_keys, n_out, okeys, ovals, omask)
        out_idx = _empty((n_out, ndim + 1), np.int32)
        _launch(k.decode, n_out, sorted_keys, out_shape_d, out_idx)
        out_indices = out_idx.copy_to_host() if n_out else np.zeros((0, ndim + 1), np.int32)
        m = _empty((kv, n_out), np.int32, -1)
        _launch(k.conv_scatter, kv * n, cand, okeys, ovals, omask, m)
        book = _compact(m, n, n_out, kv, out_indices)
    book.gather_in, book.slots_out      # the forward's tables, timed with the pairs
    cuda.synchronize()
    book.seconds = time.perf_counter() - start
    return book, out_shape


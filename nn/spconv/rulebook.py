"""Rulebooks: for every kernel offset, the pairs (input site, output site) it connects, built
on the host from a hash of the active sites (their linearized keys, sorted, looked up with
``np.searchsorted``; no dense grid of the spatial shape), and the index tables the kernels
of nn/ops/spconv.py read.

Sites are rows of ``indices`` (N, 1 + ndim): (batch, z, y, x). Offsets are numbered in the
weight's order (k_z, k_y, k_x) row-major. An output o and an input i meet at offset k where

    submanifold   i = o + (k - ksize // 2) * dilation            outputs = the inputs
    regular       i = o * stride - padding + k * dilation        outputs = all sites reached
    transposed    o = i * stride - padding + k * dilation

Regular and transposed outputs come sorted by their linearized key. The pairs are grouped by
offset (in each group sorted by output), each group padded to a whole number of ``CHUNK``
pairs (padding pairs are -1), so that a tile of ``ROWS`` pairs has one offset.
"""
from __future__ import annotations

import functools
import itertools
import time

import numpy as np

from nn.ops.spconv import CHUNK, GROUP, ROWS

__all__ = ["Rulebook", "check_indices", "conv_output_shape", "deconv_output_shape",
           "build_rulebook"]


def conv_output_shape(shape, ksize, stride, padding, dilation):
    """Spatial shape of a regular convolution's output (as a dense convolution's)."""
    out = [(n + 2 * p - d * (k - 1) - 1) // s + 1
           for n, k, s, p, d in zip(shape, ksize, stride, padding, dilation)]
    if any(n <= 0 for n in out):
        raise ValueError(f"the output spatial shape {out} of a convolution of "
                         f"kernel_size={list(ksize)}, stride={list(stride)}, padding="
                         f"{list(padding)}, dilation={list(dilation)} on {list(shape)} is "
                         "empty")
    return out


def deconv_output_shape(shape, ksize, stride, padding, dilation, output_padding):
    """Spatial shape of a transposed convolution's output."""
    return [(n - 1) * s - 2 * p + d * (k - 1) + op + 1 for n, k, s, p, d, op in
            zip(shape, ksize, stride, padding, dilation, output_padding)]


def _keys(coords, batch, shape):
    """Linearized int64 keys of (N, ndim) ``coords`` in ``batch``."""
    key = batch.astype(np.int64)
    for d, n in enumerate(shape):
        key = key * n + coords[:, d]
    return key


def _decode(keys, shape):
    """(N, 1 + ndim) int32 indices of linearized ``keys``."""
    cols = []
    for n in reversed(shape):
        cols.append(keys % n)
        keys = keys // n
    cols.append(keys)
    return np.stack(cols[::-1], axis=1).astype(np.int32)


def check_indices(indices, spatial_shape, batch_size, what="indices"):
    """Raise ValueError unless ``indices`` (N, 1 + ndim) are in range and distinct; returns
    their sorted keys and the order that sorts them."""
    ndim = len(spatial_shape)
    if indices.ndim != 2 or indices.shape[1] != ndim + 1:
        raise ValueError(f"{what} must have shape (N, {ndim + 1}) (batch, then {ndim} spatial "
                         f"coordinates), got {tuple(indices.shape)}")
    if indices.dtype.kind not in "iu":
        raise ValueError(f"{what} must be integers (int32), got {indices.dtype}")
    idx = indices.astype(np.int64)
    if idx.shape[0]:
        b = idx[:, 0]
        if b.min() < 0 or b.max() >= batch_size:
            row = int(np.argmax((b < 0) | (b >= batch_size)))
            raise ValueError(f"{what}: batch index {int(b[row])} at row {row} is outside "
                             f"[0, batch_size={batch_size})")
        for d, n in enumerate(spatial_shape):
            c = idx[:, d + 1]
            if c.min() < 0 or c.max() >= n:
                row = int(np.argmax((c < 0) | (c >= n)))
                raise ValueError(f"{what}: coordinate {int(c[row])} of spatial dimension {d} "
                                 f"at row {row} is outside the spatial shape "
                                 f"{list(spatial_shape)}")
    keys = _keys(idx[:, 1:], idx[:, 0], spatial_shape)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    dup = np.nonzero(sorted_keys[1:] == sorted_keys[:-1])[0]
    if dup.size:
        a, b = sorted(order[dup[0]:dup[0] + 2])
        raise ValueError(f"{what}: rows {a} and {b} are the same site "
                         f"{idx[a].tolist()}; sparse tensors need distinct sites")
    return sorted_keys, order


def _offsets(ksize):
    return np.array(list(itertools.product(*[range(k) for k in ksize])), np.int64)


def _slot_table(rows, count):
    """(count, L) int32: for each row r, the positions p with ``rows[p] == r`` in increasing
    order, -1 past them (``rows`` < 0: padding, skipped)."""
    pos = np.nonzero(rows >= 0)[0]
    order = pos[np.argsort(rows[pos], kind="stable")]
    seg = rows[order]
    counts = np.bincount(seg, minlength=count)
    width = int(counts.max()) if counts.size else 0
    table = np.full((count, max(width, 1)), -1, np.int32)
    if order.size:
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        table[seg, np.arange(order.size) - starts[seg]] = order
    return table


class Rulebook:
    """The pairs of one convolution or pooling and the kernels' index tables.

    ``pair_in`` / ``pair_out`` (P,) int32 (-1: padding), ``tile_offset`` (P // ROWS,) the
    kernel offset of each tile; ``n_in`` / ``n_out`` sites; ``out_indices`` (n_out, 1 + ndim);
    ``seconds``: the time its construction took.
    """

    def __init__(self, pair_in, pair_out, pair_offset, kv, n_in, n_out, out_indices,
                 seconds=0.0):
        self.kv, self.n_in, self.n_out = kv, n_in, n_out
        self.out_indices = out_indices
        counts = np.bincount(pair_offset, minlength=kv)
        padded = -(-counts // CHUNK) * CHUNK
        total = int(padded.sum())
        starts = np.concatenate([[0], np.cumsum(padded)[:-1]]).astype(np.int64)
        first = np.concatenate([[0], np.cumsum(counts)[:-1]])
        # each group sorted by output: the scatter then reads each group in one pass
        group_key = pair_offset.astype(np.int64) * max(n_out, 1) + pair_out
        order = np.argsort(group_key) if np.any(group_key[1:] < group_key[:-1]) else \
            np.arange(group_key.size)
        dest = starts[pair_offset[order]] + np.arange(order.size) - first[pair_offset[order]]
        self.pair_in = np.full(total, -1, np.int32)
        self.pair_out = np.full(total, -1, np.int32)
        self.pair_in[dest] = pair_in[order]
        self.pair_out[dest] = pair_out[order]
        self.tile_offset = np.repeat(np.arange(kv, dtype=np.int32), padded // ROWS)
        self.chunk_counts, self.chunk_starts = padded // CHUNK, starts // CHUNK
        self.num_pairs = int(order.size)
        self.seconds = seconds

    def reversed(self):
        """The rulebook with inputs and outputs swapped (inverse convolution, gradients)."""
        rev = object.__new__(type(self))
        rev.__dict__.update(self.__dict__)
        for name in ("slots_out", "slots_in", "gather_in", "gather_out"):
            rev.__dict__.pop(name, None)
        rev.pair_in, rev.pair_out = self.pair_out, self.pair_in
        rev.n_in, rev.n_out = self.n_out, self.n_in
        rev.out_indices = None
        return rev

    @functools.cached_property
    def gather_in(self):
        """(T, ROWS) input rows of each tile's pairs (padding reads row 0)."""
        return np.maximum(self.pair_in, 0).reshape(-1, ROWS)

    @functools.cached_property
    def gather_out(self):
        return np.maximum(self.pair_out, 0).reshape(-1, ROWS)

    @functools.cached_property
    def slots_out(self):
        """(n_out, L): each output's pair positions, in offset order."""
        return _slot_table(self.pair_out, self.n_out)

    @functools.cached_property
    def slots_in(self):
        return _slot_table(self.pair_in, self.n_in)

    @functools.cached_property
    def chunk_groups(self):
        """(groups (S, GROUP), offset_groups (K, W)): the chunks of each offset in groups of
        at most GROUP (chunk numbers), and the groups of each offset (-1 past them)."""
        per_offset = -(-self.chunk_counts // GROUP)
        first = np.concatenate([[0], np.cumsum(per_offset)[:-1]])
        total = int(per_offset.sum())
        k = np.repeat(np.arange(self.kv), per_offset)
        nth = np.arange(total) - first[k]                   # the group's place in its offset
        start = self.chunk_starts[k] + nth * GROUP
        left = self.chunk_counts[k] - nth * GROUP
        j = np.arange(GROUP)
        groups = np.where(j[None, :] < left[:, None], start[:, None] + j[None, :], -1)
        width = max(int(per_offset.max()), 1)
        m = np.arange(width)
        offset_groups = np.where(m[None, :] < per_offset[:, None], first[:, None] + m[None, :],
                                 -1)
        return groups.astype(np.int32), offset_groups.astype(np.int32)


def build_rulebook(indices, batch_size, spatial_shape, ksize, stride, padding, dilation,
                   subm=False, transposed=False, output_padding=None):
    """(Rulebook, out spatial shape) of a convolution over the sites ``indices``."""
    start = time.perf_counter()
    shape = [int(n) for n in spatial_shape]
    sorted_keys, order = check_indices(indices, shape, batch_size)
    idx = indices.astype(np.int64)
    n = idx.shape[0]
    offsets = _offsets(ksize)
    ks, st, pd, dl = (np.array(v, np.int64) for v in (ksize, stride, padding, dilation))
    ins, outs, ks_of = [], [], []
    if subm:
        out_shape = shape
        # keys in a grid padded by the kernel's reach: a neighbour's key is the site's key
        # plus one constant per offset, and neighbours outside the shape fall on padding
        # cells, which hold no site; the queries of an offset are sorted as the keys are
        reach = (ks // 2) * dl
        padded = [n + 2 * r for n, r in zip(shape, reach)]
        pkeys = _keys(idx[order, 1:] + reach, idx[order, 0], padded)
        strides = np.cumprod([1] + padded[::-1])[:-1][::-1]
        # offsets k and kv - 1 - k are opposite: (i, o) pairs at one are (o, i) at the other,
        # so only the first half is searched; the centre pairs every site with itself
        centre = len(offsets) // 2
        found_in, found_out = [None] * len(offsets), [None] * len(offsets)
        for k in range(centre):
            qkeys = pkeys + int(((offsets[k] - ks // 2) * dl) @ strides)
            pos = np.searchsorted(pkeys, qkeys)
            np.minimum(pos, max(n - 1, 0), out=pos)
            found = np.flatnonzero(pkeys[pos] == qkeys) if n else pos[:0]
            found_out[k], found_in[k] = order[found], order[pos[found]]
            found_out[-1 - k], found_in[-1 - k] = found_in[k], found_out[k]
        found_in[centre] = found_out[centre] = np.arange(n)
        for k in range(len(offsets)):
            outs.append(found_out[k])
            ins.append(found_in[k])
            ks_of.append(np.full(found_out[k].size, k))
        out_indices = indices.astype(np.int32)
        n_out = n
    else:
        if transposed:
            out_shape = deconv_output_shape(shape, ksize, stride, padding, dilation,
                                            output_padding or [0] * len(shape))
        else:
            out_shape = conv_output_shape(shape, ksize, stride, padding, dilation)
        limit = np.array(out_shape)
        cand_in, cand_key, cand_k = [], [], []
        for k, off in enumerate(offsets):
            if transposed:
                o = idx[:, 1:] * st - pd + off * dl
                ok = np.all((o >= 0) & (o < limit), axis=1)
            else:
                num = idx[:, 1:] + pd - off * dl
                o = num // st
                ok = np.all((num % st == 0) & (o >= 0) & (o < limit), axis=1)
            rows = np.nonzero(ok)[0]
            cand_in.append(rows)
            cand_key.append(_keys(o[rows], idx[rows, 0], out_shape))
            cand_k.append(np.full(rows.size, k))
        all_keys = np.concatenate(cand_key) if cand_key else np.zeros(0, np.int64)
        out_keys, inverse = np.unique(all_keys, return_inverse=True)
        out_indices = _decode(out_keys, out_shape) if out_keys.size else \
            np.zeros((0, len(shape) + 1), np.int32)
        n_out = out_keys.size
        ins, outs, ks_of = cand_in, [inverse.reshape(-1)], cand_k
    cat = (lambda parts: np.concatenate(parts).astype(np.int64) if parts else
           np.zeros(0, np.int64))
    book = Rulebook(cat(ins).astype(np.int32), cat(outs).astype(np.int32), cat(ks_of),
                    len(offsets), n, n_out, out_indices)
    book.gather_in, book.slots_out      # the forward's tables, timed with the pairs
    book.seconds = time.perf_counter() - start
    return book, out_shape

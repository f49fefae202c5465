"""Indexing: ``Tensor.__getitem__``/``__setitem__`` with PyTorch's rules, in-place writes
into views of a graph (``rebase_inplace``), and the flat kernels that every indexing operator
moves its values with. Gather and scatter are in ``nn.functions.gather_scatter``; index_select/
add/fill, masked_select, take, nonzero... in ``nn.functions.selection``; this module exports
their names too.

Basic indices (ints, slices, None, Ellipsis) give views on the tensor's storage, one node per
index as PyTorch records them (``SelectBackward0``, ``SliceBackward0``...). Index tensors then
gather with a kernel (``IndexBackward0``); ints are applied first, so only the index tensors
take part in numpy's rule that separated advanced indices put their dimensions first.

The values move only in te kernels (``nn.ops.index``); numpy does the integer bookkeeping on
the indices: range checks, wrapping negative indices, flat positions, and the sort that turns
a scatter into per-output segments (see ``_scatter``). Every scatter is deterministic:
repeated indices accumulate in index order, or the last one wins for a plain write.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from nn.ops import index as ops

from .. import autograd
from .. import device as devices
from .base import Op, Tensor, _kernel
from .elementwise import where
from .shape import Select, Slice, SliceBackward, _run, contiguous_data, unsqueeze

__all__ = ["getitem", "setitem_"]

WIDTH = 16      # sources combined per output element and kernel pass (see ``_scatter``)


# ----------------------------------------------------------------------------- flat kernels

def _flat(x):
    """The elements of tensor ``x`` as a contiguous 1-D array (a kernel copy for a view)."""
    return contiguous_data(x._data).reshape(-1)


def _take(data, positions):
    """``data`` (1-D) at ``positions`` (int64 array), in their shape."""
    return _run(ops.take, data, positions, out_shape=positions.shape, dtype=data.dtype)


def _scatter(base, src, targets, reduce, dim=0):
    """``base`` with the slices ``src[k]`` along ``dim`` combined into its slices
    ``targets[k]``: "sum", "prod", or "none" (the last write wins). A new array; with 1-D
    arrays, a scatter of elements into flat positions.

    The targets are sorted once (stably, so repeats combine in index order); segment ``p``
    holds the sources of slice ``p``. The kernel reduces each segment over ``width`` slots
    (a power of two up to ``WIDTH``, so few kernels are compiled); longer segments are first
    folded ``WIDTH`` sources at a time into partial results (a padded, data-independent
    number of them, so that the kernel shapes do not depend on the index values).
    """
    shape = base.shape
    lead, trail = math.prod(shape[:dim]), math.prod(shape[dim + 1:])
    base = base.reshape(lead, shape[dim], trail)
    src = src.reshape(lead, -1, trail)
    if src.size == 0 or base.size == 0:
        return _take(base.reshape(-1), np.arange(base.size))._data.reshape(shape)
    order = np.argsort(targets, kind="stable")
    counts = np.bincount(targets, minlength=shape[dim])
    while reduce != "none" and counts.max() > WIDTH:
        src, order, counts = _fold(src, order, counts, reduce)
    starts = np.cumsum(counts) - counts
    width = 1 << builtins.max(0, int(counts.max()) - 1).bit_length()
    return _kernel(ops.scatter_segments, base, src, order, starts, counts, out_shape=shape,
                   width=width, reduce=reduce)._data


def _fold(src, order, counts, reduce):
    """One level of folding: each segment cut into chunks of ``WIDTH`` sources, each chunk
    reduced to one partial result; returns the partials as the new sorted sources."""
    chunks = -(-counts // WIDTH)
    total = int(chunks.sum())
    padded = -(-src.shape[1] // WIDTH) + builtins.min(counts.size, src.shape[1])
    first = np.cumsum(chunks) - chunks
    segment = np.repeat(np.arange(counts.size), chunks)
    rank = np.arange(total) - first[segment]
    starts = np.zeros(padded, "int64")
    sizes = np.zeros(padded, "int64")
    starts[:total] = (np.cumsum(counts) - counts)[segment] + rank * WIDTH
    sizes[:total] = np.minimum(WIDTH, counts[segment] - rank * WIDTH)
    partial = _kernel(ops.segment_reduce, src, order, starts, sizes,
                      out_shape=(src.shape[0], padded, src.shape[2]), width=WIDTH,
                      reduce=reduce)._data
    return partial, np.arange(padded), chunks


def _strides(shape):
    """The element strides of a contiguous array of ``shape``."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _axis(values, axis, ndim):
    """``values`` (1-D) shaped to run along ``axis`` of ``ndim`` dimensions."""
    return values.reshape([-1 if d == axis else 1 for d in range(ndim)])


def _dim_positions(shape, dim, index):
    """Flat positions in an array of ``shape`` of the elements ``i`` with ``i[dim]`` replaced
    by ``index[i]`` (``index`` of no larger sizes, in range): scatter's targets."""
    strides = _strides(shape)
    positions = index.astype("int64") * strides[dim]
    for d, n in enumerate(index.shape):
        if d != dim:
            positions = positions + _axis(np.arange(n) * strides[d], d, index.ndim)
    return np.ascontiguousarray(np.broadcast_to(positions, index.shape))


def _zeros(shape, dtype):
    return Tensor(np.zeros(shape, dtype))


def _pad_to(g, shape):
    """``g`` embedded at the origin of zeros of ``shape`` (the gradient of a leading slice)."""
    for d, n in enumerate(shape):
        if g.shape[d] != n:
            g = SliceBackward.apply(g, g.shape[:d] + (n,) + g.shape[d + 1:], d, 0, 1)
    return g


class Take(Op):
    """``x`` read at flat ``positions`` (one gather kernel); the gradient scatters back."""
    host_only = True

    @staticmethod
    def forward(ctx, x, positions):
        ctx.shape, ctx.positions = x.shape, positions
        return _take(_flat(x), positions)

    @staticmethod
    def backward(ctx, g):
        return TakeBackward.apply(g, ctx.shape, ctx.positions), None


class Index(Op):
    """Advanced indexing. One index tensor at ``dim`` selects along it (``index_select``'s
    kernel; the gradient is ``index_add``, which scatters whole rows); several read the
    flat ``positions`` (``take``'s kernel; the gradient scatters elements)."""
    host_only = True

    @staticmethod
    def forward(ctx, y, dim, index, positions):
        ctx.shape, ctx.dim, ctx.index, ctx.positions = y.shape, dim, index, positions
        if positions is not None:
            return _take(_flat(y), positions)
        out = y.shape[:dim] + index.shape + y.shape[dim + 1:]
        flat = index._data.reshape(-1)
        rows = y.shape[:dim] + flat.shape + y.shape[dim + 1:]
        return Tensor(_run(ops.index_select, y._data, flat, out_shape=rows, dtype=y.dtype,
                           dim=dim)._data.reshape(out))

    @staticmethod
    def backward(ctx, g):
        if ctx.positions is not None:
            grad = TakeBackward.apply(g, ctx.shape, ctx.positions)
        else:
            rows = g.reshape(ctx.shape[:ctx.dim] + (ctx.index.numel(),) +
                             ctx.shape[ctx.dim + 1:])
            grad = index_add(_zeros(ctx.shape, g.dtype), ctx.dim, ctx.index.reshape(-1), rows)
        return grad, None, None, None


class MaskedSelect(Take):
    """``masked_select``, under PyTorch's node name."""


class TakeBackward(Op):
    """``g`` added into zeros of ``shape`` at flat ``positions`` (repeats accumulate)."""
    host_only = True

    @staticmethod
    def forward(ctx, g, shape, positions):
        ctx.positions = positions
        zeros = np.zeros(int(np.prod(shape)), g.dtype)
        return Tensor(_scatter(zeros, _flat(g), positions.reshape(-1), "sum").reshape(shape))

    @staticmethod
    def backward(ctx, g):
        return Take.apply(g, ctx.positions), None, None


# ----------------------------------------------------------------------------- __getitem__

def _as_index(item):
    """A list or array index as a tensor; numpy scalars as Python numbers."""
    if isinstance(item, Tensor) and item.is_cuda:
        item = Tensor(devices.host(item._data))       # index bookkeeping runs on the host
    if isinstance(item, (list, np.ndarray)):
        array = np.array(item)
        if array.size == 0:
            array = array.astype("int64")        # an empty list selects nothing
        if array.dtype.kind not in "biu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return Tensor(array if array.dtype == np.bool_ else array.astype("int64"))
    if isinstance(item, np.bool_):
        return bool(item)
    if isinstance(item, np.integer):
        return int(item)
    if isinstance(item, Tensor) and item.ndim == 0 and item.dtype != "bool":
        if item.is_floating_point():
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return int(item.item())           # a 0-d integer tensor selects, as PyTorch's
    return item


def _consumed(item):
    if item is None or item is Ellipsis or isinstance(item, bool):
        return 0
    if isinstance(item, Tensor) and item.dtype == "bool":
        return item.ndim
    return 1


def _expand_ellipsis(x, index):
    items = tuple(_as_index(i) for i in (index if isinstance(index, tuple) else (index,)))
    used = builtins.sum(_consumed(i) for i in items)
    if used > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    ellipses = [k for k, i in enumerate(items) if i is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    k = ellipses[0] if ellipses else len(items)
    return items[:k] + (slice(None),) * (x.ndim - used) + items[k + 1:]


def _basic(x, index):
    """Apply the basic indices of ``index`` to ``x`` (views, one node each) and collect the
    index tensors: returns the view and a list of (dimension of the view, int64 array)."""
    y, d, advanced = x, 0, []
    for item in _expand_ellipsis(x, index):
        if item is None or isinstance(item, bool) or (
                isinstance(item, Tensor) and item.ndim == 0):     # 0-d bool tensor
            y = unsqueeze(y, d)
            if not bool(item if item is not None else True):
                y = Slice.apply(y, d, 0, 0, 1)
            d += 1
        elif isinstance(item, int):
            n = y.shape[d]
            if not -n <= item < n:
                raise IndexError(f"index {item} is out of bounds for dimension {d} with size "
                                 f"{n}")
            y = Select.apply(y, d, item % n)
        elif isinstance(item, slice):
            if item.step is not None and item.step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, step = item.indices(y.shape[d])
            length = len(range(start, stop, step))
            if (start, length, step) != (0, y.shape[d], 1):
                y = Slice.apply(y, d, start, length, step)
            d += 1
        elif isinstance(item, Tensor):
            if item.dtype == "bool":
                for j in range(item.ndim):
                    if item.shape[j] != y.shape[d + j]:
                        raise IndexError(f"The shape of the mask {list(item.shape)} at index "
                                         f"{j} does not match the shape of the indexed tensor "
                                         f"{list(y.shape)} at index {d + j}")
                advanced.extend((d + j, a) for j, a in enumerate(np.nonzero(item._data)))
                d += item.ndim
            elif item.dtype.startswith(("int", "uint")):
                advanced.append((d, item._data))
                d += 1
            else:
                raise IndexError("tensors used as indices must be long, int, byte or bool "
                                 "tensors")
        else:
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long "
                             f"or byte Variables are valid indices (got "
                             f"{type(item).__name__})")
    return y, advanced


def _wrapped(index, n, dim):
    """``index`` (an integer array) checked against size ``n`` and made non-negative."""
    index = np.asarray(index).astype("int64")
    bad = (index < -n) | (index >= n)
    if bad.any():
        raise IndexError(f"index {index[bad].reshape(-1)[0]} is out of bounds for dimension "
                         f"{dim} with size {n}")
    return np.where(index < 0, index + n, index)


def _advanced_positions(shape, advanced):
    """Flat positions (in a contiguous array of ``shape``) read by the index tensors, in the
    result's shape: the broadcast index dimensions replace the indexed ones when those are
    adjacent, else they come first (numpy's rule)."""
    dims = [d for d, _ in advanced]
    arrays = [_wrapped(a, shape[d], d) for d, a in advanced]
    try:
        joint = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shapes = ", ".join(str(list(a.shape)) for a in arrays)
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together "
                         f"with shapes {shapes}") from None
    strides = _strides(shape)
    rest = [d for d in range(len(shape)) if d not in dims]
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    before = [d for d in rest if adjacent and d < dims[0]]
    after = [d for d in rest if d not in before]
    ndim = len(before) + len(joint) + len(after)
    lead = len(before)
    positions = builtins.sum(a * strides[d] for d, a in zip(dims, arrays))
    positions = np.broadcast_to(positions, joint).reshape(
        (1,) * lead + joint + (1,) * len(after))
    for k, d in enumerate(before):
        positions = positions + _axis(np.arange(shape[d]) * strides[d], k, ndim)
    for k, d in enumerate(after):
        positions = positions + _axis(np.arange(shape[d]) * strides[d], lead + len(joint) + k,
                                      ndim)
    out_shape = tuple(shape[d] for d in before) + joint + tuple(shape[d] for d in after)
    return np.ascontiguousarray(np.broadcast_to(positions, out_shape))


def getitem(x, index):
    """``x[index]`` with PyTorch's rules: ints, slices, None and Ellipsis give views;
    integer and bool index tensors (or lists) gather into a new tensor."""
    y, advanced = _basic(x, index)
    if not advanced:
        return y
    if len(advanced) == 1:
        dim, array = advanced[0]
        return Index.apply(y, dim, Tensor(_wrapped(array, y.shape[dim], dim)), None)
    return Index.apply(y, None, None, _advanced_positions(y.shape, advanced))


# ----------------------------------------------------------------------------- __setitem__

def _values(value, shape, dtype):
    """``value`` (a number or tensor) broadcast to ``shape`` as a contiguous array of
    ``dtype`` (one kernel), with PyTorch's message when it does not fit."""
    data = value._data if isinstance(value, Tensor) else np.array(value)
    while data.ndim > len(shape) and data.shape[0] == 1:
        data = data[0]                    # PyTorch drops leading ones of the value
    try:
        np.broadcast_shapes(data.shape, shape)
        fits = data.ndim <= len(shape) and np.broadcast_shapes(data.shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(data.shape)} cannot be "
                           f"broadcast to indexing result of shape {list(shape)}")
    return _run(ops.broadcast_cast, data, out_shape=shape, dtype=dtype, shape=shape,
                to=dtype)._data


def setitem_(x, index, value):
    """``x[index] = value``, written into ``x``'s storage (a number or a tensor that
    broadcasts to ``x[index]``, converted to ``x``'s dtype). In the autograd graph, ``x`` (or
    the base it views) is rebased onto a ``CopySlices`` node, as PyTorch does."""
    in_graph = x._records_inplace([value] if isinstance(value, Tensor) else [])
    if not x._data.flags.writeable:
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")
    with autograd.no_grad():
        y, advanced = _basic(x, index)
        host_value = Tensor(devices.host(value._data)) if isinstance(value, Tensor) else value
        positions = None
        if not advanced:
            shape = y.shape
            new = _values(host_value, shape, x.dtype)
        else:
            positions = _advanced_positions(y.shape, advanced)
            shape = positions.shape
            values = _values(host_value, shape, x.dtype).reshape(-1)
            flat = contiguous_data(devices.host(y._data)).reshape(-1)
            new = _scatter(flat, values, positions.reshape(-1), "none").reshape(y.shape)
        devices.write(y._data, new)
        y._bump_version()           # (on the GPU, y is a copy: this writes it through into x)
    if in_graph:
        base = x._base if x._base is not None else x
        where = _view_positions(y, base)
        if positions is not None:
            where = where.reshape(-1)[positions]
        if isinstance(value, Tensor):
            src = value.to(x.device).to(x.dtype)
            while src.ndim > len(shape) and src.shape[0] == 1:
                src = src[0]
            src = src.expand(shape)
        else:
            src = None
        _rebase(x, base, src, where)
    return x


# ----------------------------------------------------------------------------- in place in a graph

def _strided_positions(offset, strides, shape, itemsize):
    """Flat positions in a C-contiguous array of the elements of a view of it at byte
    ``offset`` with byte ``strides``."""
    positions = np.full(shape, offset // itemsize, "int64")
    for d, (n, s) in enumerate(zip(shape, strides)):
        positions = positions + _axis(np.arange(n, dtype="int64") * (s // itemsize), d,
                                      len(shape))
    return positions


def _view_positions(view, base):
    """The flat (C-order) positions in ``base`` of the elements of ``view``, a view of it."""
    if view is base:
        return np.arange(base.numel(), dtype="int64").reshape(base.shape)
    if view._view_of is not None:       # a GPU view: a chain of copies up to the base
        parent, offset, strides = view._view_of
        local = _strided_positions(offset, strides, view.shape, view._data.dtype.itemsize)
        return _view_positions(parent, base).reshape(-1)[local]
    if devices.is_gpu(view._data) or not base._data.flags.c_contiguous or \
            not np.may_share_memory(view._data, base._data):
        raise RuntimeError("an in-place operation on this view of a tensor in the autograd "
                           "graph is not supported (its base is not contiguous); clone() "
                           "the view first")
    offset = (view._data.__array_interface__["data"][0]
              - base._data.__array_interface__["data"][0])
    return _strided_positions(offset, view._data.strides, view.shape,
                              view._data.dtype.itemsize)


def _zero_at(g, positions):
    """``g`` with zeros at the flat ``positions`` (a select, not a product with a 0/1 mask:
    an inf or NaN there must still give zero, as PyTorch's ``CopySlices``)."""
    overwritten = np.zeros(g.numel(), bool)
    overwritten[positions.reshape(-1)] = True
    mask = Tensor(devices.move(overwritten.reshape(g.shape), g.device))
    return where(mask, 0.0, g)


class CopySlices(Op):
    """The node of a tensor written in place inside the graph: ``src`` went into ``base`` at
    flat ``positions``. Its forward does nothing (the write has happened already); the
    gradient of the overwritten elements is zero and ``src`` gets theirs."""
    node_suffix = ""

    @staticmethod
    def forward(ctx, base, src, positions):
        ctx.positions = positions
        return Tensor(base._data)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        grad_base = grad_src = None
        if need[0]:
            grad_base = _zero_at(g, ctx.positions)
        if need[1]:
            grad_src = Take.apply(g, ctx.positions)
        return grad_base, grad_src, None


def _rebase(x, base, src, positions):
    """Give ``base`` (and its view ``x``) the history of ``src`` written at ``positions``."""
    if src is None or not src.requires_grad:
        src = Tensor(np.zeros(positions.shape, base.dtype))     # constants: no gradient
        src = src.to(base.device)
    node = CopySlices.apply(base, src, positions)
    if node.grad_fn is None:
        return
    base._set_history(node.grad_fn, 0)
    base._epoch += 1            # its other views follow it when next used (Tensor.grad_fn)
    if x is not base:
        x._follow_base()


def rebase_inplace(x, src):
    """After ``src`` (a tensor of ``x``'s shape, maybe in the graph) was written into all of
    ``x``: record it in the graph (``x`` takes ``src``'s history, or, for a view, its base
    goes through ``CopySlices``)."""
    if x._base is None and src is not None and src.grad_fn is not None and \
            src.shape == x.shape:
        x._set_history(src.grad_fn, src._output_nr)
        x._epoch += 1
        return
    base = x._base if x._base is not None else x
    _rebase(x, base, src, _view_positions(x, base))


# The operators built on the kernels above; they import this module's helpers, so they load last.
from . import gather_scatter as _gather_scatter, selection as _selection  # noqa: E402
from .gather_scatter import *  # noqa: F401,F403,E402
from .selection import *  # noqa: F401,F403,E402
from .gather_scatter import Gather, Scatter, ScatterAdd, ScatterReduce  # noqa: F401,E402
from .selection import IndexAdd, IndexFill, IndexPut, IndexSelect  # noqa: F401,E402

__all__ += _gather_scatter.__all__ + _selection.__all__

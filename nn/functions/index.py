"""Indexing: ``Tensor.__getitem__``/``__setitem__`` with PyTorch's rules, gather and scatter,
index_select/add/fill, masked_select, take, nonzero.

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
from .base import Op, Tensor, _dim, _kernel, torch_name
from .elementwise import where
from .shape import Select, Slice, SliceBackward, _run, contiguous_data, unsqueeze

__all__ = ["getitem", "setitem_", "gather", "scatter", "scatter_add", "scatter_reduce",
           "index_select", "masked_select", "take", "nonzero", "index_add", "index_fill",
           "index_put", "take_along_dim", "argwhere", "index_copy", "masked_scatter",
           "bincount", "histc"]

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


# ----------------------------------------------------------------------------- gather, scatter

def _index_tensor(index, what):
    if not isinstance(index, Tensor) or not index.dtype.startswith(("int", "uint")):
        raise RuntimeError(f"{what}(): Expected dtype int32/int64 for index")
    return index


def _check_dim_index(input, dim, index, src=None):
    """PyTorch's checks of gather/scatter: equal ranks, no larger sizes, indices in range."""
    if index.ndim != input.ndim and index.numel() and input.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input "
                           "tensor")
    for d in range(index.ndim):
        too_big = d != dim and index.shape[d] > input.shape[d]
        if too_big or (src is not None and index.shape[d] > src.shape[d]):
            against = "" if src is None else f" and to be no larger size than src " \
                                             f"{list(src.shape)}"
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self "
                               f"{list(input.shape)} apart from dimension {dim}{against}")
    n = input.shape[dim] if input.ndim else 1
    data = devices.host(index._data)        # a GPU index is checked on a host copy
    bad = (data < 0) | (data >= n)
    if bad.any():
        raise RuntimeError(f"index {data[bad].reshape(-1)[0]} is out of bounds for dimension "
                           f"{dim} with size {n}")


class Gather(Op):
    host_only = True
    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.shape, ctx.dim, ctx.index = x.shape, dim, index
        return _run(ops.gather, x._data, index._data.astype("int64"), out_shape=index.shape,
                    dtype=x.dtype, dim=dim)

    @staticmethod
    def backward(ctx, g):
        return scatter_add(_zeros(ctx.shape, g.dtype), ctx.dim, ctx.index, g), None, None


def gather(input, dim, index, *, sparse_grad=False):
    """``out[i] = input[i with i[dim] replaced by index[i]]``, in the shape of ``index``."""
    index = _index_tensor(index, "gather")
    d = _dim(dim, input.ndim)
    _check_dim_index(input, d, index)
    if input.ndim == 0 or index.ndim == 0:
        return Gather.apply(input.reshape(1), 0, index.reshape(1)).reshape(index.shape)
    return Gather.apply(input, d, index)


class Scatter(Op):
    """``input`` with ``src`` written (or, with ``reduce``, added or multiplied) at the
    positions ``index`` gives along ``dim``."""
    host_only = True

    @staticmethod
    def forward(ctx, input, src, dim, index, reduce):
        ctx.dim, ctx.index, ctx.reduce = dim, index, reduce
        ctx.src_shape = src.shape
        region = src._data[tuple(slice(0, n) for n in index.shape)]
        targets = _dim_positions(input.shape, dim, index._data).reshape(-1)
        out = _scatter(_flat(input), contiguous_data(region).reshape(-1), targets, reduce)
        return Tensor(out.reshape(input.shape))

    @staticmethod
    def backward(ctx, g):
        if ctx.reduce != "none":
            raise RuntimeError("derivative for aten::scatter is not implemented")
        need = ctx.needs_input_grad
        return (scatter(g, ctx.dim, ctx.index, 0) if need[0] else None,
                _pad_to(gather(g, ctx.dim, ctx.index), ctx.src_shape) if need[1] else None,
                None, None, None)


class ScatterAdd(Op):
    host_only = True
    @staticmethod
    def forward(ctx, input, src, dim, index):
        ctx.dim, ctx.index, ctx.src_shape = dim, index, src.shape
        return Scatter.forward(ctx, input, src, dim, index, "sum")

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (g if need[0] else None,
                _pad_to(gather(g, ctx.dim, ctx.index), ctx.src_shape) if need[1] else None,
                None, None)


_REDUCE = {None: "none", "add": "sum", "multiply": "prod"}


def _source(input, index, src, value, what):
    """The tensor whose leading ``index``-shaped block is scattered: ``src``, or ``value``
    broadcast (a kernel)."""
    if isinstance(src, Tensor):
        if src.dtype != input.dtype:
            raise RuntimeError(f"{what}(): Expected self.dtype to be equal to src.dtype")
        return src
    value = src if src is not None else value
    if value is None:
        raise TypeError(f"{what}() missing 1 required argument: 'src' or 'value'")
    return Tensor(_values(value, index.shape, input.dtype))


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """``input`` with ``src`` (a tensor, or a number ``value``) written at the positions
    ``index`` gives along ``dim``; ``reduce`` "add" or "multiply" combines instead."""
    index = _index_tensor(index, "scatter")
    if reduce not in _REDUCE:
        raise RuntimeError("reduce argument must be either add or multiply.")
    d = _dim(dim, input.ndim)
    src = _source(input, index, src, value, "scatter")
    _check_dim_index(input, d, index, src)
    return Scatter.apply(input, src, d, index, _REDUCE[reduce])


def scatter_add(input, dim, index, src):
    """``input`` with ``src`` added at the positions ``index`` gives along ``dim``
    (repeated positions accumulate)."""
    index = _index_tensor(index, "scatter_add")
    d = _dim(dim, input.ndim)
    src = _source(input, index, src, None, "scatter_add")
    _check_dim_index(input, d, index, src)
    return ScatterAdd.apply(input, src, d, index)


# ----------------------------------------------------------------------------- scatter_reduce

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _identity(reduce, dtype):
    """The value that leaves ``reduce`` unchanged (what ``include_self=False`` starts from)."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if np.dtype(dtype).kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if info is None:            # bool
        return reduce == "amin"
    return info.min if reduce == "amax" else info.max


def _const(array, like):
    """A constant tensor of ``array``'s values on ``like``'s device."""
    return Tensor(devices.move(np.ascontiguousarray(array), like.device))


class ScatterReduce(Op):
    """``input`` with the elements of ``src`` combined by ``reduce`` into the positions
    ``index`` gives along ``dim``; with ``include_self=False`` the scattered-to elements of
    ``input`` take no part. Sum and product run in the scatter kernels; the mean divides
    the sum by the counts; amax and amin are numpy's ``ufunc.at`` on the host. The gradients
    are PyTorch's (``scatter_reduce_backward``): amax and amin share the gradient evenly
    among the elements equal to the result."""
    host_only = True

    @staticmethod
    def forward(ctx, input, src, dim, index, reduce, include_self):
        region = contiguous_data(src._data[tuple(slice(0, n) for n in index.shape)])
        targets = _dim_positions(input.shape, dim, index._data).reshape(-1)
        base = np.array(_flat(input))
        if not include_self:
            base[targets] = _identity(reduce, input.dtype)
        if reduce in ("amax", "amin"):
            out = base
            (np.maximum if reduce == "amax" else np.minimum).at(out, targets, region.reshape(-1))
        else:
            kind = "prod" if reduce == "prod" else "sum"
            out = _scatter(base, region.reshape(-1), targets, kind)
        counts = np.bincount(targets, minlength=base.size) + int(include_self)
        counts[counts == 0] = 1
        if reduce == "mean":
            out = out // counts if out.dtype.kind in "iub" else out / counts
        out = np.asarray(out).astype(input.dtype).reshape(input.shape)
        ctx.dim, ctx.index, ctx.reduce, ctx.include_self = dim, index, reduce, include_self
        ctx.src_shape, ctx.targets = src.shape, targets
        ctx.counts = counts.reshape(input.shape).astype(input.dtype)
        result = Tensor(out)
        if reduce in ("prod", "amax", "amin"):
            ctx.save_for_backward(input, src, result)
        return result

    @staticmethod
    def backward(ctx, g):
        dim, index, reduce = ctx.dim, ctx.index, ctx.reduce
        if reduce == "sum":
            grad_self, grad_src = g, gather(g, dim, index)
        elif reduce == "mean":
            grad_self = g / _const(ctx.counts, g)
            grad_src = gather(grad_self, dim, index)
        else:
            self_, src, result = ctx.saved_tensors
            if src.shape != index.shape:        # the leading index-shaped block of src
                src = src[tuple(slice(0, n) for n in index.shape)]
            grad_self, grad_src = _REDUCE_GRAD[reduce](g, self_, src, result, dim, index, ctx)
        if not ctx.include_self:
            grad_self = _zero_at(grad_self, ctx.targets)
        need = ctx.needs_input_grad
        return (grad_self if need[0] else None,
                _pad_to(grad_src, ctx.src_shape) if need[1] else None, None, None, None, None)


def _prod_grad(g, self_, src, result, dim, index, ctx):
    """The gradient of a scatter product: ``g * result / x`` for each factor ``x``."""
    if (devices.host(self_._data) == 0).any() and ctx.include_self or \
            (devices.host(src._data) == 0).any():
        raise RuntimeError("scatter_reduce(): the derivative of reduce='prod' with zeros among "
                           "the factors is not implemented")
    scaled = g * result
    return scaled / self_, gather(scaled, dim, index) / src


def _extremum_grad(g, self_, src, result, dim, index, ctx):
    """The gradient of amax / amin: shared evenly by the elements equal to the result."""
    value = gather(result, dim, index)
    self_is = (self_ == result).to(g.dtype)
    src_is = (src == value).to(g.dtype)
    share = g / scatter_add(self_is, dim, index, src_is)
    return self_is * share, src_is * gather(share, dim, index)


_REDUCE_GRAD = {"prod": _prod_grad, "amax": _extremum_grad, "amin": _extremum_grad}


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """``input`` with ``src`` combined into the positions ``index`` gives along ``dim`` by
    ``reduce`` ("sum", "prod", "mean", "amax" or "amin"), counting ``input``'s own element
    when ``include_self``."""
    index = _index_tensor(index, "scatter_reduce")
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    d = _dim(dim, input.ndim)
    if not isinstance(src, Tensor) or src.dtype != input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    _check_dim_index(input, d, index, src)
    index = Tensor(devices.host(index._data))       # index bookkeeping runs on the host
    if input.ndim == 0:
        return ScatterReduce.apply(input.reshape(1), src.reshape(1), 0, index.reshape(1),
                                   reduce, include_self).reshape(())
    return ScatterReduce.apply(input, src, d, index, reduce, bool(include_self))


# ----------------------------------------------------------------------------- index_put

def _put_positions(input, indices):
    """The flat positions of ``input`` that ``input[indices]`` reads (a tuple of integer or
    bool index tensors, applied from the first dimension), in the indexing result's shape."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    d, advanced = 0, []
    for item in indices:
        if not isinstance(item, Tensor) or item.dtype not in ("bool", "uint8") and \
                not item.dtype.startswith(("int", "uint")):
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        data = devices.host(item._data)
        if item.dtype in ("bool", "uint8"):
            if d + item.ndim > input.ndim:
                break
            for j in range(item.ndim):
                if item.shape[j] != input.shape[d + j]:
                    raise IndexError(f"The shape of the mask {list(item.shape)} at index {j} "
                                     f"does not match the shape of the indexed tensor "
                                     f"{list(input.shape)} at index {d + j}")
            advanced.extend((d + j, a) for j, a in enumerate(np.nonzero(data)))
            d += item.ndim
        else:
            advanced.append((d, data))
            d += 1
    used = builtins.sum(t.ndim if t.dtype in ("bool", "uint8") else 1 for t in indices)
    if used > input.ndim:
        raise IndexError(f"too many indices for tensor of dimension {input.ndim} (got {used})")
    if not advanced:
        return np.arange(input.numel(), dtype="int64").reshape(input.shape)
    return _advanced_positions(input.shape, advanced)


def _broadcast_values(values, shape):
    """``values`` expanded to the indexing result's ``shape`` (leading ones dropped, as
    PyTorch), or PyTorch's message when it does not fit."""
    while values.ndim > len(shape) and values.shape[0] == 1:
        values = values[0]
    try:
        fits = values.ndim <= len(shape) and \
            np.broadcast_shapes(values.shape, shape) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot "
                           f"be broadcast to indexing result of shape {list(shape)}")
    return values.expand(shape) if values.shape != tuple(shape) else values


class IndexPut(Op):
    """``input`` with ``values`` written at the flat ``positions`` (the last write wins);
    the overwritten elements get no gradient, ``values`` the gradient read there."""
    host_only = True

    @staticmethod
    def forward(ctx, input, values, positions):
        ctx.positions = positions
        out = _scatter(_flat(input), _flat(values), positions.reshape(-1), "none")
        return Tensor(out.reshape(input.shape))

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (_zero_at(g, ctx.positions) if need[0] else None,
                Take.apply(g, ctx.positions) if need[1] else None, None)


def index_put(input, indices, values, accumulate=False):
    """``input`` with ``values`` written (added, with ``accumulate``; repeated positions
    then accumulate) at ``input[indices]``, ``indices`` a tuple of index tensors."""
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put(): argument 'values' must be Tensor, not "
                        f"{type(values).__name__}")
    if values.dtype != input.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{torch_name(input.dtype)} for the destination and "
                           f"{torch_name(values.dtype)} for the source.")
    positions = _put_positions(input, indices)
    values = _broadcast_values(values.to(input.device), positions.shape)
    if accumulate:
        return input + TakeBackward.apply(values, input.shape, positions)
    return IndexPut.apply(input, values, positions)


# ----------------------------------------------------------------------------- index_*

def _vector(index, what):
    index = _index_tensor(index, what)
    if index.ndim > 1:
        raise IndexError(f"{what}(): Index is supposed to be a vector")
    return index.reshape(-1)


class IndexSelect(Op):
    host_only = True
    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.shape, ctx.dim, ctx.index = x.shape, dim, index
        shape = x.shape[:dim] + index.shape + x.shape[dim + 1:]
        return _run(ops.index_select, x._data, index._data.astype("int64"), out_shape=shape,
                    dtype=x.dtype, dim=dim)

    @staticmethod
    def backward(ctx, g):
        return index_add(_zeros(ctx.shape, g.dtype), ctx.dim, ctx.index, g), None, None


def index_select(input, dim, index):
    """The entries ``index`` (a vector) of dimension ``dim``."""
    index = _vector(index, "index_select")
    d = _dim(dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    if index.numel() and (index._data.min() < 0 or index._data.max() >= n):
        raise IndexError("index out of range in self")
    if input.ndim == 0:
        return IndexSelect.apply(input.reshape(1), 0, index).reshape(())
    return IndexSelect.apply(input, d, index)


class IndexAdd(Op):
    host_only = True
    @staticmethod
    def forward(ctx, input, source, dim, index):
        ctx.dim, ctx.index = dim, index
        out = _scatter(contiguous_data(input._data), contiguous_data(source._data),
                       index._data.astype("int64"), "sum", dim)
        return Tensor(out)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (g if need[0] else None,
                index_select(g, ctx.dim, ctx.index) if need[1] else None, None, None)


def index_add(input, dim, index, source, *, alpha=1):
    """``input`` with ``alpha * source`` added at the entries ``index`` of dimension ``dim``
    (repeated entries accumulate)."""
    index = _vector(index, "index_add")
    d = _dim(dim, input.ndim)
    if source.dtype != input.dtype:
        raise RuntimeError(f"index_add_(): self ({input.dtype}) and source ({source.dtype}) "
                           "must have the same scalar type")
    expected = input.shape[:d] + index.shape + input.shape[d + 1:]
    if source.ndim and source.shape[d] != index.numel():
        raise RuntimeError(f"index_add_(): Number of indices ({index.numel()}) should be equal "
                           f"to source.size(dim): ({source.shape[d]}), for dim: {d}")
    if source.shape != expected and source.numel() != 1:
        raise RuntimeError(f"index_add_(): source {list(source.shape)} must have the shape of "
                           f"self {list(input.shape)} with dimension {d} of size "
                           f"{index.numel()}")
    n = input.shape[d] if input.ndim else 1
    if index.numel() and (index._data.min() < 0 or index._data.max() >= n):
        raise IndexError(f"index out of range in self: index_add_() takes indices in "
                         f"[0, {n}) for dimension {d}")
    if alpha != 1:
        source = source * alpha
    source = source.reshape(expected) if input.ndim else source.reshape(1)
    if input.ndim == 0:
        return IndexAdd.apply(input.reshape(1), source, 0, index).reshape(())
    return IndexAdd.apply(input, source, d, index)


class IndexFill(Op):
    host_only = True
    @staticmethod
    def forward(ctx, input, value, dim, index):
        ctx.dim, ctx.index = dim, index
        selected = np.zeros(input.shape[dim], bool)
        selected[index._data] = True
        return _run(ops.fill_dim, input._data, selected, value._data.reshape(1),
                    out_shape=input.shape, dtype=input.dtype, dim=dim)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        zero = Tensor(np.zeros((), g.dtype))
        grad_value = None
        if need[1]:
            unique = Tensor(np.unique(ctx.index._data))
            grad_value = index_select(g, ctx.dim, unique).sum()
        return (IndexFill.apply(g, zero, ctx.dim, ctx.index) if need[0] else None,
                grad_value, None, None)


def index_fill(input, dim, index, value):
    """``input`` with ``value`` (a number or a 0-d tensor) at the entries ``index`` of
    dimension ``dim``."""
    index = _vector(index, "index_fill")
    index = Tensor(devices.host(index._data))       # index bookkeeping runs on the host
    d = _dim(dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    bad = (index._data < -n) | (index._data >= n)
    if bad.any():
        raise IndexError(f"index {index._data[bad][0]} is out of bounds for dimension {d} "
                         f"with size {n}")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
        value = value.to(input.dtype)
    else:
        value = Tensor(np.array(value).astype(input.dtype))
    index = Tensor(np.where(index._data < 0, index._data + n, index._data))
    if input.ndim == 0:
        return IndexFill.apply(input.reshape(1), value, 0, index).reshape(())
    return IndexFill.apply(input, value, d, index)


# ----------------------------------------------------------------------------- flat selections

def take(input, index):
    """``input`` read as a 1-D tensor at ``index`` (negative counts from the end)."""
    index = _index_tensor(index, "take")
    n = input.numel()
    data = index._data.astype("int64")
    bad = (data < -n) | (data >= n)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {data[bad].reshape(-1)[0]} on "
                         f"a tensor of {n} elements.")
    return Take.apply(input, np.where(data < 0, data + n, data))


def masked_select(input, mask):
    """The elements of ``input`` where the bool ``mask`` (broadcast with it) holds, 1-D."""
    if not isinstance(mask, Tensor) or mask.dtype != "bool":
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    try:
        shape = np.broadcast_shapes(input.shape, mask.shape)
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({input.shape}) must match the size of "
                           f"tensor b ({mask.shape}) at a non-singleton dimension") from None
    chosen = np.nonzero(np.broadcast_to(mask._data, shape))
    lead = len(shape) - input.ndim
    strides = _strides(input.shape)
    positions = np.zeros(chosen[0].shape if chosen else (1,), "int64")
    for d, n in enumerate(input.shape):
        if n != 1:
            positions = positions + chosen[lead + d] * strides[d]
    if not chosen:                       # 0-d input and mask
        positions = positions[:int(mask._data)]
    return MaskedSelect.apply(input, positions)


def nonzero(input, *, as_tuple=False):
    """The indices of the non-zero elements: an (n, ndim) int64 tensor, or one vector per
    dimension with ``as_tuple`` (a 0-d tensor counts as one element of no dimensions)."""
    mask = _run(ops.nonzero_mask, input._data, out_shape=input.shape, dtype="bool")._data
    if input.ndim == 0:
        count = int(mask)
        return ((Tensor(np.zeros(count, "int64")),) if as_tuple
                else Tensor(np.zeros((count, 0), "int64")))
    found = [a.astype("int64") for a in np.nonzero(mask)]
    return tuple(map(Tensor, found)) if as_tuple else Tensor(np.stack(found, axis=1))


# ----------------------------------------------------------------------------- composed

def take_along_dim(input, indices, dim=None):
    """``input`` gathered at ``indices`` along ``dim`` (input and indices broadcast apart
    from ``dim``); of the flattened input when ``dim`` is None."""
    if not isinstance(indices, Tensor) or indices.dtype != "int64":
        got = indices.dtype if isinstance(indices, Tensor) else type(indices).__name__
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{torch_name(got)}")
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    if input.ndim != indices.ndim:
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.ndim} dimensions for input, "
                           f"and {indices.ndim} dimensions for indices")
    d = _dim(dim, input.ndim)
    shape = list(np.broadcast_shapes(tuple(1 if k == d else n for k, n in
                                           enumerate(input.shape)),
                                     tuple(1 if k == d else n for k, n in
                                           enumerate(indices.shape))))
    x_shape, i_shape = list(shape), list(shape)
    x_shape[d], i_shape[d] = input.shape[d], indices.shape[d]
    x = input if list(input.shape) == x_shape else input.expand(x_shape)
    index = indices if list(indices.shape) == i_shape else indices.expand(i_shape)
    return gather(x, d, index)


def argwhere(input):
    """The indices of the nonzero elements, one row each (``nonzero``)."""
    return nonzero(input)


def index_copy(input, dim, index, source):
    """``input`` with the entries ``index`` of dimension ``dim`` replaced by the slices of
    ``source``."""
    if not isinstance(index, Tensor) or index.dtype != "int64":
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                           f"{torch_name(getattr(index, 'dtype', type(index).__name__))}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {torch_name(input.dtype)} and (source) "
                           f"{torch_name(source.dtype)}")
    d = _dim(dim, input.ndim)
    if source.ndim and index.numel() != source.shape[d]:
        raise IndexError(f"index_copy_(): Number of indices ({index.numel()}) should be equal "
                         f"to source.size(dim) ({source.shape[d]})")
    return index_add(index_fill(input, d, index, 0), d, index, source)


def masked_scatter(input, mask, source):
    """``input`` with the elements of ``source``, in order, written where ``mask`` (broadcast
    to ``input``) holds."""
    if not isinstance(mask, Tensor) or mask.dtype != "bool":
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {torch_name(getattr(mask, 'dtype', type(mask).__name__))}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got{torch_name(input.dtype)} and {torch_name(source.dtype)}")
    chosen = np.broadcast_to(devices.host(mask._data), input.shape)
    positions = np.flatnonzero(chosen).astype("int64")
    if positions.size > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    from .base import to_device
    from .elementwise import masked_fill
    where_ = to_device(Tensor(np.ascontiguousarray(positions)), input.device)
    values = source.reshape(-1).narrow(0, 0, positions.size)
    flat = masked_fill(input, mask, 0).reshape(-1)
    return index_add(flat, 0, where_, values).reshape(input.shape)


def bincount(input, weights=None, minlength=0):
    """How many times each non-negative integer occurs in 1-D ``input`` (the sum of their
    ``weights`` when given), at least ``minlength`` bins."""
    if input.dtype.startswith("float") or input.dtype == "bool":
        from .elementwise_unary import _no_kernel_for
        raise _no_kernel_for("bincount_cpu", input.dtype)
    data = devices.host(input._data)
    if input.ndim != 1 or (data.size and data.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    bins = builtins.max(int(data.max()) + 1 if data.size else 0, int(minlength))
    from ..tensor import ones, zeros
    index = input.to("int64")
    if weights is None:
        counts = zeros(bins, dtype="int64", device=input.device)
        return index_add(counts, 0, index, ones(input.shape[0], dtype="int64",
                                                        device=input.device))
    dtype = weights.dtype if weights.dtype in ("float32", "float64") else "float64"
    totals = zeros(bins, dtype=dtype, device=input.device)
    return index_add(totals, 0, index, weights.to(dtype))


def histc(input, bins=100, min=0, max=0):
    """The histogram of ``input`` in ``bins`` equal bins over ``[min, max]`` (the data's own
    range when both are 0); elements outside are ignored, ``max`` falls in the last bin."""
    if not input.is_floating_point():
        from .elementwise_unary import _no_kernel_for
        raise _no_kernel_for("histogram_cpu", input.dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                           f"dimension 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    lo, hi = float(min), float(max)
    if lo == hi and input.numel():
        lo, hi = float(input.detach().min()), float(input.detach().max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    from ..tensor import zeros
    x = input.detach().reshape(-1)
    inside = (x >= lo) & (x <= hi)
    place = ((x - lo) * (bins / (hi - lo))).floor().clamp(0, bins - 1)
    place = place.masked_fill(~inside, 0).to("int64")
    counts = zeros(bins, dtype=input.dtype, device=input.device)
    return index_add(counts, 0, place, inside.to(input.dtype))

"""Selections by index tensors and masks: ``index_put``, ``index_select``/``add``/``fill``/
``copy``, ``take``, ``take_along_dim``, ``masked_select``/``masked_scatter``, ``nonzero``,
``argwhere``, ``bincount`` and ``histc``.

The values move in the flat kernels of ``nn.functions.index``; numpy does the integer
bookkeeping (range checks, wrapping negative indices, flat positions).
``nn.functions.index`` exports these names.
"""
from __future__ import annotations

import builtins

import numpy as np

from nn.ops import index as ops

from .. import device as devices
from .base import Op, Tensor, _dim, torch_name
from .gather_scatter import _index_tensor, gather
from .index import (MaskedSelect, Take, TakeBackward, _advanced_positions, _flat, _scatter,
                    _strides, _zero_at, _zeros)
from .shape import _run, contiguous_data

__all__ = ["index_select", "masked_select", "take", "nonzero", "index_add", "index_fill",
           "index_put", "take_along_dim", "argwhere", "index_copy", "masked_scatter",
           "bincount", "histc"]


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

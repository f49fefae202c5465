"""Operators that rearrange. Views share storage with their base, as PyTorch's do (numpy
views of ``x._data``): view, reshape when it can, flatten, unflatten, squeeze, unsqueeze,
permute, transpose, movedim, narrow, expand, split, chunk, unbind, diagonal. Operators that
must move data (cat, stack, repeat, flip, roll, tril, triu, contiguous) run the te kernels of
``nn.ops.index``, and so do the gradients of the views (a slice's gradient is the slice
embedded in zeros).
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from nn.ops import index as ops

from .base import Op, Tensor, _dim, _kernel, _sum_to, result_type


__all__ = ["expand", "view", "reshape", "permute", "transpose", "swapaxes", "swapdims",
           "unsqueeze", "squeeze", "flatten", "unflatten", "movedim", "moveaxis", "narrow",
           "repeat", "tile", "cat", "concat", "concatenate", "stack", "hstack", "vstack",
           "split", "chunk", "unbind", "flip", "roll", "diagonal", "tril", "triu",
           "contiguous", "broadcast_to", "broadcast_tensors", "meshgrid", "diff", "t", "ravel",
           "select", "tensor_split", "hsplit", "vsplit", "dsplit", "dstack", "column_stack",
           "row_stack", "rot90", "diag", "diag_embed", "block_diag", "cartesian_prod",
           "combinations"]


# ----------------------------------------------------------------------------- helpers

def _run(declare, *arrays, out_shape, dtype, **params):
    """``_kernel`` on ``arrays`` made contiguous by a kernel (not by numpy). Kernels need
    non-empty extents: an empty output is only allocated, and an empty input (the gradient
    of an empty slice) leaves zeros."""
    if 0 in out_shape:
        return Tensor(np.empty(out_shape, dtype))
    if any(a.size == 0 for a in arrays):
        return Tensor(np.zeros(out_shape, dtype))
    return _kernel(declare, *map(contiguous_data, arrays), out_shape=out_shape, **params)


def contiguous_data(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous array: itself, or a copy made by the ``strided_copy`` kernel
    reading its storage (any strides: slices, transposes, expanded and reversed axes)."""
    if a.flags.c_contiguous:
        return a
    if a.size == 0:
        return np.empty(a.shape, a.dtype)
    strides = [s // a.itemsize for s in a.strides]
    if any(s * a.itemsize != b for s, b in zip(strides, a.strides)):
        return np.ascontiguousarray(a)    # byte strides off the element grid (as_strided)
    # the storage seen from the view's lowest address, where its reversed axes start
    lowest = a[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in strides)]
    span = 1 + builtins.sum((n - 1) * abs(s) for n, s in zip(a.shape, strides))
    offset = builtins.sum((n - 1) * -s for n, s in zip(a.shape, strides) if s < 0)
    storage = np.lib.stride_tricks.as_strided(lowest, shape=(span,), strides=(a.itemsize,))
    return _kernel(ops.strided_copy, storage, out_shape=a.shape, shape=a.shape,
                   strides=tuple(strides), offset=offset)._data


# ----------------------------------------------------------------------------- views

class Expand(Op):
    """``x`` broadcast to a larger shape: a read-only view (stride 0 along new axes)."""
    host_only = True

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        return Tensor(np.broadcast_to(x._data, shape))

    @staticmethod
    def backward(ctx, g):
        return _sum_to(g, ctx.shape), None


class View(Op):
    """A new shape on the same storage (``reshape`` copies, with a kernel, when it must)."""
    host_only = True

    @staticmethod
    def forward(ctx, x, shape, copy):
        ctx.shape = x.shape
        try:
            return Tensor(np.reshape(x._data, shape, copy=False))
        except ValueError as err:
            if "copy" not in str(err):
                raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size "
                                   f"{x.numel()}") from None
            if copy is None:
                return Tensor(contiguous_data(x._data).reshape(shape))
            raise RuntimeError("view size is not compatible with input tensor's size and "
                               "stride (at least one dimension spans across two contiguous "
                               "subspaces). Use .reshape(...) instead.") from None

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape), None, None


class Permute(Op):
    host_only = True
    @staticmethod
    def forward(ctx, x, dims):
        ctx.inverse = tuple(int(d) for d in np.argsort(dims))
        return Tensor(np.transpose(x._data, dims))

    @staticmethod
    def backward(ctx, g):
        return permute(g, ctx.inverse), None


class Transpose(Permute):
    """Two dimensions swapped: ``Permute`` under PyTorch's node name."""


class Unsqueeze(Op):
    host_only = True
    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return Tensor(np.expand_dims(x._data, dim))

    @staticmethod
    def backward(ctx, g):
        return g.squeeze(ctx.dim), None


class Squeeze(Op):
    host_only = True
    @staticmethod
    def forward(ctx, x, dims):
        ctx.shape = x.shape
        return Tensor(np.squeeze(x._data, dims))

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape), None


class Slice(Op):
    """Every ``step``-th index from ``start``, ``length`` of them, along ``dim``: a view."""
    host_only = True

    @staticmethod
    def forward(ctx, x, dim, start, length, step):
        ctx.args = x.shape, dim, start, step
        stop = start + (length - 1) * step + 1 if length else start
        return Tensor(x._data[(slice(None),) * dim + (slice(start, stop, step), Ellipsis)])

    @staticmethod
    def backward(ctx, g):
        return (SliceBackward.apply(g, *ctx.args),) + (None,) * 4


class Select(Op):
    """Index ``index`` of ``dim``, the dimension removed: a view."""
    host_only = True

    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.args = x.shape, dim, index
        return Tensor(x._data[(slice(None),) * dim + (index, Ellipsis)])

    @staticmethod
    def backward(ctx, g):
        shape, dim, index = ctx.args
        return SliceBackward.apply(g.unsqueeze(dim), shape, dim, index, 1), None, None


class SliceBackward(Op):
    """``g`` embedded in zeros of ``shape`` where a slice took it (a kernel)."""

    @staticmethod
    def forward(ctx, g, shape, dim, start, step):
        ctx.args = dim, start, g.shape[dim], step
        return _run(ops.slice_embed, g._data, out_shape=shape, dtype=g.dtype, shape=shape,
                    dim=dim, start=start, step=step)

    @staticmethod
    def backward(ctx, g):
        return Slice.apply(g, *ctx.args), None, None, None, None


class Diagonal(Op):
    """The ``offset`` diagonal of axes ``dim1, dim2``, as a new last axis: a view."""
    host_only = True

    @staticmethod
    def forward(ctx, x, offset, dim1, dim2):
        ctx.args = x.shape, offset, dim1, dim2
        a = x._data
        n1, n2 = a.shape[dim1], a.shape[dim2]
        length = builtins.max(0, builtins.min(n1, n2 - offset) if offset >= 0
                              else builtins.min(n1 + offset, n2))
        rest = [d for d in range(a.ndim) if d not in (dim1, dim2)]
        shape = tuple(a.shape[d] for d in rest) + (length,)
        if length == 0:
            return Tensor(np.empty(shape, a.dtype))
        corner = [slice(None)] * a.ndim          # the diagonal's first element at the origin
        corner[dim2 if offset >= 0 else dim1] = slice(abs(offset), None)
        first = a[tuple(corner)]
        strides = tuple(a.strides[d] for d in rest) + (a.strides[dim1] + a.strides[dim2],)
        return Tensor(np.lib.stride_tricks.as_strided(first, shape, strides,
                                                      writeable=a.flags.writeable))

    @staticmethod
    def backward(ctx, g):
        shape, offset, dim1, dim2 = ctx.args
        return DiagonalBackward.apply(g, shape, offset, dim1, dim2), None, None, None


class DiagonalBackward(Op):
    """``g`` placed on a diagonal of zeros of ``shape`` (a kernel)."""

    @staticmethod
    def forward(ctx, g, shape, offset, dim1, dim2):
        ctx.args = offset, dim1, dim2
        return _run(ops.diagonal_embed, g._data, out_shape=shape, dtype=g.dtype, shape=shape,
                    offset=offset, dim1=dim1, dim2=dim2)

    @staticmethod
    def backward(ctx, g):
        return Diagonal.apply(g, *ctx.args), None, None, None, None


# ----------------------------------------------------------------------------- copies

class Clone(Op):
    """A contiguous copy of a view (the ``strided_copy`` kernel)."""

    @staticmethod
    def forward(ctx, x):
        return Tensor(contiguous_data(x._data))

    @staticmethod
    def backward(ctx, g):
        return g


class Cat(Op):
    """The inputs joined along ``dim``, converted to ``dtype`` (one kernel)."""

    @staticmethod
    def forward(ctx, dim, dtype, *xs):
        ctx.dim, ctx.sizes = dim, [x.shape[dim] for x in xs]
        return _concat([x._data for x in xs], dim, dtype)

    @staticmethod
    def backward(ctx, g):
        return (None, None) + _split_sizes(g, ctx.sizes, ctx.dim)


class Stack(Op):
    """The inputs (of one shape) joined along a new axis ``dim``."""
    host_only = True

    @staticmethod
    def forward(ctx, dim, dtype, *xs):
        ctx.dim = dim
        return _concat([np.expand_dims(x._data, dim) for x in xs], dim, dtype)

    @staticmethod
    def backward(ctx, g):
        return (None, None) + unbind(g, ctx.dim)


_CAT_GROUP = 32     # inputs per kernel: the if_then_else tree of more grows the code


def _concat(arrays, dim, dtype):
    """``arrays`` joined along ``dim``: one ``concat`` kernel per group of inputs (empty ones
    contribute nothing)."""
    shape = list(arrays[0].shape)
    shape[dim] = builtins.sum(a.shape[dim] for a in arrays)
    arrays = [a for a in arrays if a.size]
    if not arrays:
        return Tensor(np.empty(shape, dtype))
    while len(arrays) > _CAT_GROUP:
        arrays = [_concat(arrays[k:k + _CAT_GROUP], dim, dtype)._data
                  for k in range(0, len(arrays), _CAT_GROUP)]
    return _kernel(ops.concat, *map(contiguous_data, arrays), out_shape=tuple(shape), dim=dim,
                   to=dtype)


class Split(Op):
    """Views of consecutive pieces of ``sizes`` along ``dim``; the gradient concatenates."""
    host_only = True

    @staticmethod
    def forward(ctx, x, sizes, dim):
        ctx.dim = dim
        ends = np.cumsum(sizes)
        return tuple(Tensor(x._data[(slice(None),) * dim + (slice(int(e) - n, int(e)),
                                                            Ellipsis)])
                     for e, n in zip(ends, sizes))

    @staticmethod
    def backward(ctx, *grads):
        return cat(grads, ctx.dim), None, None


class SplitWithSizes(Split):
    """``split`` with a list of sizes, under PyTorch's node name."""


class Unbind(Op):
    """Views of each index along ``dim``; the gradient stacks."""
    host_only = True

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return tuple(Tensor(x._data[(slice(None),) * dim + (k, Ellipsis)])
                     for k in range(x.shape[dim]))

    @staticmethod
    def backward(ctx, *grads):
        return stack(grads, ctx.dim), None


class Repeat(Op):
    """``x`` tiled ``sizes`` times (one kernel); the gradient sums the tiles."""

    @staticmethod
    def forward(ctx, x, sizes):
        ctx.shape, ctx.sizes = x.shape, sizes
        src = x._data.reshape((1,) * (len(sizes) - x.ndim) + x.shape)
        shape = tuple(r * n for r, n in zip(sizes, src.shape))
        return _run(ops.repeat, src, out_shape=shape, dtype=x.dtype, shape=shape,
                    schedule=ops.schedule_copy)

    @staticmethod
    def backward(ctx, g):
        src = (1,) * (len(ctx.sizes) - len(ctx.shape)) + ctx.shape
        pairs = [n for r, m in zip(ctx.sizes, src) for n in (r, m)]
        tiles = g.reshape(pairs).sum(tuple(range(0, len(pairs), 2)))
        return tiles.reshape(ctx.shape), None


class Flip(Op):
    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return _run(ops.flip, x._data, out_shape=x.shape, dtype=x.dtype, dims=dims,
                    schedule=ops.schedule_copy)

    @staticmethod
    def backward(ctx, g):
        return Flip.apply(g, ctx.dims), None


class Roll(Op):
    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shape, ctx.shifts, ctx.dims = x.shape, shifts, dims
        return _run(ops.roll, x._data, out_shape=x.shape, dtype=x.dtype, shifts=shifts,
                    dims=dims, schedule=ops.schedule_copy)

    @staticmethod
    def backward(ctx, g):
        back = tuple((ctx.shape[d] - s) % ctx.shape[d] for s, d in zip(ctx.shifts, ctx.dims))
        return Roll.apply(g, back, ctx.dims), None, None


def _triangle_op(name, upper):
    """The Op keeping the lower (``tril``) or upper (``triu``) triangle; its gradient is the
    same triangle of ``g``."""

    def forward(ctx, x, diagonal):
        ctx.diagonal = diagonal
        return _run(ops.triangle, x._data, out_shape=x.shape, dtype=x.dtype,
                    diagonal=diagonal, upper=upper)

    def backward(ctx, g):
        return op.apply(g, ctx.diagonal), None
    op = type(name, (Op,), {"forward": staticmethod(forward), "backward": staticmethod(backward),
                            "__module__": __name__, "__doc__": f"``{name.lower()}``."})
    return op


Tril = _triangle_op("Tril", upper=False)
Triu = _triangle_op("Triu", upper=True)


def _split_sizes(g, sizes, dim):
    """Views of consecutive pieces of ``g`` along ``dim``."""
    pieces, start = [], 0
    for n in sizes:
        pieces.append(Slice.apply(g, dim, start, n, 1))
        start += n
    return tuple(pieces)


# ----------------------------------------------------------------------------- functions

def expand(x, shape):
    """``x`` broadcast to ``shape`` as a read-only view; -1 keeps a size."""
    shape = tuple(int(n) for n in shape)
    if len(shape) < x.ndim:
        raise RuntimeError(f"expand({x.dtype} tensor of shape {list(x.shape)}, size="
                           f"{list(shape)}): the number of sizes provided ({len(shape)}) must "
                           f"be greater or equal to the number of dimensions in the tensor "
                           f"({x.ndim})")
    lead = len(shape) - x.ndim
    out = []
    for d, n in enumerate(shape):
        if d < lead:
            if n < 0:
                raise RuntimeError(f"The expanded size of the tensor ({n}) isn't allowed in a "
                                   f"leading, non-existing dimension {d}")
        else:
            have = x.shape[d - lead]
            n = have if n == -1 else n
            if have != 1 and n != have:
                raise RuntimeError(f"The expanded size of the tensor ({n}) must match the "
                                   f"existing size ({have}) at non-singleton dimension {d}.  "
                                   f"Target sizes: {list(shape)}.  Tensor sizes: "
                                   f"{list(x.shape)}")
        out.append(n)
    out = tuple(out)
    return x if out == x.shape else Expand.apply(x, out)


def _check_shape(x, shape):
    if builtins.sum(1 for n in shape if n == -1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for n in shape:
        if n < -1:
            raise RuntimeError(f"invalid shape dimension {n}")


def _int_sizes(shape, what, name):
    """``shape`` as a tuple of ints: PyTorch's TypeError for a size that is not one
    (``reshape(2.0, 3)``); 0-d integer tensors count as ints."""
    sizes = []
    for k, n in enumerate(shape):
        if isinstance(n, Tensor) and n.ndim == 0 and not n.is_floating_point():
            n = n.item()
        if not isinstance(n, (int, np.integer)):
            raise TypeError(f"{what}(): argument '{name}' (position 1) must be tuple of ints, "
                            f"but found element of type {type(n).__name__} at pos {k}")
        sizes.append(int(n))
    return tuple(sizes)


def view(x, shape):
    """``x`` with a new ``shape`` on the same storage (one size may be -1)."""
    shape = _int_sizes(shape, "view", "size")
    _check_shape(x, shape)
    return View.apply(x, shape, False)


def reshape(x, shape):
    """``x`` with a new ``shape``: a view when the strides allow it, else a copy."""
    shape = _int_sizes(shape, "reshape", "shape")
    _check_shape(x, shape)
    return View.apply(x, shape, None)


def permute(x, dims):
    """A view with the dimensions reordered: ``dims[k]`` becomes dimension ``k``."""
    dims = tuple(dims)
    if len(dims) != x.ndim:
        raise RuntimeError("permute(): number of dimensions in the tensor input does not match "
                           "the length of the desired ordering of dimensions i.e. input.dim() "
                           f"= {x.ndim} is not equal to len(dims) = {len(dims)}")
    dims = tuple(_dim(d, x.ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return Permute.apply(x, dims)


def transpose(x, dim0, dim1):
    """A view with dimensions ``dim0`` and ``dim1`` swapped."""
    dims = list(range(x.ndim))
    d0, d1 = _dim(dim0, x.ndim), _dim(dim1, x.ndim)
    if x.ndim:
        dims[d0], dims[d1] = d1, d0
    return Transpose.apply(x, tuple(dims))


def swapaxes(input, axis0, axis1):
    return transpose(input, axis0, axis1)


def swapdims(input, dim0, dim1):
    return transpose(input, dim0, dim1)


def unsqueeze(x, dim):
    """A view with a size-1 dimension inserted at ``dim``."""
    return Unsqueeze.apply(x, _dim(dim, x.ndim + 1))


def squeeze(x, dim=None):
    """``x`` without its size-1 dimensions (only those of ``dim``, an int or a tuple, when
    given; a named dimension of another size is kept)."""
    if dim is None:
        dims = tuple(d for d, n in enumerate(x.shape) if n == 1)
    else:
        named = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(sorted({d for d in (_dim(k, x.ndim) for k in named)
                             if x.ndim and x.shape[d] == 1}))
    return Squeeze.apply(x, dims) if dims else x


def flatten(input, start_dim=0, end_dim=-1):
    """``input`` with dimensions ``start_dim..end_dim`` merged into one (a view if it can)."""
    if input.ndim == 0:
        return reshape(input, (1,))
    start, end = _dim(start_dim, input.ndim), _dim(end_dim, input.ndim)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return input
    shape = input.shape
    merged = math.prod(shape[start:end + 1])
    return reshape(input, shape[:start] + (merged,) + shape[end + 1:])


def unflatten(input, dim, sizes):
    """``input`` with dimension ``dim`` split into ``sizes`` (one may be -1)."""
    d = _dim(dim, input.ndim)
    sizes = tuple(int(n) for n in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    known = math.prod(n for n in sizes if n != -1)
    fits = (known and input.shape[d] % known == 0) if -1 in sizes else \
        known == input.shape[d]
    if sizes.count(-1) > 1 or not fits:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({input.shape[d]}) in the input tensor")
    return view(input, input.shape[:d] + sizes + input.shape[d + 1:])


def movedim(input, source, destination):
    """A view with dimensions ``source`` moved to positions ``destination``."""
    source = (source,) if isinstance(source, int) else tuple(source)
    destination = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(source) != len(destination):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source "
                           f"({list(source)} dims) should contain the same number of dims as "
                           f"destination ({list(destination)} dims)")
    ndim = input.ndim
    src = [_dim(d, ndim) for d in source]
    dst = [_dim(d, ndim) for d in destination]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source)}) or "
                           f"`destination` ({list(destination)})")
    order = [-1] * ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(ndim) if d not in src)
    order = [next(rest) if o == -1 else o for o in order]
    return Permute.apply(input, tuple(order))


moveaxis = movedim


def narrow(input, dim, start, length):
    """A view of ``length`` indices of ``dim`` from ``start`` (negative counts from the end)."""
    d = _dim(dim, input.ndim)
    size = input.shape[d]
    start, length = int(start), int(length)
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    start = start + size if start < 0 else start
    if length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    return Slice.apply(input, d, start, length, 1)


def repeat(x, sizes):
    """``x`` tiled ``sizes[k]`` times along dimension ``k`` (a copy)."""
    sizes = tuple(int(n) for n in sizes)
    if len(sizes) < x.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if any(n < 0 for n in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension: repeats "
                           f"{list(sizes)}")
    return Repeat.apply(x, sizes)


def tile(input, dims):
    """``repeat`` with ``dims`` padded with leading ones to the rank of ``input``."""
    dims = tuple(dims)
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


def _tensors(tensors, what):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (tuple, list)) and \
            not hasattr(tensors, "__iter__"):
        raise TypeError(f"{what}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}")
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"{what}(): expected a non-empty list of Tensors")
    for k, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{what}(): argument 'tensors' must be a sequence of Tensors, but "
                            f"element {k} is {type(t).__name__}")
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = result_type(Tensor(np.empty(0, dtype)), t)
    return tensors, dtype


def cat(tensors, dim=0):
    """``tensors`` joined along ``dim``; dtypes are promoted; 1-D empty tensors are skipped."""
    tensors, dtype = _tensors(tensors, "cat")
    joined = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]
    if not joined:
        return Tensor(np.empty((0,), dtype))
    first = joined[0]
    d = _dim(dim, first.ndim)
    for k, t in enumerate(tensors):
        if t.ndim == 1 and t.shape[0] == 0:
            continue
        if t.ndim != first.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {first.ndim} "
                               f"and {t.ndim}")
        for a in range(first.ndim):
            if a != d and t.shape[a] != first.shape[a]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {first.shape[a]} but got size {t.shape[a]} "
                                   f"for tensor number {k} in the list.")
    return Cat.apply(d, dtype, *joined)


concat = cat


def concatenate(tensors, axis=0):
    return cat(tensors, axis)


def stack(tensors, dim=0):
    """``tensors`` (of one shape) joined along a new dimension ``dim``."""
    tensors, dtype = _tensors(tensors, "stack")
    for k, t in enumerate(tensors):
        if t.shape != tensors[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(tensors[0].shape)} at entry 0 and {list(t.shape)} at "
                               f"entry {k}")
    return Stack.apply(_dim(dim, tensors[0].ndim + 1), dtype, *tensors)


def hstack(tensors):
    """Joined along the second dimension (the first for 1-D tensors)."""
    tensors, _ = _tensors(tensors, "hstack")
    tensors = [t.reshape(1) if t.ndim == 0 else t for t in tensors]
    return cat(tensors, 0 if all(t.ndim == 1 for t in tensors) else 1)


def vstack(tensors):
    """Joined along the first dimension, 0-d and 1-d tensors as rows."""
    tensors, _ = _tensors(tensors, "vstack")
    return cat([t.reshape(1, -1) if t.ndim < 2 else t for t in tensors], 0)


def split(tensor, split_size_or_sections, dim=0):
    """Views of pieces of ``split_size`` (the last may be smaller) or of the given sizes."""
    d = _dim(dim, tensor.ndim)
    size = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        n = split_size_or_sections
        if n < 0 or (n == 0 and size):
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {size}" if n == 0 else
                               f"split expects split_size be non-negative, but got "
                               f"split_size={n}")
        sizes = [builtins.min(n, size - k) for k in range(0, size, n)] if size else [0]
        return Split.apply(tensor, tuple(sizes), d)
    sizes = tuple(int(n) for n in split_size_or_sections)
    if builtins.sum(sizes) != size or any(n < 0 for n in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} "
                           f"(input tensor's size at dimension {d}), but got split_sizes="
                           f"{list(sizes)}")
    return SplitWithSizes.apply(tensor, sizes, d)


def chunk(input, chunks, dim=0):
    """At most ``chunks`` views of equal size (the last may be smaller)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    size = input.shape[_dim(dim, input.ndim)]
    return split(input, builtins.max(1, -(-size // chunks)), dim)


def unbind(input, dim=0):
    """The views ``input.select(dim, k)`` for every ``k``."""
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return Unbind.apply(input, _dim(dim, input.ndim))


def flip(input, dims, *more):
    """``input`` reversed along ``dims`` (a copy)."""
    dims = (dims,) + more if isinstance(dims, int) else tuple(dims) + more
    dims = tuple(sorted({_dim(d, input.ndim) for d in dims}))
    return Flip.apply(input, dims) if input.ndim else Flip.apply(input, ())


def roll(input, shifts, dims=None):
    """``input`` rotated by ``shifts`` along ``dims`` (the flattened tensor when None)."""
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               f"dims:0")
        return roll(flatten(input), shifts, 0).view(input.shape)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    total = {}
    for s, d in zip(shifts, dims):
        d = _dim(d, input.ndim)
        n = input.shape[d] if input.ndim else 1
        total[d] = (total.get(d, 0) + s) % n if n else 0
    kept = sorted(d for d, s in total.items() if s)
    return Roll.apply(input, tuple(total[d] for d in kept), tuple(kept))


def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of the ``offset`` diagonal of dims ``dim1, dim2``, as the last dimension."""
    d1, d2 = _dim(dim1, input.ndim), _dim(dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(input, int(offset), d1, d2)


def _triangular(name, op, input, diagonal):
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    return op.apply(input, int(diagonal))


def tril(input, diagonal=0):
    """``input`` with the elements above the ``diagonal`` of its last two axes zeroed."""
    return _triangular("tril", Tril, input, diagonal)


def triu(input, diagonal=0):
    """``input`` with the elements below the ``diagonal`` of its last two axes zeroed."""
    return _triangular("triu", Triu, input, diagonal)


def contiguous(x, memory_format=None):
    """``x`` itself when its storage is contiguous, else a contiguous copy (a kernel). A GPU
    view is a contiguous copy already, but it is contiguous only where its place in the
    tensor it views is (``a.t().contiguous()`` is a new tensor, as in PyTorch)."""
    if x.is_cuda:
        return x if gpu_view_contiguous(x) else Clone.apply(x)
    return x if x._data.flags.c_contiguous else Clone.apply(x)


def gpu_view_contiguous(x) -> bool:
    """Whether GPU tensor ``x`` is contiguous where it lies: not a view, or a view whose
    strides in the tensor it views are C order."""
    if x._view_of is None:
        return True
    _, _, strides = x._view_of
    itemsize = x._data.dtype.itemsize
    expected = itemsize
    for n, s in zip(reversed(x.shape), reversed(strides)):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


# ----------------------------------------------------------------------------- composed views

def broadcast_to(input, size):
    """``input`` broadcast to ``size`` (``expand``, under numpy's name)."""
    return expand(input, tuple(size))


def broadcast_tensors(*tensors):
    """The tensors broadcast to their common shape (views)."""
    shape = np.broadcast_shapes(*(t.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids of the 1-D (or 0-d) ``tensors``: with "ij" the ``k``-th grid varies
    along dimension ``k``; with "xy" the first two dimensions are swapped (Cartesian)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    if not tensors:
        raise RuntimeError("torch.meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {t}")
        if t.dtype != tensors[0].dtype:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to "
                               "have the same dtype")
    flat = [t.reshape(-1) for t in tensors]
    shape = tuple(t.shape[0] for t in flat)
    grids = [expand(t.reshape([-1 if d == k else 1 for d in range(len(flat))]), shape)
             for k, t in enumerate(flat)]
    if indexing == "xy" and len(grids) >= 2:
        grids = [transpose(g, 0, 1) for g in grids]
    return tuple(grids)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim`` (``prepend``/``append`` joined to
    ``input`` first), as differences of two ``narrow`` views."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if not isinstance(n, int) or n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _dim(dim, input.ndim)
    parts = [t for t in (prepend, input, append) if t is not None]
    for t in parts:
        if t.ndim != input.ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as "
                               "input")
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[d] - 1
        if length <= 0:
            return narrow(x, d, 0, 0)
        x = narrow(x, d, 1, length) - narrow(x, d, 0, length) if x.dtype != "bool" else \
            narrow(x, d, 1, length) != narrow(x, d, 0, length)
    return x


# ----------------------------------------------------------------------------- more rearranging

def t(input):
    """``input`` with its two dimensions swapped (0-d and 1-d tensors as they are)."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    return input if input.ndim < 2 else transpose(input, 0, 1)


def ravel(input):
    """``input`` as a 1-D tensor (a view when it can be)."""
    return reshape(input, (-1,))


def select(input, dim, index):
    """The view of index ``index`` of dimension ``dim``, that dimension removed."""
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _dim(dim, input.ndim)
    size = input.shape[d]
    index = int(index)
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {dim}")
    return Select.apply(input, d, index % size)


def tensor_split(input, indices_or_sections, dim=0):
    """Views of ``input`` split along ``dim``: into ``sections`` pieces of nearly equal size
    (the first ``size % sections`` one larger), or at the given indices."""
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = _dim(dim, input.ndim)
    size = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        if indices_or_sections.ndim == 0:
            indices_or_sections = int(indices_or_sections.item())
        else:
            indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, (int, np.integer)):
        n = int(indices_or_sections)
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        base, extra = divmod(size, n)
        sizes = [base + 1] * extra + [base] * (n - extra)
        return _split_sizes(input, sizes, d)
    bounds = [builtins.min(builtins.max(int(k) + size if int(k) < 0 else int(k), 0), size)
              for k in indices_or_sections]
    pieces, start = [], 0
    for stop in bounds + [size]:
        pieces.append(Slice.apply(input, d, start, builtins.max(stop - start, 0), 1))
        start = stop
    return tuple(pieces)


def _split_named(name, input, sections, dim, least):
    if input.ndim < least:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {least} dimension, "
                           f"but got a tensor with {input.ndim} dimensions!")
    if isinstance(sections, (int, np.integer)):
        size = input.shape[dim]
        if sections == 0 or size % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but "
                               f"the size of the dimension {size} is not divisible by the "
                               f"split_size {sections}!")
    return tensor_split(input, sections, dim)


def hsplit(input, indices_or_sections):
    """``tensor_split`` along the second dimension (the first of a 1-D tensor)."""
    return _split_named("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input, indices_or_sections):
    """``tensor_split`` along the first dimension (of a tensor of 2 or more dimensions)."""
    return _split_named("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    """``tensor_split`` along the third dimension (of a tensor of 3 or more dimensions)."""
    return _split_named("dsplit", input, indices_or_sections, 2, 3)


def _atleast(t, n):
    """``t`` viewed with at least ``n`` dimensions, as numpy's ``atleast_{n}d``."""
    if t.ndim >= n:
        return t
    if t.ndim == 0:
        return t.reshape((1,) * n)
    if t.ndim == 1:
        return t.reshape((1, -1) if n == 2 else (1, -1, 1))
    return t.unsqueeze(-1)


def dstack(tensors):
    """Joined along the third dimension (tensors of fewer made 3-D first)."""
    if isinstance(tensors, (list, tuple)) and not tensors:
        raise RuntimeError("dstack expects a non-empty TensorList")
    tensors, _ = _tensors(tensors, "dstack")
    return cat([_atleast(t, 3) for t in tensors], 2)


def column_stack(tensors):
    """Joined as columns: 0-d and 1-d tensors become columns, then ``hstack``."""
    if isinstance(tensors, (list, tuple)) and not tensors:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    tensors, _ = _tensors(tensors, "column_stack")
    return hstack([t.reshape(-1, 1) if t.ndim < 2 else t for t in tensors])


row_stack = vstack


def rot90(input, k=1, dims=(0, 1)):
    """``input`` rotated by 90 degrees ``k`` times in the plane of ``dims`` (from the first
    towards the second)."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = _dim(dims[0], input.ndim), _dim(dims[1], input.ndim)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    k = int(k) % 4
    if k == 1:
        return flip(input, d1).transpose(d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(input, d0).transpose(d0, d1)
    return _clone(input)


def _clone(input):
    """A copy of ``input`` (``nn.clone``; imported late, as elementwise builds on shape)."""
    from .elementwise import clone
    return clone(input)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Tensors whose ``offset`` diagonals (of dims ``dim1, dim2``) hold the last dimension of
    ``input``; zeros elsewhere."""
    ndim = input.ndim + 1
    d1, d2 = _dim(dim1, ndim), _dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + abs(int(offset))
    rest = iter(input.shape[:-1])
    shape = tuple(n if d in (d1, d2) else next(rest) for d in range(ndim))
    # the last dimension moved to where the diagonal's axis lands (after the kept dims)
    return DiagonalBackward.apply(input, shape, int(offset), d1, d2)


def diag(input, diagonal=0):
    """The ``diagonal``-th diagonal of a matrix, or the square matrix with vector ``input``
    on that diagonal."""
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim == 2:
        return _diagonal_of(input, diagonal)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def _diagonal_of(input, offset):
    """``diagonal`` (the name ``diag``'s argument hides)."""
    return diagonal(input, offset, 0, 1)


def block_diag(*tensors):
    """The block-diagonal matrix of ``tensors`` (0-d and 1-d ones as 1-row matrices)."""
    for k, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {k} has {t.ndim} dimensions")
    if not tensors:
        return Tensor(np.empty((1, 0), "float32"))
    blocks, dtype = _tensors(tensors, "block_diag")
    blocks = [b.reshape(1, -1) if b.ndim < 2 else b for b in blocks]
    width = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        right = width - left - b.shape[1]
        parts = [_zeros_as(b, (b.shape[0], left), dtype), b.to(dtype),
                 _zeros_as(b, (b.shape[0], right), dtype)]
        rows.append(cat(parts, 1))
        left += b.shape[1]
    return cat(rows, 0)


def _zeros_as(t, shape, dtype):
    from ..tensor import zeros
    return zeros(*shape, dtype=dtype, device=t.device)


def _vector_input(t):
    if t.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def cartesian_prod(*tensors):
    """The Cartesian product of 1-D ``tensors``: one row per combination (a 1-D tensor for a
    single input)."""
    for t in tensors:
        _vector_input(t)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the elements of 1-D ``input`` (rows, in
    lexicographic order of positions), as Python's ``itertools.combinations``."""
    import itertools
    _vector_input(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return Tensor(np.empty((0,), input._data.dtype))
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = np.array(list(pick(range(input.shape[0]), r)), "int64").reshape(-1, r)
    if rows.shape[0] == 0:
        return Tensor(np.empty((0, r), input._data.dtype))
    from .index import index_select
    from .base import to_device
    out = index_select(input, 0, to_device(Tensor(np.ascontiguousarray(rows.reshape(-1))),
                                           input.device))
    return out.reshape(rows.shape)

"""Operators that reshape and view. Views share storage with their base, as PyTorch's do
(numpy views of ``x._data``): view, reshape when it can, flatten, unflatten, squeeze,
unsqueeze, permute, transpose, movedim, narrow, expand, select, diagonal; ``contiguous`` copies
with a kernel of ``nn.ops.index``, and so do the gradients of the views (a slice's gradient is
the slice embedded in zeros). Joins and splits (cat, stack, split, chunk...) are in
``nn.functions.join_split``, the copies that rearrange (repeat, flip, roll, tril, diag...) in
``nn.functions.rearrange``; this module exports their names too.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from nn.ops import index as ops

from .base import Op, Tensor, _dim, _kernel, _sum_to


__all__ = ["expand", "view", "reshape", "permute", "transpose", "swapaxes", "swapdims",
           "unsqueeze", "squeeze", "flatten", "unflatten", "movedim", "moveaxis", "narrow",
           "diagonal", "contiguous", "broadcast_to", "broadcast_tensors", "t", "ravel",
           "select"]


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


def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of the ``offset`` diagonal of dims ``dim1, dim2``, as the last dimension."""
    d1, d2 = _dim(dim1, input.ndim), _dim(dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(input, int(offset), d1, d2)


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


# Joins, splits and rearranging copies build on the views above, so they load last.
from . import join_split as _join_split, rearrange as _rearrange  # noqa: E402
from .join_split import *  # noqa: F401,F403,E402
from .rearrange import *  # noqa: F401,F403,E402
from .join_split import Cat, Split, SplitWithSizes, Stack, Unbind  # noqa: F401,E402
from .rearrange import Flip, Repeat, Roll, Tril, Triu  # noqa: F401,E402

__all__ += _join_split.__all__ + _rearrange.__all__

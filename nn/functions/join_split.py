"""Joining and splitting: cat (concat, concatenate), stack, hstack, vstack, dstack,
column_stack, row_stack; split, chunk, unbind, tensor_split, hsplit, vsplit, dsplit.

Joins move data in the kernels of ``nn.ops.index`` (at most ``_CAT_GROUP`` inputs per kernel);
the pieces of a split are views on the input's storage, and their gradients are joined again.
``nn.functions.shape`` exports these names.
"""
from __future__ import annotations

import builtins

import numpy as np

from nn.ops import index as ops

from .base import Op, Tensor, _dim, _kernel, result_type
from .shape import Slice, contiguous_data

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "split", "chunk",
           "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "dstack", "column_stack",
           "row_stack"]


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


def _split_sizes(g, sizes, dim):
    """Views of consecutive pieces of ``g`` along ``dim``."""
    pieces, start = [], 0
    for n in sizes:
        pieces.append(Slice.apply(g, dim, start, n, 1))
        start += n
    return tuple(pieces)


# ----------------------------------------------------------------------------- functions

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

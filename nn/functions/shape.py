"""Operators that rearrange: views sharing storage (view, reshape, permute, transpose,
squeeze, unsqueeze) and expand."""
from __future__ import annotations


import numpy as np

from nn.ops import declare

from .base import (Op, Tensor, _dim, _kernel,
                   _sum_to)


__all__ = ['expand', 'view', 'reshape', 'permute', 'transpose', 'unsqueeze', 'squeeze']


class Expand(Op):
    """``x`` broadcast to a larger shape (a copy, unlike PyTorch's ``expand`` view)."""

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        return _kernel(declare.broadcast_to, x._data, out_shape=shape, shape=shape)

    @staticmethod
    def backward(ctx, g):
        return _sum_to(g, ctx.shape), None


class View(Op):
    """A new shape on the same storage (``reshape`` copies when it must)."""

    @staticmethod
    def forward(ctx, x, shape, copy):
        ctx.shape = x.shape
        try:
            return Tensor(np.reshape(x._data, shape, copy=copy))
        except ValueError as err:
            if "copy" not in str(err):
                raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size "
                                   f"{x.numel()}") from None
            raise RuntimeError("view size is not compatible with input tensor's size and "
                               "stride (at least one dimension spans across two contiguous "
                               "subspaces). Use .reshape(...) instead.") from None

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape), None, None


class Permute(Op):
    @staticmethod
    def forward(ctx, x, dims):
        ctx.inverse = tuple(np.argsort(dims))
        return Tensor(np.transpose(x._data, dims))

    @staticmethod
    def backward(ctx, g):
        return permute(g, ctx.inverse), None


class Transpose(Permute):
    """Two dimensions swapped: ``Permute`` under PyTorch's node name."""


class Unsqueeze(Op):
    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return Tensor(np.expand_dims(x._data, dim))

    @staticmethod
    def backward(ctx, g):
        return g.squeeze(ctx.dim), None


class Squeeze(Op):
    @staticmethod
    def forward(ctx, x, dims):
        ctx.shape = x.shape
        return Tensor(np.squeeze(x._data, dims))

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape), None


def expand(x, shape):
    """``x`` broadcast to ``shape`` (a new tensor)."""
    shape = tuple(shape)
    return x if x.shape == shape else Expand.apply(x, shape)


def view(x, shape):
    return View.apply(x, tuple(shape), False)


def reshape(x, shape):
    return View.apply(x, tuple(shape), None)


def permute(x, dims):
    dims = tuple(_dim(d, x.ndim) for d in dims)
    if sorted(dims) != list(range(x.ndim)):
        raise RuntimeError(f"permute(): dims {dims} are not a permutation of "
                           f"{x.ndim} dimensions")
    return Permute.apply(x, dims)


def transpose(x, dim0, dim1):
    dims = list(range(x.ndim))
    d0, d1 = _dim(dim0, x.ndim), _dim(dim1, x.ndim)
    dims[d0], dims[d1] = d1, d0
    return Transpose.apply(x, tuple(dims))


def unsqueeze(x, dim):
    return Unsqueeze.apply(x, _dim(dim, x.ndim + 1))


def squeeze(x, dim=None):
    """``x`` without its size-1 dimensions (only ``dim`` when given; kept if not size 1)."""
    if dim is None:
        dims = tuple(d for d, n in enumerate(x.shape) if n == 1)
    else:
        d = _dim(dim, x.ndim)
        dims = (d,) if x.ndim and x.shape[d] == 1 else ()
    return Squeeze.apply(x, dims) if dims else x

"""Reductions over dimensions: sum, mean, max (values and indices)."""
from __future__ import annotations


import numpy as np

from nn.ops import cpu, declare

from .shape import expand
from .base import (cast, Op, _dim, _dims, _kept, _kernel,
                   _reduced, arange, max_result)


__all__ = ['sum', 'mean', 'max']


class Sum(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.shape, ctx.dims = x.shape, dims
        return _kernel(cpu.sum, x._data, out_shape=_reduced(x.shape, dims, keepdim),
                       axis=dims or None, keepdims=keepdim)

    @staticmethod
    def backward(ctx, g):
        kept = g.reshape(_kept(ctx.shape, ctx.dims))
        return expand(kept, ctx.shape), None, None


class Mean(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.shape, ctx.dims = x.shape, dims
        ctx.count = int(np.prod([x.shape[d] for d in dims]))
        return _kernel(cpu.mean, x._data, out_shape=_reduced(x.shape, dims, keepdim),
                       axis=dims or None, keepdims=keepdim)

    @staticmethod
    def backward(ctx, g):
        kept = g.reshape(_kept(ctx.shape, ctx.dims)) * (1.0 / ctx.count)
        return expand(kept, ctx.shape), None, None


class Max(Op):
    """The maximum along one dimension, and its (first) index."""

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        ctx.shape, ctx.dim = x.shape, dim
        out_shape = _reduced(x.shape, (dim,), keepdim)
        values = _kernel(cpu.max, x._data, out_shape=out_shape, axis=dim, keepdims=keepdim)
        indices = _kernel(declare.argmax, x._data, out_shape=out_shape, axis=dim, keepdims=keepdim)
        ctx.save_for_backward(indices)
        return values, indices

    @staticmethod
    def backward(ctx, g, _):
        (indices,) = ctx.saved_tensors
        kept = _kept(ctx.shape, (ctx.dim,))
        positions = arange(ctx.shape[ctx.dim]).reshape(
            tuple(-1 if d == ctx.dim else 1 for d in range(len(ctx.shape))))
        mask = (positions == indices.reshape(kept)).to(g.dtype)
        return mask * g.reshape(kept), None, None


def sum(x, dim=None, keepdim=False):
    """Sum over ``dim`` (an int, a tuple, or None for all); bool and int sum to int64."""
    if not x.is_floating_point():
        x = cast(x, "int64")
    return Sum.apply(x, _dims(dim, x.ndim), keepdim)


def mean(x, dim=None, keepdim=False):
    if not x.is_floating_point():
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either "
                           f"a floating point or complex dtype. Got: {x.dtype}")
    return Mean.apply(x, _dims(dim, x.ndim), keepdim)


def max(x, dim=None, keepdim=False):
    """The largest element, or over ``dim`` a (values, indices) named tuple."""
    if dim is None:
        return max(x.reshape(-1), 0).values
    values, indices = Max.apply(x, _dim(dim, x.ndim), keepdim)
    return max_result(values, indices)

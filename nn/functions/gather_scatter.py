"""Gather and scatter along a dimension: ``gather``, ``scatter``, ``scatter_add`` and
``scatter_reduce`` with PyTorch's checks (equal ranks, no larger sizes, indices in range).

The values move in the flat kernels of ``nn.functions.index`` (``_take``, ``_scatter``):
numpy computes the flat positions, and every scatter is deterministic (repeated indices
accumulate in index order, or the last one wins for a plain write).
``nn.functions.index`` exports these names.
"""
from __future__ import annotations

import numpy as np

from nn.ops import index as ops

from .. import device as devices
from .base import Op, Tensor, _dim
from .index import _dim_positions, _flat, _pad_to, _scatter, _values, _zero_at, _zeros
from .shape import _run, contiguous_data

__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce"]


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

"""Reductions over dimensions (sum, mean, max/min with indices, amax/amin, argmax/argmin,
var/std, prod, logsumexp, all/any, norm) with PyTorch's signatures and gradients. Softmax,
log-softmax, softmin and the cumulative operators are in ``nn.functions.along_dim``, the
composed reductions (trace, nansum, aminmax, cov, quantile...) in
``nn.functions.reduce_composed``; this module exports their names too.

Several-stage reductions (variance, logsumexp, log-softmax and the softmax gradients) run as
one fused kernel each. Gradients of the smooth ones are written in operators or as a
gradient Function whose own backward is in operators, so they can be differentiated again.
"""
from __future__ import annotations

import builtins
import collections
import warnings

import numpy as np

from nn.ops import cpu, declare

from .base import (FLOATING, Op, Tensor, _dim, _dims, _kept, _kernel, _kernel_f32, _reduced,
                   arange, cast, max_result, torch_name)
from .elementwise import maximum, minimum, where
from .shape import expand

__all__ = ["sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std",
           "var_mean", "std_mean", "prod", "logsumexp", "all", "any", "norm", "nanmean"]

FUSED = declare.schedule_fused_reduce
min_result = collections.namedtuple("min", ["values", "indices"])


def _all_dims(dim, ndim):
    """Reduced axes; None or an empty tuple mean all."""
    if dim is None or (isinstance(dim, (tuple, list)) and not dim):
        return tuple(range(ndim))
    return _dims(dim, ndim)


def _axis(dims):
    """Reduced axes as the CPU reductions take them: None for all."""
    return dims or None


def _axes(dims):
    """Reduced axes as a tuple for the fused declarations (a 0-d input runs as shape (1,))."""
    return dims or (0,)


def _spread(g, shape, dims):
    """A gradient of the reduced shape repeated over the reduced ``dims`` of ``shape``."""
    return expand(g.reshape(_kept(shape, dims)), shape)


def _dtype(dtype):
    return None if dtype is None else np.dtype(dtype).name


def _floating_only(x, name, message=None):
    if x.dtype not in FLOATING:
        raise RuntimeError(message or f"{name}(): expected a floating point input, got "
                           f"{x.dtype}")


# ----------------------------------------------------------------------------- sum, mean

class Sum(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.shape, ctx.dims = x.shape, dims
        return _kernel_f32(cpu.sum, x._data, out_shape=_reduced(x.shape, dims, keepdim),
                           axis=_axis(dims), keepdims=keepdim)

    @staticmethod
    def backward(ctx, g):
        return _spread(g, ctx.shape, ctx.dims), None, None


class Mean(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.shape, ctx.dims = x.shape, dims
        ctx.count = int(np.prod([x.shape[d] for d in dims]))
        return _kernel_f32(cpu.mean, x._data, out_shape=_reduced(x.shape, dims, keepdim),
                           axis=_axis(dims), keepdims=keepdim)

    @staticmethod
    def backward(ctx, g):
        # over no elements the gradient is empty: any scale will do
        return _spread(g * (1.0 / builtins.max(ctx.count, 1)), ctx.shape, ctx.dims), None, None


class SumDim(Sum):
    """``sum`` given ``dim`` (PyTorch's second overload, so its node is ``SumBackward1``)."""


class MeanDim(Mean):
    """``mean`` given ``dim`` (``MeanBackward1``)."""


SumDim._node_cls.__name__ = "SumBackward1"
MeanDim._node_cls.__name__ = "MeanBackward1"


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over ``dim`` (an int, a tuple, or None for all); bool and ints sum to int64."""
    if dtype is not None:
        input = cast(input, _dtype(dtype))
    elif input.dtype not in FLOATING:
        input = cast(input, "int64")
    return (Sum if dim is None else SumDim).apply(input, _all_dims(dim, input.ndim), keepdim)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean over ``dim`` (floating inputs, or give ``dtype``)."""
    if dtype is not None:
        input = cast(input, _dtype(dtype))
    _floating_only(input, "mean", "mean(): could not infer output dtype. Input dtype must be "
                   "either a floating point or complex dtype. Got: "
                   f"{torch_name(input.dtype)}")
    return (Mean if dim is None else MeanDim).apply(input, _all_dims(dim, input.ndim), keepdim)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean over ``dim`` of the elements that are not NaN (NaN where there are none):
    the sum with NaNs replaced by zeros over their count."""
    if dtype is not None:
        input = cast(input, _dtype(dtype))
    _floating_only(input, "nanmean", "nanmean(): expected input to have floating point or "
                   f"complex dtype but got {torch_name(input.dtype)}")
    missing = input.isnan()
    total = sum(where(missing, 0.0, input), dim, keepdim)
    count = sum(missing.logical_not().to(input.dtype), dim, keepdim)
    return total / count


# ----------------------------------------------------------------------------- max, min

class Max(Op):
    """The maximum along one dimension, and its (first) index; the gradient goes to it."""
    kernel, arg_kernel = cpu.max, declare.argmax

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        ctx.shape, ctx.dim = x.shape, dim
        cls = ctx._forward_cls
        out_shape = _reduced(x.shape, (dim,), keepdim)
        values = _kernel(cls.kernel, x._data, out_shape=out_shape, axis=dim, keepdims=keepdim)
        indices = _kernel(cls.arg_kernel, x._data, out_shape=out_shape, axis=dim,
                          keepdims=keepdim)
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, g, _):
        (indices,) = ctx.saved_tensors
        kept = _kept(ctx.shape, (ctx.dim,))
        positions = arange(ctx.shape[ctx.dim], device=g.device).reshape(
            tuple(-1 if d == ctx.dim else 1 for d in range(len(ctx.shape))))
        chosen = positions == indices.reshape(kept)
        # a select, not a product with a 0/1 mask: an inf gradient leaves the others at 0
        return where(chosen, g.reshape(kept), 0.0), None, None


class Min(Max):
    kernel, arg_kernel = cpu.min, declare.argmin


class Amax(Op):
    """The maximum over dimensions; ties share the gradient evenly, as PyTorch's (where the
    maximum is NaN, no element equals it and the gradient is NaN, as PyTorch's too)."""
    kernel = cpu.max
    nan_shares = False

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        out = _kernel(ctx._forward_cls.kernel, x._data,
                      out_shape=_reduced(x.shape, dims, keepdim), axis=_axis(dims),
                      keepdims=keepdim)
        ctx.dims = dims
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        kept = _kept(x.shape, ctx.dims)
        top = out.reshape(kept)
        hit = x == top
        if ctx._forward_cls.nan_shares and x.is_floating_point():
            hit = hit.logical_or(x.isnan().logical_and(top.isnan()))
        hit = hit.to(g.dtype)
        share = hit / hit.sum(ctx.dims, keepdim=True)
        return share * g.reshape(kept), None, None


class Amin(Amax):
    kernel = cpu.min


class MaxAll(Amax):
    """``max(input)``: the largest element (ties share the gradient; NaN elements share it
    when the result is NaN, as PyTorch's)."""
    nan_shares = True


class MinAll(Amin):
    """``min(input)``: the smallest element (ties and NaN share the gradient, as ``max``)."""
    nan_shares = True


MaxAll._node_cls.__name__ = "MaxBackward1"
MinAll._node_cls.__name__ = "MinBackward1"


def _not_empty(x, name, what="reduction dim to be specified"):
    if x.numel() == 0:
        raise RuntimeError(f"{name}(): Expected {what} for input.numel() == 0. Specify the "
                           "reduction dim with the 'dim' argument.")


def _nonzero_sizes(name, input, dims):
    """PyTorch's error for a maximum or minimum over a dimension of size 0 (it has none)."""
    for d in dims:
        if d < input.ndim and input.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return dims


def _extremum(name, whole, along, pair, input, dim, keepdim):
    """max / min in their three forms: whole tensor, along ``dim``, against a tensor."""
    if isinstance(dim, Tensor):
        if keepdim:
            raise TypeError(f"{name}(input, other) takes no keepdim")
        return pair(input, dim)
    if dim is None:
        _not_empty(input, name)
        return whole.apply(input, tuple(range(input.ndim)), False)
    dim = _dim(dim, input.ndim)
    if input.ndim:
        _nonzero_sizes(name, input, (dim,))
    values, indices = along.apply(input, dim, keepdim)
    return (max_result if name == "max" else min_result)(values, indices)


def max(input, dim=None, keepdim=False):
    """The largest element; over ``dim`` a (values, indices) named tuple; with a tensor as
    second argument, the elementwise ``maximum``."""
    return _extremum("max", MaxAll, Max, maximum, input, dim, keepdim)


def min(input, dim=None, keepdim=False):
    """The smallest element; over ``dim`` a (values, indices) named tuple; with a tensor as
    second argument, the elementwise ``minimum``."""
    return _extremum("min", MinAll, Min, minimum, input, dim, keepdim)


def amax(input, dim=(), keepdim=False):
    """The maximum over ``dim`` (all when empty)."""
    if dim is None or dim == ():
        _not_empty(input, "amax")
    dims = _nonzero_sizes("amax", input, _all_dims(dim, input.ndim))
    return Amax.apply(input, dims, keepdim)


def amin(input, dim=(), keepdim=False):
    """The minimum over ``dim`` (all when empty)."""
    if dim is None or dim == ():
        _not_empty(input, "amin")
    dims = _nonzero_sizes("amin", input, _all_dims(dim, input.ndim))
    return Amin.apply(input, dims, keepdim)


def _arg(name, kernel, input, dim, keepdim):
    if input.dtype == "bool":
        raise RuntimeError(f"{name}(): does not support bool input")
    if dim is None:
        _not_empty(input, name, "reduction dim to be specified")
        out = _arg(name, kernel, input.reshape(-1), 0, False)
        return out.reshape((1,) * input.ndim) if keepdim else out
    dim = _dim(dim, input.ndim)
    shape = _reduced(input.shape, (dim,), keepdim)
    if input.ndim:
        _nonzero_sizes(name, input, (dim,))
    else:
        return arange(1, device=input.device).reshape(shape) * 0
    return _kernel(kernel, input._data, out_shape=shape, axis=dim, keepdims=keepdim)


def argmax(input, dim=None, keepdim=False):
    """The index of the first maximum over ``dim`` (of the flattened input when None)."""
    return _arg("argmax", declare.argmax, input, dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    """The index of the first minimum over ``dim`` (of the flattened input when None)."""
    return _arg("argmin", declare.argmin, input, dim, keepdim)


# ----------------------------------------------------------------------------- var, std

class Var(Op):
    """The variance over ``dims`` with ``correction`` (1: Bessel's), one fused kernel."""
    root = False

    @staticmethod
    def forward(ctx, x, dims, correction, keepdim):
        ctx.dims, ctx.correction = dims, correction
        out = _kernel_f32(declare.variance, x._data, out_shape=_reduced(x.shape, dims, keepdim),
                          axis=_axes(dims), keepdims=keepdim, correction=correction,
                          root=ctx._forward_cls.root, schedule=FUSED)
        # var's gradient reads the input only; std's the output too (as PyTorch's)
        ctx.save_for_backward(x, out if ctx._forward_cls.root else None)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        kept = _kept(x.shape, ctx.dims)
        count = int(np.prod([x.shape[d] for d in ctx.dims]))
        centered = x - x.mean(ctx.dims, keepdim=True)
        dof = count - ctx.correction       # 2 / 0 is inf, as in PyTorch's formula
        g = g.reshape(kept)
        if ctx._forward_cls.root:
            # PyTorch's std_backward: var's gradient of g / (2 std), read as 0 where the std
            # is 0 (constant input: 0, not 0 / 0)
            root = out.reshape(kept)
            g = where(root == 0, 0.0, g / (root * 2))
        return g * (2.0 / dof if dof else float("inf")) * centered, None, None, None


class Std(Var):
    root = True


def _correction(name, dim, unbiased, correction):
    if isinstance(dim, bool):           # var(input, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{name}(): can't specify both unbiased and correction")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, float(correction)


def _spread_op(op, name, input, dim, unbiased, keepdim, correction):
    dim, correction = _correction(name, dim, unbiased, correction)
    if input.dtype not in FLOATING:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    dims = _all_dims(dim, input.ndim)
    count = int(np.prod([input.shape[d] for d in dims]))
    if count - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly "
                      "less than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=3)
    return op.apply(input, dims, correction, keepdim)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The variance over ``dim``; ``correction`` (default 1) is subtracted from the count;
    ``unbiased=False`` means correction 0."""
    return _spread_op(Var, "var", input, dim, unbiased, keepdim, correction)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The standard deviation over ``dim`` (see ``var``)."""
    return _spread_op(Std, "std", input, dim, unbiased, keepdim, correction)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over ``dim``."""
    dims = _all_dims(_correction("var_mean", dim, unbiased, correction)[0], input.ndim)
    return (var(input, dim, unbiased, keepdim, correction=correction),
            mean(input, dims, keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over ``dim``."""
    dims = _all_dims(_correction("std_mean", dim, unbiased, correction)[0], input.ndim)
    return (std(input, dim, unbiased, keepdim, correction=correction),
            mean(input, dims, keepdim))


# ----------------------------------------------------------------------------- prod, logsumexp

class ProdOthers(Op):
    """For each element along ``dim``, the product of the others (the gradient of prod,
    exact where elements are zero)."""

    @staticmethod
    def forward(ctx, x, dim):
        out = _kernel(declare.product_of_others, x._data, out_shape=x.shape, axis=dim)
        ctx.save_for_backward(x, out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        total = (g * out).sum(ctx.dim, keepdim=True)
        return (total - g * out) / x, None


class Prod(Op):
    @staticmethod
    def forward(ctx, x, dim, keepdim):
        ctx.save_for_backward(x)
        ctx.dim = dim
        # float16 multiplies in float16, as PyTorch's CPU prod (cumprod widens, as it does)
        return _kernel(declare.prod, x._data, out_shape=_reduced(x.shape, (dim,), keepdim),
                       axis=dim, keepdims=keepdim, schedule=cpu.schedule_reduce)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        kept = _kept(x.shape, (ctx.dim,))
        return g.reshape(kept) * ProdOthers.apply(x, ctx.dim), None, None


class ProdDim(Prod):
    """``prod`` given ``dim`` (``ProdBackward1``)."""


ProdDim._node_cls.__name__ = "ProdBackward1"


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """The product over ``dim`` (an int; all elements when None); ints multiply in int64."""
    if dtype is not None:
        input = cast(input, _dtype(dtype))
    elif input.dtype not in FLOATING:
        input = cast(input, "int64")
    if dim is None:
        out = Prod.apply(input.reshape(-1) if input.ndim else input.reshape(1), 0, False)
        return out.reshape((1,) * input.ndim) if keepdim else out
    return ProdDim.apply(input, _dim(dim, input.ndim), keepdim)


class Logsumexp(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim):
        out = _kernel_f32(declare.logsumexp, x._data, out_shape=_reduced(x.shape, dims, keepdim),
                          axis=_axes(dims), keepdims=keepdim, schedule=FUSED)
        ctx.dims = dims
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        kept = _kept(x.shape, ctx.dims)
        return g.reshape(kept) * (x - out.reshape(kept)).exp(), None, None


def logsumexp(input, dim, keepdim=False):
    """``log(sum(exp(input)))`` over ``dim``, computed stably."""
    if input.dtype not in FLOATING:
        input = cast(input, "float32")
    return Logsumexp.apply(input, _all_dims(dim, input.ndim), keepdim)


# ----------------------------------------------------------------------------- all, any

def _truth(kernel, input, dim, keepdim):
    dims = _all_dims(dim, input.ndim)
    out = _kernel(kernel, input._data, out_shape=_reduced(input.shape, dims, keepdim),
                  axis=_axis(dims), keepdims=keepdim, schedule=cpu.schedule_reduce)
    return Tensor(out._data.view("bool"))


def all(input, dim=None, keepdim=False):
    """Whether all elements over ``dim`` are nonzero (bool)."""
    return _truth(declare.all, input, dim, keepdim)


def any(input, dim=None, keepdim=False):
    """Whether any element over ``dim`` is nonzero (bool)."""
    return _truth(declare.any, input, dim, keepdim)


# ----------------------------------------------------------------------------- norm

class Norm2(Op):
    """The Euclidean norm over ``dims`` in one kernel; the gradient is zero at zero."""

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        out = _kernel_f32(declare.norm2, x._data, out_shape=_reduced(x.shape, dims, keepdim),
                          axis=_axes(dims), keepdims=keepdim, schedule=FUSED)
        ctx.dims = dims
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        kept = _kept(x.shape, ctx.dims)
        norm = out.reshape(kept)
        return where(norm == 0, 0.0, x / norm) * g.reshape(kept), None, None


Norm2._node_cls.__name__ = "LinalgVectorNormBackward0"


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """The vector norm over ``dim``: ``p`` = 2 or "fro" (default), 1, inf, -inf, 0 or any
    number (``sum(|x|^p)^(1/p)``)."""
    if dtype is not None:
        input = cast(input, _dtype(dtype))
    if input.dtype not in FLOATING:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {input.dtype}")
    if isinstance(dim, int):
        dim = (dim,)
    dims = _all_dims(dim, input.ndim)
    if p in ("fro", 2, 2.0):
        return Norm2.apply(input, dims, keepdim)
    if isinstance(p, str):
        raise RuntimeError(f"norm(): unsupported p={p!r} for a vector norm; use a number or "
                           "'fro'")
    a = input.abs()
    if p == float("inf"):
        return amax(a, dims, keepdim)
    if p == -float("inf"):
        return amin(a, dims, keepdim)
    if p == 0:
        return (a != 0).to(input.dtype).sum(dims, keepdim)
    if p == 1:
        return a.sum(dims, keepdim)
    return (a ** p).sum(dims, keepdim) ** (1.0 / p)


# Operators built on the reductions above, so they load last.
from . import along_dim as _along_dim, reduce_composed as _composed  # noqa: E402
from .along_dim import *  # noqa: F401,F403,E402
from .reduce_composed import *  # noqa: F401,F403,E402
from .along_dim import (Cumprod, Cumsum, LogSoftmax, LogSoftmaxBackwardData,  # noqa: F401,E402
                        Softmax, SoftmaxBackwardData, cummax_result, cummin_result)
from .reduce_composed import aminmax_result  # noqa: F401,E402

__all__ += _along_dim.__all__ + _composed.__all__

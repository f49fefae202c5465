"""Reductions over dimensions (sum, mean, max/min with indices, amax/amin, argmax/argmin,
var/std, prod, logsumexp, all/any, norm), cumulative sums and products, and softmax,
log-softmax and softmin along a dimension, with PyTorch's signatures and gradients.

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

from .. import device as devices

from .base import (FLOATING, Op, Tensor, _dim, _dims, _kept, _kernel, _kernel_f32, _reduced,
                   arange, cast, max_result, torch_name)
from .elementwise import maximum, minimum, where
from .shape import cat as _cat, expand

__all__ = ["sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std",
           "var_mean", "std_mean", "prod", "logsumexp", "all", "any", "softmax", "log_softmax",
           "softmin", "cumsum", "cumprod", "norm", "nanmean", "trace", "count_nonzero",
           "nansum", "cummax", "cummin", "logcumsumexp", "aminmax", "dist", "renorm", "cov",
           "corrcoef", "quantile", "nanquantile"]

FUSED = declare.schedule_fused_reduce
min_result = collections.namedtuple("min", ["values", "indices"])
cummax_result = collections.namedtuple("cummax", ["values", "indices"])
cummin_result = collections.namedtuple("cummin", ["values", "indices"])
aminmax_result = collections.namedtuple("aminmax", ["min", "max"])


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


# ----------------------------------------------------------------------------- softmax

def _softmax_dim(name, ndim):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_input(name, input, dim, dtype):
    if dtype is not None:
        input = cast(input, _dtype(dtype))
    if input.dtype not in FLOATING:
        raise NotImplementedError(f'"{name}_lastdim_kernel_impl" not implemented for '
                                  f"'{input.dtype}'")
    dim = _softmax_dim(name, input.ndim) if dim is None else dim
    return input, _dim(dim, input.ndim)


class _AlongDimGrad(Op):
    """The gradient of a softmax-like op along ``dim``: ``KERNEL(g, y)`` (y: the op's
    output) as one kernel; subclasses give the kernel and its own gradient."""
    KERNEL = None

    @classmethod
    def forward(cls, ctx, g, y, dim):
        ctx.save_for_backward(g, y)
        ctx.dim = dim
        return _kernel(cls.KERNEL, g._data, y._data, out_shape=g.shape, axis=dim,
                       schedule=FUSED)


class _AlongDim(Op):
    """A softmax-like op along ``dim``: ``KERNEL(x)``, its output saved for ``GRAD``."""
    KERNEL = SCHEDULE = GRAD = None

    @classmethod
    def forward(cls, ctx, x, dim):
        out = _kernel(cls.KERNEL, x._data, out_shape=x.shape, axis=dim, schedule=cls.SCHEDULE)
        ctx.save_for_backward(out)
        ctx.dim = dim
        return out

    @classmethod
    def backward(cls, ctx, g):
        (y,) = ctx.saved_tensors
        return cls.GRAD.apply(g, y, ctx.dim), None


class SoftmaxBackwardData(_AlongDimGrad):
    """The gradient of softmax, ``y * (g - sum(g * y))``."""
    KERNEL = declare.softmax_backward

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        need = ctx.needs_input_grad
        gg_g = SoftmaxBackwardData.apply(gg, y, ctx.dim) if need[0] else None
        gg_y = None
        if need[1]:
            gy = (g * y).sum(ctx.dim, keepdim=True)
            ggy = (gg * y).sum(ctx.dim, keepdim=True)
            gg_y = gg * (g - gy) - g * ggy
        return gg_g, gg_y, None


class Softmax(_AlongDim):
    KERNEL, GRAD = cpu.softmax, SoftmaxBackwardData


class LogSoftmaxBackwardData(_AlongDimGrad):
    """The gradient of log-softmax, ``g - exp(y) * sum(g)``."""
    KERNEL = declare.log_softmax_backward

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        need = ctx.needs_input_grad
        p = y.exp()
        gg_g = gg - (gg * p).sum(ctx.dim, keepdim=True) if need[0] else None
        gg_y = -gg * p * g.sum(ctx.dim, keepdim=True) if need[1] else None
        return gg_g, gg_y, None


class LogSoftmax(_AlongDim):
    KERNEL, SCHEDULE, GRAD = declare.log_softmax, FUSED, LogSoftmaxBackwardData


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``, stable (the maximum is subtracted first)."""
    return Softmax.apply(*_softmax_input("softmax", input, dim, dtype))


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``x - logsumexp(x)`` along ``dim``, in one stable kernel."""
    return LogSoftmax.apply(*_softmax_input("log_softmax", input, dim, dtype))


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-input)`` along ``dim``."""
    input, dim = _softmax_input("softmin", input, dim, dtype)
    return Softmax.apply(-input, dim)


# ----------------------------------------------------------------------------- cumulative

class Cumsum(Op):
    """The running sum along ``dim`` (from the end when ``reverse``, for the gradient)."""

    @staticmethod
    def forward(ctx, x, dim, reverse):
        ctx.dim, ctx.reverse = dim, reverse
        return _kernel_f32(declare.cumulative, x._data, out_shape=x.shape, axis=dim, op="sum",
                           reverse=reverse)

    @staticmethod
    def backward(ctx, g):
        return Cumsum.apply(g, ctx.dim, not ctx.reverse), None, None


class Cumprod(Op):
    """The running product along ``dim``; the gradient divides by the input, so it is
    exact for nonzero inputs."""

    @staticmethod
    def forward(ctx, x, dim):
        out = _kernel_f32(declare.cumulative, x._data, out_shape=x.shape, axis=dim, op="prod",
                          reverse=False)
        ctx.save_for_backward(x, out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        zero = x == 0
        if not bool(zero.any()):
            return Cumsum.apply(g * out, ctx.dim, True) / x, None
        # zero-safe (as PyTorch's): d out_j / d x_i = prod_{k <= j, k != i} x_k; with x_i
        # replaced by 1, that is out'_j, the running product of the input with x_i set to 1
        n = x.shape[ctx.dim]
        grads = []
        for i in range(n):
            ones = x.narrow(ctx.dim, i, 1) * 0 + 1
            parts = [x.narrow(ctx.dim, 0, i), ones, x.narrow(ctx.dim, i + 1, n - i - 1)]
            replaced = _cat([p for p in parts if p.shape[ctx.dim]], ctx.dim)
            running = Cumprod.apply(replaced, ctx.dim)
            tail = (g * running).narrow(ctx.dim, i, n - i)
            grads.append(tail.sum(ctx.dim, keepdim=True))
        return _cat(grads, ctx.dim), None


def _cumulative_input(input, dim, dtype):
    if dtype is not None:
        input = cast(input, _dtype(dtype))
    elif input.dtype not in FLOATING:
        input = cast(input, "int64")
    if input.ndim == 0:
        return input.reshape(1), 0
    return input, _dim(dim, input.ndim)


def cumsum(input, dim, *, dtype=None):
    """The running sum along ``dim`` (ints accumulate in int64)."""
    x, d = _cumulative_input(input, dim, dtype)
    out = Cumsum.apply(x, d, False)
    return out if input.ndim else out.reshape(())


def cumprod(input, dim, *, dtype=None):
    """The running product along ``dim`` (ints accumulate in int64)."""
    x, d = _cumulative_input(input, dim, dtype)
    out = Cumprod.apply(x, d)
    return out if input.ndim else out.reshape(())


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


# ----------------------------------------------------------------------------- composed reductions

def trace(input):
    """The sum of the main diagonal of a matrix (integers sum in int64)."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return sum(input.diagonal())


def count_nonzero(input, dim=None):
    """The number of nonzero elements over ``dim`` (all when None), int64."""
    if dim is not None:
        named = [_dim(d, input.ndim) for d in ((dim,) if isinstance(dim, int) else dim)]
        for k, d in enumerate(named):
            if d in named[:k]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return sum(input != 0, dim)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """``sum`` with NaN counted as zero."""
    if input.dtype in FLOATING:
        input = where(input.isnan(), 0.0, input)
    return sum(input, dim, keepdim, dtype=dtype)


def _running_extremum(data, dim, larger):
    """The indices of the running maximum (``larger``) or minimum of host array ``data``
    along ``dim``: a later equal element wins, NaN wins and stays (PyTorch's rule)."""
    a = np.moveaxis(data, dim, -1)
    out = np.empty(a.shape, "int64")
    if a.shape[-1] == 0:
        return np.moveaxis(out, -1, dim)
    best, at = a[..., 0].copy(), np.zeros(a.shape[:-1], "int64")
    out[..., 0] = 0
    floating = a.dtype.kind == "f"
    for k in range(1, a.shape[-1]):
        x = a[..., k]
        with np.errstate(invalid="ignore"):
            better = (x >= best) if larger else (x <= best)
        if floating:
            better = np.isnan(x) | (better & ~np.isnan(best))
        best = np.where(better, x, best)
        at = np.where(better, k, at)
        out[..., k] = at
    return np.moveaxis(out, -1, dim)


def _cumulative_extremum(result, larger, input, dim):
    from .base import to_device
    from .index import gather
    if input.ndim == 0:
        _dim(dim, 1)
        zero = to_device(Tensor(np.zeros((), "int64")), input.device)
        return result(input * 1 if input.dtype != "bool" else input.clone(), zero)
    d = _dim(dim, input.ndim)
    at = _running_extremum(devices.host(input._data), d, larger)
    indices = to_device(Tensor(np.ascontiguousarray(at)), input.device)
    return result(gather(input, d, indices), indices)


def cummax(input, dim):
    """(values, indices) of the running maximum along ``dim``; the values' gradient goes to
    the element each came from."""
    return _cumulative_extremum(cummax_result, True, input, dim)


def cummin(input, dim):
    """(values, indices) of the running minimum along ``dim``."""
    return _cumulative_extremum(cummin_result, False, input, dim)


def logcumsumexp(input, dim):
    """``log(cumsum(exp(input)))`` along ``dim``, computed shifted by the maximum along
    ``dim`` (so large inputs do not overflow)."""
    if input.dtype not in FLOATING:
        from .elementwise_unary import _no_kernel_for
        raise _no_kernel_for("logcumsumexp_out_cpu", input.dtype)
    if input.ndim == 0:
        _dim(dim, 1)
        return input * 1
    d = _dim(dim, input.ndim)
    if input.shape[d] == 0:
        return input * 1
    shift = amax(input.detach(), d, keepdim=True)
    shift = where(shift.isinf(), 0.0, shift)
    return cumsum((input - shift).exp(), d).log() + shift


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over ``dim`` (all when None), as a named tuple."""
    if input.numel() == 0 and (dim is None or input.shape[_dim(dim, input.ndim)] == 0):
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    if dim is None:
        out = aminmax_result(amin(input), amax(input))
        return aminmax_result(*(o.reshape((1,) * input.ndim) for o in out)) if keepdim \
            else out
    return aminmax_result(amin(input, dim, keepdim), amax(input, dim, keepdim))


def dist(input, other, p=2):
    """The ``p``-norm of ``input - other``."""
    return norm(input - other, p)


def renorm(input, p, dim, maxnorm):
    """``input`` with each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled
    down to norm ``maxnorm``."""
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           "dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = _dim(dim, input.ndim)
    others = tuple(k for k in range(input.ndim) if k != d)
    norms = norm(input, p, others, keepdim=True)
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor


def _check_weights(name, weights, n):
    if weights.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {weights.ndim} dimensions")
    if weights.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {weights.numel()} != {n}")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (observations in the
    columns), optionally weighted by integer ``fweights`` and real ``aweights``."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if x.dtype not in FLOATING:
        x = cast(x, "float32")
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, n)
        if fweights.is_floating_point():
            raise RuntimeError("cov(): expected fweights to have integral dtype but got "
                               f"fweights with {torch_name(fweights.dtype)} dtype")
        w = fweights.reshape(-1)
    if aweights is not None:
        _check_weights("aweights", aweights, n)
        if not aweights.is_floating_point():
            raise RuntimeError("cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {torch_name(aweights.dtype)} dtype")
        w = aweights.reshape(-1) if w is None else w * aweights.reshape(-1)
    if w is None:
        total = float(n)
        avg = mean(x, 1, keepdim=True)
        factor = total - correction
    else:
        w = cast(w, x.dtype)
        total = sum(w)
        avg = sum(x * w, 1, keepdim=True) / total
        factor = total - correction * (sum(w * aweights) / total if aweights is not None
                                       else 1)
    if float(factor) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        factor = 0.0 * factor if isinstance(factor, Tensor) else 0.0
    centered = x - avg
    weighted = centered if w is None else centered * w
    out = (centered @ weighted.transpose(0, 1)) / factor
    return out.reshape(()) if input.ndim < 2 else out


def corrcoef(input):
    """The Pearson correlation coefficients of the variables in the rows of ``input``."""
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but "
                           f"got an input with {input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = c.diagonal().sqrt()
    c = c / std.reshape(-1, 1) / std.reshape(1, -1)
    return c.clamp(-1, 1)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    from .base import to_device
    from .index import gather
    from .sorting import sort
    if input.dtype not in ("float32", "float64"):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        qs, scalar = np.asarray(devices.host(q._data), "float64").reshape(-1), q.ndim == 0
    else:
        qs, scalar = np.asarray([q], "float64"), True
    if input.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    for v in qs:
        if not 0 <= v <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {v}")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        x, d = (input.reshape(1), 0) if input.ndim == 0 else (input, _dim(dim, input.ndim))
    values = sort(x, d).values.movedim(d, -1)                # (..., n), NaN last
    host = devices.host(values._data)
    n = host.shape[-1]
    nans = np.isnan(host)
    if ignore_nan:
        last = (n - nans.sum(-1, keepdims=True) - 1).astype("float64")    # (..., 1)
    else:
        last = np.where(nans.any(-1, keepdims=True), -1.0, n - 1.0)
    ranks = qs.reshape((-1,) + (1,) * host.ndim) * np.maximum(last, 0)   # (Q, ..., 1)
    ranks = np.where(last < 0, np.where(ignore_nan, 0.0, n - 1.0), ranks)
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)
    below, above = np.floor(ranks).astype("int64"), np.ceil(ranks).astype("int64")
    weights = np.full(ranks.shape, 0.5) if interpolation == "midpoint" else ranks - below
    q_count = qs.shape[0]
    expanded = values.unsqueeze(0).expand((q_count,) + values.shape)

    def at(positions):
        index = to_device(Tensor(np.ascontiguousarray(positions)), input.device)
        return gather(expanded, -1, index)
    low, high = at(below), at(above)
    weight = to_device(Tensor(np.ascontiguousarray(weights.astype(input.dtype))),
                       input.device)
    out = (low + (high - low) * weight).squeeze(-1)          # (Q, ...)
    if keepdim:
        if dim is None:
            out = out.reshape((q_count,) + (1,) * input.ndim)
        elif input.ndim:
            out = out.unsqueeze(d + 1)
    return out.squeeze(0) if scalar else out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-th quantiles of ``input`` along ``dim`` (flattened when None); a row with
    NaN gives NaN. ``q`` a number or a 1-D tensor (its values along a new first dimension)."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """``quantile`` ignoring NaN (NaN for a row of NaN only)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)

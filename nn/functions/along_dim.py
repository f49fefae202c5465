"""Operators along one dimension that keep its size: softmax, log_softmax and softmin, and
the cumulative ones (cumsum, cumprod, cummax, cummin, logcumsumexp), with PyTorch's
signatures and gradients. The softmax gradients run as one fused kernel each, as gradient
Functions whose own backward is in operators. ``nn.functions.reduce`` exports these names.
"""
from __future__ import annotations

import collections
import warnings

import numpy as np

from nn.ops import cpu, declare

from .. import device as devices

from .base import FLOATING, Op, Tensor, _dim, _kernel, _kernel_f32, cast
from .elementwise import where
from .reduce import FUSED, _dtype, amax
from .shape import cat as _cat

__all__ = ["softmax", "log_softmax", "softmin", "cumsum", "cumprod", "cummax", "cummin",
           "logcumsumexp"]


cummax_result = collections.namedtuple("cummax", ["values", "indices"])
cummin_result = collections.namedtuple("cummin", ["values", "indices"])


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

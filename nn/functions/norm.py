"""Normalization: batch_norm, layer_norm, group_norm, instance_norm, as PyTorch's functions.

Each runs as one fused kernel forward (statistics and normalization in one pass over each
channel or row) and one or two fused kernels backward (nn/ops/norm.py). Batch norm in training
updates the running statistics in place with the unbiased batch variance, as PyTorch does.

Double backward: when a backward runs with ``create_graph=True``, the gradient is instead
derived from the operator's composite form (``mean``, ``sub``, ``mul``... of nn), so that it
has a graph of its own (see nn/functions/fused.py); the fused kernels serve the ordinary case.
"""
from __future__ import annotations

import numpy as np

from nn.ops import norm as ops

from .. import device as devices
from ..autograd import no_grad
from .base import Tensor
from .fused import FusedOp, run_kernel

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm"]


def _array(t):
    return None if t is None else t._data


def _wide(t):
    """A float16 tensor as float32 (others as they are): float16 normalizes in float32, as
    PyTorch's kernels compute it."""
    return t.float() if t is not None and t.dtype == "float16" else t


def _in_float32(fn, input, *args, running=()):
    """``fn(input, *args)`` for a float16 ``input``, computed in float32 and rounded to
    float16; the positions ``running`` of ``args`` are running statistics, which ``fn``
    updates in place: their float16 tensors get the updated values."""
    wide = [_wide(a) if isinstance(a, Tensor) else a for a in args]
    out = fn(_wide(input), *wide)
    with no_grad():
        for k in running:
            if args[k] is not None and wide[k] is not args[k]:
                args[k].copy_(wide[k])
    return out.half()


def _check_float(x, what):
    if x.dtype not in ("float32", "float64"):
        raise RuntimeError(f"{what}: expected a float32 or float64 input, got {x.dtype}")


# ----------------------------------------------------------------------------- batch norm

def _channels_view(x):
    """``x`` (N, C, *) as (N, C, L)."""
    return x.reshape(x.shape[0], x.shape[1], int(np.prod(x.shape[2:])))  # -1 fails when N = 0


class NativeBatchNorm(FusedOp):
    """Batch normalization of (N, C, *) ``x``; ``training``: with batch statistics."""

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, training, factor, eps):
        FusedOp.remember(ctx, (x, weight, bias, running_mean, running_var, training, factor,
                               eps))
        affine = [a for a in (_array(weight), _array(bias)) if a is not None]
        if len(affine) == 1:        # only one of weight and bias: the other is its identity
            affine = [_array(weight) if weight is not None else np.ones_like(affine[0]),
                      _array(bias) if bias is not None else np.zeros_like(affine[0])]
        x3 = _channels_view(x._data)
        if training:
            y, mean, var = run_kernel(ops.batch_norm_train, x3, *affine, eps=eps,
                                      schedule=ops.schedule_channels)
            count = x3.shape[0] * x3.shape[2]
            if running_mean is not None and count:     # an empty batch leaves them, as in torch
                new = run_kernel(ops.running_stats, running_mean._data, running_var._data,
                                 mean.reshape((1,) + mean.shape), var.reshape((1,) + var.shape),
                                 np.array([factor], x.dtype), count=count,
                                 schedule=ops.schedule_running)
                devices.write(running_mean._data, new[0])
                devices.write(running_var._data, new[1])
        else:
            mean, var = devices.copy(running_mean._data), devices.copy(running_var._data)
            (y,) = run_kernel(ops.batch_norm_eval, x3, mean, var, *affine, eps=eps)
        ctx.stats = mean, var
        return Tensor(y.reshape(x.shape))

    @staticmethod
    def fused_backward(ctx, args, g):
        x, weight, bias, _, _, training, _, eps = args
        mean, var = ctx.stats
        extra = [] if weight is None else [weight._data]
        dx, dweight, dbias = run_kernel(ops.batch_norm_backward, _channels_view(g._data),
                                        _channels_view(x._data), mean, var, *extra, eps=eps,
                                        train=bool(training), schedule=ops.schedule_channels)
        need = ctx.needs_input_grad
        return (Tensor(dx.reshape(x.shape)) if need[0] else None,
                Tensor(dweight) if need[1] else None, Tensor(dbias) if need[2] else None,
                None, None, None, None, None)

    @staticmethod
    def composite(x, weight, bias, running_mean, running_var, training, factor, eps):
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        if training:
            dims = (0,) + tuple(range(2, x.ndim))
            mean = x.mean(dims, keepdim=True)
            centered = x - mean
            var = (centered * centered).mean(dims, keepdim=True)
        else:
            centered = x - running_mean.detach().reshape(shape)
            var = running_var.detach().reshape(shape)
        y = centered / (var + eps).sqrt()
        if weight is not None:
            y = y * weight.reshape(shape)
        return y if bias is None else y + bias.reshape(shape)


def _check_channels(what, name, t, channels, dtype):
    if t is None:
        return
    if t.shape != (channels,):
        raise RuntimeError(f"{what}: expected {name} to have shape [{channels}] (one value per "
                           f"channel of the input), but got {list(t.shape)}")
    if t.dtype != dtype:
        raise RuntimeError(f"{what}: expected {name} to have the input's dtype {dtype}, but "
                           f"got {t.dtype}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-05):
    """Normalize (N, C, *) ``input`` per channel: by the batch statistics when ``training``
    (then updating the running statistics, when given, in place), else by the running ones."""
    if input.dtype == "float16":
        return _in_float32(batch_norm, input, running_mean, running_var, weight, bias,
                           training, momentum, eps, running=(0, 1))
    _check_float(input, "batch_norm")
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected an input of at least 2 dimensions (N, C, ...), "
                         f"got {list(input.shape)}")
    channels = input.shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        _check_channels("batch_norm", name, t, channels, input.dtype)
    if (running_mean is None) != (running_var is None):
        raise ValueError("batch_norm: give both running_mean and running_var, or neither")
    if not training and running_mean is None:
        raise RuntimeError("batch_norm: running_mean and running_var must be defined in "
                           "evaluation mode (training=False)")
    if training:
        size = input.numel() // channels
        if size == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)}")
    return NativeBatchNorm.apply(input, weight, bias, running_mean, running_var, bool(training),
                                 0.0 if momentum is None else float(momentum), float(eps))


# ----------------------------------------------------------------------------- row norms

class NativeLayerNorm(FusedOp):
    """Normalization per (n, g) of ``x`` viewed as (N, G, K, L) (see nn/ops/norm.py); the
    affine parameters viewed as (G, K, 1) or (1, 1, L)."""

    @staticmethod
    def forward(ctx, x, weight, bias, view, param_view, eps, running_mean, running_var,
                momentum):
        FusedOp.remember(ctx, (x, weight, bias, view, param_view, eps, None, None, None))
        affine = [a.reshape(param_view) for a in (_array(weight), _array(bias))
                  if a is not None]
        if len(affine) == 1:
            affine = [_array(weight).reshape(param_view) if weight is not None
                      else np.ones(param_view, x.dtype),
                      _array(bias).reshape(param_view) if bias is not None
                      else np.zeros(param_view, x.dtype)]
        y, mean, var = run_kernel(ops.row_norm, x._data.reshape(view), *affine, eps=eps,
                                  schedule=ops.schedule_rows_norm)
        ctx.stats = mean, var
        if running_mean is not None:        # instance norm: the mean over the batch
            n, c = view[:2]
            new = run_kernel(ops.running_stats, running_mean._data, running_var._data,
                             mean.reshape(n, c), var.reshape(n, c), np.array([momentum], x.dtype),
                             count=view[3], schedule=ops.schedule_running)
            devices.write(running_mean._data, new[0])
            devices.write(running_var._data, new[1])
        return Tensor(y.reshape(x.shape))

    @staticmethod
    def fused_backward(ctx, args, g):
        x, weight, bias, view, param_view, eps = args[:6]
        mean, var = ctx.stats
        need = ctx.needs_input_grad
        g4, x4 = g._data.reshape(view), x._data.reshape(view)
        dx = dweight = dbias = None
        if need[0]:
            extra = [] if weight is None else [weight._data.reshape(param_view)]
            (dx,) = run_kernel(ops.row_norm_backward, g4, x4, mean, var, *extra, eps=eps,
                               schedule=ops.schedule_rows_norm)
            dx = Tensor(dx.reshape(x.shape))
        if need[1] or need[2]:
            dw, db = run_kernel(ops.row_norm_param_grad, g4, x4, mean, var, eps=eps,
                                per_element=param_view[2] > 1, schedule=ops.schedule_param_grad)
            dweight = Tensor(dw.reshape(weight.shape)) if need[1] else None
            dbias = Tensor(db.reshape(bias.shape)) if need[2] else None
        return (dx, dweight, dbias) + (None,) * 6

    @staticmethod
    def composite(x, weight, bias, view, param_view, eps, *running):
        x4 = x.reshape(view)
        mean = x4.mean((2, 3), keepdim=True)
        centered = x4 - mean
        var = (centered * centered).mean((2, 3), keepdim=True)
        y = centered / (var + eps).sqrt()
        if weight is not None:
            y = y * weight.reshape(param_view)
        if bias is not None:
            y = y + bias.reshape(param_view)
        return y.reshape(x.shape)


class NativeGroupNorm(NativeLayerNorm):
    """Group normalization: ``NativeLayerNorm``'s code under PyTorch's node name."""


class InstanceNorm(NativeLayerNorm):
    """Instance normalization with batch statistics: ``NativeLayerNorm``'s code."""


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Normalize over the last ``len(normalized_shape)`` dimensions of ``input``."""
    if input.dtype == "float16":
        return _in_float32(layer_norm, input, normalized_shape, weight, bias, eps)
    _check_float(input, "layer_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or input.ndim < k or input.shape[input.ndim - k:] != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.shape != shape:
            raise RuntimeError(f"layer_norm: expected {name} of shape {list(shape)} (the "
                               f"normalized_shape), but got {list(t.shape)}")
        if t is not None and t.dtype != input.dtype:
            raise RuntimeError(f"layer_norm: expected {name} to have the input's dtype "
                               f"{input.dtype}, but got {t.dtype}")
    size = int(np.prod(shape))
    rows = input.numel() // size if size else 0
    return NativeLayerNorm.apply(input, weight, bias, (rows, 1, 1, size), (1, 1, size),
                                 float(eps), None, None, 0.0)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Normalize (N, C, *) ``input`` over each group of ``C // num_groups`` channels."""
    if input.dtype == "float16":
        return _in_float32(group_norm, input, num_groups, weight, bias, eps)
    _check_float(input, "group_norm")
    if input.ndim < 2:
        raise RuntimeError(f"group_norm: expected an input of at least 2 dimensions (N, C, "
                           f"...), got {list(input.shape)}")
    n, c = input.shape[:2]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        _check_channels("group_norm", name, t, c, input.dtype)
    spatial = int(np.prod(input.shape[2:], dtype=np.int64))
    view = (n, num_groups, c // num_groups, spatial)
    return NativeGroupNorm.apply(input, weight, bias, view, (num_groups, c // num_groups, 1),
                                 float(eps), None, None, 0.0)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-05):
    """Normalize each channel of each sample of (N, C, *) ``input`` by its own statistics
    (``use_input_stats``; the running ones, when given, are updated in place with their mean
    over the batch), or by the running statistics."""
    if input.dtype == "float16":
        return _in_float32(instance_norm, input, running_mean, running_var, weight, bias,
                           use_input_stats, momentum, eps, running=(0, 1))
    _check_float(input, "instance_norm")
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expected an input of at least 3 dimensions (N, C, "
                         f"*), got {list(input.shape)}")
    n, c = input.shape[:2]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        _check_channels("instance_norm", name, t, c, input.dtype)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("Expected running_mean and running_var to be defined when "
                             "use_input_stats is false")
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    spatial = input.numel() // (n * c) if n * c else 0
    if spatial <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{list(input.shape)}")
    if (running_mean is None) != (running_var is None):
        raise ValueError("instance_norm: give both running_mean and running_var, or neither")
    return InstanceNorm.apply(input, weight, bias, (n, c, 1, spatial), (c, 1, 1), float(eps),
                              running_mean, running_var, float(momentum))
